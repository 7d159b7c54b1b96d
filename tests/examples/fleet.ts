/**
 * Helpers of the example fleet tests: spawn example workers on Deno, Bun and
 * Node 24 as real processes, collect their JSON log lines, wait, kill.
 */
import { freePort } from "../helpers/nats_server.ts";
import { waitFor as sharedWaitFor, withTimeout } from "../helpers/worker_procs.ts";
import { eachLine, parseLogLine } from "../helpers/lines.ts";

export const root = new URL("../../", import.meta.url).pathname;
export const bin = (n: string) => `${root}node_modules/.bin/${n}`;

export type Runtime = "deno" | "bun" | "node";

export interface Proc {
  rt: Runtime;
  name: string;
  child: Deno.ChildProcess;
  lines: Record<string, unknown>[];
  raw: string[];
  status: Promise<Deno.CommandStatus>;
  port: number;
}

const live = new Set<Proc>();
globalThis.addEventListener("unload", () => {
  for (const p of live) kill(p);
});

/** Spawns `script` (a path under the repo) on `rt` with `env`. */
export function spawnWorker(rt: Runtime, name: string, script: string, env: Record<string, string>): Proc {
  const port = freePort();
  const [cmd, args] = rt === "deno"
    ? [bin("deno"), ["run", "-A", script]]
    : rt === "bun"
    ? [bin("bun"), ["run", script]]
    : [bin("node"), ["--no-warnings", script]];
  const child = new Deno.Command(cmd, {
    args,
    cwd: root,
    env: { ...env, INSTANCE: name, PORT: String(port), BIND: "127.0.0.1", NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const pump = (s: ReadableStream<Uint8Array>) =>
    eachLine(s, (line) => {
      raw.push(line);
      const parsed = parseLogLine(line);
      if (parsed) lines.push(parsed);
    });
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const p: Proc = { rt, name, child, lines, raw, port, status: Promise.resolve() as never };
  p.status = child.status.then(async (s) => {
    await pumps.catch(() => {});
    live.delete(p);
    return s;
  });
  live.add(p);
  return p;
}

export function kill(p: Proc, signal: Deno.Signal = "SIGKILL"): void {
  try {
    p.child.kill(signal);
  } catch { /* already gone */ }
}

/** Kills every process in `procs` and waits for them. */
export async function reap(procs: Proc[]): Promise<void> {
  for (const p of procs) kill(p);
  await withTimeout(
    Promise.all(procs.map((p) => p.status.catch(() => {}))),
    15_000,
    `${procs.map((p) => p.name).join(", ")} to exit after SIGKILL (their output pipes closed)`,
  );
}

/** Polls `fn` until it returns a value (see tests/helpers/worker_procs.ts); 30 s by default here. */
export function waitFor<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, ms = 30_000): Promise<T> {
  return sharedWaitFor(what, async () => await fn(), ms);
}

export { withTimeout };

/** The last lines of a process's output, for assertion messages. */
export function tail(p: Proc, n = 12): string {
  return `--- ${p.name} (${p.rt}) ---\n` + p.raw.slice(-n).join("\n");
}

/** The `finished` log line of a worker (outcome and stats). */
export function finished(p: Proc): { outcome?: string; reason?: string; stats?: Record<string, unknown> } | undefined {
  return p.lines.find((l) => l.event === "finished") as never;
}
