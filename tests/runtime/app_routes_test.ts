/**
 * An app users can extend (issue 24, item 4): routes and middleware added
 * through `routes` (createApp and serve), the app handed back as a Hono app
 * and mounted under a prefix of the user's own Hono app. In process with
 * `app.request` (no sockets), and once through a real `serve()` on Deno.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { serve } from "../../adapters/deno.ts";
import { createApp } from "../../host.ts";
import { ManualClock } from "../../testing.ts";
import { startWorker, MemoryStore, SplitleaseError } from "../../mod.ts";
import type { SplitSource } from "../../mod.ts";
import { idleSource } from "../helpers/idle_source.ts";
import { ScriptedCoordinator } from "../helpers/scripted_coordinator.ts";

function worker() {
  return startWorker({ coordinator: new ScriptedCoordinator(), clock: new ManualClock(), logger: () => {}, source: idleSource });
}

Deno.test("app routes: a route and a middleware added with routes answer beside the built-in routes", async () => {
  const w = worker();
  const seen: string[] = [];
  const app = createApp({
    worker: w,
    routes: (app) => {
      app.use("*", async (c, next) => {
        seen.push(new URL(c.req.url).pathname);
        await next();
        c.res.headers.set("x-mine", "1");
      });
      app.get("/hello", (c) => c.json({ hello: "world" }));
    },
  });
  assert.ok(app instanceof Hono, "createApp hands back the Hono app");
  const hello = await app.request("/hello");
  assert.equal(hello.status, 200);
  assert.deepEqual(await hello.json(), { hello: "world" });
  // The middleware runs for the built-in routes too, and they still answer.
  const health = await app.request("/healthz");
  assert.equal(health.status, 200);
  assert.equal(health.headers.get("x-mine"), "1");
  const metrics = await app.request("/metrics");
  assert.match(await metrics.text(), /^etl_coordination_/m);
  const missing = await app.request("/nope");
  assert.equal(missing.status, 404);
  assert.deepEqual(await missing.json(), { error: "no route for GET /nope" });
  assert.deepEqual(seen, ["/hello", "/healthz", "/metrics", "/nope"]);
  // Hono builds its router at the first request: routes are added before (hence the `routes` hook).
  assert.throws(() => app.get("/later", (c) => c.text("later")), /Can not add a route since the matcher is already built/);
  await w.shutdown({ deadlineMs: 0 });
});

Deno.test("app routes: the built-in routes mounted under a prefix of the user's own Hono app", async () => {
  const w = worker();
  const mine = new Hono();
  mine.get("/", (c) => c.text("my home"));
  mine.route("/ops", createApp({ worker: w, drainToken: "tok" }));
  assert.equal(await (await mine.request("/")).text(), "my home");
  const health = await mine.request("/ops/healthz");
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), { ok: true, state: "running" });
  const status = await (await mine.request("/ops/status")).json();
  assert.equal(status.worker.draining, false);
  assert.match(await (await mine.request("/ops/metrics")).text(), /^# TYPE etl_coordination_/m);
  // The built-in answers keep their rules under the prefix: 405 with Allow, 401 without the token.
  const wrong = await mine.request("/ops/drain");
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.get("allow"), "POST");
  assert.equal((await mine.request("/ops/drain", { method: "POST" })).status, 401);
  // Nothing is served at the root paths: they are the user's.
  assert.equal((await mine.request("/healthz")).status, 404);
  const drained = await mine.request("/ops/drain", { method: "POST", headers: { authorization: "Bearer tok" } });
  assert.equal(drained.status, 202);
  await w.done;
});

Deno.test("app routes: the fleet page under a prefix links to, and fetches from, the routes beside it", async () => {
  const w = worker();
  const store = new MemoryStore();
  await store.create("job", JSON.stringify({ v: 2, fingerprint: "f", createdAt: 0 })); // joined: a job with no record at all reads as deleted (410)
  const mine = new Hono();
  mine.route("/ops", createApp({ worker: w, store }));
  const html = await (await mine.request("/ops")).text();
  assert.match(html, /<script src="\/ops\/fleet\.js" data-base="\/ops" defer><\/script>/);
  assert.match(html, /<link rel="stylesheet" href="\/ops\/fleet\.css">/);
  assert.match(html, /<link rel="icon" href="\/ops\/favicon\.svg"/);
  assert.ok(!/(?:src|href)="\/(?:fleet|favicon)/.test(html), "nothing links to the root paths, which are the user's");
  const js = await (await mine.request("/ops/fleet.js")).text();
  assert.ok(js.includes("fetch(BASE + url") && js.includes("fetch(BASE + path"), "every request of the script goes beside the page");
  for (const path of ["/ops/fleet.css", "/ops/favicon.svg", "/ops/fleet?limit=1"]) assert.equal((await mine.request(path)).status, 200, path);
  // At the root, as before: the base is empty.
  const root = createApp({ worker: w, store });
  assert.match(await (await root.request("/")).text(), /<script src="\/fleet\.js" data-base="" defer>/);
  await w.shutdown({ deadlineMs: 0 });
});

Deno.test("app routes: routes that is not a function is refused by createApp and serve", async () => {
  const w = worker();
  assert.throws(
    () => createApp({ worker: w, routes: "hello" as never }),
    (e) => e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && /routes must be a function/.test(e.message),
  );
  await w.shutdown({ deadlineMs: 0 });
  await assert.rejects(
    serve({ store: new MemoryStore(), source: idleSource, job: "j", port: 0, exit: false, logger: () => {}, routes: 42 as never }),
    (e) =>
      e instanceof SplitleaseError && e.code === "INVALID_CONFIG" &&
      e.message === "serve: routes must be a function that adds routes to the app, got number",
  );
});

/** One split that runs until it is revoked or aborted: the job stays open while the test probes. */
const oneLongSplit: SplitSource<unknown> = {
  ...idleSource,
  plan: () => Promise.resolve({ finality: "final", splits: [{ id: "only", descriptor: {} }] }),
};

Deno.test({
  name: "app routes: serve() on Deno answers a route added in three lines over a real socket",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const store = new MemoryStore();
    const service = await serve({
      store,
      source: oneLongSplit,
      job: "routes",
      port: 0,
      hostname: "127.0.0.1",
      exit: false,
      logger: () => {},
      routes: (app) => app.get("/hello", (c) => c.text("hello from my route")),
    });
    try {
      const hello = await fetch(`http://127.0.0.1:${service.port}/hello`);
      assert.equal(hello.status, 200);
      assert.equal(await hello.text(), "hello from my route");
      const health = await fetch(`http://127.0.0.1:${service.port}/healthz`);
      assert.equal(health.status, 200);
      await health.body?.cancel();
      // The adapter supplies the heap reading of the process metrics (issue 24, item 3).
      const metrics = await (await fetch(`http://127.0.0.1:${service.port}/metrics`)).text();
      assert.match(metrics, /^etl_coordination_heap_used_bytes\{splitlease_job="routes"\} [1-9]\d*$/m);
      assert.match(metrics, /^etl_coordination_resident_memory_bytes\{splitlease_job="routes"\} [1-9]\d*$/m);
      // The app handed back is the one served.
      assert.equal(await (await service.app.request("/hello")).text(), "hello from my route");
    } finally {
      const result = await service.shutdown("test");
      assert.equal(result.exitCode, 0);
      await store.close();
    }
  },
});
