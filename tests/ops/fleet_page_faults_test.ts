// The fleet page's small faults (issue 31, item 8) in headless Chromium, on
// a job over a MemoryStore served by createApp with drainOpen (what
// `splitlease ui` does on a loopback address): no token box where the
// routes need none, and a requeue that works without one; a splitlease ui
// member named apart from the workers, with no Drain button; a quarantined
// count in red only when it is not 0; an ETA that says the job will stall
// on its quarantined split. The page is saved as `faults.png` in a fresh
// temp dir printed in the log (or $FLEET_PAGE_SCREENSHOTS). Skipped, saying
// so, without Chromium.
import assert from "node:assert/strict";
import puppeteer, { type Page } from "puppeteer-core";
import { MemoryStore, SplitCoordinator, type SplitSource, startWorker, type Worker } from "../../mod.ts";
import { createApp } from "../../host.ts";
import { Chromium, findChromium, screenshotDir } from "../helpers/chromium.ts";
import { withTimeout } from "../helpers/deadline.ts";

const chromium = findChromium();
if (!chromium) console.log("SKIP fleet page faults browser test: chromium is not installed (apt-get install -y chromium)");

type Shown = { innerText: string };
const text = (page: Page, selector: string) => page.$eval(selector, (e) => (e as unknown as Shown).innerText.trim());

Deno.test({
  name: "fleet page in Chromium: no token box where the routes need none, a ui member apart, red only for quarantined > 0, an ETA that ends in a stall",
  ignore: !chromium,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const out = await screenshotDir("splitlease-fleet-faults-");
    const store = new MemoryStore();
    const release = Promise.withResolvers<void>();
    let poisoned = true;
    const source: SplitSource<{ n: number }> = {
      fingerprint: () => "faults-v1",
      plan: () => Promise.resolve({ finality: "final", splits: ["done", "long", "poison"].map((id, n) => ({ id, descriptor: { n } })) }),
      async run(lane) {
        if (lane.splitId === "poison" && poisoned) throw new Error("bad row 7");
        if (lane.splitId === "long") {
          await lane.commit({ watermark: 1, estimate: { left: 3, total: 4, unit: "ids" } });
          await Promise.race([release.promise, new Promise((r) => lane.signal.addEventListener("abort", r))]);
        }
        await lane.complete();
      },
    };
    const tunables = { leaseMs: 1500, opTimeoutMs: 300, drainDeadlineMs: 500, maxAttempts: 1 };
    const w1 = await SplitCoordinator.join({ store, job: "faults", instance: "w1", fingerprint: "faults-v1", planner: (c) => source.plan(c), maxInFlight: 3, ...tunables });
    const worker: Worker = startWorker({ coordinator: w1, source, logger: () => {}, maxInFlight: 3, afterStall: "wait" });
    const ui = await SplitCoordinator.join({ store, job: "faults", instance: "splitlease-ui-0a1b2c3d", fingerprint: "faults-v1", maxInFlight: 0, ...tunables });
    const app = createApp({ coordinator: ui, store, drainOpen: true });
    const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, app.fetch);
    await using chrome = await Chromium.start(chromium!);
    try {
      const browser = await puppeteer.connect({ browserWSEndpoint: chrome.wsEndpoint, defaultViewport: { width: 1280, height: 900 } });
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      page.on("dialog", (d) => {
        errors.push(`a native dialog: ${d.message()}`);
        void d.dismiss();
      });
      await page.goto(`http://127.0.0.1:${server.addr.port}/`, { waitUntil: "load", timeout: 15_000 });
      await page.waitForFunction(`document.getElementById("count-quarantined").textContent === "1" &&
        document.getElementById("count-completed").textContent === "1" && document.querySelectorAll("#quarantined tbody tr").length === 1 &&
        /then stalled/.test(document.getElementById("eta").textContent)`, { timeout: 20_000, polling: 100 });
      // The ETA knows the quarantined split stalls the job once the runnable work is done.
      assert.match(await text(page, "#eta"), /^(Runnable work done .* · in .*|ETA unknown: .*) · then stalled on 1 quarantined split unless requeued or cancelled \(below\)$/);
      assert.equal(await page.$eval("#count-quarantined", (e) => (e as unknown as { className: string }).className), "bad");
      // drainOpen: no token to type, and the buttons are there.
      assert.equal(await page.$eval("#operator", (e) => (e as unknown as { hidden: boolean }).hidden), true, "no token box");
      assert.equal(await text(page, "#operator-note"), "");
      // The ui member: named under the table, not a row with a Drain button.
      const members = await page.$$eval("#members tbody tr", (rs) => rs.map((r) => (r as unknown as Shown).innerText.replace(/\s+/g, " ").trim()));
      assert.equal(members.length, 1, members.join("\n"));
      assert.match(members[0], /^w1 ★ leader .* Drain$/);
      assert.equal(await text(page, "#members-also"), "Also watching (splitlease ui, no work): splitlease-ui-0a1b2c3d (serves this page)");
      await page.screenshot({ path: `${out}/faults.png`, fullPage: true });

      // A requeue without a token: asked, confirmed, done.
      poisoned = false;
      await page.click('#quarantined tr[data-split="poison"] td:last-child button:first-child');
      await page.waitForFunction(`document.getElementById("confirm").open`, { timeout: 5_000 });
      await page.click("#confirm-yes");
      await page.waitForFunction(`/^Split "poison" requeued at epoch \\d+/.test(document.getElementById("notice").textContent)`, { timeout: 10_000 });
      await page.waitForFunction(`document.getElementById("count-quarantined").textContent === "0"`, { timeout: 20_000, polling: 100 });
      assert.equal(await page.$eval("#count-quarantined", (e) => (e as unknown as { className: string }).className), "", "0 is not red");
      assert.deepEqual(errors, []);
      await browser.disconnect();
    } finally {
      release.resolve();
      await withTimeout(worker.shutdown({ deadlineMs: 0 }), 20_000, "the worker to stop");
      await ui.close();
      await server.shutdown();
      await store.close();
      console.log(`screenshots: ${out}`);
    }
  },
});
