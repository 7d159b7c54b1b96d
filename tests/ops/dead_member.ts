// Issue 40, items 3 and 5, as an operator meets them, with real worker
// processes (the fixture app on Deno and Bun) and the CLI as a process;
// run on nats-server by tests/ops/cli_test.ts and on PostgreSQL by
// tests/postgres/cli_test.ts.
//
// - A SIGKILLed worker was shown `working` for ever by `status` (its own
//   last report), and `delete --yes` refused the finished job naming it as
//   a live member. Now `status` shows it `gone` with when it was last seen
//   once its lease has passed and its splits were taken over, `jobs` and
//   `delete` count only the live member, and once the job is complete the
//   survivor removes the dead member's record as it finishes.
// - A worker refused for its configuration leaves no bucket or job row
//   behind (it used to create it before the coordinator checked the
//   configuration), and an empty job deletes without `--force`.
import assert from "node:assert/strict";
import { kill, type Proc, spawn, waitFor, withTimeout } from "../helpers/worker_procs.ts";
import { cli } from "./operator_session.ts";

const LEASE_MS = 2000;
const tail = (p: Proc) => `${p.rt}:\n${p.raw.slice(-12).join("\n")}`;

/** The members of `status --json`. */
async function members(cliEnv: Record<string, string>): Promise<{ instance: string; liveness: string; activity: string; lastBeatAt: number | null }[]> {
  const r = await cli("deno", ["status", "--json"], cliEnv);
  assert.equal(r.code, 0, r.out);
  return JSON.parse(r.stdout).members;
}

/**
 * `workerEnv` points the fixture at the store (STORE and its URL),
 * `cliEnv` points the CLI at it (NATS_URL or STORE_URL).
 */
export async function deadMemberShownDead(job: string, workerEnv: Record<string, string>, cliEnv: Record<string, string>): Promise<void> {
  const env = (instance: string) => ({
    ...workerEnv,
    JOB: job,
    INSTANCE: instance,
    SPLITS: "8",
    RECORDS: "40",
    RECORD_MS: "100",
    LEASE_MS: String(LEASE_MS),
    MAX_IN_FLIGHT: "2",
  });
  const jobEnv = { ...cliEnv, JOB: job };
  const survivor = spawn("deno", env("w-deno"));
  let victim: Proc | undefined;
  try {
    await survivor.line((l) => l.msg === "Leader elected", "the Deno worker to lead", 30_000);
    victim = spawn("bun", env("k-bun"));
    await victim.line((l) => l.event === "gained", "the Bun worker to take a split", 30_000);
    await kill(victim);
    const killedAt = Date.now();
    // Past its lease, its splits taken over: gone, with when it was last seen.
    const dead = await waitFor("status to show k-bun gone", async () => {
      const m = (await members(jobEnv)).find((x) => x.instance === "k-bun");
      return m?.liveness === "gone" ? m : undefined;
    }, 30_000).catch((e) => {
      throw new Error(`${e.message}\n${tail(survivor)}`);
    });
    assert.equal(dead.activity, "gone", "no longer 'working' from its last report");
    assert.ok(dead.lastBeatAt !== null && dead.lastBeatAt <= killedAt, `last seen before the kill: ${JSON.stringify(dead)}`);
    const text = await cli("deno", ["status"], jobEnv);
    const row = text.stdout.split("\n").find((l) => l.startsWith("k-bun "));
    assert.match(row ?? "", /^k-bun +bun .* 0\/2 +[\d.]+ (s|min)( \d\d s)? ago +gone$/, text.stdout);
    assert.doesNotMatch(row ?? "", /working/);
    assert.match(text.stdout, /members \(2, 1 past their lease\)/);
    // jobs and delete count the live member only.
    const listed = JSON.parse((await cli("deno", ["jobs", "--json", "--job", job], cliEnv)).stdout).jobs;
    assert.deepEqual(listed.map((j: { state: string; liveMembers: string[]; members: number }) => [j.state, j.liveMembers, j.members]), [["running", ["w-deno"], 2]]);
    const refused = await cli("deno", ["delete", "--yes"], jobEnv);
    assert.equal(refused.code, 3, refused.out);
    assert.match(refused.stdout, /^not deleted: job ".*" has 1 live member\(s\) \(w-deno\): stop its workers first/);
    // The survivor finishes the job, and removes the dead member's record as it leaves.
    const code = await withTimeout(survivor.status.then((s) => s.code), 90_000, "the survivor to finish the job").catch((e) => {
      throw new Error(`${e.message}\n${tail(survivor)}`);
    });
    assert.equal(code, 0, tail(survivor));
    assert.ok(survivor.lines.some((l) => l.event === "goneRemoved" && JSON.stringify(l.members) === '["k-bun"]'), tail(survivor));
    assert.deepEqual(await members(jobEnv), [], "no member records left");
    const after = JSON.parse((await cli("deno", ["jobs", "--json", "--job", job], cliEnv)).stdout).jobs;
    assert.deepEqual(after.map((j: { state: string; members: number }) => [j.state, j.members]), [["complete", 0]]);
    const deleted = await cli("deno", ["delete", "--yes"], jobEnv);
    assert.equal(deleted.code, 0, deleted.out);
    assert.match(deleted.stdout, /^deleted job ".*" \(complete; /);
  } finally {
    await Promise.all([survivor, ...(victim ? [victim] : [])].map(kill));
  }
}

/**
 * A worker with an invalid configuration exits 1 and leaves no job behind
 * (`noJob()` checks the store); an empty job (`makeEmpty()` creates one
 * with no records) deletes without `--force`.
 */
export async function badConfigLeavesNothing(
  job: string,
  workerEnv: Record<string, string>,
  cliEnv: Record<string, string>,
  noJob: () => Promise<boolean>,
  makeEmpty: (job: string) => Promise<void>,
): Promise<void> {
  // leaseMs 600 < 2 × opTimeoutMs (1000): refused by the coordinator's rules.
  const bad = spawn("deno", { ...workerEnv, JOB: job, INSTANCE: "w-bad", LEASE_MS: "600" });
  const code = await withTimeout(bad.status.then((s) => s.code), 60_000, "the misconfigured worker to exit");
  assert.equal(code, 1, tail(bad));
  assert.ok(bad.raw.some((l) => l.includes("INVALID_CONFIG") || l.includes("must be at least 2 × opTimeoutMs")), tail(bad));
  assert.ok(await noJob(), "the refused worker created nothing in the store");
  const listed = JSON.parse((await cli("deno", ["jobs", "--json", "--job", job], cliEnv)).stdout).jobs;
  assert.deepEqual(listed, []);
  // An empty job (what a refused worker of an older version left): deleted without --force.
  const empty = `${job}-empty`;
  await makeEmpty(empty);
  const jobs = JSON.parse((await cli("deno", ["jobs", "--json", "--job", empty], cliEnv)).stdout).jobs;
  assert.deepEqual(jobs.map((j: { state: string }) => j.state), ["empty"]);
  const del = await cli("deno", ["delete", "--yes"], { ...cliEnv, JOB: empty });
  assert.equal(del.code, 0, del.out);
  assert.match(del.stdout, /^deleted job ".*" \(empty; /);
}
