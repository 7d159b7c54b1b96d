// The live fleet page in a real browser: Debian's Chromium, headless, driven
// by puppeteer-core, against a worker serving on a loopback port (the Deno
// adapter) with a second worker beside it. Asserts what a person sees —
// counts, members, a quarantined split with its failure, requeue refused
// without the token and done with it — and saves screenshots in a temp dir
// printed in the log. Skipped, saying so, only when Chromium is not
// installed (scripts/test.mjs installs it with apt-get when it can).
import assert from "node:assert/strict";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { serve } from "../../adapters/deno.ts";
import { SplitCoordinator } from "../../src/coordinator/coordinator.ts";
import type { Service } from "../../src/runtime/serve_core.ts";
import type { SplitSource } from "../../src/runtime/source.ts";
import { startWorker } from "../../src/runtime/worker.ts";
import { type Worker } from "../../src/runtime/worker_types.ts";
import { MemoryStore } from "../../src/store/memory_store.ts";
import { Chromium, findChromium } from "../helpers/chromium.ts";
import { withTimeout } from "../helpers/deadline.ts";

const chromium = findChromium();
if (!chromium) {
  console.log("SKIP fleet page browser test: chromium is not installed (apt-get install -y chromium; scripts/test.mjs does it as root)");
}
const TOKEN = "page-t0ken";
const LIMIT_MS = 120_000;

/** The job: s0-s7 finish after a few commits, s8 runs until stopped (keeps the job open), s9 is poison until fixed. */
function source(state: { poisoned: boolean }): SplitSource<{ n: number }> {
  return {
    fingerprint: () => "fleet-page-v1",
    plan: () =>
      Promise.resolve({
        finality: "final",
        splits: Array.from({ length: 10 }, (_, n) => ({ id: `s${n}`, descriptor: { n, file: `part-${n}.csv` } })),
      }),
    async run(lane) {
      const stopped = () => lane.signal.aborted || lane.revokeSignal.aborted;
      if (lane.splitId === "s9" && state.poisoned) throw new Error("could not parse row 7 of part-9.csv");
      if (lane.splitId === "s8") {
        for (let i = 1; !stopped(); i++) {
          await lane.commit({ watermark: i });
          await new Promise((r) => setTimeout(r, 300));
        }
        return;
      }
      for (let i = 1; i <= 4 && !stopped(); i++) {
        await new Promise((r) => setTimeout(r, 150));
        await lane.commit({ watermark: i * 25 });
      }
      if (!stopped()) await lane.complete();
    },
  };
}

/** What the page shows of an element (the test is type-checked without the DOM lib). */
type Shown = { innerText: string };
const text = (page: Page, selector: string) => page.$eval(selector, (e) => (e as unknown as Shown).innerText.trim());

async function waitText(page: Page, what: string, fn: string, ms = 15_000): Promise<void> {
  try {
    await page.waitForFunction(fn, { timeout: ms, polling: 100 });
  } catch (e) {
    const body = await page.$eval("body", (b) => (b as unknown as Shown).innerText).catch(() => "(no page)");
    throw new Error(`timed out after ${ms} ms waiting for ${what} (${(e as Error).message}); the page shows:\n${body.slice(0, 3000)}`);
  }
}

Deno.test({
  name: "fleet page in Chromium: counts, members, a quarantined split with its failure, requeue with a typed token",
  ignore: !chromium,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const out = await Deno.makeTempDir({ prefix: "splitlease-fleet-page-" });
    console.log(`screenshots: ${out}`);
    const state = { poisoned: true };
    const store = new MemoryStore();
    let service: Service | undefined;
    let w2: Worker | undefined;
    let browser: Browser | undefined;
    let limit: ReturnType<typeof setTimeout> | undefined;
    await using chrome = await Chromium.start(chromium!);
    const tunables = { leaseMs: 1500, opTimeoutMs: 500, drainDeadlineMs: 1000, maxAttempts: 2, retryBackoffMs: 50 };
    const body = async () => {
      service = await serve({
        store, source: source(state), job: "page", instance: "w1", port: 0, hostname: "127.0.0.1",
        drainToken: TOKEN, exit: false, logger: () => {}, maxInFlight: 3, ...tunables,
      });
      const c2 = await SplitCoordinator.join({ store, job: "page", instance: "w2", fingerprint: "fleet-page-v1", maxInFlight: 3, ...tunables });
      w2 = startWorker({ coordinator: c2, source: source(state), logger: () => {}, maxInFlight: 3 });

      browser = await puppeteer.connect({ browserWSEndpoint: chrome.wsEndpoint, defaultViewport: { width: 1280, height: 1200 } });
      const page = await browser.newPage();
      const dialogs: string[] = [];
      page.on("dialog", (d) => {
        dialogs.push(d.message());
        void d.accept();
      });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      await page.goto(`http://127.0.0.1:${service.port}/`, { waitUntil: "load", timeout: 15_000 });

      // What a person sees once the poison split is parked and the others are done.
      await waitText(page, "1 quarantined split and 8 completed", `document.getElementById("count-quarantined").textContent === "1" &&
        document.getElementById("count-completed").textContent === "8"`, 30_000);
      await waitText(page, "the failure history of s9", `(document.querySelector('#quarantined tr[data-split="s9"]')?.innerText ?? "").split("could not parse row 7").length === 3`);
      assert.equal(await text(page, "#count-total"), "10");
      assert.equal(await text(page, "#count-owned"), "1", "s8 runs");
      assert.equal(await text(page, "#count-unclaimed"), "0");
      assert.match(await text(page, "#progress-text"), /^8 of 10 finished \(80% of the weight completed\)$/);
      const members = await page.$$eval("#members tbody tr", (rows) => rows.map((r) => (r as unknown as Shown).innerText.replace(/\s+/g, " ").trim()));
      assert.equal(members.length, 2);
      assert.match(members[0], /^w1 ★ leader deno [\d.]+ 0\.2\.0 \d \/ 3 \d+ alive Drain$/, members[0]);
      assert.match(members[1], /^w2 web 0\.2\.0 \d \/ 3 \d+ alive Drain$/, members[1]);
      assert.match(await text(page, "#liveness"), /alive as judged by the leader w1/);
      const row = await text(page, '#quarantined tr[data-split="s9"]');
      assert.match(row, /^s9\s+2\s+\d+\s+\{"n":9,"file":"part-9\.csv"\}/);
      assert.match(row, /w[12]: run threw: Error: could not parse row 7 of part-9\.csv/);
      assert.match(await text(page, '#runnable tr[data-split="s8"]'), /^s8\s+w[12]\s+\d+\s+0\s+at \d+/);
      assert.match(await text(page, "#meta"), /served by w1 \(leader\) · leader w1 \(term \d+\) · plan final, 10 planned/);
      await waitText(page, "a throughput figure", `/^splits\\/min: \\d+\\.\\d over the \\d+ s this page has been open/.test(document.getElementById("throughput").textContent)`);
      await page.screenshot({ path: `${out}/1-quarantined.png`, fullPage: true });

      // Requeue without a token, then with a wrong one: nothing happens, the page says why.
      const requeue = '#quarantined tr[data-split="s9"] button';
      await page.click(requeue);
      await waitText(page, "the missing-token notice", `document.getElementById("notice").textContent.startsWith("Type the operator token first")`);
      await page.type("#token", "wrong-token");
      await page.click("#token-form button[type=submit]");
      assert.equal(await text(page, "#token-state"), "token set (kept in this page only)");
      assert.equal(await page.$eval("#token", (e) => (e as unknown as { value: string }).value), "", "the field is cleared");
      await page.click(requeue);
      await waitText(page, "the refusal", `document.getElementById("notice").textContent.includes("refused (401)")`);
      assert.equal(await text(page, "#count-quarantined"), "1");

      // The input is fixed; requeue with the right token: the split runs again and completes.
      state.poisoned = false;
      await page.type("#token", TOKEN);
      await page.click("#token-form button[type=submit]");
      await page.click(requeue);
      await waitText(page, "the requeue notice", `/^Split "s9" requeued at epoch \\d+/.test(document.getElementById("notice").textContent)`);
      await waitText(page, "no quarantined split left", `document.getElementById("count-quarantined").textContent === "0" &&
        document.querySelectorAll("#quarantined tbody tr").length === 0`);
      await waitText(page, "s9 completed (9 completed)", `document.getElementById("count-completed").textContent === "9"`);
      await waitText(page, "throughput above zero", `/^splits\\/min: [1-9]/.test(document.getElementById("throughput").textContent)`);
      const s9 = JSON.parse((await store.get("split.s9"))!.value);
      assert.equal(s9.status, "completed");
      assert.equal(s9.failures.length, 2, "the failure history is kept");
      assert.ok(!(await page.content()).includes(TOKEN), "the token is not in the document");
      assert.deepEqual(errors, [], "no script errors");
      assert.deepEqual(dialogs, []);
      await page.screenshot({ path: `${out}/2-requeued.png`, fullPage: true });
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
      await withTimeout((w2 as Worker | undefined)?.shutdown({ deadlineMs: 0 }).catch(() => {}) ?? Promise.resolve(), 20_000, "worker w2 to shut down");
      await withTimeout((service as Service | undefined)?.shutdown("test over").catch(() => {}) ?? Promise.resolve(), 20_000, "the served worker to shut down");
      await store.close();
      console.log(`screenshots: ${out}`);
    }
  },
});
