// Operator surfaces at a million splits (issue 39, item 3): one refresh of
// each surface an operator watches a job through, in CPU ms of the process
// that serves or runs it, over a job of BENCH_SURFACES_S splits (default
// 1,000,000) written into a MemoryStore, into a nats-server and (when `npm
// run bench` started one: PG_URL) into PostgreSQL:
//
//   page refresh   the three GET /fleet requests the fleet page makes every 2 s
//                  (quarantined, owned, the first 15 unclaimed), in process (app.request)
//   /fleet         one GET /fleet (the default page of 100)
//   status         what `splitlease status` reads and prints
//   splits         `splitlease splits --state quarantined` (and `--state completed --after`)
//   jobs           `splitlease jobs` for this job (its small records)
//   /status        GET /status, /metrics: of a member (and, on MemoryStore, of the leader
//                  of the whole job: BENCH_SURFACES_LEADER=0 leaves it out)
//
//   npm run bench -- surfaces
//   BENCH_SURFACES_S=100000 BENCH_SURFACES_STORES=memory,nats npm run bench -- surfaces
//
// The job is mid-run: every split planned on 1,000 pages and dealt (70%
// completed over the last hour, 1,000 owned by 100 members, 1,000
// quarantined, the rest released part-done), each with a progress record
// (BENCH_SURFACES_PROG=0: none), the members' beats carrying their
// estimates, the leader's beat its counts. The same file runs on the code
// before issue 39's item 3 (it finds no fleet index there and times what
// those surfaces did: a full read per refresh): copy it into a checkout of
// that commit and run it with `deno run -A bench/surfaces_bench.ts`.
import process from "node:process";
import { NatsStore } from "../nats.ts";
import { MemoryStore } from "../mod.ts";
import type { Store } from "../mod.ts";
import { createApp } from "../host.ts";
import { readFleet } from "../src/fleet/read_fleet.ts";
import { formatJobs, formatSplits, formatStatus } from "../src/cli/format.ts";
import { summarizeJob } from "../src/fleet/job_summary.ts";
import { readJobListing } from "../src/store/job_catalog.ts";
import { keys } from "../src/store/keys.ts";
import { ScriptedCoordinator } from "../tests/helpers/scripted_coordinator.ts";
import type { CoordinatorStatus } from "../src/coordinator/types.ts";
import { natsTransport } from "./_transport.ts";
import { pgSetup, startNats } from "./_servers.ts";
import { result } from "./_common.ts";
import { fileStamp, writeResults } from "./_procs.ts";

const S = Number(Deno.env.get("BENCH_SURFACES_S") ?? 1_000_000);
const STORES = (Deno.env.get("BENCH_SURFACES_STORES") ?? "memory,nats,pg").split(",").map((s) => s.trim());
const PROG = Deno.env.get("BENCH_SURFACES_PROG") !== "0";
const LEADER = Deno.env.get("BENCH_SURFACES_LEADER") !== "0";
const MEMBERS = 100, OWNED = 1000, QUARANTINED = 1000, PAGE = 1000;
const JOB = "surfaces";

// The code under test: after issue 39 item 3 it has these modules; before, it has none of them.
const summaryModule = await import("../src/fleet/fleet_summary.ts").catch(() => undefined);
const splitsModule = await import("../src/fleet/read_splits.ts").catch(() => undefined);
const code = summaryModule ? "after" : "before";
console.log(`code: ${code} (fleet index ${summaryModule ? "present" : "absent"}), ${S.toLocaleString("en-US")} splits, progress records: ${PROG}`);

// ---- the job's records -------------------------------------------------------------------------------

const T = Date.now();
const id = (i: number) => "s" + String(i).padStart(7, "0");
const member = (i: number) => `pod-${String(i).padStart(3, "0")}`;
type Kind = "completed" | "owned" | "quarantined" | "released";
const kindOf = (i: number): Kind => (i % 1000 === 7 ? "owned" : i % 1000 === 17 ? "quarantined" : i % 10 < 7 ? "completed" : "released");
const ownerOf = (i: number) => Math.floor(i / 1000) % MEMBERS;

function splitRecord(i: number): string {
  const k = kindOf(i), owner = member(ownerOf(i));
  const base = { v: 2, attempts: 0, weight: 1, descriptor: { from: i * 1000, to: i * 1000 + 1000 }, closed: 2 };
  const from = T - 3_600_000 + ((i * 3571) % 3_500_000);
  switch (k) {
    case "completed":
      return JSON.stringify({
        ...base, epoch: 1, status: "completed", owner: null,
        progress: { watermark: i * 1000 + 1000, estimate: { left: 0, total: 1000, unit: "ids" } },
        tenancies: [{ epoch: 1, owner, from, to: from + 2000, end: "completed" }], records: 1000, prog: 3,
      });
    case "owned":
      return JSON.stringify({
        ...base, epoch: 2, status: "runnable", owner: { instance: owner, session: "s" + ownerOf(i) }, progress: null,
        tenancies: [{ epoch: 2, owner, from: T - 30_000 }], closed: 3,
      });
    case "quarantined":
      return JSON.stringify({
        ...base, epoch: 4, status: "quarantined", owner: null, attempts: 3, progress: { watermark: i * 1000 + 10 },
        lastFailure: "parse error at line 7",
        failures: [1, 2, 3].map((n) => ({ at: from + n * 1000, worker: owner, message: "parse error at line 7" })),
        tenancies: [1, 2, 3].map((n) => ({ epoch: n + 1, owner, from: from + n * 1000 - 500, to: from + n * 1000, end: "failed" })),
      });
    case "released":
      return JSON.stringify({
        ...base, epoch: 2, status: "runnable", owner: null,
        progress: { watermark: i * 1000 + 500, estimate: { left: 500, total: 1000, unit: "ids" } },
        tenancies: [{ epoch: 1, owner, from, to: from + 1000, end: "released" }], records: 500, prog: 3, closed: 2,
      });
  }
}

function progRecord(i: number): string | undefined {
  const k = kindOf(i);
  if (k === "quarantined") return undefined;
  const owner = { instance: member(ownerOf(i)), session: "s" + ownerOf(i) };
  const left = k === "completed" ? 0 : k === "owned" ? 250 : 500;
  return JSON.stringify({ v: 2, epoch: k === "owned" ? 2 : 1, owner, progress: { watermark: i * 1000 + 1000 - left, estimate: { left, total: 1000, unit: "ids" } }, records: 1000 - left });
}

function* smallRecords(): Generator<[string, string]> {
  const planned = S, completed = Math.round(S * 0.7);
  yield [keys.job, JSON.stringify({ v: 3, fingerprint: JOB, createdAt: T - 3_700_000 })];
  yield [keys.plan, JSON.stringify({ v: 2, term: 1, finality: "final", generation: 1, planned, pages: Math.ceil(S / PAGE), pageTerms: [[0, 1]] })];
  const counts = {
    members: MEMBERS, runnable: planned - completed - QUARANTINED, unowned: planned - completed - QUARANTINED - OWNED, completed,
    quarantined: QUARANTINED, cancelled: 0, quarantinedIds: Array.from({ length: 20 }, (_, n) => id(n * 1000 + 17)),
    weight: { total: planned, completed, runnable: planned - completed - QUARANTINED, left: planned - completed - QUARANTINED - OWNED * 0.75 },
    rate: { at: T, ms: 300_000, n: Math.round(completed / 12), w: Math.round(completed / 12), since: T - 3_600_000 },
  };
  yield [keys.leader, JSON.stringify({ v: 2, instance: member(0), session: "s0", term: 1, beat: 100, counts })];
  for (let m = 0; m < MEMBERS; m++) {
    const mine = Array.from({ length: OWNED / MEMBERS }, (_, n) => (n * MEMBERS + m) * 1000 + 7).filter((i) => i < S);
    yield [keys.member(member(m)), JSON.stringify({
      v: 2, session: "s" + m, maxInFlight: 16, runtime: "deno", version: "0.2.0", beat: 100, held: mine.length, at: T - 1000, lease: 15_000,
      est: mine.map((i) => [id(i), 250, 1000]),
    })];
  }
}

function* pages(): Generator<[string, string]> {
  for (let p = 0; p * PAGE < S; p++) {
    const splits = Array.from({ length: Math.min(PAGE, S - p * PAGE) }, (_, n) => ({ id: id(p * PAGE + n), descriptor: { from: (p * PAGE + n) * 1000, to: (p * PAGE + n) * 1000 + 1000 } }));
    yield [keys.page(p), JSON.stringify({ v: 2, term: 1, splits })];
  }
}

function* bulk(): Generator<[string, string]> {
  yield* pages();
  for (let i = 0; i < S; i++) {
    yield [keys.split(id(i)), splitRecord(i)];
    const p = PROG ? progRecord(i) : undefined;
    if (p) yield [keys.prog(id(i)), p];
  }
  yield* smallRecords();
}

/** Writes every record through the store (creates, `window` in flight). */
async function writeThrough(store: Store, window: number): Promise<number> {
  const t0 = performance.now();
  const inflight = new Set<Promise<unknown>>();
  let n = 0;
  for (const [k, v] of bulk()) {
    const p: Promise<unknown> = store.create(k, v).then((r) => {
      if (!r.ok) throw new Error(`${k} exists`);
    }).finally(() => inflight.delete(p));
    inflight.add(p);
    n++;
    if (inflight.size >= window) await Promise.race(inflight);
    if (n % 200_000 === 0) console.log(`  ${n.toLocaleString("en-US")} records written (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
  }
  await Promise.all(inflight);
  return n;
}

// ---- measuring ---------------------------------------------------------------------------------------

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

interface Cell {
  store: string;
  surface: string;
  cpuMs: number;
  wallMs: number;
  serverCpuMs?: number;
  note?: string;
}
const cells: Cell[] = [];

/**
 * Times `fn` `reps` times, each after the surfaces' one-second caches have
 * passed (so that each run reads what a refresh reads): the median CPU ms
 * of this process, its wall time, and the server's CPU when known.
 */
async function time(store: string, surface: string, fn: () => Promise<unknown>, reps = 3, server?: () => number, note?: string): Promise<Cell> {
  const cpu: number[] = [], wall: number[] = [], srv: number[] = [];
  for (let r = 0; r < reps; r++) {
    await sleep(1100);
    const c0 = cpuMs(), w0 = performance.now(), s0 = server?.() ?? 0;
    await fn();
    cpu.push(cpuMs() - c0);
    wall.push(performance.now() - w0);
    if (server) srv.push((server() - s0) * 1000);
  }
  const cell: Cell = { store, surface, cpuMs: median(cpu), wallMs: median(wall), ...(server ? { serverCpuMs: median(srv) } : {}), ...(note ? { note } : {}) };
  cells.push(cell);
  console.log(`  ${surface.padEnd(44)} ${cell.cpuMs.toFixed(0).padStart(7)} ms CPU  ${cell.wallMs.toFixed(0).padStart(7)} ms wall` +
    (cell.serverCpuMs !== undefined ? `  server ${cell.serverCpuMs.toFixed(0)} ms CPU` : "") + (note ? `  (${note})` : ""));
  result({ bench: "surfaces", metric: `${store} ${code}: ${surface}`, value: `${cell.cpuMs.toFixed(0)} ms CPU` });
  return cell;
}

/** A member serving the routes: the job's size as a member knows it (its plan). */
class Serving extends ScriptedCoordinator {
  override status(): CoordinatorStatus {
    const st = super.status();
    return { ...st, job: JOB, plan: { term: 1, finality: "final", generation: 1, planned: S }, counts: { ...st.counts, planned: S } };
  }
}

const text = async (res: Response | Promise<Response>) => await (await res).text();
const body = async (res: Response | Promise<Response>) => {
  const r = await res;
  if (r.status !== 200) throw new Error(`${r.status}: ${await r.text()}`);
  return await r.json();
};

async function surfaces(label: string, store: Store, server?: () => number): Promise<void> {
  const app = createApp({ coordinator: new Serving(member(0)), store });
  const page = () =>
    Promise.all(["/fleet?state=quarantined&limit=100", "/fleet?state=owned&limit=100", "/fleet?state=unclaimed&limit=15"].map((u) => body(app.request(u))));
  if (code === "after") {
    // The first request starts the index: its first snapshot is read once, the leader's beat answers meanwhile.
    const rss0 = Deno.memoryUsage().rss;
    const c0 = cpuMs(), w0 = performance.now(), s0 = server?.() ?? 0;
    let views = await page();
    const firstMs = cpuMs() - c0;
    console.log(`  first page refresh (starts the index)               ${firstMs.toFixed(0).padStart(7)} ms CPU  (answered from the leader's beat: ${views[0].basis})`);
    cells.push({ store: label, surface: "page refresh: the first (starts the index)", cpuMs: firstMs, wallMs: performance.now() - w0 });
    while (views[0].index?.state !== "ready") {
      await sleep(500);
      views = await page();
    }
    const built = cpuMs() - c0;
    cells.push({
      store: label,
      surface: "fleet index: first snapshot read (once)",
      cpuMs: built,
      wallMs: performance.now() - w0,
      ...(server ? { serverCpuMs: (server() - s0) * 1000 } : {}),
      note: `RSS +${((Deno.memoryUsage().rss - rss0) / 2 ** 20).toFixed(0)} MiB`,
    });
    console.log(`  fleet index built in ${((performance.now() - w0) / 1000).toFixed(1)} s, ${built.toFixed(0)} ms CPU, RSS +${((Deno.memoryUsage().rss - rss0) / 2 ** 20).toFixed(0)} MiB`);
    result({ bench: "surfaces", metric: `${label} ${code}: fleet index first snapshot`, value: `${built.toFixed(0)} ms CPU` });
  }
  // The old code reads every record for each of these: once is enough to know what it costs.
  const reps = code === "after" ? 3 : 1;
  const refresh = await time(label, "page refresh (3 × GET /fleet)", page, reps, server);
  await time(label, "GET /fleet (default page of 100)", () => body(app.request("/fleet")), reps, server);
  await time(label, "GET /fleet?match=s00123 (a search)", () => body(app.request("/fleet?match=s00123&limit=20")), reps, server);
  const status = await time(label, "splitlease status", async () => {
    const view = summaryModule ? await summaryModule.readFleetOverview(store) : await readFleet(store, { limit: 1 });
    return formatStatus(JOB, view);
  }, reps, server);
  if (summaryModule) await time(label, "splitlease status --full", async () => formatStatus(JOB, await readFleet(store, { limit: 1 })), 1, server);
  await time(label, "splitlease splits --state quarantined", async () => {
    const q = { state: ["quarantined" as const], limit: 100 };
    return formatSplits(splitsModule ? await splitsModule.readSplitsPage(store, q) : await readFleet(store, q));
  }, 1, server);
  await time(label, "splitlease splits --state completed --after …", async () => {
    const q = { state: ["completed" as const], limit: 100, after: id(Math.floor(S / 2)) };
    return formatSplits(splitsModule ? await splitsModule.readSplitsPage(store, q) : await readFleet(store, q));
  }, 1, server);
  await time(label, "splitlease jobs", async () => formatJobs([summarizeJob(await readJobListing(JOB, store), Date.now())]), 3, server);
  await time(label, "GET /status + /metrics (a member)", () => Promise.all([body(app.request("/status")), text(app.request("/metrics"))]), 3, server);
  console.log(`  => page refresh ${refresh.cpuMs.toFixed(0)} ms CPU, status ${status.cpuMs.toFixed(0)} ms CPU (target: each <= 1000 ms at 1M)`);
}

/** `/status` and `/metrics` of the leader of the whole job (MemoryStore): it holds every split in its view. */
async function leaderSurfaces(store: MemoryStore): Promise<void> {
  const { SplitCoordinator } = await import("../mod.ts");
  const w0 = performance.now();
  const c = await SplitCoordinator.join({ store, job: JOB, fingerprint: JOB, instance: "leader-bench", maxInFlight: 0 });
  try {
    // The job's leader record names a member that beats no more: step in at once instead of waiting out its lease.
    const l = await store.get(keys.leader);
    await store.delete(keys.leader, l!.revision);
    const limitMs = Number(Deno.env.get("BENCH_SURFACES_LEADER_MS") ?? 300_000);
    while (!c.status().isLeader) {
      if (performance.now() - w0 > limitMs) {
        const st = c.status();
        console.log(`  (no leadership within ${limitMs / 1000} s: leader ${JSON.stringify(st.leader)}, state ${st.state}; the leader's /status is not measured)`);
        cells.push({ store: "memory", surface: "GET /status + /metrics (the leader)", cpuMs: NaN, wallMs: NaN, note: `not measured: no leadership within ${limitMs / 1000} s` });
        return;
      }
      await sleep(500);
    }
    console.log(`  the bench's member leads the job (${((performance.now() - w0) / 1000).toFixed(0)} s after joining)`);
    const app = createApp({ coordinator: c, store });
    await time("memory", "GET /status + /metrics (the leader)", () => Promise.all([body(app.request("/status")), text(app.request("/metrics"))]), 3);
  } finally {
    await c.abandon();
  }
}

// ---- the stores --------------------------------------------------------------------------------------

if (STORES.includes("memory")) {
  console.log(`\n=== MemoryStore ===`);
  const store = new MemoryStore({ yieldToTimers: false });
  const w0 = performance.now();
  const n = await writeThrough(store, 1);
  console.log(`  ${n.toLocaleString("en-US")} records written in ${((performance.now() - w0) / 1000).toFixed(0)} s`);
  await surfaces("memory", store);
  if (LEADER) await leaderSurfaces(store);
  await store.close();
}

if (STORES.includes("nats")) {
  console.log(`\n=== nats-server ===`);
  await using nats = await startNats("current");
  const store = await NatsStore.connect({ servers: nats.url, job: JOB, opTimeoutMs: 30_000, ...(await natsTransport()) });
  try {
    const w0 = performance.now();
    const n = await writeThrough(store, 512);
    console.log(`  ${n.toLocaleString("en-US")} records written in ${((performance.now() - w0) / 1000).toFixed(0)} s (nats-server ${nats.label})`);
    await surfaces(`nats ${nats.version}`, store, () => nats.cpuSeconds());
  } finally {
    await store.close();
  }
}

const pg = pgSetup();
if (STORES.includes("pg") && pg) {
  console.log(`\n=== PostgreSQL ===`);
  const { PostgresStore } = await import("../adapters/postgres.ts");
  const schema = pg.schema();
  const store = await PostgresStore.connect({ url: pg.url, job: JOB, schema, opTimeoutMs: 30_000 });
  try {
    const w0 = performance.now();
    const n = await bulkLoadPg(pg.url, schema);
    console.log(`  ${n.toLocaleString("en-US")} records loaded in ${((performance.now() - w0) / 1000).toFixed(0)} s (multi-row inserts into its kv table)`);
    await surfaces("postgres", store, () => pg.cpuSeconds());
  } finally {
    await store.close();
  }
} else if (STORES.includes("pg")) console.log("\n(PostgreSQL: no PG_URL; `npm run bench -- surfaces` starts one)");

/**
 * Loads the records straight into the job's rows (the store's own writes
 * land one at a time per job: millions would take the bench's hour): live
 * rows at consecutive revisions, the job's counter at the last, as the
 * store's writes leave them (a watch's snapshot reads the live rows).
 */
async function bulkLoadPg(url: string, schema: string): Promise<number> {
  const postgres = (await import("postgres")).default;
  const sql = postgres(url, { max: 4, onnotice: () => {} });
  try {
    const [{ id: job }] = await sql.unsafe(`select id from ${schema}.jobs where name = $1`, [JOB]);
    const [{ rev: start }] = await sql.unsafe(`select rev from ${schema}.jobs where id = $1`, [job]);
    let rev = Number(start), n = 0, batch: [string, string, number][] = [];
    const flush = async () => {
      if (!batch.length) return;
      const rows = batch;
      batch = [];
      await sql.unsafe(
        `insert into ${schema}.kv (job, key, value, revision) select $1, k, v, r from unnest($2::text[], $3::text[], $4::bigint[]) as t(k, v, r)`,
        [job, rows.map((x) => x[0]), rows.map((x) => x[1]), rows.map((x) => x[2])],
      );
    };
    for (const [k, v] of bulk()) {
      batch.push([k, v, ++rev]);
      n++;
      if (batch.length === 5000) await flush();
      if (n % 200_000 === 0) console.log(`  ${n.toLocaleString("en-US")} rows loaded`);
    }
    await flush();
    await sql.unsafe(`update ${schema}.jobs set rev = $1 where id = $2`, [rev, job]);
    await sql.unsafe(`analyze ${schema}.kv`);
    return n;
  } finally {
    await sql.end();
  }
}

const file = await writeResults(`surfaces-${code}-${fileStamp()}`, { code, S, prog: PROG, cells });
console.log(`\nresults: ${file}`);
console.log("\n| store | surface | CPU ms | wall ms | server CPU ms | note |\n|---|---|---:|---:|---:|---|");
for (const c of cells) {
  console.log(`| ${c.store} | ${c.surface} | ${c.cpuMs.toFixed(0)} | ${c.wallMs.toFixed(0)} | ${c.serverCpuMs?.toFixed(0) ?? ""} | ${c.note ?? ""} |`);
}
