/**
 * `npm run demo`: a self-contained tour of splitlease.
 *
 * Generates a dataset of ndjson files, runs a fleet of three workers over the
 * object-store source (directory variant), shows live progress, serves
 * `/status` and `/metrics` while it runs, and prints a summary: splits,
 * records in and out, duplicates, elapsed time, per-worker share.
 *
 * - default: three workers in this process on the embedded MemoryStore;
 * - `--nats`: a nats-server started here and three worker processes (Deno,
 *   Bun, Node 24); one is SIGKILLed halfway to show the takeover. The
 *   server is found as `npm test` and `splitlease dev` find it:
 *   `NATS_SERVER_BIN` (`NATS_SERVER` is an older alias), the cached build
 *   of the pinned release, `PATH`, then Debian's package;
 * - `--pg`: the same fleet coordinating through a PostgreSQL started here
 *   (Debian's `postgresql`, installed when missing and run as root);
 * - `--redis`: the same fleet coordinating through a redis-server started
 *   here (Debian's `redis-server`, installed when missing, as root), its
 *   append-only file fsynced on every write.
 *
 * The progress line shows completed/total splits from a worker's
 * `status().counts` (a member copies them from the leader's heartbeat).
 * Every split that changes hands other than by a routine claim or grant is
 * printed with the `kind` of the worker's `Gained split` log line:
 * `takeover` (its owner died) or `reclaim` (its owner was this worker's
 * previous process) replay from the last commit; `handoff` (a rebalance or a
 * drain released it to this worker) replays nothing; `resume` follows a
 * self-fence.
 *
 * Options: `--records N` (4000), `--files N` (24), `--split-bytes N`
 * (24000), `--delay-ms N` per batch of `--batch N` records (40 per 5),
 * `--port N` (0: a free port), `--linger-ms N` (keep serving after the
 * summary), `--summary-json PATH`, `--keep` (keep the dataset).
 *
 * @module
 */
import {
  MemoryStore,
  SplitCoordinator,
  startWorker,
  type Worker,
} from "../../mod.ts";
import { createApp, type HttpApp, MetricsRegistry, PROMETHEUS_CONTENT_TYPE } from "../../host.ts";
import { directoryBackend } from "../object_store/dir.ts";
import { type ObjectRecord, objectStoreSource } from "../object_store/source.ts";
import { findNatsServer, startNatsServer, thisMachine } from "../../cli/nats_server.ts";

// --- options -----------------------------------------------------------------

interface Options {
  nats: boolean;
  pg: boolean;
  redis: boolean;
  records: number;
  files: number;
  splitBytes: number;
  delayMs: number;
  batch: number;
  port: number;
  lingerMs: number;
  summaryJson?: string;
  keep: boolean;
}

const USAGE = "usage: npm run demo -- [--nats | --pg | --redis] [--records N] [--files N] [--split-bytes N] [--delay-ms N] " +
  "[--batch N] [--port N] [--linger-ms N] [--summary-json PATH] [--keep]";

function parseArgs(args: string[]): Options {
  const o: Options = {
    nats: false,
    pg: false,
    redis: false,
    records: 4000,
    files: 24,
    splitBytes: 24_000,
    delayMs: 40,
    batch: 5,
    port: 0,
    lingerMs: 0,
    keep: false,
  };
  const ints: Record<string, keyof Options> = {
    "--records": "records",
    "--files": "files",
    "--split-bytes": "splitBytes",
    "--delay-ms": "delayMs",
    "--batch": "batch",
    "--port": "port",
    "--linger-ms": "lingerMs",
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--nats") o.nats = true;
    else if (a === "--pg") o.pg = true;
    else if (a === "--redis") o.redis = true;
    else if (a === "--keep") o.keep = true;
    else if (a === "--help" || a === "-h") {
      console.log(USAGE);
      Deno.exit(0);
    } else if (a === "--summary-json") o.summaryJson = args[++i];
    else if (a in ints) {
      const v = Number(args[++i]);
      const min = a === "--records" || a === "--files" || a === "--split-bytes" || a === "--batch" ? 1 : 0;
      if (!Number.isInteger(v) || v < min) die(`${a} needs an integer >= ${min}`);
      (o as unknown as Record<string, number>)[ints[a]] = v;
    } else die(`unknown argument ${a}\n${USAGE}`);
  }
  if (o.files > o.records) die("--files must not exceed --records");
  if ([o.nats, o.pg, o.redis].filter(Boolean).length > 1) die("--nats, --pg and --redis: pick one store");
  return o;
}

function die(msg: string): never {
  console.error(`demo: ${msg}`);
  Deno.exit(2);
}

// --- dataset -------------------------------------------------------------------

/** Writes `files` ndjson files holding `records` records in total, of varied sizes. */
async function generate(dir: string, records: number, files: number): Promise<{ ids: string[]; bytes: number }> {
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  // Skewed shares: a few big files, many small ones.
  const weights = Array.from({ length: files }, (_, f) => (f % 5 === 0 ? 6 : 1) * (0.5 + rand()));
  const sum = weights.reduce((a, b) => a + b, 0);
  const counts = weights.map((w) => Math.max(1, Math.floor((w / sum) * records)));
  let extra = records - counts.reduce((a, b) => a + b, 0);
  for (let f = 0; extra !== 0; f = (f + 1) % files) {
    if (extra > 0) (counts[f]++, extra--);
    else if (counts[f] > 1) (counts[f]--, extra++);
  }
  const ids: string[] = [];
  let bytes = 0;
  const cities = ["Lisbon", "Osaka", "Quito", "Nairobi", "Oslo", "Perth", "Lyon", "Austin"];
  for (let f = 0; f < files; f++) {
    const sub = f % 4 === 0 ? "archive/" : "";
    if (sub) await Deno.mkdir(`${dir}/${sub}`, { recursive: true });
    const lines: string[] = [];
    for (let i = 0; i < counts[f]; i++) {
      const id = `f${String(f).padStart(2, "0")}-${String(i).padStart(5, "0")}`;
      ids.push(id);
      lines.push(JSON.stringify({
        id,
        city: cities[Math.floor(rand() * cities.length)],
        amount: Math.round(rand() * 100_000) / 100,
        note: "·".repeat(Math.floor(rand() * 60)),
      }));
    }
    const text = lines.join("\n") + "\n";
    bytes += new TextEncoder().encode(text).length;
    await Deno.writeTextFile(`${dir}/${sub}events-${String(f).padStart(2, "0")}.ndjson`, text);
  }
  return { ids, bytes };
}

// --- tally ---------------------------------------------------------------------

/** Counts what reached the sinks: per record id and per worker. */
class Tally {
  readonly seen = new Map<string, number>();
  readonly perWorker = new Map<string, number>();
  out = 0;
  constructor(readonly total: number) {}
  add(worker: string, line: string): void {
    let id: string;
    try {
      id = JSON.parse(line).id;
    } catch {
      return; // a torn line from a killed worker
    }
    this.out++;
    this.seen.set(id, (this.seen.get(id) ?? 0) + 1);
    this.perWorker.set(worker, (this.perWorker.get(worker) ?? 0) + 1);
  }
  get unique(): number {
    return this.seen.size;
  }
  get duplicates(): number {
    return this.out - this.seen.size;
  }
}

// --- how splits changed hands ------------------------------------------------------

/** Kinds of `Gained split` (the worker's log line, event `gained`): how a split reached a worker. */
type GainKind = "claim" | "grant" | "takeover" | "reclaim" | "handoff" | "resume";
const GAIN_KINDS: readonly GainKind[] = ["claim", "grant", "takeover", "reclaim", "handoff", "resume"];

/** Counts gains by kind and prints the ones an operator cares about. */
class Gains {
  readonly byKind: Record<GainKind, number> = { claim: 0, grant: 0, takeover: 0, reclaim: 0, handoff: 0, resume: 0 };

  /** The worker's `Gained split` line (event `gained`: `splitId`, `epoch`, `kind`, `progress`): counts it, prints a takeover, reclaim, handoff or resume. */
  gained(worker: string, fields: Record<string, unknown>): void {
    const kind = GAIN_KINDS.includes(fields.kind as GainKind) ? fields.kind as GainKind : undefined;
    if (kind) this.byKind[kind]++;
    const line = describeGain(worker, kind, String(fields.splitId), Number(fields.epoch), fields.progress as { watermark?: unknown } | null);
    if (line) note(line);
  }

  /** `3 takeovers, 1 handoff, 20 claims and grants`. */
  summary(): string {
    const n = this.byKind;
    const plural = (k: number, word: string) => `${k} ${word}${k === 1 ? "" : "s"}`;
    return [
      plural(n.takeover, "takeover"),
      plural(n.reclaim, "reclaim"),
      plural(n.handoff, "handoff"),
      plural(n.resume, "resume"),
      `${n.claim + n.grant} claims and grants`,
    ].join(", ");
  }
}

/** One line for a gain worth showing, or `undefined` for a routine claim or grant. */
function describeGain(
  worker: string,
  kind: GainKind | undefined,
  split: string,
  epoch: number,
  progress: { watermark?: unknown } | null,
): string | undefined {
  const id = `${split.slice(0, 8)}…`;
  const from = progress?.watermark !== undefined ? `resuming at byte ${progress.watermark}` : "starting at the beginning";
  switch (kind) {
    case "takeover":
      return `  ${worker} took over split ${id} from a dead worker (takeover, epoch ${epoch}): ${from}, the uncommitted tail replays`;
    case "reclaim":
      return `  ${worker} reclaimed split ${id} from its own previous process (reclaim, epoch ${epoch}): ${from}`;
    case "handoff":
      return `  ${worker} was handed split ${id} by a rebalance or a drain (handoff, epoch ${epoch}): ${from}, nothing replays`;
    case "resume":
      return `  ${worker} resumed split ${id} after a self-fence (resume, epoch ${epoch}): ${from}`;
    default:
      return undefined;
  }
}

// --- progress ------------------------------------------------------------------

const tty = Deno.stdout.isTerminal();
const write = (s: string) => Deno.stdout.writeSync(new TextEncoder().encode(s));

function progressLine(t: Tally, started: number, splits: string, width = 30): string {
  const frac = Math.min(1, t.unique / t.total);
  const filled = Math.round(frac * width);
  const bar = tty ? `[${"█".repeat(filled)}${"░".repeat(width - filled)}] ` : "";
  const per = [...t.perWorker.entries()].sort().map(([w, n]) => `${w} ${n}`).join(" · ");
  return `${bar}${(frac * 100).toFixed(0).padStart(3)}%  ${t.unique}/${t.total} records  ` +
    `${((Date.now() - started) / 1000).toFixed(1)} s  splits ${splits}${per ? `  | ${per}` : ""}`;
}

function startProgress(t: Tally, started: number, splits: () => string): () => void {
  let last = 0;
  const timer = setInterval(() => {
    if (tty) write(`\r\x1b[2K${progressLine(t, started, splits())}`);
    else if (Date.now() - last >= 1000) {
      last = Date.now();
      console.log(progressLine(t, started, splits()));
    }
  }, 100);
  return () => {
    clearInterval(timer);
    if (tty) write(`\r\x1b[2K${progressLine(t, started, splits())}\n`);
    else console.log(progressLine(t, started, splits()));
  };
}

function note(msg: string): void {
  if (tty) write(`\r\x1b[2K${msg}\n`);
  else console.log(msg);
}

// --- HTTP ----------------------------------------------------------------------

interface WorkerView {
  name: string;
  /** `/status`, `/metrics`, … of this worker. */
  fetch(path: string): Promise<Response>;
}

function serveDemo(
  port: number,
  tally: Tally,
  started: number,
  mode: string,
  workers: () => WorkerView[],
): { url: string; close(): Promise<void>; hits: Record<string, number> } {
  const hits: Record<string, number> = {};
  const server = Deno.serve({ port, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    const path = new URL(req.url).pathname;
    hits[path] = (hits[path] ?? 0) + 1;
    if (path === "/status") {
      const ws = await Promise.all(workers().map(async (w) => {
        try {
          const r = await w.fetch("/status");
          return { name: w.name, records: tally.perWorker.get(w.name) ?? 0, status: await r.json() };
        } catch (e) {
          return { name: w.name, records: tally.perWorker.get(w.name) ?? 0, error: String(e) };
        }
      }));
      return Response.json({
        mode,
        elapsedMs: Date.now() - started,
        recordsIn: tally.total,
        recordsOut: tally.out,
        unique: tally.unique,
        duplicates: tally.duplicates,
        workers: ws,
      });
    }
    if (path === "/metrics") {
      const r = new MetricsRegistry("splitlease_demo_");
      r.gauge("records_in", "Records in the generated dataset.").set(tally.total);
      const out = r.counter("records_out_total", "Records handed to the sinks (duplicates included), by worker.");
      for (const w of workers()) out.set(tally.perWorker.get(w.name) ?? 0, { worker: w.name });
      r.gauge("records_unique", "Distinct records delivered.").set(tally.unique);
      r.counter("duplicates_total", "Records delivered more than once (replays after a takeover).").set(tally.duplicates);
      r.gauge("elapsed_seconds", "Time since the fleet started.").set((Date.now() - started) / 1000);
      return new Response(r.render(), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
    }
    const m = /^\/workers\/([^/]+)(\/.*)$/.exec(path);
    if (m) {
      const w = workers().find((x) => x.name === m[1]);
      if (w) {
        try {
          return await w.fetch(m[2]);
        } catch (e) {
          return Response.json({ error: `worker ${w.name} did not answer: ${e}` }, { status: 502 });
        }
      }
    }
    if (path === "/") {
      const names = workers().map((w) => w.name);
      return new Response(
        [
          "splitlease demo",
          "  /status   fleet progress and every worker's status",
          "  /metrics  demo counters (Prometheus text)",
          ...names.map((n) => `  /workers/${n}/{status,metrics,healthz,readyz}`),
        ].join("\n") + "\n",
      );
    }
    return Response.json({ error: `no route for ${path}` }, { status: 404 });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown(), hits };
}

// --- summary -------------------------------------------------------------------

interface Summary {
  mode: string;
  splits: { planned: number; completed: number };
  recordsIn: number;
  recordsOut: number;
  unique: number;
  missing: number;
  duplicates: number;
  elapsedMs: number;
  workers: { name: string; records: number; share: number; splitsCompleted: number; outcome: string }[];
  killed?: string;
  /** Gains by kind (`Gained split` log lines of every worker). */
  gains: Record<GainKind, number>;
  statusServed: boolean;
}

function printSummary(s: Summary): void {
  const pad = (x: string | number, n: number) => String(x).padStart(n);
  console.log("");
  console.log(`Summary (${s.mode})`);
  console.log(`  splits        ${s.splits.completed}/${s.splits.planned} completed`);
  console.log(`  records in    ${s.recordsIn}`);
  console.log(`  records out   ${s.recordsOut}  (${s.unique} distinct, ${s.missing} missing)`);
  console.log(`  duplicates    ${s.duplicates}${s.killed ? `  (replayed after ${s.killed} was killed)` : ""}`);
  const g = s.gains;
  console.log(
    `  splits moved  ${g.takeover} takeovers, ${g.reclaim} reclaims (dead owner: its uncommitted tail replays); ` +
      `${g.handoff} handoffs (rebalance or drain: no replay); ${g.resume} resumes; ${g.claim + g.grant} claims and grants`,
  );
  console.log(`  elapsed       ${(s.elapsedMs / 1000).toFixed(1)} s`);
  console.log("  per worker:");
  for (const w of s.workers) {
    console.log(
      `    ${w.name.padEnd(14)} ${pad(w.records, 6)} records ${pad((w.share * 100).toFixed(1), 5)}%  ` +
        `${pad(w.splitsCompleted, 3)} splits completed  ${w.outcome}`,
    );
  }
  console.log(s.missing === 0 ? "  no record lost ✔" : `  ${s.missing} RECORD(S) LOST ✘`);
}

function slowSink(name: string, tally: Tally, o: Options) {
  let n = 0;
  return async (r: ObjectRecord) => {
    tally.add(name, r.line);
    if (o.delayMs > 0 && ++n % o.batch === 0) await new Promise((res) => setTimeout(res, o.delayMs));
  };
}

// --- in-process fleet ------------------------------------------------------------

async function runInProcess(o: Options, dir: string, tally: Tally): Promise<Summary> {
  const store = new MemoryStore();
  const names = ["worker-1", "worker-2", "worker-3"];
  const fleet: { name: string; worker: Worker; app: HttpApp }[] = [];
  const gains = new Gains();
  const started = Date.now();
  const http = serveDemo(o.port, tally, started, "in-process", () =>
    fleet.map((f) => ({ name: f.name, fetch: (p: string) => Promise.resolve(f.app.fetch(new Request(`http://demo${p}`))) })));
  note(`status:  ${http.url}/status\nmetrics: ${http.url}/metrics`);
  try {
    for (const name of names) {
      const source = objectStoreSource({
        backend: directoryBackend({ dir }),
        sink: slowSink(name, tally, o),
        targetSplitBytes: o.splitBytes,
        commitEveryRecords: 50,
        commitEveryMs: 250,
      });
      const coordinator = await SplitCoordinator.join({
        store,
        job: "demo",
        instance: name,
        fingerprint: source.fingerprint(),
        planner: (ctx) => source.plan(ctx),
        leaseMs: 2000,
        opTimeoutMs: 500,
        drainDeadlineMs: 2000,
        maxInFlight: 2,
        logger: () => {},
      });
      const worker = startWorker({
        coordinator,
        source,
        maxInFlight: 2,
        logger: (_level, _message, fields) => {
          if (fields?.event === "gained") gains.gained(name, fields);
        },
      });
      fleet.push({ name, worker, app: createApp({ worker }) });
    }
    // Completed/total from status().counts (the leader's own, or a member's
    // copy of the leader's last heartbeat): the highest any worker reports.
    let planned = 0;
    let completed = 0;
    const splits = () => {
      for (const f of fleet) {
        if (f.worker.finished) continue; // a closed coordinator reports nothing
        const st = f.worker.coordinator.status();
        planned = Math.max(planned, st.counts.planned);
        completed = Math.max(completed, st.counts.completed);
      }
      return planned ? `${completed}/${planned}` : "planning";
    };
    const stop = startProgress(tally, started, splits);
    const outcomes = await Promise.all(fleet.map((f) => f.worker.done));
    // The workers closed: their last status may predate the last completions.
    completed = Math.max(completed, outcomes.reduce((s, x) => s + x.stats.completed, 0));
    stop();
    const elapsedMs = Date.now() - started;
    const summary: Summary = {
      mode: "3 workers in one process on MemoryStore",
      splits: { planned, completed: outcomes.reduce((s, x) => s + x.stats.completed, 0) },
      recordsIn: tally.total,
      recordsOut: tally.out,
      unique: tally.unique,
      missing: tally.total - tally.unique,
      duplicates: tally.duplicates,
      elapsedMs,
      gains: gains.byKind,
      workers: fleet.map((f, i) => ({
        name: f.name,
        records: tally.perWorker.get(f.name) ?? 0,
        share: (tally.perWorker.get(f.name) ?? 0) / Math.max(1, tally.out),
        splitsCompleted: outcomes[i].stats.completed,
        outcome: outcomes[i].kind === "drained" ? `drained (${outcomes[i].reason})` : outcomes[i].kind,
      })),
      statusServed: false,
    };
    await linger(o, http.url);
    summary.statusServed = (http.hits["/status"] ?? 0) > 0;
    return summary;
  } finally {
    for (const f of fleet) if (!f.worker.finished) await f.worker.shutdown({ deadlineMs: 2000 });
    await http.close();
    await store.close();
  }
}

async function linger(o: Options, url: string): Promise<void> {
  if (o.lingerMs > 0) {
    note(`serving ${url}/status for ${(o.lingerMs / 1000).toFixed(1)} s more`);
    await new Promise((r) => setTimeout(r, o.lingerMs));
  }
}

// --- NATS fleet of processes -------------------------------------------------------

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

interface Child {
  name: string;
  runtime: string;
  proc: Deno.ChildProcess;
  port: number;
  output: string;
  events: Record<string, unknown>[];
  status: Promise<Deno.CommandStatus>;
  read: number;
  partial: string;
  /** Splits it held at its last `/status`. */
  held: number;
}

/** The store of a fleet of processes: the workers' environment for it, and how to stop it. */
interface FleetStore {
  name: string;
  env: Record<string, string>;
  kill(): void;
  stop(): Promise<void>;
}

async function natsStore(tmp: string): Promise<FleetStore> {
  // Found as `npm test` and `splitlease dev` find it: NATS_SERVER_BIN (NATS_SERVER, its
  // older alias), the cached pinned release, PATH, then Debian's package.
  const found = findNatsServer(thisMachine(Deno.env.toObject()));
  if ("error" in found) die(`--nats needs nats-server: ${found.error}\nor run the demo without --nats.`);
  const nats = await startNatsServer({ bin: found.path, port: 0, wsPort: 0, httpPort: 0, storeDir: `${tmp}/jetstream` });
  note(`nats-server ${found.version}: ${found.path} (${found.why}; websocket ${nats.wsUrl})`);
  return { name: "nats-server", env: { STORE: "nats", NATS_URL: nats.wsUrl }, kill: () => nats.killSync(), stop: async () => void await nats.stop() };
}

/** A throwaway PostgreSQL (scripts/services.mjs: the one the test command starts, on a free port). */
async function pgStore(): Promise<FleetStore> {
  const { startPostgres } = await import("../../scripts/services.mjs");
  const pg = await startPostgres({ log: note }) as
    | { url: string; killSync(): void; stop(): Promise<void>; error?: undefined }
    | { error: string };
  if (pg.error !== undefined) die(`--pg needs PostgreSQL: ${pg.error}`);
  const { url, killSync, stop } = pg as { url: string; killSync(): void; stop(): Promise<void> };
  note(`PostgreSQL: ${url}`);
  return { name: "PostgreSQL", env: { STORE: "postgres", STORE_URL: url }, kill: killSync, stop };
}

/** A throwaway redis-server (scripts/services.mjs: the one the test command starts), AOF fsynced on every write. */
async function redisStore(): Promise<FleetStore> {
  const { startRedis } = await import("../../scripts/services.mjs");
  const r = await startRedis({ log: note, appendfsync: "always" }) as
    | { url: string; killSync(): void; stop(): Promise<void>; error?: undefined }
    | { error: string };
  if (r.error !== undefined) die(`--redis needs redis-server: ${r.error}`);
  const { url, killSync, stop } = r as { url: string; killSync(): void; stop(): Promise<void> };
  note(`redis-server: ${url} (appendonly yes, appendfsync always)`);
  return { name: "redis-server", env: { STORE: "redis", STORE_URL: url }, kill: killSync, stop };
}

async function runProcesses(o: Options, dir: string, tally: Tally, tmp: string): Promise<Summary> {
  const root = new URL("../../", import.meta.url).pathname;
  const bin = (n: string) => `${root}node_modules/.bin/${n}`;
  const store = o.pg ? await pgStore() : o.redis ? await redisStore() : await natsStore(tmp);
  const children: Child[] = [];
  const started = Date.now();
  const leaseMs = 2000;
  const http = serveDemo(o.port, tally, started, o.pg ? "postgres" : o.redis ? "redis" : "nats", () =>
    children.map((c) => ({ name: c.name, fetch: (p: string) => fetch(`http://127.0.0.1:${c.port}${p}`) })));
  note(`status:  ${http.url}/status\nmetrics: ${http.url}/metrics`);
  let killed: Child | undefined;
  const gains = new Gains();
  const killAll = () => {
    for (const c of children) {
      try {
        c.proc.kill("SIGKILL");
      } catch { /* exited */ }
    }
    store.kill();
  };
  exitHooks.add(killAll);
  try {
    const main = `${root}examples/object_store/main.ts`;
    const runtimes: [string, string, string[]][] = [
      ["deno", bin("deno"), ["run", "-A", main]],
      ["bun", bin("bun"), ["run", main]],
      ["node", bin("node"), [main]],
    ];
    for (const [rt, cmd, args] of runtimes) {
      const port = freePort();
      const name = `worker-${rt}`;
      const output = `${tmp}/out-${rt}.ndjson`;
      const proc = new Deno.Command(cmd, {
        args,
        cwd: root,
        env: {
          OBJSTORE_DIR: dir,
          OUTPUT: output,
          ...store.env,
          JOB: "demo",
          INSTANCE: name,
          PORT: String(port),
          BIND: "127.0.0.1",
          SPLIT_BYTES: String(o.splitBytes),
          COMMIT_RECORDS: "50",
          COMMIT_MS: "250",
          LEASE_MS: String(leaseMs),
          DRAIN_DEADLINE_MS: "2000",
          DELAY_MS: String(o.delayMs),
          DELAY_EVERY: String(o.batch),
          NO_COLOR: "1",
        },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const child: Child = {
        name,
        runtime: rt,
        proc,
        port,
        output,
        events: [],
        status: proc.status,
        read: 0,
        partial: "",
        held: 0,
      };
      const pump = async (s: ReadableStream<Uint8Array>) => {
        let buf = "";
        for await (const chunk of s.pipeThrough(new TextDecoderStream())) {
          buf += chunk;
          let i;
          while ((i = buf.indexOf("\n")) >= 0) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            try {
              const ev = JSON.parse(line);
              child.events.push(ev);
              if (ev.event === "gained") gains.gained(name, ev);
              if (ev.level === "error" && ev.event === "startupFailed") note(`  ${name}: ${ev.msg} ${ev.error ?? ""}`);
            } catch { /* not JSON */ }
          }
        }
      };
      child.status = Promise.all([proc.status, pump(proc.stdout), pump(proc.stderr)]).then(([s]) => s);
      children.push(child);
      note(`started ${name} (${rt}, pid ${proc.pid}, http://127.0.0.1:${port}/status)`);
    }
    let planned = 0;
    const pollOutputs = async () => {
      for (const c of children) {
        let f: Deno.FsFile | undefined;
        try {
          f = await Deno.open(c.output);
          await f.seek(c.read, Deno.SeekMode.Start);
          const buf = new Uint8Array(1 << 20);
          for (;;) {
            const n = await f.read(buf);
            if (!n) break;
            c.read += n;
            const text = c.partial + new TextDecoder().decode(buf.subarray(0, n));
            const lines = text.split("\n");
            c.partial = lines.pop()!;
            for (const l of lines) if (l) tally.add(c.name, l);
          }
        } catch { /* not created yet */ } finally {
          f?.close();
        }
      }
    };
    // Completed/total from the workers' status().counts: the leader's own, or
    // (on a member) those of the leader's last heartbeat. The highest
    // completed count any worker reports is the freshest.
    const counts = { completed: 0, planned: 0 };
    let lastCounts = 0;
    const pollCounts = async () => {
      if (Date.now() - lastCounts < 500) return;
      lastCounts = Date.now();
      await Promise.all(children.filter((c) => !exited.has(c)).map(async (c) => {
        try {
          const r = await fetch(`http://127.0.0.1:${c.port}/status`, { signal: AbortSignal.timeout(1000) });
          const st = await r.json() as { counts?: { completed: number; planned: number }; held?: unknown[] };
          c.held = st.held?.length ?? 0;
          if (st.counts) {
            counts.completed = Math.max(counts.completed, st.counts.completed);
            counts.planned = Math.max(counts.planned, st.counts.planned);
          }
        } catch { /* starting, killed or exiting */ }
      }));
    };
    const splits = () =>
      counts.planned ? `${counts.completed}/${counts.planned}` : planned ? `0/${planned}` : "planning";
    const stop = startProgress(tally, started, splits);
    const exited = new Set<Child>();
    for (const c of children) c.status.then(() => exited.add(c));
    while (exited.size < children.length) {
      await pollOutputs();
      await pollCounts();
      if (!planned) {
        for (const c of children) {
          const ev = c.events.find((e) => e.msg === "Plan published");
          if (ev) planned = Number(ev.planned);
        }
      }
      if (!killed && tally.unique >= tally.total / 2) {
        // Kill the worker holding the most splits (then the busiest) halfway:
        // its splits are taken over after one lease.
        lastCounts = 0;
        await pollCounts();
        const alive = children.filter((c) => !exited.has(c));
        const records = (c: Child) => tally.perWorker.get(c.name) ?? 0;
        killed = alive.sort((a, b) => b.held - a.held || records(b) - records(a))[0];
        if (killed) {
          killed.proc.kill("SIGKILL");
          note(`killed ${killed.name} (SIGKILL, pid ${killed.proc.pid}, holding ${killed.held} splits) at ${tally.unique}/${tally.total}: ` +
            `its splits are taken over after the lease (${leaseMs} ms) from their last commit`);
        }
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    await pollOutputs();
    if (!planned) {
      for (const c of children) {
        const ev = c.events.find((e) => e.msg === "Plan published");
        if (ev) planned = Number(ev.planned);
      }
    }
    // A worker that finished with the job complete saw the leader decide that
    // every planned split is complete; otherwise count what the workers
    // reported (a killed worker's last lines may be lost).
    const jobComplete = children.some((c) =>
      c.events.some((e) => e.event === "finished" && e.outcome === "drained" && e.reason === "complete")
    );
    const reported = children.reduce((s, c) => {
      const fin = c.events.find((e) => e.event === "finished")?.stats as { completed?: number } | undefined;
      return s + (fin?.completed ?? c.events.filter((e) => e.event === "completed").length);
    }, 0);
    const completed = jobComplete ? planned : Math.max(counts.completed, reported);
    // The workers have exited: their last status may predate the last completions.
    counts.completed = Math.max(counts.completed, completed);
    counts.planned = Math.max(counts.planned, planned);
    stop();
    const elapsedMs = Date.now() - started;
    const statuses = await Promise.all(children.map((c) => c.status));
    const summary: Summary = {
      mode: `3 worker processes (deno, bun, node) on ${store.name}`,
      splits: { planned, completed },
      recordsIn: tally.total,
      recordsOut: tally.out,
      unique: tally.unique,
      missing: tally.total - tally.unique,
      duplicates: tally.duplicates,
      elapsedMs,
      killed: killed?.name,
      gains: gains.byKind,
      workers: children.map((c, i) => ({
        name: c.name,
        records: tally.perWorker.get(c.name) ?? 0,
        share: (tally.perWorker.get(c.name) ?? 0) / Math.max(1, tally.out),
        splitsCompleted: c.events.filter((e) => e.event === "completed").length,
        outcome: c === killed ? "killed (SIGKILL)" : `exit ${statuses[i].code}`,
      })),
      statusServed: false,
    };
    await linger(o, http.url);
    summary.statusServed = (http.hits["/status"] ?? 0) > 0;
    return summary;
  } finally {
    for (const c of children) {
      try {
        c.proc.kill("SIGKILL");
      } catch { /* exited */ }
      await c.status.catch(() => {});
    }
    await store.stop();
    exitHooks.delete(killAll);
    await http.close();
  }
}

// --- main ----------------------------------------------------------------------------

/** Synchronous teardown run on Ctrl-C (Deno.exit skips finally blocks). */
const exitHooks = new Set<() => void>();

async function main(): Promise<number> {
  const o = parseArgs(Deno.args);
  const tmp = await Deno.makeTempDir({ prefix: "splitlease-demo-" });
  const dir = `${tmp}/dataset`;
  await Deno.mkdir(dir);
  const cleanup = async () => {
    if (!o.keep) await Deno.remove(tmp, { recursive: true }).catch(() => {});
  };
  const onSignal = () => {
    for (const hook of exitHooks) {
      try {
        hook();
      } catch { /* best effort */ }
    }
    cleanup().finally(() => Deno.exit(130));
  };
  Deno.addSignalListener("SIGINT", onSignal);
  try {
    const { ids, bytes } = await generate(dir, o.records, o.files);
    console.log(
      `splitlease demo: ${ids.length} records in ${o.files} ndjson files (${(bytes / 1024).toFixed(0)} KiB) at ${dir}`,
    );
    console.log(
      `target split ${o.splitBytes} bytes; processing slowed by ${o.delayMs} ms per ${o.batch} records`,
    );
    const tally = new Tally(ids.length);
    const summary = o.nats || o.pg || o.redis ? await runProcesses(o, dir, tally, tmp) : await runInProcess(o, dir, tally);
    printSummary(summary);
    if (o.summaryJson) await Deno.writeTextFile(o.summaryJson, JSON.stringify(summary, null, 2) + "\n");
    return summary.missing === 0 ? 0 : 1;
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
    if (o.keep) console.log(`dataset kept at ${dir}`);
    await cleanup();
  }
}

Deno.exit(await main());
