// The fleet page says what is true in every outcome (issue 40, item 6), in
// a real browser (Debian's Chromium, headless, through puppeteer-core). The
// page is served as `splitlease ui` serves it (a member with no lanes and no
// planner, instance `splitlease-ui-…`, afterStall "wait", afterCompletion
// "idle", drainOpen on loopback) over a MemoryStore, after the job's only
// worker left:
//
// - stalled: the ETA and the empty members table both say how to repair it
//   (it used to say "none: the job is over and its workers left" under
//   "Stalled … requeue or cancel below"), and the Requeue button works;
// - complete (the requeued split run by a worker started again): the
//   result, and "the job is complete";
// - deleted (every record removed, as `splitlease delete` does): gone, with
//   nothing of the job left on the page;
// - cancelled (every split of another job cancelled from the page): gone
//   too, "Cancelled", no result.
//
// The deletion of a NATS bucket under a page is in ui_finished_test.ts.
// Screenshots (outcome-*.png) go to a fresh temp dir printed in the log, or
// to $FLEET_PAGE_SCREENSHOTS. Skipped, saying so, without Chromium.
import assert from "node:assert/strict";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { serve } from "../../adapters/deno.ts";
import { MemoryStore, SplitCoordinator, type SplitSource, startWorker } from "../../mod.ts";
import type { Service } from "../../host.ts";
import { UI_INSTANCE_PREFIX } from "../../src/fleet/fleet_view.ts";
import { Chromium, findChromium, screenshotDir } from "../helpers/chromium.ts";
import { withTimeout } from "../helpers/deadline.ts";

const chromium = findChromium();
if (!chromium) console.log("SKIP fleet page outcome tests: chromium is not installed (apt-get install -y chromium)");
const TIMING = { leaseMs: 2000, opTimeoutMs: 500, drainDeadlineMs: 1000, retryBackoffMs: 50 };
const LIMIT_MS = 120_000;

/** Splits `ids`; those in `poison` throw until `state.fixed`. */
function source(ids: string[], poison: string[], state: { fixed: boolean }): SplitSource<{ id: string }> {
  return {
    fingerprint: () => `outcomes-${ids.join("-")}`,
    plan: () => Promise.resolve({ finality: "final", splits: ids.map((id) => ({ id, descriptor: { id } })) }),
    async run(lane) {
      if (poison.includes(lane.splitId) && !state.fixed) throw new Error(`cannot parse ${lane.splitId}`);
      await lane.commit({ watermark: 1 }, { records: 10 });
      await lane.complete({ watermark: 2 });
    },
  };
}

/** Runs one worker on `job` until it ends (on the stall, or on completion). */
async function runWorker(store: MemoryStore, job: string, src: SplitSource<{ id: string }>): Promise<string> {
  const c = await SplitCoordinator.join({
    store, job, instance: "w1", fingerprint: src.fingerprint(), planner: (x) => src.plan(x), maxInFlight: 2, maxAttempts: 1, ...TIMING,
  });
  const outcome = await withTimeout(startWorker({ coordinator: c, source: src, logger: () => {} }).done, 30_000, `the worker of ${job} to end`);
  return outcome.kind === "drained" ? outcome.reason : outcome.kind;
}

/** What `splitlease ui` starts: a member with no lanes and no planner serving the page, through stalls and past the end. */
function ui(store: MemoryStore, job: string, fingerprint: string): Promise<Service> {
  const refuse = () => Promise.reject(new Error("splitlease ui runs no split"));
  return serve({
    store, job, instance: `${UI_INSTANCE_PREFIX}0utc0me5`, source: { fingerprint: () => fingerprint, plan: refuse, run: refuse },
    join: (j) => SplitCoordinator.join({ ...j, planner: undefined }),
    maxInFlight: 0, afterStall: "wait", afterCompletion: "idle", drainOpen: true, port: 0, hostname: "127.0.0.1", exit: false,
    logger: () => {}, ...TIMING,
  });
}

type Shown = { innerText: string };
const text = (page: Page, selector: string) => page.$eval(selector, (e) => (e as unknown as Shown).innerText.trim());
const visible = (page: Page, selector: string) => page.$eval(selector, (e) => (e as unknown as { offsetParent: unknown }).offsetParent !== null);
const byId = (id: string) => `document.getElementById(${JSON.stringify(id)}).textContent`;

async function waitFor(page: Page, what: string, fn: string, ms = 20_000): Promise<void> {
  try {
    await page.waitForFunction(fn, { timeout: ms, polling: 100 });
  } catch (e) {
    const body = await page.$eval("body", (b) => (b as unknown as Shown).innerText).catch(() => "(no page)");
    throw new Error(`timed out after ${ms} ms waiting for ${what} (${(e as Error).message}); the page shows:\n${body.slice(0, 3000)}`);
  }
}

/** Clicks an action button (in the page, at once: the tables are redrawn at every poll) and its confirmation. */
async function confirmClick(page: Page, selector: string): Promise<void> {
  await waitFor(page, `the button ${selector}`, `document.querySelector(${JSON.stringify(selector)}) !== null`);
  await page.evaluate(`document.querySelector(${JSON.stringify(selector)}).click()`);
  await waitFor(page, "the confirmation", `document.getElementById("confirm").open`);
  await page.click("#confirm-yes");
}

/** Opens a page on `service` with script errors collected. */
async function open(browser: Browser, service: Service): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("dialog", (d) => {
    errors.push(`a native dialog: ${d.message()}`);
    void d.dismiss();
  });
  await page.goto(`http://127.0.0.1:${service.port}/`, { waitUntil: "load", timeout: 15_000 });
  return { page, errors };
}

/** Runs `body` against a browser, within LIMIT_MS, closing what it opened. */
async function withBrowser(body: (browser: Browser, out: string, services: Service[]) => Promise<void>): Promise<void> {
  const out = await screenshotDir("splitlease-outcomes-");
  await using chrome = await Chromium.start(chromium!);
  const browser = await puppeteer.connect({ browserWSEndpoint: chrome.wsEndpoint, defaultViewport: { width: 1280, height: 1000 } });
  const services: Service[] = [];
  let limit: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      body(browser, out, services),
      new Promise<never>((_, rej) => {
        limit = setTimeout(() => rej(new Error(`the browser test did not finish within ${LIMIT_MS / 1000} s`)), LIMIT_MS);
      }),
    ]);
  } finally {
    clearTimeout(limit);
    await browser.disconnect().catch(() => {});
    for (const s of services) await withTimeout(s.shutdown("test over").catch(() => {}), 20_000, "the page's server to stop");
    console.log(`screenshots: ${out}`);
  }
}

Deno.test({
  name: "fleet page outcomes (Chromium): a stalled job shows its repair, a complete one its result, a deleted one that it is gone",
  ignore: !chromium,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withBrowser(async (browser, out, services) => {
      const store = new MemoryStore();
      const job = "stalls";
      const state = { fixed: false };
      const src = source(["a", "b", "c"], ["b"], state);
      assert.equal(await runWorker(store, job, src), "stalled", "the worker exits on the stall");
      const service = await ui(store, job, src.fingerprint());
      services.push(service);
      const { page, errors } = await open(browser, service);

      // Stalled, its workers gone: what repairs it, and nowhere that it is over.
      await waitFor(page, "the stall", `${byId("eta")}.startsWith("Stalled") && ${byId("meta")}.includes("outcome stalled")`);
      assert.equal(await text(page, "#eta"), "Stalled: only 1 quarantined split is left · requeue or cancel below");
      assert.equal(
        await text(page, "#members tbody"),
        "none: the workers left on the stall; requeue or cancel below reopens the job, then start workers to run it",
      );
      assert.match(await text(page, "#members-also"), /^Also watching \(splitlease ui, no work\): splitlease-ui-0utc0me5 \(serves this page\)/);
      assert.doesNotMatch(await text(page, "body"), /job is over/, "no word of the job being over");
      assert.equal(await visible(page, "#result"), false, "no result: the job is not done");
      assert.equal(await visible(page, `#quarantined tr[data-split="b"] td:last-child button:first-child`), true, "a Requeue button");
      assert.equal(await page.title(), "stalled · stalls · splitlease");
      await page.screenshot({ path: `${out}/outcome-1-stalled.png`, fullPage: true });

      // The repair from the page, then a worker started again runs the split: complete, with its result.
      state.fixed = true;
      await confirmClick(page, `#quarantined tr[data-split="b"] td:last-child button:first-child`);
      await waitFor(page, "the requeue notice", `/^Split "b" requeued at epoch \\d+/.test(${byId("notice")})`);
      assert.equal(await runWorker(store, job, src), "complete");
      await waitFor(page, "the job done", `${byId("eta")}.startsWith("Finished") && ${byId("meta")}.includes("outcome allComplete") &&
        !document.getElementById("result").hidden`, 30_000);
      assert.equal(await text(page, "#members tbody"), "none: the job is complete and its workers left");
      assert.equal(await text(page, `#result-list dd[data-k="splits"]`), "3 completed");
      assert.equal(await text(page, `#result-list dd[data-k="failures"]`), "1 failed run");
      await waitFor(page, "the read-only note", `${byId("operator-note")}.startsWith("The job is finished")`);
      assert.equal(await page.title(), "done · stalls · splitlease");
      await page.screenshot({ path: `${out}/outcome-2-complete.png`, fullPage: true });

      // Deleted (its records removed, as splitlease delete does): gone, nothing of it shown.
      for (const filter of ["job", "plan", "leader", "member.", "split.", "spec.", "assign."]) {
        for (const e of await store.list(filter)) await store.delete(e.key);
      }
      await waitFor(page, "the page to say the job is gone", `!document.getElementById("gone").hidden`);
      assert.equal(
        await text(page, "#gone"),
        'Gone: job "stalls" is gone: its records were deleted. Nothing of it is left to show or to repair; this page looks again ' +
          "every 2 s (a new run under the same name shows here).",
      );
      for (const part of ["#members", "#result", "#eta", "#quarantined", "#splits", "#recent", "#meta"]) {
        assert.equal(await visible(page, part), false, `${part} is not shown`);
      }
      assert.equal(await page.title(), "gone · splitlease");
      await page.screenshot({ path: `${out}/outcome-3-deleted.png`, fullPage: true });
      assert.deepEqual(errors, [], "no script errors, no native dialogs");
    }),
});

Deno.test({
  name: "fleet page outcomes (Chromium): a job whose every split was cancelled says it is cancelled and gone, with no result",
  ignore: !chromium,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withBrowser(async (browser, out, services) => {
      const store = new MemoryStore();
      const job = "cancels";
      const src = source(["x", "y"], ["x", "y"], { fixed: false });
      assert.equal(await runWorker(store, job, src), "stalled");
      const service = await ui(store, job, src.fingerprint());
      services.push(service);
      const { page, errors } = await open(browser, service);
      await waitFor(page, "the stall", `${byId("eta")}.startsWith("Stalled: only 2 quarantined splits are left")`);
      for (const id of ["x", "y"]) {
        await confirmClick(page, `#quarantined tr[data-split="${id}"] td:last-child button:last-child`);
        await waitFor(page, `the cancel of ${id}`, `/^Split "${id}" cancelled/.test(${byId("notice")})`);
      }
      await waitFor(page, "the cancelled job", `${byId("eta")}.startsWith("Cancelled") && ${byId("meta")}.includes("outcome allComplete")`, 30_000);
      assert.equal(await text(page, "#eta"), "Cancelled: all 2 splits were cancelled; nothing is left to run");
      assert.equal(await text(page, "#members tbody"), "none: every split was cancelled and the workers left");
      assert.equal(await visible(page, "#result"), false, "no result: nothing ran to the end");
      assert.equal(await text(page, "#progress-text"), "0% done · 0 of 2 splits completed, 2 cancelled");
      assert.equal(await page.title(), "cancelled · cancels · splitlease");
      await page.screenshot({ path: `${out}/outcome-4-cancelled.png`, fullPage: true });
      assert.deepEqual(errors, [], "no script errors, no native dialogs");
    }),
});
