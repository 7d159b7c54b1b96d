/**
 * Real worker processes for the runtime tests and benchmarks: builds the
 * Node fixture once, spawns the fixture app on Deno, Bun or Node 24, and
 * collects its JSON log lines as they arrive.
 *
 * @module
 */
import { freePort } from "./nats_server.ts";
import { runCmd } from "./cmd.ts";
import { withTimeout } from "./deadline.ts";
import { eachLine, parseLogLine } from "./lines.ts";

export { withTimeout };

/** Repository root (with a trailing slash). */
export const root: string = new URL("../../", import.meta.url).pathname;
/** Path of a runtime or tool installed in `node_modules/.bin`. */
export const bin = (n: string): string => `${root}node_modules/.bin/${n}`;

/** Runs a command in the repository root; throws with its output when it fails or runs past `timeoutMs`. */
export async function sh(cmd: string, args: string[], timeoutMs = 300_000): Promise<string> {
  return (await runCmd(cmd, args, { cwd: root, timeoutMs })).out;
}

/** Bundles a fixture for Node (npm packages stay imports, resolved from node_modules). */
export async function bundleForNode(entry: string, outfile: string): Promise<void> {
  await sh(bin("esbuild"), [
    entry,
    "--bundle",
    "--platform=node",
    "--format=esm",
    "--packages=external",
    "--log-level=warning",
    `--outfile=${outfile}`,
  ]);
}

/**
 * Whether the test command built `dist/` and the Node fixture before it
 * started the suites (`SPLITLEASE_DIST_READY`): suites run side by side, and
 * a build of one empties `dist/` under another, so then none builds.
 */
export const distReady: boolean = Deno.env.get("SPLITLEASE_DIST_READY") === "1";

let fixture: Promise<void> | undefined;
/** The Node fixture alone (dist/fixtures/node_main.mjs), once per process: for tests that need no `dist/` package. */
export function buildNodeFixture(): Promise<void> {
  fixture ??= distReady ? Promise.resolve() : bundleForNode("tests/runtime/fixtures/node_main.ts", "dist/fixtures/node_main.mjs");
  return fixture;
}

let built: Promise<void> | undefined;
/** `npm run build` plus the Node fixture (dist/fixtures/node_main.mjs), once per process. */
export function buildOnce(): Promise<void> {
  built ??= distReady ? Promise.resolve() : (async () => {
    await sh("node", ["scripts/build.mjs"]);
    fixture = undefined; // the build emptied dist/
    await buildNodeFixture();
  })();
  return built;
}

/** The runtimes a worker process can run on. */
export type Runtime = "deno" | "bun" | "node";
/** Every runtime, in a fixed order. */
export const RUNTIMES: readonly Runtime[] = ["deno", "bun", "node"];

function command(rt: Runtime): [string, string[]] {
  switch (rt) {
    case "deno":
      return [bin("deno"), ["run", "-A", "tests/runtime/fixtures/deno_main.ts"]];
    case "bun":
      return [bin("bun"), ["run", "tests/runtime/fixtures/bun_main.ts"]];
    case "node":
      return [bin("node"), ["dist/fixtures/node_main.mjs"]];
  }
}

/** A spawned worker process. */
export interface Proc {
  rt: Runtime;
  child: Deno.ChildProcess;
  /** JSON log lines, in arrival order. */
  lines: Record<string, unknown>[];
  /** `performance.now()` at which each JSON line arrived (parallel to `lines`). */
  arrivals: number[];
  /** Every output line. */
  raw: string[];
  /** `performance.now()` right before the spawn. */
  spawnedAt: number;
  /** Exit status, once both output streams are read. */
  status: Promise<Deno.CommandStatus>;
  /** HTTP port given to the worker. */
  port: number;
  /** Resolves with the first JSON line matching `pred`; rejects naming `what` if the process exits first or after `ms` (default 60 s). */
  line(pred: (l: Record<string, unknown>) => boolean, what?: string, ms?: number): Promise<Record<string, unknown>>;
}

/** Spawns the fixture app on `rt` with `env` (plus PORT and NO_COLOR). */
export function spawn(rt: Runtime, env: Record<string, string>): Proc {
  const port = freePort();
  const [cmd, args] = command(rt);
  const spawnedAt = performance.now();
  const child = new Deno.Command(cmd, {
    args,
    cwd: root,
    env: { ...env, PORT: String(port), NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: Record<string, unknown>[] = [];
  const arrivals: number[] = [];
  const raw: string[] = [];
  const waiters: { pred: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }[] =
    [];
  const pump = (s: ReadableStream<Uint8Array>) =>
    eachLine(s, (line) => {
      raw.push(line);
      const parsed = parseLogLine(line);
      if (!parsed) return; // not a log line
      lines.push(parsed);
      arrivals.push(performance.now());
      for (const w of waiters.filter((w) => w.pred(parsed))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(parsed);
      }
    });
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const status = child.status.then(async (s) => {
    await pumps;
    return s;
  });
  const line = (pred: (l: Record<string, unknown>) => boolean, what = "a matching log line", ms = 60_000) => {
    const seen = lines.find(pred);
    if (seen) return Promise.resolve(seen);
    const waiter = { pred, resolve: (_: Record<string, unknown>) => {} };
    const found = new Promise<Record<string, unknown>>((resolve, reject) => {
      waiter.resolve = resolve;
      waiters.push(waiter);
      status.then((s) => reject(new Error(`${rt} exited (${s.code}) before ${what}:\n${raw.slice(-10).join("\n")}`)));
    });
    return withTimeout(found, ms, `${what} from the ${rt} worker`).catch((e) => {
      if (waiters.includes(waiter)) waiters.splice(waiters.indexOf(waiter), 1);
      throw new Error(`${e.message}; its last lines:\n${raw.slice(-10).join("\n")}`);
    });
  };
  return { rt, child, lines, arrivals, raw, spawnedAt, status, port, line };
}

/**
 * Polls `fn` every 50 ms until it returns a value (errors are retried), or
 * throws after `ms`; a call of `fn` that hangs is cut off at the same limit.
 */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await withTimeout(fn(), Math.max(1, end - Date.now()), `one poll for ${what}`);
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last}` : ""}`);
}

/** SIGKILLs a worker (no-op when it already exited) and waits for it. */
export async function kill(p: Proc): Promise<void> {
  try {
    p.child.kill("SIGKILL");
  } catch { /* already gone */ }
  await withTimeout(p.status.catch(() => {}), 15_000, `the ${p.rt} worker to exit after SIGKILL (its output pipes closed)`);
}
