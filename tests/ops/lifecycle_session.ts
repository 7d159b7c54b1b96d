// A job's life from a terminal (issue 41), through the CLI as a process
// against live fleets: `wait` with its exit code for every way a job ends
// (complete, complete with a cancelled split, stalled, planning failed,
// deleted while waiting, a store that does not answer, a timeout), its
// plain lines in a log and its bar on a terminal (a pty from script(1)),
// and `status --json` carrying the same result fields. Run on nats-server
// (tests/ops/lifecycle_cli_test.ts) and PostgreSQL (tests/postgres/
// lifecycle_cli_test.ts).
import assert from "node:assert/strict";
import { PermanentFailure, SplitCoordinator, type SplitSource, startWorker, type Store, type Worker } from "../../mod.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { bin, root } from "../helpers/worker_procs.ts";
import { cli, until } from "./operator_session.ts";

/** How a session reaches its store: the CLI's environment, a worker's store, and a URL nobody answers at. */
export interface SessionStore {
  env: Record<string, string>;
  open(job: string): Promise<Store>;
  /** The CLI's environment pointing at a server that does not answer. */
  deadEnv: Record<string, string>;
}

/** A fleet of one worker on `job`, torn down by the session. */
export class OneWorker implements AsyncDisposable {
  store!: Store;
  worker!: Worker;
  static async start(
    s: SessionStore,
    job: string,
    source: SplitSource<{ n: number }>,
    over: Record<string, unknown> = {},
    workerOver: Record<string, unknown> = {},
  ): Promise<OneWorker> {
    const w = new OneWorker();
    w.store = await s.open(job);
    const coordinator = await SplitCoordinator.join({
      store: w.store, job, instance: "w1", fingerprint: source.fingerprint(), planner: (c) => source.plan(c),
      leaseMs: 1000, opTimeoutMs: 400, drainDeadlineMs: 1000, retryBackoffMs: 50, maxInFlight: 4, ...over,
    });
    w.worker = startWorker({ coordinator, source, logger: () => {}, abortGraceMs: 500, statusIntervalMs: 200, ...workerOver });
    return w;
  }
  async [Symbol.asyncDispose](): Promise<void> {
    await withTimeout(this.worker.shutdown({ deadlineMs: 0 }).catch(() => {}), 20_000, "the worker to shut down");
    await this.store.close().catch(() => {});
  }
}

/** A source of `n` splits whose runs wait for `gate` (`poison` fails; `permanent` fails for good). */
export function gatedSource(n: number, gate: Promise<void>, poison?: string, permanent?: string): SplitSource<{ n: number }> {
  return {
    fingerprint: () => "lifecycle-v1",
    plan: () => Promise.resolve({ finality: "final", splits: Array.from({ length: n }, (_, i) => ({ id: `s${i}`, descriptor: { n: i } })) }),
    async run(lane) {
      if (lane.splitId === poison) throw new Error(`bad input in ${lane.splitId}`);
      if (lane.splitId === permanent) throw new PermanentFailure(`${lane.splitId}: 404, it will not appear`);
      await lane.commit({ watermark: 1 }, { records: 10 });
      await Promise.race([gate, new Promise((r) => lane.revokeSignal.addEventListener("abort", r))]);
      if (lane.revokeSignal.aborted) return;
      await lane.complete({ watermark: 2 }, { records: 5 });
    },
  };
}

/** Runs `cli wait` as a child process (not awaited), on a pty when `tty`. */
function spawnWait(args: string[], env: Record<string, string>, tty = false): Promise<{ code: number; stdout: string }> {
  const command = [bin("deno"), "run", "-A", "cli.ts", "wait", ...args];
  const [cmd, argv] = tty
    // script(1) gives the command a pseudo-terminal as stdout (and passes its exit code on with -e).
    ? ["script", ["-qec", command.map((a) => `'${a}'`).join(" "), "/dev/null"]]
    : [command[0], command.slice(1)];
  const child = new Deno.Command(cmd as string, {
    args: argv as string[],
    cwd: root,
    env: { PATH: Deno.env.get("PATH") ?? "", HOME: Deno.env.get("HOME") ?? "/tmp", NO_COLOR: "1", COLUMNS: "120", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  return withTimeout(child.output(), 60_000, `splitlease wait ${args.join(" ")}`).then((r) => ({
    code: r.code,
    stdout: new TextDecoder().decode(r.stdout) + new TextDecoder().decode(r.stderr),
  }));
}

/** `wait`'s exit codes and output for every way a job ends. */
export async function waitSession(prefix: string, s: SessionStore): Promise<void> {
  // Complete: the bar on a terminal, plain lines in a log, a timeout meanwhile.
  {
    const job = `${prefix}-done`;
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    await using f = await OneWorker.start(s, job, gatedSource(4, gate));
    const env = { ...s.env, JOB: job };
    await until("the splits held", async () => f.worker.coordinator.status().held.length === 4);
    const plain = spawnWait(["--interval", "300ms"], env);
    const tty = spawnWait([job], s.env, true);
    const timeout = await cli("deno", ["wait", "--timeout", "500ms", "--json"], env);
    assert.equal(timeout.code, 8, timeout.out);
    assert.equal(JSON.parse(timeout.stdout).waited, "timeout");
    assert.equal(JSON.parse(timeout.stdout).result.state, "running");
    const running = JSON.parse((await cli("deno", ["status", "--json"], env)).stdout);
    assert.deepEqual(running.result, { state: "running", outcome: null, skipped: { cancelled: 0, quarantined: 0, permanent: 0 }, paused: null, exitCode: null });
    await new Promise((r) => setTimeout(r, 1500));
    open();
    const [p, t] = await Promise.all([plain, tty]);
    assert.equal(p.code, 0, p.stdout);
    const lines = p.stdout.trim().split("\n");
    assert.ok(lines.length >= 3, p.stdout);
    for (const l of lines.slice(0, -1)) assert.match(l, new RegExp(`^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ ${job}: \\d+% · [0-4]/4 splits · \\d+ records`), p.stdout);
    assert.doesNotMatch(p.stdout, /\r|\x1b\[/, "no terminal codes in a log");
    assert.match(lines.at(-1)!, new RegExp(`^${job}: complete: 4 split\\(s\\) completed · 60 records · took [\\d.]+ s \\(exit 0\\)$`));
    assert.equal(t.code, 0, t.stdout);
    assert.match(t.stdout, /\r\[[█░]{24}\] +\d+% · [0-4]\/4 splits/, "the bar, redrawn from the line's start");
    assert.match(t.stdout, /\x1b\[K/, "the rest of a longer line erased");
    assert.match(t.stdout, new RegExp(`\\n${job}: complete: 4 split\\(s\\) completed`));
    const done = await cli("deno", ["wait", "--json"], env);
    assert.equal(done.code, 0, done.out);
    const j = JSON.parse(done.stdout);
    assert.deepEqual([j.waited, j.result.state, j.result.outcome, j.exitCode, j.counts.completed, j.summary.records], ["outcome", "complete", { kind: "allComplete", completed: 4 }, 0, 4, 60]);
    const status = JSON.parse((await cli("deno", ["status", "--json"], env)).stdout);
    assert.deepEqual(status.result, { ...j.result, exitCode: 0 }, "status --json carries wait's result fields");
  }
  // Stalled (3), then complete except the cancelled split (5).
  {
    const job = `${prefix}-skip`;
    await using f = await OneWorker.start(s, job, gatedSource(3, Promise.resolve(), "s2"), { maxAttempts: 1 }, { afterStall: "wait" });
    const env = { ...s.env, JOB: job };
    const stalled = await cli("deno", ["wait", "--json"], env);
    assert.equal(stalled.code, 3, stalled.out);
    assert.deepEqual(JSON.parse(stalled.stdout).result.skipped, { cancelled: 0, quarantined: 1, permanent: 0 });
    assert.equal((await cli("deno", ["cancel", "s2"], env)).code, 0);
    const text = await cli("deno", ["wait"], env);
    assert.equal(text.code, 5, text.out);
    assert.match(text.stdout, new RegExp(`^${job}: complete: 2 split\\(s\\) completed, 1 cancelled \\(skipped\\) · 30 records · took .* \\(exit 5\\)$`, "m"));
    // What was skipped, everywhere the outcome shows.
    const status = await cli("deno", ["status"], env);
    assert.match(status.stdout, /outcome allComplete \(1 cancelled\)/, status.stdout);
    const jobs = await cli("deno", ["jobs", "--job", job], s.env);
    assert.match(jobs.stdout, new RegExp(`^${job} +1 +complete +2/3 +1 +0 +`, "m"), jobs.stdout);
    void f;
  }
  // Planning failed (4).
  {
    const job = `${prefix}-planfail`;
    const source = { ...gatedSource(1, Promise.resolve()), plan: () => Promise.reject(new Error("the listing is gone")) };
    await using f = await OneWorker.start(s, job, source, { planAttempts: 1 });
    const r = await cli("deno", ["wait", job], s.env);
    assert.equal(r.code, 4, r.out);
    assert.match(r.stdout, /planning failed after 1 attempt\(s\): the listing is gone \(exit 4\)/);
    void f;
  }
  // Deleted while waiting (6).
  {
    const job = `${prefix}-del`;
    const f = await OneWorker.start(s, job, gatedSource(2, new Promise(() => {})));
    await until("the splits held", async () => f.worker.coordinator.status().held.length === 2);
    await f[Symbol.asyncDispose](); // its worker leaves: the job may be deleted
    const env = { ...s.env, JOB: job };
    const waiting = spawnWait(["--interval", "200ms"], env);
    await new Promise((r) => setTimeout(r, 1500));
    const del = await cli("deno", ["delete", "--yes", "--force"], env);
    assert.equal(del.code, 0, del.out);
    const w = await waiting;
    assert.equal(w.code, 6, w.stdout);
    assert.match(w.stdout, new RegExp(`${job}: the job was deleted while waiting \\(exit 6\\)`));
  }
  // A store that does not answer (7).
  const dead = await cli("deno", ["wait", "x", "--op-timeout-ms", "200", "--unreachable", "1s"], s.deadEnv);
  assert.equal(dead.code, 7, dead.out);
  assert.match(dead.out, /STORE_UNAVAILABLE/);
}

/** A permanent failure quarantines at once and says so in `splits` (text and JSON). */
export async function permanentSession(prefix: string, s: SessionStore): Promise<void> {
  const job = `${prefix}-perm`;
  const env = { ...s.env, JOB: job };
  await using f = await OneWorker.start(s, job, gatedSource(3, Promise.resolve(), undefined, "s1"), { maxAttempts: 5 });
  const w = await cli("deno", ["wait", "--json"], env);
  assert.equal(w.code, 3, `stalled on the permanent failure, after one run: ${w.out}`);
  const q = await cli("deno", ["splits", "--state", "quarantined"], env);
  assert.equal(q.code, 0, q.out);
  assert.match(q.stdout, /^s1 +quarantined \(permanent\) +- +\d+ +1 /m, q.stdout);
  assert.match(q.stdout, /w1 \(permanent\): run threw: PermanentFailure: s1: 404, it will not appear/);
  const j = JSON.parse((await cli("deno", ["splits", "--state", "quarantined", "--json"], env)).stdout);
  assert.deepEqual([j.splits[0].permanent, j.splits[0].attempts, j.splits[0].failures.length, j.splits[0].failures[0].permanent], [true, 1, 1, true]);
  // The outcome counts it: in wait's last line, status and jobs.
  const text = await cli("deno", ["wait"], env);
  assert.match(text.stdout, /stalled: 2 split\(s\) completed, 1 quarantined \(1 permanent\); see them/, text.stdout);
  assert.match((await cli("deno", ["status"], env)).stdout, /1 quarantined \(1 permanent\), 0 cancelled/);
  assert.match((await cli("deno", ["jobs", "--job", job], s.env)).stdout, new RegExp(`^${job} +1 +stalled +2/3 +0 +1 \\(1 permanent\\) +`, "m"));
  void f;
}

/**
 * `pause` and `resume` from the CLI: the fleet hands back what it runs,
 * `status`, `jobs` and `wait`'s lines say paused, `wait` waits through the
 * pause; pausing twice or resuming a running job is done already (exit 0),
 * pausing a finished job is not applied (3).
 */
export async function pauseSession(prefix: string, s: SessionStore): Promise<void> {
  const job = `${prefix}-pause`;
  const env = { ...s.env, JOB: job };
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  await using f = await OneWorker.start(s, job, gatedSource(4, gate));
  await until("the splits held", async () => f.worker.coordinator.status().held.length === 4);
  const p = await cli("deno", ["pause", job, "--reason", "database incident", "--json"], { ...s.env, USER: "ops" });
  assert.equal(p.code, 0, p.out);
  const pj = JSON.parse(p.stdout);
  assert.deepEqual([pj.outcome, pj.paused.reason], ["paused", "database incident"]);
  assert.match(pj.paused.by, /^ops@./, "who paused it: user@host");
  // The gated lanes see their revocation and return: handed back, nothing charged.
  await until("every split handed back", async () => f.worker.coordinator.status().held.length === 0);
  const again = await cli("deno", ["pause"], env);
  assert.equal(again.code, 0, again.out);
  assert.match(again.stdout, /already paused/);
  const status = await cli("deno", ["status"], env);
  assert.match(status.stdout, /^PAUSED since .* by .*: database incident · nothing new is dealt or claimed/m, status.stdout);
  assert.equal(JSON.parse((await cli("deno", ["status", "--json"], env)).stdout).result.state, "paused");
  assert.match((await cli("deno", ["jobs", "--job", job], s.env)).stdout, new RegExp(`^${job} +1 +paused +0/4 `, "m"));
  const waited = await cli("deno", ["wait", "--timeout", "1s", "--interval", "200ms"], env);
  assert.equal(waited.code, 8, waited.out);
  assert.match(waited.stdout, /: 0% · 0\/4 splits · .*PAUSED \(database incident\)/, waited.stdout);
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(f.worker.coordinator.status().held.length, 0, "nothing dealt while paused");
  open();
  const r = await cli("deno", ["resume", job], s.env);
  assert.equal(r.code, 0, r.out);
  assert.match(r.stdout, /^Job resumed after \d+ s paused/);
  assert.equal((await cli("deno", ["resume"], env)).code, 0, "not paused: done already");
  const done = await cli("deno", ["wait", "--json"], env);
  assert.equal(done.code, 0, done.out);
  const view = JSON.parse(done.stdout);
  assert.deepEqual([view.counts.completed, view.summary.failures, view.summary.retries], [4, 0, 0], "nothing charged, nothing failed");
  const late = await cli("deno", ["pause"], env);
  assert.equal(late.code, 3, late.out);
  assert.match(late.stdout, /finished \(allComplete\): there is nothing to pause/);
}

/**
 * `rerun` from the CLI: refused while the job runs (3); a finished job gets
 * a new run, which `status` and `jobs` show with its predecessor; the
 * workers started again plan and run it, and `wait` ends on its outcome.
 */
export async function rerunSession(prefix: string, s: SessionStore): Promise<void> {
  const job = `${prefix}-rerun`;
  const env = { ...s.env, JOB: job };
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  {
    await using f = await OneWorker.start(s, job, gatedSource(3, gate));
    await until("the splits held", async () => f.worker.coordinator.status().held.length === 3);
    const refused = await cli("deno", ["rerun", job], s.env);
    assert.equal(refused.code, 3, refused.out);
    assert.match(refused.stdout, /has no outcome yet \(it runs, or is paused\)/);
    open();
    assert.equal((await cli("deno", ["wait", job], s.env)).code, 0);
    await withTimeout(f.worker.done, 20_000, "the worker to finish with the job");
  }
  const r = await cli("deno", ["rerun", job, "--json"], s.env);
  assert.equal(r.code, 0, r.out);
  const rj = JSON.parse(r.stdout);
  assert.deepEqual([rj.outcome, rj.run, rj.previous.run, rj.previous.outcome.kind, rj.previous.records], ["rerun", 2, 1, "allComplete", 45]);
  const status = await cli("deno", ["status"], env);
  assert.match(status.stdout, /run 2 · plan final, 0 planned, generation 0/, status.stdout);
  assert.match(status.stdout, /^earlier runs:\n  run 1: allComplete 3 completed of 3 planned · 45 records · took .* · finished /m, status.stdout);
  const jobs = await cli("deno", ["jobs", "--job", job], s.env);
  assert.match(jobs.stdout, new RegExp(`^${job} +2 +(unfinished|running) `, "m"), jobs.stdout);
  assert.match(jobs.stdout, new RegExp(`^earlier runs:\\n  ${job} run 1: allComplete 3 completed of 3 planned`, "m"), jobs.stdout);
  // The workers started again plan the new run and run it.
  await using g = await OneWorker.start(s, job, gatedSource(3, Promise.resolve()));
  const w = await cli("deno", ["wait", "--json"], env);
  assert.equal(w.code, 0, w.out);
  assert.deepEqual([JSON.parse(w.stdout).result.outcome, JSON.parse(w.stdout).counts.completed], [{ kind: "allComplete", completed: 3 }, 3]);
  const split = JSON.parse((await cli("deno", ["splits", "--json", "--limit", "1"], env)).stdout).splits[0];
  assert.deepEqual([split.run, split.runs.map((x: { run: number; status: string }) => [x.run, x.status])], [2, [[1, "completed"]]]);
  void g;
}
