/**
 * Deno-side plumbing of the multi-process benchmarks (scale, peers): child
 * processes that speak JSON lines over stdin/stdout, nats-server monitoring
 * (/varz) and CPU from /proc, the raw 100-in-flight CAS rate of a server,
 * esbuild bundles for Node workers, and a kill-everything-on-exit guard.
 *
 * @module
 */
import { natsTransport } from "./_transport.ts";
import { wsconnect } from "@nats-io/nats-core";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { eachLine } from "../tests/helpers/lines.ts";

/** Repository root (with a trailing slash). */
export const root: string = new URL("../", import.meta.url).pathname;
/** A runtime or tool from node_modules/.bin. */
export const bin = (n: string): string => `${root}node_modules/.bin/${n}`;
/** Wall-clock milliseconds with sub-ms precision, comparable across processes. */
export const wallNow = (): number => performance.timeOrigin + performance.now();

const live = new Set<Child>();
const cleanups = new Set<() => Promise<unknown>>();
function killAll(): void {
  for (const c of live) c.kill();
}
globalThis.addEventListener("unload", killAll);
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(sig, async () => {
    console.error(`\n${sig}: killing ${live.size} child processes and the servers`);
    killAll();
    await Promise.race([Promise.allSettled([...cleanups].map((f) => f())), sleep(3000)]);
    Deno.exit(130); // "unload" listeners (the nats-server launcher's) run too
  });
}
/** Runs `f` (bounded to 3 s) when the bench is interrupted, e.g. deleting a Redis queue; returns an unregister function. */
export function onInterrupt(f: () => Promise<unknown>): () => void {
  cleanups.add(f);
  return () => cleanups.delete(f);
}

/** The Redis the peers bench talks to: `npm run bench` starts one on a free port and sets REDIS_PORT. */
export function redisPort(): number {
  const p = Number(Deno.env.get("REDIS_PORT"));
  if (!Number.isInteger(p) || p <= 0) throw new Error("REDIS_PORT is not set: run the peers bench through `npm run bench -- peers`, which starts Redis");
  return p;
}

/** Deletes every Redis key matching `pattern` on the bench's Redis (one EVAL over RESP); resolves with the count. */
export async function redisDeleteKeys(pattern: string): Promise<number> {
  const args = ["EVAL", "local n = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) n = n + 1 end return n", "0", pattern];
  const enc = new TextEncoder();
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: redisPort() });
  try {
    await conn.write(enc.encode(`*${args.length}\r\n` + args.map((a) => `$${enc.encode(a).length}\r\n${a}\r\n`).join("")));
    const buf = new Uint8Array(256);
    const n = await conn.read(buf);
    const reply = new TextDecoder().decode(buf.subarray(0, n ?? 0));
    if (!reply.startsWith(":")) throw new Error(`Redis refused the key sweep: ${reply.trim()}`);
    return Number(reply.slice(1));
  } finally {
    conn.close();
  }
}

/** One parsed stdout line of a child: its `ev` and fields, plus the arrival time. */
export type Msg = Record<string, any> & { ev: string; arrivedAt: number };

/** A child process speaking JSON lines; killed on exit, interrupt or `kill()`. */
export class Child {
  readonly name: string;
  readonly proc: Deno.ChildProcess;
  readonly msgs: Msg[] = [];
  readonly stderr: string[] = [];
  readonly exited: Promise<Deno.CommandStatus>;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #waiters: { pred: (m: Msg) => boolean; resolve: (m: Msg) => void }[] = [];
  #dead = false;
  /** Called for every message (e.g. progress lines). */
  onMsg?: (m: Msg) => void;

  constructor(name: string, cmd: string, args: string[], env: Record<string, string> = {}) {
    this.name = name;
    this.proc = new Deno.Command(cmd, {
      args,
      cwd: root,
      env: { NO_COLOR: "1", ...env },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    live.add(this);
    this.#writer = this.proc.stdin.getWriter();
    const out = eachLine(this.proc.stdout, (line) => {
      let m: Msg;
      try {
        m = { ...JSON.parse(line), arrivedAt: wallNow() };
      } catch {
        this.stderr.push(line);
        return;
      }
      if (typeof m.ev !== "string") return;
      this.msgs.push(m);
      this.onMsg?.(m);
      for (const w of this.#waiters.filter((w) => w.pred(m))) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.resolve(m);
      }
    });
    const err = eachLine(this.proc.stderr, (line) => {
      this.stderr.push(line);
      if (this.stderr.length > 200) this.stderr.shift();
    });
    this.exited = this.proc.status.then(async (s) => {
      this.#dead = true;
      live.delete(this);
      await Promise.all([out, err]).catch(() => {});
      return s;
    });
  }

  /** Sends one command line (ignored once the child is gone). */
  async send(cmd: Record<string, unknown>): Promise<void> {
    if (this.#dead) return;
    await this.#writer.write(new TextEncoder().encode(JSON.stringify(cmd) + "\n")).catch(() => {});
  }

  /** The first message (already seen or future) matching `pred`, or a rejection after `ms` or at exit. */
  next(pred: (m: Msg) => boolean, ms: number, what: string): Promise<Msg> {
    const seen = this.msgs.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const w = { pred, resolve: (m: Msg) => (clearTimeout(t), resolve(m)) };
      const t = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        reject(new Error(`${this.name}: timed out after ${ms} ms waiting for ${what}`));
      }, ms);
      this.#waiters.push(w);
      this.exited.then((s) => {
        clearTimeout(t);
        reject(new Error(`${this.name} exited (${s.code}) before ${what}: ${this.stderr.slice(-8).join("\n")}`));
      });
    });
  }

  /** Messages of type `ev` that arrived after index `from`. */
  since(from: number, ev: string): Msg[] {
    return this.msgs.slice(from).filter((m) => m.ev === ev);
  }

  /** SIGKILL (no-op once gone). */
  kill(): void {
    if (this.#dead) return;
    try {
      this.proc.kill("SIGKILL");
    } catch { /* gone */ }
  }

  /** Asks the child to stop (`{cmd:"exit"}`), SIGKILLs it after `ms`. */
  async stop(ms = 10_000): Promise<void> {
    await this.send({ cmd: "exit" });
    const t = setTimeout(() => this.kill(), ms);
    await this.exited;
    clearTimeout(t);
  }
}

/** Bundles `entry` for Node with esbuild (npm packages stay imports), once per run. */
const bundles = new Map<string, Promise<string>>();
export function nodeBundle(entry: string): Promise<string> {
  let p = bundles.get(entry);
  if (!p) {
    p = (async () => {
      const out = `${root}bench/.build/${entry.replace(/^.*\//, "").replace(/\.ts$/, ".mjs")}`;
      const r = await new Deno.Command(bin("esbuild"), {
        args: [entry, "--bundle", "--platform=node", "--format=esm", "--packages=external", "--log-level=warning", `--outfile=${out}`],
        cwd: root,
        stdout: "piped",
        stderr: "piped",
      }).output();
      if (!r.success) throw new Error(`esbuild ${entry} failed: ${new TextDecoder().decode(r.stderr)}`);
      return out;
    })();
    bundles.set(entry, p);
  }
  return p;
}

/** The fields of nats-server's /varz the benches read. */
export interface Varz {
  out_msgs: number;
  in_msgs: number;
  out_bytes: number;
  in_bytes: number;
  cpu: number;
  mem: number;
}

/** GET /varz of a server's monitoring listener. */
export async function varz(monitorUrl: string): Promise<Varz> {
  const r = await fetch(`${monitorUrl}/varz`);
  const v = await r.json();
  return { out_msgs: v.out_msgs, in_msgs: v.in_msgs, out_bytes: v.out_bytes, in_bytes: v.in_bytes, cpu: v.cpu, mem: v.mem };
}

/** The pid of a test-launcher nats-server (from its ports file in `dir`). */
export function serverPid(dir: string): number | undefined {
  for (const e of Deno.readDirSync(dir)) {
    const m = /^nats-server_(\d+)\.ports$/.exec(e.name);
    if (m) return Number(m[1]);
  }
  return undefined;
}

/** CPU seconds (user + system) a process used so far, from /proc (Linux). */
export function cpuSeconds(pid: number): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return NaN;
  }
}

/** Resident set size of a process in bytes, from /proc (Linux). */
export function rssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** Samples /varz every `ms` until stopped: peak and mean server CPU % and RSS. */
export function sampleServer(monitorUrl: string, ms = 1000): { stop(): Promise<{ cpuMax: number; cpuMean: number; rssMax: number }> } {
  const cpus: number[] = [];
  let rssMax = 0, stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        const v = await varz(monitorUrl);
        cpus.push(v.cpu);
        rssMax = Math.max(rssMax, v.mem);
      } catch { /* server busy: skip a sample */ }
      await new Promise((r) => setTimeout(r, ms));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { cpuMax: Math.max(0, ...cpus), cpuMean: cpus.length ? cpus.reduce((a, b) => a + b, 0) / cpus.length : 0, rssMax };
    },
  };
}

/** Raw @nats-io/kv CAS updates/s with `keys` keys in flight for `ms` (200 B values). */
export async function rawCasRate(url: string | string[], ms = 2000, keys = 100, replicas = 1): Promise<number> {
  const nc = await wsconnect({ servers: url, ...(await natsTransport()) } as Parameters<typeof wsconnect>[0]);
  const bucket = `splitlease_benchraw${Math.floor(Math.random() * 1e9)}`;
  const jsm = jetstream(nc, { timeout: 5000 });
  try {
    const kv = await new Kvm(jsm).create(bucket, { history: 1, replicas, ...(replicas > 1 ? { allow_direct: false } : {}) } as never);
    if (replicas > 1) await sleep(1000); // a fresh replicated stream elects its leader first
    const revs = await Promise.all(Array.from({ length: keys }, (_, i) => kv.put(`k.${i}`, "x".repeat(200))));
    let n = 0;
    const t0 = performance.now();
    const end = t0 + ms;
    await Promise.all(revs.map(async (rev, i) => {
      while (performance.now() < end) {
        rev = await kv.update(`k.${i}`, "x".repeat(200), rev);
        n++;
      }
    }));
    const rate = n / ((performance.now() - t0) / 1000);
    await kv.destroy().catch(() => {});
    return rate;
  } finally {
    await nc.close();
  }
}

/**
 * Raw compare-and-swap updates/s of the Redis store: `keys` keys updated
 * concurrently through one RedisStore (one connection, pipelined), each at
 * the revision its last update returned, for `ms`.
 */
export async function rawRedisCasRate(url: string, ms = 2000, keys = 100): Promise<number> {
  const { RedisStore } = await import("../adapters/redis.ts");
  const s = await RedisStore.connect({ url, job: `benchraw${Math.floor(Math.random() * 1e9)}`, logger: () => {} });
  try {
    const revs = await Promise.all(Array.from({ length: keys }, async (_, i) => {
      const r = await s.create(`k.${i}`, "x".repeat(200));
      if (!r.ok) throw new Error("raw CAS: a fresh key exists");
      return r.revision;
    }));
    let n = 0;
    const t0 = performance.now();
    const end = t0 + ms;
    await Promise.all(revs.map(async (rev, i) => {
      while (performance.now() < end) {
        const r = await s.update(`k.${i}`, "x".repeat(200), rev);
        if (!r.ok) throw new Error("raw CAS: lost a race nobody ran");
        rev = r.revision;
        n++;
      }
    }));
    return n / ((performance.now() - t0) / 1000);
  } finally {
    await s.close();
  }
}

/** The machine's load averages (1, 5, 15 min) as "a b c": other work on the box moves every figure. */
export const loadavg = (): string => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A file-name-safe timestamp of now (2025-01-31T12-00-00-000Z). */
export const fileStamp = (): string => new Date().toISOString().replace(/[:.]/g, "-");

/** Writes `data` as JSON to bench/results/<name>.json (gitignored); returns the path. */
export async function writeResults(name: string, data: unknown): Promise<string> {
  const dir = `${root}bench/results`;
  await Deno.mkdir(dir, { recursive: true });
  const path = `${dir}/${name}.json`;
  await Deno.writeTextFile(path, JSON.stringify(data, null, 2) + "\n");
  return path;
}

/** CAS updates/s through PostgresStore with `keys` keys in flight for `ms` (200 B values), on a job of its own. */
export async function rawPgCasRate(url: string, ms = 2000, keys = 100, schema?: string): Promise<number> {
  const { PostgresStore } = await import("../adapters/postgres.ts");
  const s = await PostgresStore.connect({ url, job: `benchraw${Math.floor(Math.random() * 1e9)}`, ...(schema ? { schema } : {}) });
  try {
    const revs = await Promise.all(Array.from({ length: keys }, async (_, i) => {
      const r = await s.create(`k.${i}`, "x".repeat(200));
      if (!r.ok) throw new Error("raw CAS: a fresh key exists");
      return r.revision;
    }));
    let n = 0;
    const t0 = performance.now();
    const end = t0 + ms;
    await Promise.all(revs.map(async (rev, i) => {
      while (performance.now() < end) {
        const r = await s.update(`k.${i}`, "x".repeat(200), rev);
        if (!r.ok) throw new Error("raw CAS: lost a race nobody ran");
        rev = r.revision;
        n++;
      }
    }));
    return n / ((performance.now() - t0) / 1000);
  } finally {
    await s.close();
  }
}
