/**
 * The scale bench's `million` scenario (issue 39, items 1, 2 and the K = 1
 * half of 5): one unsharded job of a million tiny splits, on one store, in
 * one run:
 *
 * - a **leader** in a process of its own (the planner, `maxInFlight` 0: it
 *   deals and does no work), an **idle member** in another (no planner,
 *   `maxInFlight` 0: the baseline its RSS is measured against), a
 *   **standby** (a planner, `maxInFlight` 0, joined after the leader won)
 *   and W workers (no planner) over BENCH_PROCS processes;
 * - the leader's RSS over the idle member's, per split, when the plan is
 *   published and at the end (then of the standby, which leads by then);
 * - the plan's seeding rate (planned splits ÷ the time from the planner's
 *   call to the publish) against the raw CAS rate of the same run;
 * - mid-run (at BENCH_MILLION_KILL_AT of the splits completed) the leader's
 *   process is SIGKILLed: time to the standby's election, its snapshot
 *   (pages read, split watch caught up), its first deal (its first landed
 *   assignment write listing an offer or a grant) and its RSS;
 * - the end-to-end time against S × BENCH_NEEDED_PER_SPLIT writes at the raw
 *   CAS rate, the writes the store landed (its last revision: every write of
 *   every process, the killed leader's too), and a check from the store at
 *   the end that every split is completed exactly once.
 *
 * Knobs: BENCH_MILLION_S [1000000], BENCH_MILLION_W [100],
 * BENCH_MILLION_LEASE_MS [10000], BENCH_MILLION_KILL_AT [0.5] (0: no kill),
 * BENCH_MILLION_STORES [current,pg] (a NATS setup kind, or pg),
 * BENCH_MILLION_LIMIT_S [max(600, 20 × ideal)],
 * BENCH_MILLION_HEAP [0] (1: the leader at the end writes a V8 heap
 * snapshot into bench/results/ and the bench prints what holds it),
 * BENCH_MILLION_V8_FLAGS (V8 flags for the leader, the idle member and the
 * standby, e.g. `--optimize-for-size`), BENCH_MILLION_PLAN_PART [100000]
 * (the planner returns its listing in parts of this many splits with
 * `more: true`; 0: the whole plan in one run).
 *
 * @module
 */
import { natsTransport } from "./_transport.ts";
import { type NatsSetup, pgSetup, startNats } from "./_servers.ts";
import { NatsStore } from "../nats.ts";
import type { Store } from "../mod.ts";
import { type StoreCounts, type StoreTimeline, sumCounts } from "./counting_store.ts";
import { result } from "./_common.ts";
import { fleet as startFleet, type Fleet, spawnHost } from "./_fleet.ts";
import { type Child, cpuSeconds, loadavg, type Msg, rawCasRate, rawPgCasRate, root, rssBytes, sleep } from "./_procs.ts";
import { summarizeHeap } from "./heap_summary.ts";

const num = (k: string, d: number) => Number(Deno.env.get(k) ?? d);
const MiB = (b: number) => +(b / 2 ** 20).toFixed(1);
const secs = (ms: number | null | undefined) => (typeof ms === "number" ? +(ms / 1000).toFixed(2) : null);

/** What the million scenario needs from scale_bench.ts. */
export interface MillionDeps {
  runtime: string;
  procs: number;
  /** Worker lanes (the fleet's maxInFlight). */
  maxInFlight: number;
  opTimeoutMs: number;
  /** Store writes a tiny split needs (the bound's numerator per split). */
  neededPerSplit: number;
  maxRss: number;
  stamp: string;
  record(row: Record<string, unknown>): Promise<void>;
}

/** The store kinds the scenario runs on, in order. */
export function millionStores(): string[] {
  return (Deno.env.get("BENCH_MILLION_STORES") ?? "current,pg").split(",").map((s) => s.trim()).filter(Boolean);
}

/** One store's connection details for the hosts, a reader of its own, and the raw CAS rate. */
interface Where extends AsyncDisposable {
  label: string;
  version: string;
  mode: "nats" | "pg";
  url: string;
  schema?: string;
  raw(): Promise<number>;
  reader(job: string): Promise<Store>;
  /** CPU seconds of the server so far. */
  cpu(): number;
}

async function where(kind: string): Promise<Where> {
  if (kind === "pg") {
    const pg = pgSetup();
    if (!pg) throw new Error("the pg store needs PG_URL (npm run bench starts PostgreSQL)");
    const schema = pg.schema();
    const { PostgresStore } = await import("../adapters/postgres.ts");
    const version = await (async () => {
      const sql = (await import("postgres")).default(pg.url, { max: 1, onnotice: () => {} });
      try {
        return String((await sql`show server_version`)[0].server_version);
      } catch {
        return "?";
      } finally {
        await sql.end();
      }
    })();
    return {
      label: `PostgreSQL ${version}`,
      version,
      mode: "pg",
      url: pg.url,
      schema,
      raw: () => rawPgCasRate(pg.url, 2000, 100, schema),
      reader: async (job) => await PostgresStore.connect({ url: pg.url, job, schema }),
      cpu: () => pg.cpuSeconds(),
      [Symbol.asyncDispose]: () => Promise.resolve(),
    };
  }
  const server: NatsSetup = await startNats(kind);
  return {
    label: `nats-server ${server.label}`,
    version: server.version,
    mode: "nats",
    url: server.url,
    raw: () => rawCasRate(server.urls, 2000, 100, server.replicas),
    reader: async (job) => await NatsStore.connect({ servers: server.urls, job, replicas: server.replicas, ...(await natsTransport()) }),
    cpu: () => server.cpuSeconds(),
    [Symbol.asyncDispose]: () => server[Symbol.asyncDispose](),
  };
}

/** Polls `f` every `ms` until it returns a value (not `undefined`) or `limitMs` passes. */
async function poll<T>(f: () => Promise<T | undefined>, limitMs: number, ms = 100): Promise<T | undefined> {
  const end = Date.now() + limitMs;
  while (Date.now() < end) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    await sleep(ms);
  }
  return undefined;
}

/** Asks one host for a report; `undefined` when it does not answer in `ms`. */
async function reportOf(h: Child, ms = 30_000, gc = false): Promise<Msg | undefined> {
  const from = h.msgs.length;
  await h.send({ cmd: "report", gc });
  return await h.next((m) => m.ev === "report" && h.msgs.indexOf(m) >= from, ms, "report").catch(() => undefined);
}

/**
 * Reads every split record from the store through a watch's snapshot (one
 * record at a time, nothing kept but a bitmap): how many splits there are
 * by status, whether each planned id `s0 .. s<S-1>` has exactly one
 * record, and how many ran more than one tenancy.
 */
async function checkSplits(reader: Store, s: number): Promise<Record<string, unknown>> {
  const seen = new Uint8Array(s);
  const status: Record<string, number> = {};
  let records = 0, foreign = 0, dup = 0, epochAbove1 = 0, attempted = 0, unreadable = 0;
  const t0 = Date.now();
  const w = reader.watch("split.");
  for await (const ev of w) {
    if (ev.type === "ready") break;
    if (ev.type !== "put") continue;
    records++;
    const id = ev.key.slice("split.".length);
    const i = /^s\d+$/.test(id) ? Number(id.slice(1)) : -1;
    if (i < 0 || i >= s) foreign++;
    else if (seen[i]++) dup++;
    try {
      const r = JSON.parse(ev.value) as { status?: string; epoch?: number; attempts?: number };
      status[r.status ?? "?"] = (status[r.status ?? "?"] ?? 0) + 1;
      if ((r.epoch ?? 0) > 1) epochAbove1++;
      if ((r.attempts ?? 0) > 0) attempted++;
    } catch {
      unreadable++;
    }
  }
  await w.stop();
  let missing = 0;
  for (let i = 0; i < s; i++) if (!seen[i]) missing++;
  return { records, status, missing, duplicates: dup, foreign, unreadable, epochAbove1, attempted, readMs: Date.now() - t0 };
}

/** The store's last revision: a probe key created now lands one past every write before it (revisions count every write of the job). */
async function lastRevision(reader: Store, name: string): Promise<number> {
  const r = await reader.create(`bench.${name}`, "{}");
  if (!r.ok) throw new Error(`bench.${name} exists`);
  return r.revision - 1;
}

/** RSS and CPU-seconds samples of the named processes every 500 ms. */
function rssSampler(procs: () => Record<string, number | undefined>) {
  const samples: { at: number; rss: Record<string, number>; cpu: Record<string, number> }[] = [];
  const take = () => {
    const rss: Record<string, number> = {}, cpu: Record<string, number> = {};
    for (const [k, pid] of Object.entries(procs())) if (pid) (rss[k] = rssBytes(pid)), (cpu[k] = cpuSeconds(pid));
    samples.push({ at: Date.now(), rss, cpu });
  };
  take();
  const t = setInterval(take, 500);
  return {
    samples,
    /** The first sample at or after `at` (the last one when none is). */
    at: (at: number) => samples.find((x) => x.at >= at) ?? samples.at(-1)!,
    max: (k: string, from = 0, to = Infinity) =>
      Math.max(0, ...samples.filter((x) => x.at >= from && x.at <= to).map((x) => x.rss[k] ?? 0).filter((v) => !Number.isNaN(v))),
    now: () => (take(), samples.at(-1)!),
    stop: () => clearInterval(t),
  };
}

const span = (t: StoreTimeline | undefined, k: string): [number, number] | undefined => t?.at[k];

/** A process that may lead, and what its RSS is measured against. */
interface Leading {
  instance: string;
  /** Its key in the RSS samples. */
  key: string;
  child: Child;
  /** The sample keys of its baseline (their mean). */
  base: string[];
  /** The host to ask for the baseline's JS heap (a one-coordinator baseline only). */
  baseChild?: Child;
}

/** What the leading process looked like at one moment. */
interface Moment {
  at: number;
  leader: string;
  rss: number;
  baseRss: number;
  perSplit: number;
  /** JS heap after a full collection (live), of it and its baseline, and per split. */
  heap?: number;
  baseHeap?: number;
  heapPerSplit?: number;
  /** RSS after that collection, and per split over the baseline's (after its own). */
  rssAfterGc?: number;
  rssAfterGcPerSplit?: number;
  gcMs?: number;
  /** process.memoryUsage() of it and its baseline, after that collection (heapTotal, external, arrayBuffers). */
  mem?: Record<string, number>;
  baseMem?: Record<string, number>;
  report?: Msg;
}

/** One cell: the scenario on one store (see the module doc). */
export async function millionCell(kind: string, d: MillionDeps): Promise<void> {
  const S = num("BENCH_MILLION_S", 1_000_000), W = num("BENCH_MILLION_W", 100);
  const lease = num("BENCH_MILLION_LEASE_MS", 10_000), killAt = num("BENCH_MILLION_KILL_AT", 0.5);
  // The planner's listing in parts of this many splits (`more: true`), as OPERATIONS advises for a large job; 0: in one run.
  const planPart = num("BENCH_MILLION_PLAN_PART", 100_000);
  const job = `million-${kind}-${Date.now().toString(36)}`;
  await using at = await where(kind);
  const load0 = loadavg();
  const raw = await at.raw();
  const boundMs = (d.neededPerSplit * S) / raw * 1000;
  const limitMs = num("BENCH_MILLION_LIMIT_S", 0) * 1000 || Math.max(600_000, 20 * boundMs);
  console.log(`million on ${at.label}: S=${S} W=${W} lease ${lease} ms, raw CAS ${Math.round(raw)}/s, bound ${(boundMs / 1000).toFixed(1)} s, limit ${(limitMs / 1000).toFixed(0)} s`);
  const reader = await at.reader(job);
  const tunables = { leaseMs: lease, maxInFlight: d.maxInFlight, opTimeoutMs: d.opTimeoutMs };
  // The three one-coordinator hosts expose gc: a report asked with gc gives the live heap.
  // BENCH_MILLION_V8_FLAGS adds V8 flags to those three (e.g. --optimize-for-size: a heap kept near its live size).
  const v8 = ["--expose-gc", ...(Deno.env.get("BENCH_MILLION_V8_FLAGS") ?? "").split(/[ ,]+/).filter(Boolean)];
  const gcFlags = d.runtime === "node" ? v8 : [`--v8-flags=${v8.join(",")}`];
  const host = (name: string, planner: boolean) =>
    spawnHost(d.runtime, name, {
      mode: at.mode,
      url: at.url,
      ...(at.schema ? { schema: at.schema } : {}),
      job,
      instances: [name],
      splits: S,
      role: "tiny",
      tunables: { ...tunables, maxInFlight: 0 },
      planner,
      ...(planPart > 0 ? { planPart } : {}),
      progressEvery: S,
    }, gcFlags);
  const leader = await host("leader", true);
  const idle = await host("idle", false);
  const standby = await host("standby", true);
  let f: Fleet | undefined;
  const sampler = rssSampler(() => ({
    leader: leader.proc.pid,
    idle: idle.proc.pid,
    standby: standby.proc.pid,
    ...Object.fromEntries((f?.hosts ?? []).map((h, i) => [`worker${i}`, h.proc.pid])),
  }));
  let polling = true;
  try {
    f = await startFleet({
      runtime: d.runtime,
      procs: d.procs,
      url: at.url,
      job,
      w: W,
      s: S,
      role: "tiny",
      tunables,
      planner: false,
      ...(at.mode === "pg" ? { pg: { schema: at.schema! } } : {}),
    });
    const fleet = f;
    await Promise.all([leader, idle, standby].map((h) => h.next((m) => m.ev === "ready", 60_000, "ready")));
    // Which profile is whose (BENCH_NODE_ARGS=--cpu-prof names its files by pid).
    console.log(`pids: leader ${leader.proc.pid}, idle ${idle.proc.pid}, standby ${standby.proc.pid}, workers ${fleet.hosts.map((h) => h.proc.pid).join(" ")}`);
    // Whoever leads: the leader, or after the kill whoever won. Once a final plan is published
    // a member without a planner waits no longer than one with a planner
    // (src/coordinator/leadership.ts), so the standby, the idle member or a worker may win; the
    // standby and the idle member are each other's baseline (one coordinator, maxInFlight 0, the
    // same watches), a worker host is measured against the mean of the other worker hosts.
    const leading = (instance: string): Leading | undefined => {
      if (instance === "leader") return { instance, key: "leader", child: leader, base: ["idle"], baseChild: idle };
      if (instance === "standby") return { instance, key: "standby", child: standby, base: ["idle"], baseChild: idle };
      if (instance === "idle") return { instance, key: "idle", child: idle, base: ["standby"], baseChild: standby };
      if (!/^w\d+$/.test(instance)) return undefined;
      const i = Number(instance.slice(1)) % fleet.hosts.length;
      return { instance, key: `worker${i}`, child: fleet.hosts[i], base: fleet.hosts.map((_, j) => `worker${j}`).filter((_, j) => j !== i) };
    };
    const baseOf = (l: Leading, x: { rss: Record<string, number> }) => l.base.reduce((a, k) => a + x.rss[k], 0) / l.base.length;
    const leaderNow = async () => {
      const e = await reader.get("leader").catch(() => undefined);
      return e ? (JSON.parse(e.value).instance as string) : undefined;
    };
    /** The leading process's RSS (and, asked, its JS heap) over its baseline's, now. */
    const moment = async (l: Leading | undefined, heap = true, gc = true): Promise<Moment | undefined> => {
      if (!l) return undefined;
      const x = sampler.now();
      const m: Moment = { at: x.at, leader: l.instance, rss: x.rss[l.key], baseRss: baseOf(l, x), perSplit: 0 };
      m.perSplit = Math.round((m.rss - m.baseRss) / S);
      if (heap) {
        const [r, b] = await Promise.all([reportOf(l.child, 60_000, gc), l.baseChild ? reportOf(l.baseChild, 60_000, gc) : undefined]);
        m.report = r;
        m.heap = r?.heap;
        m.baseHeap = b?.heap;
        m.gcMs = r?.gcMs;
        m.mem = r?.mem;
        m.baseMem = b?.mem;
        if (m.heap && m.baseHeap) m.heapPerSplit = Math.round((m.heap - m.baseHeap) / S);
        if (r?.rss && b?.rss) (m.rssAfterGc = r.rss), (m.rssAfterGcPerSplit = Math.round((r.rss - b.rss) / S));
      }
      return m;
    };
    const cpu0 = at.cpu();
    // The leader first, alone: it wins the election; then everyone else at once.
    const t0 = Date.now();
    await leader.send({ cmd: "go" });
    const elected = await poll(async () => ((await leaderNow()) === "leader" ? Date.now() : undefined), 60_000, 20);
    if (!elected) throw new Error(`the leader was not elected in 60 s: ${leader.stderr.slice(-5).join("\n")}`);
    await Promise.all([idle.send({ cmd: "go" }), standby.send({ cmd: "go" })]);
    const fleetGo = await fleet.go();
    const completed = () => fleet.latest("progress", "completed");
    // The plan record, polled: each change of its pages, and the first publish of the whole plan
    // (its RSS moment taken then: every split is in the leader's view).
    const plans: { at: number; term: number; pages: number; planned: number; completed: number }[] = [];
    let publish: { at: number; term: number; pages: number; leader?: string; completed: number; moment?: Promise<Moment | undefined> } | undefined;
    const readPlan = async () => {
      const e = await reader.get("plan").catch(() => undefined);
      const p = e ? JSON.parse(e.value) : undefined;
      if (p && (plans.at(-1)?.pages !== (p.pages ?? 0) || plans.at(-1)?.term !== p.term)) {
        plans.push({ at: Date.now(), term: p.term, pages: p.pages ?? 0, planned: p.planned, completed: completed() });
      }
      if (p && !publish && p.planned >= S && (p.pages ?? 0) > 0) {
        const who = await leaderNow();
        publish = { at: Date.now(), term: p.term, pages: p.pages, leader: who, completed: completed() };
        // No forced collection: the leader is still dealing (a full GC of its heap would stall it).
        publish.moment = moment(who ? leading(who) : undefined, true, false);
        // BENCH_MILLION_HEAP=publish: what the leader holds live at the publish (a snapshot stalls it for seconds).
        const l = who ? leading(who) : undefined;
        if (Deno.env.get("BENCH_MILLION_HEAP") === "publish" && l) {
          await publish.moment;
          const from = l.child.msgs.length;
          const path = `${root}bench/results/million-${kind}-publish-${d.stamp}.heapsnapshot`;
          await l.child.send({ cmd: "heap", path });
          await l.child.next((m) => m.ev === "heap" && l.child.msgs.indexOf(m) >= from, 600_000, "heap snapshot").catch(() => {});
          atPublishHeap = [l.child, who!, path];
        }
      }
    };
    const poller = (async () => {
      while (polling) {
        await readPlan();
        await sleep(100);
      }
    })();
    let why = "done";
    /** The heap snapshot written at the publish (BENCH_MILLION_HEAP=publish), summarised at the end. */
    let atPublishHeap: [Child, string, string] | undefined;
    const end = Date.now() + limitMs;
    const tooBig = () => Object.values(sampler.samples.at(-1)!.rss).reduce((a, b) => a + (b || 0), 0) > d.maxRss;
    const waitFor = async (done: () => boolean): Promise<boolean> => {
      while (!done()) {
        if (Date.now() > end) return (why = "timeout"), false;
        if (tooBig()) return (why = "rss"), false;
        if (fleet.count("failed") > 0) return (why = "failed"), false;
        await sleep(100);
      }
      return true;
    };
    // Mid-run: the leader's process SIGKILLed (whether or not its plan is published by then).
    let killedAt: number | undefined, beforeKill: Moment | undefined, publishedAtKill: boolean | undefined;
    let leaderAtKill: string | undefined;
    if (killAt > 0 && await waitFor(() => completed() >= killAt * S)) {
      // Who leads then: the leader process, unless it lost its term before (the kill then measures no takeover).
      leaderAtKill = await leaderNow();
      beforeKill = await moment(leading("leader"));
      publishedAtKill = publish !== undefined;
      killedAt = Date.now();
      leader.kill();
      await leader.exited;
    }
    if (why === "done") await waitFor(() => fleet.count("done") >= W);
    const doneWall = Date.now();
    const cpu1 = at.cpu();
    polling = false;
    await poller;
    await readPlan(); // once more: a publish in the last poll interval (the job's end) is seen too
    const atPublish = await publish?.moment;
    const leaderEnd = await leaderNow();
    const atEnd = await moment(leaderEnd ? leading(leaderEnd) : undefined);
    const workerReports = await fleet.report(60_000);
    const [standbyEnd, idleEnd] = await Promise.all([reportOf(standby, 60_000), reportOf(idle, 60_000)]);
    const storeWrites = await lastRevision(reader, "end").catch(() => NaN);
    const planEnd = await reader.get("plan").then((e) => (e ? JSON.parse(e.value) : undefined)).catch(() => undefined);
    const check = why === "done" ? await checkSplits(reader, S) : undefined;
    const rawEnd = await at.raw().catch(() => NaN);

    // --- the figures ---------------------------------------------------------------------
    const wc = workerReports.flatMap((r) => r.coordinators as Record<string, any>[]);
    const coordsOf = (r: Msg | undefined) => (r?.coordinators ?? []) as Record<string, any>[];
    const all = [...wc, ...coordsOf(standbyEnd), ...coordsOf(idleEnd)];
    const doneAts = wc.map((c) => c.doneAt).filter((x) => typeof x === "number");
    const finished = why === "done" && doneAts.length === W;
    const timeMs = (finished ? Math.max(...doneAts) : doneWall) - t0;
    const hostsCompleted = wc.reduce((n, c) => n + c.completed, 0);
    // The first leader, as last seen (before the kill, or at the end).
    const first = (beforeKill?.report ?? (leaderEnd === "leader" ? atEnd?.report : undefined) ?? atPublish?.report);
    const fc = coordsOf(first)[0];
    const ft: StoreTimeline | undefined = fc?.timeline;
    const pageWrites = (c: Record<string, any> | undefined) => (c?.counts?.ops?.["create.page.ok"] ?? 0) + (c?.counts?.ops?.["update.page.ok"] ?? 0);
    // The new leader (after the kill): its election, snapshot and first deal from its store's timeline.
    const nl = killedAt && leaderEnd && leaderEnd !== "leader" ? leading(leaderEnd) : undefined;
    const nc = all.find((c) => c.instance === leaderEnd && leaderEnd !== "leader");
    const nt: StoreTimeline | undefined = nc?.timeline;
    const electedAt = span(nt, "write.leader")?.[0];
    const splitOpen = span(nt, "watch.split.open"), splitReady = span(nt, "watch.split.ready");
    const dealtAt = nt?.dealt;
    const atDeal = dealtAt && nl ? sampler.at(dealtAt) : undefined;
    // The run that published the whole plan: its planner call (the last before the publish) to the publish.
    const pubReport = publish?.leader === "leader" ? first : publish?.leader ? [standbyEnd, idleEnd, ...workerReports].find((r) => coordsOf(r).some((c) => c.instance === publish!.leader)) : undefined;
    const pubCalls: number[] = pubReport?.plannerCalls ?? [];
    // In one run: the last call before the publish; in parts: the publishing leader's first call of its term.
    const termCalls = publish ? pubCalls.filter((t) => t <= publish!.at && (publish!.leader === "leader" || t >= (electedAt ?? 0))) : [];
    const pubCall = planPart > 0 ? termCalls[0] : termCalls.at(-1);
    let pubPlanned = publish?.leader === "leader" ? S : S - (nt?.snapshot["watch.split"] ?? 0);
    let planningMs = publish && pubCall ? publish.at - pubCall : null;
    let seededBy = publish?.leader;
    // In parts: the first leader's pace, from its first planner call to its last publish (a successor
    // goes on from its cursor, and its own parts, already in its view from the pages, say nothing of a pace).
    const firstTerm = plans.find((p) => p.pages > 0)?.term;
    const lastOfFirst = plans.filter((p) => p.term === firstTerm && p.pages > 0).at(-1);
    const firstCall = first?.plannerCalls?.[0] as number | undefined;
    if (planPart > 0 && lastOfFirst && firstCall) {
      pubPlanned = lastOfFirst.planned;
      planningMs = lastOfFirst.at - firstCall;
      seededBy = "leader";
    }
    const seedRate = planningMs ? pubPlanned / (planningMs / 1000) : NaN;
    const rawTotal = (r: Msg | undefined): StoreCounts | undefined => r?.total;
    const countsAll = sumCounts([...workerReports.map((r) => r.total), rawTotal(standbyEnd), rawTotal(idleEnd), rawTotal(first)].filter(Boolean) as StoreCounts[]);
    const fences = [...all, fc].reduce((n, c) => n + (c?.selfFences ?? 0), 0);
    const joinRead = wc.map((c) => (c.joinCounts ? c.joinCounts.gets + c.joinCounts.listEntries + c.joinCounts.watchPuts : NaN));
    const readOf = (c: Record<string, any> | undefined) => (c?.joinCounts ? c.joinCounts.gets + c.joinCounts.listEntries + c.joinCounts.watchPuts : null);
    const workerHosts = workerReports.map((r) => ({
      rssMiB: MiB(r.rss),
      baseMiB: MiB(r.baseRss),
      heapMiB: MiB(r.heap),
      coordinators: r.coordinators.length,
      perCoordinatorMiB: +((r.rss - r.baseRss) / r.coordinators.length / 2 ** 20).toFixed(2),
    }));
    const mom = (m: Moment | undefined) =>
      m && {
        leader: m.leader,
        atMs: m.at - t0,
        rssMiB: MiB(m.rss),
        baselineMiB: MiB(m.baseRss),
        perSplit: m.perSplit,
        heapMiB: m.heap ? MiB(m.heap) : null,
        baseHeapMiB: m.baseHeap ? MiB(m.baseHeap) : null,
        heapPerSplit: m.heapPerSplit ?? null,
        rssAfterGcMiB: m.rssAfterGc ? MiB(m.rssAfterGc) : null,
        rssAfterGcPerSplit: m.rssAfterGcPerSplit ?? null,
        gcMs: m.gcMs ?? null,
        memMiB: m.mem ? Object.fromEntries(Object.entries(m.mem).map(([k, v]) => [k, MiB(v)])) : null,
        baseMemMiB: m.baseMem ? Object.fromEntries(Object.entries(m.baseMem).map(([k, v]) => [k, MiB(v)])) : null,
      };
    const leaderRss = {
      atPublish: mom(atPublish),
      beforeKill: mom(beforeKill),
      newLeaderAtFirstDeal: atDeal && nl ? { rssMiB: MiB(atDeal.rss[nl.key]), baselineMiB: MiB(baseOf(nl, atDeal)), perSplit: Math.round((atDeal.rss[nl.key] - baseOf(nl, atDeal)) / S) } : null,
      atEnd: mom(atEnd),
      firstLeaderPeakMiB: MiB(sampler.max("leader")),
      newLeaderPeakMiB: nl ? MiB(sampler.max(nl.key)) : null,
    };
    const row = {
      scenario: "million",
      store: at.label,
      S,
      W,
      procs: fleet.hosts.length,
      runtime: d.runtime,
      leaseMs: lease,
      maxInFlight: d.maxInFlight,
      leaderV8Flags: v8.slice(1),
      planPart,
      loadavg: [load0, loadavg()],
      finished,
      stoppedBy: why,
      timeMs,
      rawCasPerSec: Math.round(raw),
      rawCasPerSecAtEnd: Math.round(rawEnd),
      boundMs: Math.round(boundMs),
      timeOverBound: +(timeMs / boundMs).toFixed(2),
      // The same without the leaderless interval of the kill (to the new leader's first deal).
      timeLessGapOverBound: killedAt && dealtAt ? +((timeMs - (dealtAt - killedAt)) / boundMs).toFixed(2) : null,
      storeWrites,
      writesPerSplit: +(storeWrites / S).toFixed(3),
      writesByOp: countsAll.ops,
      timeOverLandedAtRaw: +(timeMs / (storeWrites / raw * 1000)).toFixed(2),
      serverCpuSeconds: +(cpu1 - cpu0).toFixed(1),
      serverCpuMsPerWrite: +((cpu1 - cpu0) * 1000 / storeWrites).toFixed(3),
      hostsCompleted,
      storeCheck: check,
      lost: check ? S - ((check.status as Record<string, number>).completed ?? 0) : null,
      exactlyOnce: check ? hostsCompleted === S && check.missing === 0 && check.duplicates === 0 && (check.status as Record<string, number>).completed === S : null,
      selfFences: fences,
      leaderTerms: planEnd?.term ?? null,
      outcome: planEnd?.outcome?.kind ?? null,
      leaderAtEnd: leaderEnd ?? null,
      leaderRssPerSplit: leaderRss,
      workerHostPeakMiB: MiB(Math.max(0, ...fleet.hosts.map((_, i) => sampler.max(`worker${i}`)))),
      // The one-coordinator processes' RSS (MiB) and share of a core every ~2 s: when the leader's memory grew, and whether it was CPU-bound.
      rssTimeline: sampler.samples.filter((_, i) => i % 4 === 0).map((x, i, all) => {
        const prev = all[i - 1];
        const pct = (k: string) => (prev ? Math.round((x.cpu[k] - prev.cpu[k]) / ((x.at - prev.at) / 1000) * 100) : null);
        return {
          atMs: x.at - t0,
          leader: MiB(x.rss.leader ?? NaN),
          standby: MiB(x.rss.standby ?? NaN),
          idle: MiB(x.rss.idle ?? NaN),
          cpuPct: { leader: pct("leader"), standby: pct("standby"), idle: pct("idle") },
        };
      }),
      plan: {
        electedMs: elected - t0,
        fleetGoMs: fleetGo - t0,
        firstLeaderPlannerCalledMs: first?.plannerCalls?.[0] ? first.plannerCalls[0] - t0 : null,
        firstLeaderPagesWritten: pageWrites(fc),
        firstLeaderPagesMs: span(ft, "write.page")?.map((x) => x - t0) ?? null,
        publishedAtKill: publishedAtKill ?? null,
        publishedMs: publish ? publish.at - t0 : null,
        publishedBy: publish?.leader ?? null,
        completedAtPublish: publish?.completed ?? null,
        pages: publish?.pages ?? null,
        plannedByThePublishingRun: pubPlanned,
        planningMs,
        seedPerSec: Math.round(seedRate),
        seedOverRaw: +(seedRate / raw).toFixed(2),
        planRecordChanges: plans.map((p) => ({ ...p, at: p.at - t0 })),
      },
      newLeader: killedAt
        ? {
          killedAtMs: killedAt - t0,
          leaderAtKill: leaderAtKill ?? null,
          completedAtKill: beforeKill ? Math.round(killAt * S) : null,
          newLeader: nl?.instance ?? leaderEnd ?? null,
          killToElectionMs: electedAt ? electedAt - killedAt : null,
          // From the election to the split watch's opening: the term bump and the plan's pages, read one by one.
          pagesReadMs: electedAt && splitOpen ? splitOpen[0] - electedAt : null,
          splitSnapshotMs: splitOpen && splitReady ? splitReady[0] - splitOpen[0] : null,
          splitRecordsInSnapshot: nt?.snapshot["watch.split"] ?? null,
          snapshotMs: electedAt && splitReady ? splitReady[0] - electedAt : null,
          electionToFirstDealMs: electedAt && dealtAt ? dealtAt - electedAt : null,
          killToFirstDealMs: dealtAt ? dealtAt - killedAt : null,
          plannerCalledAfterElectionMs: electedAt ? (pubCalls.find((t) => t >= electedAt) ?? NaN) - electedAt : null,
          timeline: nt ? Object.fromEntries(Object.entries(nt.at).map(([k, [a, b]]) => [k, [a - t0, b - t0]])) : null,
        }
        : null,
      members: {
        workerHosts,
        recordsReadAtJoin: { max: Math.max(...joinRead), mean: +(joinRead.reduce((a, b) => a + b, 0) / joinRead.length).toFixed(1) },
        idleRecordsReadAtJoin: readOf(coordsOf(idleEnd)[0]),
        standbyRecordsReadAtJoin: readOf(coordsOf(standbyEnd)[0]),
      },
    };
    await d.record(row);
    const ok = (x: boolean) => (x ? "" : " (not finished)");
    const b = (m: { perSplit: number } | null | undefined) => (m ? `${m.perSplit} B` : "-");
    result({
      bench: "scale",
      metric: `million S=${S} on ${at.label}: leading process RSS − baseline RSS, per split`,
      value: `${b(leaderRss.atPublish)} at the publish (${leaderRss.atPublish?.leader ?? "never published"}), ${b(leaderRss.beforeKill)} before the kill, ` +
        `${b(leaderRss.newLeaderAtFirstDeal)} at the new leader's first deal, ${b(leaderRss.atEnd)} at the end (${leaderRss.atEnd?.leader}); ` +
        `live JS heap (after a full GC) ${leaderRss.beforeKill?.heapPerSplit ?? "-"} B/split before the kill, ${leaderRss.atEnd?.heapPerSplit ?? "-"} at the end`,
      ratio: Math.max(...[leaderRss.atPublish, leaderRss.beforeKill, leaderRss.atEnd].map((m) => m?.perSplit ?? -Infinity)),
      target: "<= 300 B",
    });
    result({
      bench: "scale",
      metric: `million ${W} × ${S} tiny on ${at.label}: time ÷ (${d.neededPerSplit} writes/split at raw CAS)`,
      value: `${(timeMs / 1000).toFixed(1)} s${ok(finished)}, raw CAS ${Math.round(raw)}/s, ${row.writesPerSplit} writes/split (store), ` +
        `lost ${row.lost ?? "?"}, exactly once ${row.exactlyOnce ?? "?"}, ${fences} self-fences, ${row.leaderTerms} terms` +
        (row.timeLessGapOverBound ? `; ${row.timeLessGapOverBound} × without the leaderless gap` : ""),
      ratio: row.timeOverBound,
      target: "<= 2",
    });
    if (row.newLeader) {
      const n = row.newLeader;
      result({
        bench: "scale",
        metric: `million S=${S} on ${at.label}: leader SIGKILLed, election → first deal`,
        value: `${n.newLeader} won; kill → election ${secs(n.killToElectionMs)} s (lease ${lease / 1000} s), snapshot ${secs(n.snapshotMs)} s ` +
          `(term + pages ${secs(n.pagesReadMs)} s, ${n.splitRecordsInSnapshot} split records ${secs(n.splitSnapshotMs)} s), ` +
          `its process ${leaderRss.newLeaderAtFirstDeal?.rssMiB ?? "-"} MiB (baseline ${leaderRss.newLeaderAtFirstDeal?.baselineMiB ?? "-"}) at its first deal` +
          (publishedAtKill ? "" : "; the plan was not published at the kill") +
          (n.leaderAtKill && n.leaderAtKill !== "leader" ? `; the leader process had lost its term before the kill (${n.leaderAtKill} led)` : ""),
        ratio: secs(n.electionToFirstDealMs) ?? undefined,
        target: "<= 15 s",
      });
    }
    result({
      bench: "scale",
      metric: `million S=${S} on ${at.label}: plan seeding rate ÷ raw CAS rate`,
      value: publish
        ? `${pubPlanned} splits planned by ${seededBy}'s ${planPart > 0 ? `parts of ${planPart}` : "run"}, published ${secs(planningMs)} s after its first planner call ` +
          `(${row.plan.seedPerSec}/s against raw ${Math.round(raw)}/s), ${publish.completed} splits completed by then`
        : "the plan was never published",
      ratio: row.plan.seedOverRaw,
      target: ">= 0.5",
    });
    result({
      bench: "scale",
      metric: `million S=${S} on ${at.label}: a worker's records read at join, RSS per coordinator`,
      value: `${row.members.recordsReadAtJoin.max} records at most (mean ${row.members.recordsReadAtJoin.mean}), ` +
        `${workerHosts.map((h) => h.perCoordinatorMiB).join("/")} MiB per coordinator over its host's baseline (${workerHosts[0]?.coordinators} per host, peak host ${row.workerHostPeakMiB} MiB)`,
      ratio: row.members.recordsReadAtJoin.max,
      target: "O(1)",
    });
    /** The leading process's heap snapshot (written now, or at `path` already), summarised and recorded. */
    async function snapshotHeap(child: Child, who: string, when: string, path?: string): Promise<void> {
      let h: Msg | undefined = path ? { ev: "heap", arrivedAt: Date.now(), path, ms: 0 } : undefined;
      if (!h) {
        const file = `${root}bench/results/million-${kind}-${d.stamp}.heapsnapshot`;
        const from = child.msgs.length;
        await child.send({ cmd: "heap", path: file });
        h = await child.next((m) => m.ev === "heap" && child.msgs.indexOf(m) >= from, 600_000, "heap snapshot")
          .catch((e): Msg => ({ ev: "heap", arrivedAt: Date.now(), error: String(e) }));
      }
      if (h.error) return void console.log(`heap snapshot: ${h.error}`);
      console.log(`heap snapshot of the leader (${who}) at the ${when}: ${h.path}${h.ms ? ` (${h.ms} ms; RSS ${MiB(h.rss)} MiB, heap ${MiB(h.heap)} MiB after it)` : ""}`);
      const top = await summarizeHeap(h.path, 25);
      console.log(top.text);
      await d.record({ scenario: "million-heap", when, store: at.label, leader: who, path: h.path, top: top.rows });
    }
    const heapOf = leaderEnd ? leading(leaderEnd)?.child : undefined;
    if (Deno.env.get("BENCH_MILLION_HEAP") === "1" && heapOf) await snapshotHeap(heapOf, leaderEnd!, "end");
    if (atPublishHeap) await snapshotHeap(atPublishHeap[0], atPublishHeap[1], "publish", atPublishHeap[2]);
  } finally {
    polling = false;
    sampler.stop();
    await reader.close().catch(() => {});
    await Promise.all([
      f?.stop(),
      ...[leader, idle, standby].map(async (h) => {
        await h.send({ cmd: "close" });
        await h.next((m) => m.ev === "closed", 20_000, "closed").catch(() => {});
        await h.stop(5000);
      }),
    ]);
  }
}
