// Pausing and resuming a job from the fleet page in a real browser (issue
// 41; Debian's Chromium, headless, puppeteer-core) on a live job over
// nats-server: two workers, one served with the Deno adapter (its page is
// the one opened), a job of splits that commit as they go and one whose
// input is permanently bad. The operator pauses the job (a confirmation
// first; "Keep it" does nothing), the page says paused and the workers hand
// back what they ran; the resume continues the job; the permanently failed
// split is marked permanent and cancelled from the page, and the done page
// says what was skipped. Screenshots (a fresh temp dir, or
// $FLEET_PAGE_SCREENSHOTS): p1-confirm-pause, p2-paused, p3-resumed,
// p4-done-skipped, p5-rerun (the job rerun: its earlier run listed). Skipped, saying so, without Chromium.
import assert from "node:assert/strict";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { serve } from "../../adapters/deno.ts";
import { PermanentFailure, SplitCoordinator, startWorker } from "../../mod.ts";
import type { SplitSource, Worker } from "../../mod.ts";
import { NatsStore } from "../../nats.ts";
import { rerunJob } from "../../admin.ts";
import type { Service } from "../../host.ts";
import { Chromium, findChromium, screenshotDir } from "../helpers/chromium.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { NatsServer } from "../helpers/nats_server.ts";

const chromium = findChromium();
if (!chromium) console.log("SKIP fleet page pause test: chromium is not installed (apt-get install -y chromium)");
const TOKEN = "pause-t0ken";
const JOB = "pausepage";
const SPLITS = 16, BAD = "s013", STEPS = 10;
/**
 * Until the job has been paused, no split completes (each waits before its last step): on a loaded
 * machine the browser's clicks took longer than the whole job, which ended before it was paused.
 */
let holdLastStep = true;

function source(): SplitSource<{ n: number }> {
  return {
    fingerprint: () => "pause-page-v1",
    plan: () => Promise.resolve({ finality: "final", splits: Array.from({ length: SPLITS }, (_, n) => ({ id: `s${String(n).padStart(3, "0")}`, descriptor: { n } })) }),
    async run(lane) {
      if (lane.splitId === BAD) throw new PermanentFailure("part-13.csv: 404, gone from the bucket");
      let at = typeof lane.progress?.watermark === "number" ? lane.progress.watermark : 0;
      while (at < STEPS) {
        if (lane.revokeSignal.aborted || lane.signal.aborted) return; // committed: the driver hands it back
        await new Promise((r) => setTimeout(r, 150));
        if (at === STEPS - 1 && holdLastStep) continue;
        at++;
        await lane.commit({ watermark: at, estimate: { left: STEPS - at, total: STEPS, unit: "ids" } }, { records: 1 });
      }
      await lane.complete();
    },
  };
}

type Shown = { innerText: string; hidden: boolean; className: string };
const text = (page: Page, selector: string) => page.$eval(selector, (e) => (e as unknown as Shown).innerText.trim());
const hidden = (page: Page, selector: string) => page.$eval(selector, (e) => (e as unknown as Shown).hidden);
async function waitFor(page: Page, what: string, fn: string, ms = 30_000): Promise<void> {
  try {
    await page.waitForFunction(fn, { timeout: ms, polling: 100 });
  } catch (e) {
    const body = await page.$eval("body", (b) => (b as unknown as Shown).innerText).catch(() => "(no page)");
    throw new Error(`timed out after ${ms} ms waiting for ${what} (${(e as Error).message}); the page shows:\n${body.slice(0, 4000)}`);
  }
}
const byId = (id: string) => `document.getElementById(${JSON.stringify(id)}).textContent`;

Deno.test({
  name: "fleet page in Chromium: pause the job (confirmed), the page says paused and nothing runs; resume continues it; a permanent failure is marked and cancelled; a rerun lists the earlier run",
  ignore: !chromium,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const out = await screenshotDir("splitlease-pause-page-");
    console.log(`screenshots: ${out}`);
    await using nats = await NatsServer.start();
    const stores: NatsStore[] = [];
    const connect = async () => {
      const s = await NatsStore.connect({ servers: nats.wsUrl, job: JOB, opTimeoutMs: 1000 });
      stores.push(s);
      return s;
    };
    let service: Service | undefined;
    let worker: Worker | undefined;
    let browser: Browser | undefined;
    await using chrome = await Chromium.start(chromium!);
    const tunables = { leaseMs: 3000, opTimeoutMs: 1000, drainDeadlineMs: 1000, maxAttempts: 3, retryBackoffMs: 50 };
    try {
      await withTimeout((async () => {
        service = await serve({
          store: await connect(), source: source(), job: JOB, instance: "w1", port: 0, hostname: "127.0.0.1",
          drainToken: TOKEN, exit: false, logger: () => {}, maxInFlight: 3, afterCompletion: "idle", afterStall: "wait", ...tunables,
        });
        const c = await SplitCoordinator.join({ store: await connect(), job: JOB, instance: "w2", fingerprint: "pause-page-v1", maxInFlight: 3, ...tunables });
        worker = startWorker({ coordinator: c, source: source(), logger: () => {}, afterStall: "wait" });
        browser = await puppeteer.connect({ browserWSEndpoint: chrome.wsEndpoint, defaultViewport: { width: 1280, height: 1000 } });
        const page = await browser.newPage();
        const errors: string[] = [];
        page.on("pageerror", (e) => errors.push(String(e)));
        page.on("dialog", (d) => {
          errors.push(`a native dialog: ${d.message()}`);
          void d.dismiss();
        });
        await page.goto(`http://127.0.0.1:${service.port}/`, { waitUntil: "load", timeout: 15_000 });
        await waitFor(page, "splits running", `+${byId("count-owned")} >= 4`);
        assert.equal(await text(page, "#pause-job"), "Pause job");
        assert.equal(await hidden(page, "#paused"), true);

        // Without the token: no question, a notice. With it: a confirmation, and "Keep it" keeps the job running.
        await page.click("#pause-job");
        await waitFor(page, "the missing-token notice", `${byId("notice")}.startsWith("Type the operator token first")`);
        await page.type("#token", TOKEN);
        await page.click("#token-form button[type=submit]");
        await page.click("#pause-job");
        await waitFor(page, "the pause confirmation", `document.getElementById("confirm").open`);
        assert.match(await text(page, "#confirm-text"), new RegExp(`^Pause ${JOB}\\? The leader deals nothing new and every worker hands back the split it runs`));
        assert.equal(await text(page, "#confirm-yes"), "Pause job");
        await page.screenshot({ path: `${out}/p1-confirm-pause.png`, fullPage: false });
        await page.click("#confirm-no");
        await new Promise((r) => setTimeout(r, 2500)); // a poll later
        assert.equal(await hidden(page, "#paused"), true, "kept running");
        assert.ok(+(await text(page, "#count-owned")) > 0);

        // Paused: the page says so, the workers hand back what they ran, nothing runs.
        await page.click("#pause-job");
        await waitFor(page, "the pause confirmation", `document.getElementById("confirm").open`);
        await page.click("#confirm-yes");
        await waitFor(page, "the pause notice", `${byId("notice")}.startsWith("Job paused")`);
        await waitFor(page, "the page to say paused, nothing owned", `!document.getElementById("paused").hidden && ${byId("count-owned")} === "0"`);
        holdLastStep = false; // paused: what resumes may complete
        assert.match(await text(page, "#paused"), /^Paused since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d .* by POST \/job\/pause on w1 · the leader deals nothing new/);
        assert.equal(await text(page, "#eta"), "Paused: nothing runs until the job is resumed");
        assert.match(await page.title(), /^paused · /);
        assert.equal(await text(page, "#resume-job"), "Resume job");
        const completedPaused = await text(page, "#count-completed");
        const status = await (await fetch(`http://127.0.0.1:${service.port}/status`)).json() as { paused: boolean };
        assert.equal(status.paused, true, "/status says paused");
        const metrics = await (await fetch(`http://127.0.0.1:${service.port}/metrics`)).text();
        const leads = /etl_coordination_leader\{[^}]*\} 1/.test(metrics);
        if (leads) assert.match(metrics, /^etl_coordination_job_paused\{[^}]*\} 1$/m);
        await new Promise((r) => setTimeout(r, 2500));
        assert.equal(await text(page, "#count-owned"), "0", "nothing is dealt while paused");
        assert.equal(await text(page, "#count-completed"), completedPaused, "nothing completes while paused");
        await page.screenshot({ path: `${out}/p2-paused.png`, fullPage: true });

        // Resumed: the job continues from the last commits.
        await page.click("#resume-job");
        await waitFor(page, "the resume confirmation", `document.getElementById("confirm").open`);
        assert.match(await text(page, "#confirm-text"), /each continues from its last commit/);
        await page.click("#confirm-yes");
        await waitFor(page, "the page to say running again", `document.getElementById("paused").hidden && +${byId("count-owned")} > 0`);
        assert.equal(await text(page, "#pause-job"), "Pause job");
        await page.screenshot({ path: `${out}/p3-resumed.png`, fullPage: true });

        // The bad split is marked permanent; cancelled from the page, the job finishes saying what it skipped.
        await waitFor(page, "the stall on the permanent failure", `${byId("eta")}.startsWith("Stalled")`, 60_000);
        const q = await text(page, `#quarantined tr[data-split="${BAD}"]`);
        assert.match(q, /^s013\s+1 permanent\s/, q);
        assert.match(q, /w[12] \(permanent\): run threw: PermanentFailure: part-13\.csv: 404/);
        await page.click(`#quarantined tr[data-split="${BAD}"] td:last-child button:last-child`);
        await waitFor(page, "the cancel confirmation", `document.getElementById("confirm").open`);
        await page.click("#confirm-yes");
        await waitFor(page, "done except the cancelled split", `${byId("eta")}.startsWith("Finished") && ${byId("meta")}.includes("outcome allComplete")`, 30_000);
        assert.match(await text(page, "#eta"), /· except 1 cancelled split \(skipped\)$/);
        assert.match(await page.$eval("#eta", (e) => (e as unknown as Shown).className), /warn/, "done except skipped is not green");
        assert.match(await text(page, "#meta"), /outcome allComplete \(1 cancelled\)/);
        await page.screenshot({ path: `${out}/p4-done-skipped.png`, fullPage: true });

        // Rerun the finished job: the page lists its earlier run.
        const r = await rerunJob(stores[0]);
        assert.equal(r.outcome, "rerun", r.message);
        await waitFor(page, "the earlier runs listed", `!document.getElementById("runs").hidden && ${byId("meta")}.includes("run 2 · ")`);
        assert.match(await text(page, "#eta"), /^Run 2 is not planned yet: its leader plans it once a worker runs/);
        assert.equal(await hidden(page, "#result"), true, "no result shown for a run not planned yet");
        const run1 = await text(page, '#runs-table tr[data-run="1"]');
        assert.match(run1, /^run 1\s+allComplete · 15 completed, 1 cancelled\s+16\s+150\s+1\s+[\d.]+ s\s+\d{4}-\d\d-\d\d /, run1);
        await page.screenshot({ path: `${out}/p5-rerun.png`, fullPage: true });
        assert.deepEqual(errors, [], "no script errors, no native dialogs");
      })(), 180_000, "the pause page test");
    } finally {
      await (browser as Browser | undefined)?.disconnect().catch(() => {});
      await withTimeout((worker as Worker | undefined)?.shutdown({ deadlineMs: 0 }).catch(() => {}) ?? Promise.resolve(), 20_000, "w2 to shut down");
      await withTimeout((service as Service | undefined)?.shutdown("test over").catch(() => {}) ?? Promise.resolve(), 20_000, "w1 to shut down");
      for (const s of stores) await s.close().catch(() => {});
      console.log(`screenshots: ${out}`);
    }
  },
});
