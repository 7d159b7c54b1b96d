/**
 * Runs a command to completion with a time limit: the child is killed when
 * the limit passes, and the error names what was being waited for.
 *
 * @module
 */
import { withTimeout } from "./deadline.ts";

/** Output of {@linkcode runCmd}. */
export interface CmdResult {
  code: number;
  /** stdout followed by stderr. */
  out: string;
  stdout: string;
}

/** Options of {@linkcode runCmd}. */
export interface CmdOptions {
  cwd?: string;
  env?: Record<string, string>;
  /** Kill the child after this long (default 60 s). */
  timeoutMs?: number;
  /** What the caller waits for, for the timeout message. */
  what?: string;
  /** Throw unless the exit code is 0 (default true). */
  check?: boolean;
  stdin?: string;
}

/** Runs `cmd args`; throws (with its output) on a non-zero exit or after `timeoutMs`. */
export async function runCmd(cmd: string, args: string[], opts: CmdOptions = {}): Promise<CmdResult> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const what = opts.what ?? `${cmd} ${args.join(" ")}`;
  const ctl = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ctl.abort();
  }, timeoutMs);
  try {
    const child = new Deno.Command(cmd, {
      args,
      cwd: opts.cwd,
      env: opts.env,
      stdin: opts.stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
      signal: ctl.signal,
    }).spawn();
    if (opts.stdin !== undefined) {
      const w = child.stdin.getWriter();
      await w.write(new TextEncoder().encode(opts.stdin));
      await w.close();
    }
    // The kill at `timeoutMs` ends the child; its output ends when every
    // holder of its pipes (a grandchild, too) is gone: bounded as well.
    const r = await withTimeout(child.output(), timeoutMs + 15_000, `${what} (its exit and output, killed after ${timeoutMs} ms)`);
    const stdout = new TextDecoder().decode(r.stdout);
    const out = stdout + new TextDecoder().decode(r.stderr);
    if (timedOut) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}:\n${out.slice(-3000)}`);
    if ((opts.check ?? true) && r.code !== 0) {
      throw new Error(`${what} failed (exit ${r.code}):\n${out.slice(-5000)}`);
    }
    return { code: r.code, out, stdout };
  } finally {
    clearTimeout(timer);
  }
}
