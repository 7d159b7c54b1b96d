/**
 * Real processes: a worker on Deno, Bun and Node 24 (the Node one runs
 * esbuild output), against the embedded MemoryStore and a real nats-server.
 * Probes every route, sends SIGTERM mid-job and checks a cooperative drain
 * and exit 0; on NATS a second worker then finishes the job with no replay.
 */
import assert from "node:assert/strict";
import { NatsStore } from "../../nats.ts";
import { SplitRecordSchema } from "../../src/records.ts";
import { NatsServer } from "../helpers/nats_server.ts";
import {
  bin,
  buildOnce,
  kill,
  type Proc,
  root,
  type Runtime,
  sh,
  spawn,
  waitFor,
  withTimeout,
} from "../helpers/worker_procs.ts";

async function get(p: Proc, path: string, init?: RequestInit): Promise<Response> {
  return await withTimeout(fetch(`http://127.0.0.1:${p.port}${path}`, init), 10_000, `${init?.method ?? "GET"} ${path} from the ${p.rt} worker`);
}

/** Runs one worker: probes routes, waits for progress, SIGTERMs, checks the drain. */
async function sigtermMidJob(rt: Runtime, env: Record<string, string>): Promise<Proc> {
  const p = spawn(rt, env);
  try {
    await waitFor("/healthz", async () => (await get(p, "/healthz")).status === 200 || undefined);
    const ready = await waitFor("/readyz", async () => {
      const r = await get(p, "/readyz");
      await r.body?.cancel();
      return r.status === 200 || undefined;
    });
    assert.ok(ready);
    // Work under way: held splits with progress.
    const status = await waitFor("progress", async () => {
      const s = await (await get(p, "/status")).json();
      return s.held.length > 0 && s.worker.lanes.some((l: { progress: unknown }) => l.progress) ? s : undefined;
    });
    assert.equal(status.job, env.JOB);
    assert.match(status.instance, /^[A-Za-z0-9_-]+$/);
    const metrics = await get(p, "/metrics");
    assert.equal(metrics.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    const text = await metrics.text();
    assert.match(text, /^etl_coordination_splits_owned\{splitlease_job="[^"]+"\} [1-9]\d*$/m);
    assert.match(text, /^# TYPE etl_coordination_store_op_duration_seconds histogram$/m);
    // Process metrics: the heap from the adapter's reading (Deno.memoryUsage, process.memoryUsage), the lag from a timer.
    assert.match(text, /^etl_coordination_heap_used_bytes\{splitlease_job="[^"]+"\} [1-9]\d*$/m, `${p.rt} heap`);
    assert.match(text, /^etl_coordination_resident_memory_bytes\{splitlease_job="[^"]+"\} [1-9]\d*$/m, `${p.rt} rss`);
    assert.match(text, /^# TYPE etl_coordination_event_loop_lag_max_seconds gauge$/m);
    assert.equal(await get(p, "/nope").then((r) => (r.body?.cancel(), r.status)), 404);
    const unauth = await get(p, "/drain", { method: "POST" });
    await unauth.body?.cancel();
    // With a token: 401 without it; with none configured the route is closed (403).
    assert.equal(unauth.status, env.DRAIN_TOKEN ? 401 : 403);

    p.child.kill("SIGTERM");
    const s = await withTimeout(p.status, 20_000, `${rt} exit after SIGTERM`);
    const tail = p.raw.slice(-15).join("\n");
    assert.equal(s.code, 0, `${rt} exit code\n${tail}`);
    const released = p.lines.filter((l) => l.event === "released" && l.reason === "revoked");
    const lost = p.lines.filter((l) => l.event === "lost");
    assert.ok(released.length > 0, `cooperative releases\n${tail}`);
    assert.equal(lost.length, 0, `no lane was aborted\n${tail}`);
    assert.ok(p.lines.some((l) => l.event === "signal" && l.signal === "SIGTERM"));
    assert.ok(p.lines.some((l) => l.event === "exit" && l.exitCode === 0));
    return p;
  } finally {
    await kill(p);
  }
}

for (const rt of ["deno", "bun", "node"] as const) {
  Deno.test({
    name: `adapters: ${rt} worker on MemoryStore serves every route and drains on SIGTERM with exit 0`,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      await buildOnce();
      await sigtermMidJob(rt, {
        STORE: "memory",
        JOB: `mem-${rt}`,
        SPLITS: "3",
        RECORDS: "400",
        RECORD_MS: "10",
        DRAIN_TOKEN: "tok",
      });
    },
  });
}

Deno.test({
  name:
    "adapters: deno, bun and node workers on nats-server: SIGTERM drains cooperatively, the next worker finishes without replay",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await buildOnce();
    await using server = await NatsServer.start();
    for (const rt of ["deno", "bun", "node"] as const) {
      const job = `nats-${rt}`;
      const env = { STORE: "nats", NATS_URL: server.wsUrl, JOB: job, SPLITS: "3", RECORDS: "150", RECORD_MS: "10" };
      const first = await sigtermMidJob(rt, { ...env, DRAIN_TOKEN: "tok" });
      const firstRecords = Number(
        (first.lines.find((l) => l.event === "finished")?.stats as { recordsCommitted: number })?.recordsCommitted,
      );
      // Released cooperatively: no owner, progress kept, no attempt consumed.
      const store = await NatsStore.connect({ servers: server.wsUrl, job });
      try {
        const splits = await store.list("split.");
        assert.equal(splits.length, 3);
        for (const e of splits) {
          const rec = SplitRecordSchema.parse(JSON.parse(e.value));
          assert.equal(rec.owner, null, `${e.key} released`);
          assert.equal(rec.status, "runnable");
          assert.equal(rec.attempts, 0, `${e.key}: a graceful release consumes no attempt`);
        }
        // A second worker resumes and completes the job: exit 0, records add up exactly.
        const second = spawn(rt, env);
        try {
          const s = await withTimeout(second.status, 30_000, `${rt} second worker completes`);
          assert.equal(s.code, 0, second.raw.slice(-10).join("\n"));
          const stats = second.lines.find((l) => l.event === "finished")?.stats as { recordsCommitted: number };
          assert.equal(firstRecords + stats.recordsCommitted, 450, "every record committed exactly once");
          assert.ok(second.lines.some((l) => l.event === "finished" && l.reason === "complete"), "the job completed");
        } finally {
          await kill(second);
        }
        for (const e of await store.list("split.")) {
          assert.equal(SplitRecordSchema.parse(JSON.parse(e.value)).status, "completed");
        }
      } finally {
        await store.close();
      }
    }
  },
});

Deno.test({
  name: "build: the single-file bundle imports by path on Deno, Bun and Node 24",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await buildOnce();
    const code = `const m = await import(${JSON.stringify(`${root}dist/splitlease.bundle.js`)});` +
      `const s = new m.MemoryStore(); const r = await s.create("k", "v"); await s.close();` +
      `console.log(JSON.stringify({ ok: r.ok, nats: typeof m.NatsStore, slice: typeof m.createSliceHandler }));`;
    for (
      const [cmd, args] of [
        [bin("deno"), ["eval", code]],
        [bin("bun"), ["-e", code]],
        [bin("node"), ["--input-type=module", "-e", code]],
      ] as const
    ) {
      const out = (await sh(cmd, [...args])).trim().split("\n").pop()!;
      assert.deepEqual(JSON.parse(out), { ok: true, nats: "function", slice: "function" }, cmd);
    }
    // package.json (the npm package) maps every deno.json export to its
    // built code and declarations.
    const pkg = JSON.parse(await Deno.readTextFile(`${root}package.json`));
    const deno = JSON.parse(await Deno.readTextFile(`${root}deno.json`));
    assert.deepEqual(Object.keys(pkg.exports).filter((s) => s !== "./package.json"), Object.keys(deno.exports));
    for (const [sub, target] of Object.entries(pkg.exports)) {
      if (sub === "./package.json") continue;
      const stem = (deno.exports[sub] as string).replace(/^\.\//, "").replace(/\.ts$/, "");
      assert.deepEqual(target, { types: `./dist/types/${stem}.d.ts`, default: `./dist/${stem}.js` });
      await Deno.stat(`${root}dist/${stem}.js`);
      await Deno.stat(`${root}dist/types/${stem}.d.ts`);
    }
  },
});
