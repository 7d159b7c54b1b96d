// The live fleet page in a real browser (Debian's Chromium, headless, driven
// by puppeteer-core) on a real job over nats-server: three workers (one
// served with the Deno adapter, whose page the browser opens, two beside it
// on connections of their own) and a standby member, 90 splits whose source
// commits an estimate of the work left, one of them poison until fixed. The
// page is looked at, and saved as a screenshot, at three moments of the job
// — running, stalled, done — plus the requeue confirmation and a
// phone-width window; each screenshot is taken right after the assertions
// about what it shows. The browser runs in Europe/Berlin so dates show a
// zone that is not UTC. The screenshots go to a fresh temp dir printed in
// the log (or to $FLEET_PAGE_SCREENSHOTS): 1-running, 1b-search,
// 1c-phone, 1d-phone-splits, 2-stalled, 3-confirm-requeue, 4-done. Skipped,
// saying so, only when Chromium is not installed (scripts/test.mjs installs
// it with apt-get when it can).
import assert from "node:assert/strict";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { serve } from "../../adapters/deno.ts";
import { SplitCoordinator, startWorker } from "../../mod.ts";
import type { Coordinator, SplitSource, Worker } from "../../mod.ts";
import { NatsStore } from "../../nats.ts";
import type { Service } from "../../host.ts";
import { Chromium, findChromium, screenshotDir } from "../helpers/chromium.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { NatsServer } from "../helpers/nats_server.ts";

const chromium = findChromium();
if (!chromium) {
  console.log("SKIP fleet page browser test: chromium is not installed (apt-get install -y chromium; scripts/test.mjs does it as root)");
}
const TOKEN = "page-t0ken";
const LIMIT_MS = 180_000;
const SPLITS = 90, POISON = "s077", ROWS = 4000;
const JOB = "fleetpage";

/**
 * The job: every split copies ROWS rows in 8 commits, each with an estimate
 * of the rows left (ids); durations vary by split. POISON throws until fixed.
 */
function source(state: { poisoned: boolean }): SplitSource<{ n: number; file: string }> {
  return {
    fingerprint: () => "fleet-page-v2",
    plan: () =>
      Promise.resolve({
        finality: "final",
        splits: Array.from({ length: SPLITS }, (_, n) => ({ id: `s${String(n).padStart(3, "0")}`, descriptor: { n, file: `part-${n}.csv` } })),
      }),
    async run(lane) {
      const stopped = () => lane.signal.aborted || lane.revokeSignal.aborted;
      if (lane.splitId === POISON && state.poisoned) {
        const from = typeof lane.progress?.watermark === "number" ? lane.progress.watermark : 0;
        await lane.commit({ watermark: 500, estimate: { left: ROWS - 500, total: ROWS, unit: "ids" } }, { records: 500 - from });
        throw new Error("could not parse row 512 of part-77.csv");
      }
      const n = lane.descriptor.n;
      const step = 200 + (n % 5) * 60;
      let at = typeof lane.progress?.watermark === "number" ? lane.progress.watermark : 0;
      while (at < ROWS && !stopped()) {
        await new Promise((r) => setTimeout(r, step));
        const next = Math.min(ROWS, at + ROWS / 8);
        await lane.commit({ watermark: next, estimate: { left: ROWS - next, total: ROWS, unit: "ids" } }, { records: next - at });
        at = next;
      }
      if (!stopped()) await lane.complete();
    },
  };
}

/** What the page shows of an element (the test is type-checked without the DOM lib). */
type Shown = { innerText: string };
const text = (page: Page, selector: string) => page.$eval(selector, (e) => (e as unknown as Shown).innerText.trim());
const rows = (page: Page, selector: string) =>
  page.$$eval(selector, (rs) => rs.map((r) => (r as unknown as Shown).innerText.replace(/\s+/g, " ").trim()));
/** A date as the page writes it, in Europe/Berlin (December: UTC+01:00). */
const DATE = /\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC\+01:00/;

async function waitFor(page: Page, what: string, fn: string, ms = 20_000): Promise<void> {
  try {
    await page.waitForFunction(fn, { timeout: ms, polling: 100 });
  } catch (e) {
    const body = await page.$eval("body", (b) => (b as unknown as Shown).innerText).catch(() => "(no page)");
    throw new Error(`timed out after ${ms} ms waiting for ${what} (${(e as Error).message}); the page shows:\n${body.slice(0, 4000)}`);
  }
}
const byId = (id: string) => `document.getElementById(${JSON.stringify(id)}).textContent`;

Deno.test({
  name: "fleet page in Chromium over nats-server: progress and ETA, running first, members, search, split detail, stall, confirmed requeue, done",
  ignore: !chromium,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const out = await screenshotDir("splitlease-fleet-page-");
    console.log(`screenshots: ${out}`);
    const state = { poisoned: true };
    await using nats = await NatsServer.start();
    const stores: NatsStore[] = [];
    const connect = async () => {
      const s = await NatsStore.connect({ servers: nats.wsUrl, job: JOB, opTimeoutMs: 2000 });
      stores.push(s);
      return s;
    };
    let service: Service | undefined;
    const workers: Worker[] = [];
    let standby: Coordinator | undefined;
    let browser: Browser | undefined;
    let limit: ReturnType<typeof setTimeout> | undefined;
    await using chrome = await Chromium.start(chromium!);
    const tunables = { leaseMs: 3000, opTimeoutMs: 1000, drainDeadlineMs: 1000, maxAttempts: 2, retryBackoffMs: 50 };
    const body = async () => {
      service = await serve({
        store: await connect(), source: source(state), job: JOB, instance: "w1", port: 0, hostname: "127.0.0.1",
        drainToken: TOKEN, exit: false, logger: () => {}, maxInFlight: 3, afterCompletion: "idle", stalledIsFatal: false, ...tunables,
      });
      for (const instance of ["w2", "w3"]) {
        const c = await SplitCoordinator.join({ store: await connect(), job: JOB, instance, fingerprint: "fleet-page-v2", maxInFlight: 3, ...tunables });
        workers.push(startWorker({ coordinator: c, source: source(state), logger: () => {}, maxInFlight: 3 }));
      }
      standby = await SplitCoordinator.join({ store: await connect(), job: JOB, instance: "standby", fingerprint: "fleet-page-v2", maxInFlight: 0, ...tunables });
      const base = `http://127.0.0.1:${service.port}`;

      // The favicon browsers ask for, and the one the page links.
      for (const path of ["/favicon.ico", "/favicon.svg"]) {
        const res = await fetch(base + path);
        assert.equal(res.status, 200, path);
        assert.equal(res.headers.get("content-type"), "image/svg+xml");
        assert.match(await res.text(), /^<svg /);
      }

      browser = await puppeteer.connect({ browserWSEndpoint: chrome.wsEndpoint, defaultViewport: { width: 1280, height: 1000 } });
      const page = await browser.newPage();
      await page.emulateTimezone("Europe/Berlin");
      const errors: string[] = [], failed: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      page.on("response", (r) => {
        if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
      });
      page.on("dialog", (d) => {
        errors.push(`a native dialog: ${d.message()}`);
        void d.dismiss();
      });
      await page.goto(`${base}/`, { waitUntil: "load", timeout: 15_000 });

      // 1. Running: a third done, the rest running or waiting.
      await waitFor(page, "30 completed and 6 running with an ETA", `+${byId("count-completed")} >= 30 && +${byId("count-owned")} >= 6 &&
        ${byId("eta")}.startsWith("ETA ") && document.querySelectorAll("#splits tbody tr").length > 0`, 60_000);
      await new Promise((r) => setTimeout(r, 2100)); // one more poll: the ETA has a rate from several completions
      const progress = await text(page, "#progress-text");
      assert.match(progress, /^\d+% done · \d+ of 90 splits completed, \d+ owned(, \d+ unclaimed)?$/, progress);
      const eta = await text(page, "#eta");
      assert.match(eta, new RegExp(`^ETA ${DATE.source} · in (\\d+ s|\\d+ min( \\d\\d s)?)$`), eta);
      const rate = await text(page, "#rate");
      assert.match(rate, /^\d+\.\d splits\/min over the \d+ s since the job began \(\d+ completed\) · job-wide, from the completion times in the split records · running since /, rate);
      assert.match(rate, DATE);
      assert.ok(!rate.includes("this page has been open"));
      assert.ok(
        await page.$$eval("#spark rect", (r) => r.length) > 0,
        "the sparkline shows completions from the records at once",
      );
      // Running splits first, each with its fraction done and the length of its tenancy; then the waiting ones.
      const splitRows = await rows(page, "#splits tbody tr");
      const firstWaiting = splitRows.findIndex((r) => / unclaimed /.test(r));
      const running = splitRows.filter((r) => / owned /.test(r));
      assert.ok(running.length >= 6, splitRows.join("\n"));
      assert.ok(firstWaiting === -1 || splitRows.slice(firstWaiting).every((r) => !/ owned /.test(r)), "owned (running) first");
      for (const r of running) assert.match(r, /^s\d{3} owned w[123] (\d+%|not started) (\d+ s)?/, r);
      assert.ok(running.some((r) => /^s\d{3} owned w[123] [1-9]\d?% \d+ s/.test(r)), running.join("\n"));
      // Members: what each does, when it was last seen, its own rate; the standby shown too.
      const members = await rows(page, "#members tbody tr");
      assert.equal(members.length, 4, members.join("\n"));
      assert.match(members[0], /^standby web 0\.2\.0 0 \/ 0 standby \d+ s ago 0\.0 Drain$/, members[0]);
      assert.match(members[1], /^w1 ★ leader deno [\d.]+ 0\.2\.0 [0-3] \/ 3 (working|idle) \d+ s ago \d+\.\d Drain$/, members[1]);
      for (const m of members.slice(2)) assert.match(m, /^w[23] web 0\.2\.0 [0-3] \/ 3 (working|idle) \d+ s ago \d+\.\d Drain$/, m);
      assert.ok(members.slice(1).some((m) => !/ 0\.0 Drain$/.test(m)), "members complete splits: " + members.join("\n"));
      assert.match(await text(page, "#meta"), new RegExp(`served by w1 \\(leader\\) · leader w1 \\(term \\d+\\) · plan final, 90 planned · updated ${DATE.source}$`));
      // Recently completed: newest first, with the time, who and how long.
      const recent = await rows(page, "#recent tbody tr");
      assert.equal(recent.length, 10);
      for (const r of recent) assert.match(r, new RegExp(`^s\\d{3} ${DATE.source} \\(\\d+ s ago\\) w[123] \\d+ s`), r);
      // One completed split in detail: its tenancy, from the record.
      const done = recent[0].split(" ")[0];
      await page.click(`#recent tr[data-split="${done}"] button.link`);
      await waitFor(page, `the detail of ${done}`, `(document.querySelector("#detail table")?.innerText ?? "").includes("completed")`);
      const detail = await text(page, "#detail");
      assert.match(detail, new RegExp(`^Split\\s+${done}\\s+Close`));
      assert.match(detail, /state\s+completed/);
      assert.match(detail, new RegExp(`completed\\s+${DATE.source}`));
      assert.match(detail, /watermark 4000 · 0 ids of 4,000 ids left \(100% done\)/);
      const tenancies = await rows(page, "#detail table tbody tr");
      assert.ok(tenancies.length >= 1);
      assert.match(tenancies.at(-1)!, new RegExp(`^\\d+ w[123] ${DATE.source} ${DATE.source} \\d+ s completed$`), tenancies.join("\n"));
      assert.equal(new URL(page.url()).hash, `#split=${done}`);
      await page.screenshot({ path: `${out}/1-running.png`, fullPage: true });

      // Search: only the splits whose id, owner or descriptor matches.
      await page.type("#search", "part-4");
      await waitFor(page, "the search result", `[...document.querySelectorAll("#splits tbody tr")].every((r) => /^s0(04|4\\d)$/.test(r.dataset.split)) &&
        document.getElementById("splits-more").textContent.includes("matching “part-4”")`);
      await page.select("#filter", "completed");
      await waitFor(page, "completed splits matching part-4", `document.querySelectorAll("#splits tbody tr").length > 0 &&
        [...document.querySelectorAll("#splits tbody tr")].every((r) => r.innerText.includes("completed") && /^s0(04|4\\d)$/.test(r.dataset.split))`);
      await page.screenshot({ path: `${out}/1b-search.png`, fullPage: true });
      await page.select("#filter", "runnable");
      await page.$eval("#search", (e) => ((e as unknown as { value: string }).value = ""));
      await page.type("#search", " ");
      await page.keyboard.press("Backspace");

      // The same moment on a phone-width window: no sideways scroll of the page itself.
      await page.setViewport({ width: 390, height: 844 });
      await page.evaluate("scrollTo(0, 0)");
      await new Promise((r) => setTimeout(r, 300));
      const overflow = await page.evaluate(`document.documentElement.scrollWidth - document.documentElement.clientWidth`);
      assert.ok((overflow as number) <= 1, `the page scrolls sideways by ${overflow} px at 390 px`);
      assert.match(await text(page, "#eta"), /^(ETA |Finished|Stalled)/);
      await page.screenshot({ path: `${out}/1c-phone.png`, fullPage: false }); // the first screen
      // Further down (a full-page capture at this width crops the right edge in headless Chromium: screens instead).
      await page.evaluate(`document.getElementById("splits").scrollIntoView()`);
      await page.screenshot({ path: `${out}/1d-phone-splits.png`, fullPage: false });
      await page.setViewport({ width: 1280, height: 1000 });

      // 2. Stalled: every split done but the poison one, quarantined after two failures.
      await waitFor(page, "the stall", `${byId("eta")}.startsWith("Stalled") && ${byId("count-completed")} === "89"`, 90_000);
      assert.equal(await text(page, "#eta"), "Stalled: only 1 quarantined split is left · requeue or cancel below");
      assert.equal(await text(page, "#count-quarantined"), "1");
      assert.equal(await page.$eval("#count-quarantined", (e) => (e as unknown as { className: string }).className), "bad");
      assert.equal(await page.$eval("#operator", (e) => (e as unknown as { hidden: boolean }).hidden), false, "the token box: something to repair");
      const q = await text(page, `#quarantined tr[data-split="${POISON}"]`);
      assert.match(q, new RegExp(`^${POISON}\\s+2\\s+\\d+\\s+\\{"n":77,"file":"part-77\\.csv"\\}`));
      assert.equal(q.split("could not parse row 512").length, 3, q);
      assert.match(q, new RegExp(`${DATE.source} w[123]: run threw: Error: could not parse row 512 of part-77\\.csv`));
      await waitFor(page, "the members idle", `[...document.querySelectorAll("#members tbody tr")].every((r) => !r.innerText.includes("working"))`);
      const idle = await rows(page, "#members tbody tr");
      assert.ok(idle.some((m) => /^w1 ★ leader .* 0 \/ 3 idle \d+ s ago/.test(m)), idle.join("\n"));
      assert.ok(idle.some((m) => /^standby .* standby /.test(m)), idle.join("\n"));
      await page.evaluate(`location.hash = "split=${POISON}"`);
      await waitFor(page, `the detail of ${POISON}`, `/state\\s+quarantined/.test(document.querySelector("#detail")?.innerText ?? "")`);
      const pd = await text(page, "#detail");
      assert.match(pd, /watermark 500 · 3,500 ids of 4,000 ids left \(13% done\)/);
      const ptn = await rows(page, "#detail table tbody tr");
      assert.equal(ptn.length, 2, ptn.join("\n"));
      for (const t of ptn) assert.match(t, new RegExp(`^\\d+ w[123] ${DATE.source} ${DATE.source} \\d+ s failed$`), t);
      assert.match(pd, /Failures\s+.*could not parse row 512/s);
      // Each failure folds its stack's first frames: the summary is where it threw (the source, in this file).
      const frames = await page.evaluate(`[...document.querySelectorAll("#detail details.stack")].map((d) => { d.open = true; return d.innerText; })`) as string[];
      assert.equal(frames.length, 2, pd);
      for (const f of frames) assert.match(f, /^at .*fleet_page_test\.ts:\d+:\d+/, f);
      await page.screenshot({ path: `${out}/2-stalled.png`, fullPage: true });

      // Requeue: refused without a token (no question asked), then asked for confirmation; "Keep it" does nothing.
      const requeue = `#quarantined tr[data-split="${POISON}"] td:last-child button:first-child`;
      await page.click(requeue);
      await waitFor(page, "the missing-token notice", `${byId("notice")}.startsWith("Type the operator token first")`);
      await page.type("#token", TOKEN);
      await page.click("#token-form button[type=submit]");
      assert.equal(await text(page, "#token-state"), "token set (kept in this page only)");
      // Drain asks too (kept: the standby stays).
      await page.click('#members tr[data-instance="standby"] button');
      await waitFor(page, "the drain confirmation", `document.getElementById("confirm").open`);
      assert.equal(await text(page, "#confirm-text"), "Drain standby? It hands its 0 split(s) over to the others and exits.");
      assert.equal(await text(page, "#confirm-yes"), "Drain");
      await page.click("#confirm-no");
      await page.click(requeue);
      await waitFor(page, "the confirmation", `document.getElementById("confirm").open`);
      assert.equal(await text(page, "#confirm-text"), `Requeue ${POISON}? It runs again from its last commit, its 2 attempt(s) reset.`);
      await page.click("#confirm-no");
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(await text(page, "#count-quarantined"), "1", "kept");
      assert.doesNotMatch(await text(page, '#members tr[data-instance="standby"]'), /draining/, "not draining");
      state.poisoned = false;
      await page.click(requeue);
      await waitFor(page, "the confirmation", `document.getElementById("confirm").open`);
      await page.screenshot({ path: `${out}/3-confirm-requeue.png`, fullPage: false });
      await page.click("#confirm-yes");
      await waitFor(page, "the requeue notice", `/^Split "${POISON}" requeued at epoch \\d+/.test(${byId("notice")})`);

      // 3. Done: all 90 completed, the requeued split the newest completion, with its whole history.
      await waitFor(page, "the job done and its outcome written", `${byId("eta")}.startsWith("Finished") && ${byId("count-completed")} === "90" &&
        ${byId("meta")}.includes("outcome allComplete")`, 60_000);
      assert.match(await text(page, "#eta"), new RegExp(`^Finished ${DATE.source} · took \\d+ (s|min( \\d\\d s)?)$`));
      assert.equal(await text(page, "#progress-text"), "100% done · 90 of 90 splits completed");
      assert.equal(await text(page, "#count-quarantined"), "0");
      assert.equal(await page.$eval("#count-quarantined", (e) => (e as unknown as { className: string }).className), "", "0 is not red");
      // The done page leads with the result: every row counted once (the poison split resumed at 500), its two failures and the retries.
      const took = /took (\d+ (?:s|min(?: \d\d s)?))$/.exec(await text(page, "#eta"))![1];
      const result = Object.fromEntries(
        await page.$$eval("#result-list dd", (dds) => dds.map((d) => [(d as unknown as { dataset: { k: string } }).dataset.k, (d as unknown as Shown).innerText])),
      );
      assert.equal(await page.$eval("#result", (e) => (e as unknown as { hidden: boolean }).hidden), false);
      assert.equal(result.splits, "90 completed");
      assert.equal(result.records, (SPLITS * ROWS).toLocaleString("en-US"));
      assert.equal(result.failures, "2 failed runs");
      assert.equal(result.retries, "2 runs after a failed or lost run");
      assert.equal(result.cuts, "none");
      assert.match(result.took, new RegExp(`^${took} \\(${DATE.source} to ${DATE.source}\\)$`));
      assert.match(result.rate, new RegExp(`^\\d+\\.\\d splits/min · [\\d,]+ records/s over the ${took} it took$`));
      // The rate over the same window as "took", and no "running since" on a finished job.
      const doneRate = await text(page, "#rate");
      assert.match(doneRate, new RegExp(`^\\d+\\.\\d splits/min · [\\d,]+ records/s over the ${took} it took · `), doneRate);
      assert.doesNotMatch(doneRate, /running since/);
      // w1 idles (afterCompletion idle): read-only, no token box, no action buttons.
      await waitFor(page, "the read-only note", `${byId("operator-note")}.startsWith("The job is finished")`);
      assert.equal(await page.$eval("#operator", (e) => (e as unknown as { hidden: boolean }).hidden), true, "no token box");
      assert.equal(await page.$$eval("#members button", (b) => b.length), 0, "no drain buttons on a finished job");
      assert.match((await rows(page, "#recent tbody tr"))[0], new RegExp(`^${POISON} ${DATE.source}`));
      await waitFor(page, `the detail of ${POISON} completed`, `/state\\s+completed/.test(document.querySelector("#detail")?.innerText ?? "")`);
      const fin = await rows(page, "#detail table tbody tr");
      assert.deepEqual(fin.map((t) => t.split(" ").at(-1)), ["failed", "failed", "completed"], fin.join("\n"));
      assert.match(await text(page, "#meta"), /outcome allComplete/);
      await page.screenshot({ path: `${out}/4-done.png`, fullPage: true });

      assert.ok(!(await page.content()).includes(TOKEN), "the token is not in the document");
      assert.deepEqual(errors, [], "no script errors, no native dialogs");
      assert.deepEqual(failed, [], "no failed requests (the favicon included)");
    };
    try {
      await Promise.race([
        body(),
        new Promise<never>((_, rej) => {
          limit = setTimeout(() => rej(new Error(`the browser test did not finish within ${LIMIT_MS / 1000} s`)), LIMIT_MS);
        }),
      ]);
    } finally {
      clearTimeout(limit);
      await (browser as Browser | undefined)?.disconnect().catch(() => {});
      for (const w of workers) await withTimeout(w.shutdown({ deadlineMs: 0 }).catch(() => {}), 20_000, "a worker to shut down");
      await withTimeout((standby as Coordinator | undefined)?.close().catch(() => {}) ?? Promise.resolve(), 20_000, "the standby to leave");
      await withTimeout((service as Service | undefined)?.shutdown("test over").catch(() => {}) ?? Promise.resolve(), 20_000, "the served worker to shut down");
      for (const s of stores) await s.close().catch(() => {});
      console.log(`screenshots: ${out}`);
    }
  },
});
