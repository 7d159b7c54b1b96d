// Issue 31, items 5, 7 and 8, in the pure parts: a finished job's result
// (records, retries, failures, cuts, how long it took and the rate over
// that same time), the ETA that knows a quarantined split stalls the job,
// the words `splits` prints, the STATE column of `status`, a splitlease ui
// member told from a worker, and what `splitlease jobs` says of a job and
// when `delete` refuses it.
import assert from "node:assert/strict";
import { buildFleetView } from "../../src/fleet/fleet_view.ts";
import type { FleetSnapshot } from "../../src/fleet/types.ts";
import { commitRecord, failRecord, openRecord, seedRecord } from "../../src/records/transitions.ts";
import type { SplitRecord } from "../../admin.ts";
import { deleteRefusal, LIVE_WITHIN_MS, listJobs, summarizeJob } from "../../admin.ts";
import { duration, formatJobs, formatSplits, formatStatus, formatSummary } from "../../src/cli/format.ts";
import type { CatalogEntry, JobCatalog, JobListing } from "../../store.ts";
import { MemoryStore, readJobListing } from "../../store.ts";
import { SplitleaseError } from "../../mod.ts";

const a = { instance: "a", session: "sa" };
const b = { instance: "b", session: "sb" };
const entry = (key: string, value: unknown) => ({ key, value: JSON.stringify(value), revision: 1 });
const member = (over: Record<string, unknown> = {}) => ({ v: 2, session: "sa", maxInFlight: 2, runtime: "deno 2.9.6", version: "0.2.0", beat: 4, ...over });
const T0 = 1_764_668_000_000;

/** A split run to completion by `owner` from `from` to `to`, counting `records`. */
function done(id: string, owner: typeof a, from: number, to: number, records?: number): [string, SplitRecord] {
  const r = openRecord(seedRecord(1, { file: id }), owner, false, 3, from);
  return [id, commitRecord(id, r, { watermark: 1 }, true, to, records)];
}

function snap(splits: [string, SplitRecord][], at: number, extra: Partial<FleetSnapshot> = {}): FleetSnapshot {
  return {
    job: entry("job", { v: 3, fingerprint: "fp", createdAt: T0 }),
    plan: entry("plan", { v: 2, term: 1, finality: "final", generation: 1, planned: splits.length }),
    leader: undefined,
    members: [],
    splits: splits.map(([id, r]) => entry(`split.${id}`, r)),
    at,
    ...extra,
  };
}

Deno.test("result: records, retries, failures, lost runs and cuts from the split records; took and the rates over that same time", () => {
  // p0: failed once, then completed by b (1 retry, 1 failure); p1: its owner lost, taken over (1 retry, 1 lost); p2 plain; p3 cut twice.
  let p0 = openRecord(seedRecord(1, {}), a, false, 3, T0);
  p0 = failRecord(p0, "boom", 3, "a", T0 + 10_000);
  p0 = openRecord(p0, b, false, 3, T0 + 20_000);
  p0 = commitRecord("p0", p0, { watermark: 5 }, false, T0 + 30_000, 300);
  p0 = commitRecord("p0", p0, { watermark: 9 }, true, T0 + 40_000, 200);
  let p1 = openRecord(seedRecord(1, {}), a, false, 3, T0 + 5_000);
  p1 = commitRecord("p1", p1, { watermark: 2 }, false, T0 + 6_000, 100);
  p1 = openRecord(p1, b, true, 3, T0 + 30_000); // a died: taken over
  p1 = commitRecord("p1", p1, { watermark: 4 }, true, T0 + 60_000, 400);
  const [, p2] = done("p2", a, T0 + 1_000, T0 + 50_000, 1000);
  const [, p3raw] = done("p3", b, T0 + 2_000, T0 + 55_000);
  const p3: SplitRecord = { ...p3raw, cuts: 2 };
  const v = buildFleetView(snap([["p0", p0], ["p1", p1], ["p2", p2], ["p3", p3]], T0 + 120_000));
  const s = v.summary;
  assert.equal(v.rate.eta.state, "done");
  assert.deepEqual([s.records, s.splitsWithRecords, s.retries, s.failures, s.lost, s.cuts], [2000, 3, 2, 1, 1, 2]);
  assert.deepEqual([s.startedAt, s.lastCompletedAt, s.tookMs], [T0, T0 + 60_000, 60_000]);
  // Over the minute it took (not over the 2 min since it began, the live rate's window).
  assert.equal(s.perMinute, 4);
  assert.equal(s.recordsPerSecond, 2000 / 60);
  assert.equal(v.rate.windowMs, 120_000, "the live window differs: it runs to the view's time");
  assert.equal(formatSummary(s, 4), "4 split(s) completed · 2,000 records · 2 retries · 1 failure(s) · 2 cut(s) · took 1 min (4.0 splits/min, 33 records/s over that time)");
  assert.deepEqual(v.splits.map((x) => x.records), [500, 500, 1000, null]);
  // status leads with the result once the job is done.
  const text = formatStatus("j", { ...v, plan: { ...v.plan!, outcome: "allComplete" } });
  assert.match(text.split("\n")[2], /^result: 4 split\(s\) completed · 2,000 records · 2 retries/);
  // A source that reports no records says so.
  const bare = buildFleetView(snap([done("x", a, T0, T0 + 1000)], T0 + 2000)).summary;
  assert.match(formatSummary(bare, 1), /no records reported/);
});

Deno.test("result: a commit's records are an integer >= 0, summed into the record only when reported", () => {
  const r = openRecord(seedRecord(1, {}), a, false, 3, T0);
  assert.equal(commitRecord("s", r, { watermark: 1 }, false, T0).records, undefined, "no records reported: no field");
  assert.equal(commitRecord("s", commitRecord("s", r, { watermark: 1 }, false, T0, 5), { watermark: 2 }, false, T0, 7).records, 12);
  for (const bad of [-1, 1.5, NaN]) {
    assert.throws(() => commitRecord("s", r, { watermark: 1 }, false, T0, bad), (e) => e instanceof SplitleaseError && e.code === "INVALID_ARGUMENT");
  }
});

Deno.test("ETA: quarantined splits behind runnable work make the estimate end in a stall", () => {
  const now = T0 + 60_000;
  const running = commitRecord("r", openRecord(seedRecord(1, {}), a, false, 3, T0 + 50_000), { watermark: 1 }, false, T0 + 50_000);
  const q = failRecord(openRecord(seedRecord(1, {}), a, false, 1, T0), "poison", 1, "a", T0 + 1000);
  const splits = [done("d1", a, T0, T0 + 30_000), done("d2", a, T0, T0 + 40_000), ["r", running], ["q", q]] as [string, SplitRecord][];
  const v = buildFleetView(snap(splits, now, { members: [entry("member.a", member())] }));
  assert.equal(v.rate.eta.state, "estimated");
  assert.equal(v.rate.eta.thenStalled, true);
  assert.match(formatStatus("j", v), /the job stalls on them once the runnable work is done/);
  assert.equal(buildFleetView(snap(splits.filter(([id]) => id !== "q"), now)).rate.eta.thenStalled, false);
  assert.deepEqual(buildFleetView(snap(splits.filter(([id]) => id !== "r"), now)).rate.eta, { state: "stalled", at: null, inMs: null, thenStalled: false });
});

Deno.test("splits prints a state in the words asked; status fills its STATE column; a splitlease ui member is no worker", () => {
  const owned = commitRecord("o", openRecord(seedRecord(1, {}), a, false, 3, T0), { watermark: 1 }, false, T0);
  const splits: [string, SplitRecord][] = [["o", owned], ["u", seedRecord(1, {})], done("c", a, T0, T0 + 1)];
  const members = [
    entry("member.a", member({ held: 1 })),
    entry("member.b", member({ session: "sb" })),
    entry("member.d", member({ session: "sd", draining: true })),
    entry("member.s", member({ session: "ss", maxInFlight: 0 })),
    entry("member.splitlease-ui-1a2b3c4d", member({ session: "su", maxInFlight: 0 })),
  ];
  const s = snap(splits, T0 + 10, { members });
  const rowsOf = (text: string) => text.split("\n").filter((l) => /^[ouc] /.test(l)).map((l) => l.split(/ +/).slice(0, 2).join(" "));
  assert.deepEqual(rowsOf(formatSplits(buildFleetView(s, { state: "owned" }))), ["o owned"], "asked owned: says owned");
  assert.deepEqual(rowsOf(formatSplits(buildFleetView(s, { state: "unclaimed" }))), ["u unclaimed"]);
  assert.deepEqual(rowsOf(formatSplits(buildFleetView(s, { state: "runnable" }))), ["o runnable", "u runnable"], "asked runnable: says runnable");
  assert.deepEqual(rowsOf(formatSplits(buildFleetView(s))), ["c completed", "o owned", "u unclaimed"], "all: the words status counts by");
  assert.match(formatSplits(buildFleetView(s, { state: "owned" })), /1 of 1 \(owned\)$/);
  const view = buildFleetView(s);
  assert.deepEqual(view.splits.map((x) => [x.id, x.state]), [["c", "completed"], ["o", "owned"], ["u", "unclaimed"]]);
  assert.deepEqual(view.members.map((m) => [m.instance, m.ui]), [["a", false], ["b", false], ["d", false], ["s", false], ["splitlease-ui-1a2b3c4d", true]]);
  const table = formatStatus("j", view).split("\n");
  const head = table.findIndex((l) => l.startsWith("INSTANCE"));
  const states = table.slice(head + 1, head + 6).map((l) => l.trim().split(/ +/).at(-1));
  assert.deepEqual(states, ["working", "idle", "draining", "standby", "ui"], table.join("\n"));
});

/** A listing the way a catalog reads it. */
function listing(job: string, parts: Partial<JobListing> = {}): JobListing {
  return { job, record: undefined, plan: undefined, leader: undefined, members: [], bytes: null, ...parts };
}
const at = (e: ReturnType<typeof entry>, writtenAt?: number): CatalogEntry => ({ ...e, ...(writtenAt !== undefined ? { writtenAt } : {}) });

Deno.test("jobs: each job's state, counts, times and live members; delete refuses a live or unfinished job", async () => {
  const now = T0 + 3_600_000;
  const plan = (outcome?: unknown) => entry("plan", { v: 2, term: 1, finality: "final", generation: 1, planned: 90, ...(outcome ? { outcome } : {}) });
  const record = entry("job", { v: 3, fingerprint: "fp", createdAt: T0 });
  const complete = listing("done", { record, plan: at(plan({ kind: "allComplete", completed: 89, cancelled: 1 }), T0 + 600_000), bytes: 48_000 });
  const stalled = listing("stuck", {
    record,
    plan: at(plan({ kind: "stalled", completed: 89, quarantined: 1 })),
    members: [at(entry("member.obs", member({ maxInFlight: 0, at: now - 5_000 })))],
  });
  const running = listing("busy", {
    record,
    plan: at(plan()),
    leader: at(entry("leader", { v: 2, instance: "w1", session: "s", term: 1, beat: 9, counts: { members: 2, runnable: 30, unowned: 5, completed: 60, quarantined: 0, cancelled: 0 } })),
    members: [at(entry("member.w1", member()), now - 2_000), at(entry("member.w2", member({ at: now - LIVE_WITHIN_MS - 1 })))],
  });
  const abandoned = listing("gone", { record, plan: at(plan()), members: [at(entry("member.w9", member()), now - 3_600_000)] });
  const fresh = listing("fresh", { record });
  const broken = listing("broken", { plan: at(entry("plan", { v: 2, term: "x" })) });
  const [c, s, r, g, f, u] = [complete, stalled, running, abandoned, fresh, broken].map((l) => summarizeJob(l, now));
  assert.deepEqual([c.state, c.outcome, c.counts, c.createdAt, c.finishedAt, c.bytes], [
    "complete", "allComplete", { completed: 89, quarantined: 0, permanent: 0, cancelled: 1, runnable: 0 }, T0, T0 + 600_000, 48_000,
  ]);
  assert.deepEqual([s.state, s.liveMembers, s.finishedAt], ["stalled", ["obs"], null], "no write time: no finish time");
  assert.deepEqual([r.state, r.liveMembers, r.members, r.counts?.completed], ["running", ["w1"], 2, 60]);
  assert.deepEqual([g.state, g.liveMembers], ["unfinished", []], "a crashed worker's old record is not live");
  assert.deepEqual([f.state, u.state], ["new", "unreadable"]);
  // A member record with no time at all counts as live: deleting under a worker is what the check prevents.
  assert.deepEqual(summarizeJob(listing("x", { members: [at(entry("member.old", member()))] }), now).liveMembers, ["old"]);

  assert.equal(deleteRefusal(c, false), null);
  assert.match(deleteRefusal(s, true)!, /^job "stuck" has 1 live member\(s\) \(obs\): stop its workers first/);
  assert.match(deleteRefusal(r, true)!, /live member/);
  assert.match(deleteRefusal(g, false)!, /^job "gone" is unfinished \(no outcome\): its work is not finished; --force deletes it anyway$/);
  assert.equal(deleteRefusal(g, true), null);

  // Issue 40, item 5: a stalled job has work left (its quarantined splits' progress lives only here): --force, as for
  // any unfinished one; so does a failed one; an empty job (a bucket or row nothing was written to) goes without it.
  const stuck = summarizeJob(listing("stuck", { record, plan: at(plan({ kind: "stalled", completed: 89, quarantined: 1 })) }), now);
  assert.equal(stuck.state, "stalled");
  assert.equal(
    deleteRefusal(stuck, false),
    'job "stuck" is stalled: its 1 quarantined split(s) wait for a requeue or cancel, and their progress lives only here; --force deletes it anyway',
  );
  assert.equal(deleteRefusal(stuck, true), null);
  const failed = summarizeJob(listing("broke", { record, plan: at(plan({ kind: "planFailed", error: "x", attempts: 5, term: 1 })) }), now);
  assert.equal(failed.state, "failed");
  assert.match(deleteRefusal(failed, false)!, /^job "broke" failed \(its planner failed\).*--force deletes it anyway$/);
  const empty = summarizeJob(listing("empty"), now);
  assert.deepEqual([empty.state, deleteRefusal(empty, false)], ["empty", null]);
  assert.match(deleteRefusal(f, false)!, /^job "fresh" is new \(no outcome\)/, "a job record and nothing planned is not empty");

  // Live means not past the lease the record names (two minutes for one that names none), from the newest of the
  // member's own time and the server's write time.
  const leased = (over: Record<string, unknown>, writtenAt?: number) => at(entry("member.m", member({ lease: 2000, ...over })), writtenAt);
  const liveOf = (e: CatalogEntry) => summarizeJob(listing("x", { members: [e] }), now).liveMembers;
  assert.deepEqual(liveOf(leased({ at: now - 1999 })), ["m"]);
  assert.deepEqual(liveOf(leased({ at: now - 2000 })), [], "a lease since its last beat: past it");
  assert.deepEqual(liveOf(leased({ at: now - 60_000 }, now - 1000)), ["m"], "the server stored a beat a second ago (the member's clock is behind)");
  assert.deepEqual(liveOf(leased({ at: now - 1000 }, now - 60_000)), ["m"], "its own clock says a second ago");
  assert.deepEqual(liveOf(at(entry("member.m", member({ at: now - 60_000 })))), ["m"], "no lease named: two minutes");

  const text = formatJobs([c, r]);
  assert.match(text, /^JOB +RUN +STATE +COMPLETED +CANCELLED +QUARANTINED +LIVE\/MEMBERS +CREATED +FINISHED +SIZE$/m);
  // What it skipped has a column of its own: 89 of 90 completed and 1 cancelled is not all done.
  assert.match(text, /^done +1 +complete +89\/90 +1 +0 +0\/0 +2025-12-02 09:33:20Z +2025-12-02 09:43:20Z +48 kB$/m);
  assert.match(text, /^busy +1 +running +60\/90 +0 +0 +1\/2 +2025-12-02 09:33:20Z +- +-$/m);
  assert.match(text, /run a finished job again: splitlease rerun NAME \(its history is kept\)/);
  assert.equal(formatJobs([]), "no jobs (no splitlease_* bucket on this server)");

  // listJobs over any backend's catalog, sorted by name; a store-backed listing reads the same records.
  const store = new MemoryStore();
  await store.create("job", record.value);
  await store.create("plan", plan({ kind: "allComplete", completed: 90 }).value);
  const catalog: JobCatalog = {
    list: async (job) => [await readJobListing("zeta", store), complete].filter((l) => job === undefined || l.job === job),
    remove: () => Promise.resolve(false),
    close: () => Promise.resolve(),
    [Symbol.asyncDispose]: () => Promise.resolve(),
  };
  assert.deepEqual((await listJobs(catalog, undefined, () => now)).map((j) => [j.job, j.state]), [["done", "complete"], ["zeta", "complete"]]);
  assert.deepEqual((await listJobs(catalog, "zeta")).map((j) => j.job), ["zeta"]);
  await store.close();
});

Deno.test("result: a job of less than ten seconds says how long to a tenth, not 0 s", () => {
  assert.equal(duration(315), "0.3 s");
  assert.equal(duration(0), "0.0 s");
  assert.equal(duration(9_940), "9.9 s");
  assert.equal(duration(10_000), "10 s");
  assert.equal(duration(187_000), "3 min 07 s");
});
