import assert from "node:assert/strict";
import { z } from "zod";
import { FencedError, SplitleaseError, StoreUnavailableError, startWorker, type WorkerOptions } from "../../mod.ts";
import { InvalidRecordError } from "../../admin.ts";
import type { Lane, SplitSource } from "../../mod.ts";
import type { Logger } from "../../host.ts";
import { ManualClock } from "../../testing.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { settle } from "../helpers/settle.ts";
import { ScriptedCoordinator } from "../helpers/scripted_coordinator.ts";

type Run<D> = (lane: Lane<D>) => Promise<void>;

function source<D = unknown>(run: Run<D>, extra: Partial<SplitSource<D>> = {}): SplitSource<D> {
  return {
    fingerprint: () => "test",
    plan: () => Promise.resolve({ finality: "final", splits: [] }),
    run,
    ...extra,
  };
}

interface Line {
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}

function capture(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  return {
    lines,
    logger: (level, msg, fields) => lines.push({ level, msg, fields: fields ?? {} }),
  };
}

function setup<D>(run: Run<D>, opts: Partial<WorkerOptions<D>> & { extra?: Partial<SplitSource<D>> } = {}) {
  const coordinator = new ScriptedCoordinator();
  const clock = new ManualClock();
  const log = capture();
  const { extra, ...workerOptions } = opts;
  const worker = startWorker<D>({
    coordinator,
    source: source(run, extra),
    clock,
    logger: log.logger,
    ...workerOptions,
  });
  return { coordinator, clock, worker, lines: log.lines };
}

/** Waits until `pred` holds (real time, bounded). */
async function until(pred: () => boolean, what = "condition"): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (pred()) return;
    await settle(1);
  }
  throw new Error(`timed out waiting for ${what}`);
}

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const waitAbort = (s: AbortSignal) =>
  new Promise<void>((r) => s.aborted ? r() : s.addEventListener("abort", () => r()));

Deno.test("worker: gained splits run one lane each, complete, and allComplete drains to `drained/complete`", async () => {
  const seen: string[] = [];
  const { coordinator, worker, lines } = setup<{ id: string }>(async (lane) => {
    seen.push(`${lane.splitId}@${lane.epoch}:${JSON.stringify(lane.progress ?? null)}`);
    // The fencing token a sink stores: this tenancy's split and epoch.
    assert.deepEqual(lane.fencingToken, { splitId: lane.splitId, epoch: lane.epoch });
    assert.ok(Object.isFrozen(lane.fencingToken));
    await lane.commit({ watermark: 5 }, { records: 5 });
    await lane.complete({ watermark: 10 }, { records: 5 });
  });
  coordinator.gain("a", 1);
  coordinator.gain("b", 2, { id: "b" }, { watermark: 3 });
  await until(() => worker.stats().completed === 2, "two completions");
  coordinator.emit({ type: "allComplete" });
  const outcome = await withTimeout(worker.done, 20_000, "the worker to finish");
  assert.equal(outcome.kind, "drained");
  assert.equal(outcome.kind === "drained" && outcome.reason, "complete");
  assert.deepEqual(seen.sort(), ["a@1:null", 'b@2:{"watermark":3}']);
  assert.equal(outcome.stats.commits, 4);
  assert.equal(outcome.stats.recordsCommitted, 20);
  assert.deepEqual(
    coordinator.calls.filter((c) => c.op === "commit" && c.final).map((c) => c.op === "commit" && c.splitId).sort(),
    ["a", "b"],
  );
  assert.ok(coordinator.calls.some((c) => c.op === "close"));
  const events = lines.map((l) => l.fields.event).filter(Boolean);
  for (const e of ["gained", "completed", "draining", "finished"]) assert.ok(events.includes(e), e);
  // One line per event: the coordinator logs the job's completion, the worker does not repeat it.
  assert.ok(!lines.some((l) => /job complete/i.test(l.msg)), "no second 'job complete' line from the worker");
  assert.equal(lines.find((l) => l.fields.event === "draining")?.fields.reason, "complete");
  // Lane ids are fresh per tenancy.
  assert.equal(worker.lanes().length, 0);
});

Deno.test("worker: a lost split aborts its lane and late commits are rejected without reaching the coordinator", async () => {
  let late: unknown;
  const done = deferred();
  const { coordinator, worker, lines } = setup(async (lane) => {
    await lane.commit({ watermark: 1 });
    await waitAbort(lane.signal);
    try {
      await lane.commit({ watermark: 2 });
    } catch (e) {
      late = e;
    }
    done.resolve();
  });
  coordinator.gain("a", 1);
  await until(() => coordinator.calls.length === 1, "first commit");
  coordinator.lose("a", "expired");
  await withTimeout(done.promise, 20_000, "the aborted lane to try its late commit and return");
  assert.ok(late instanceof FencedError, String(late));
  assert.deepEqual(coordinator.calls.map((c) => c.op), ["commit"]);
  await until(() => worker.lanes().length === 0, "lane ended");
  assert.deepEqual(worker.stats().lost, { expired: 1 });
  assert.ok(lines.some((l) => l.fields.event === "lost" && l.fields.reason === "expired"));
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("worker: a fenced commit rejects with FencedError, aborts the lane and counts a fenced loss", async () => {
  let err: unknown;
  const { coordinator, worker } = setup(async (lane) => {
    await lane.commit({ watermark: 1 });
    coordinator.bumpEpoch(lane.splitId); // someone else took it over
    try {
      await lane.commit({ watermark: 2 });
    } catch (e) {
      err = e;
    }
    assert.ok(lane.signal.aborted);
  });
  coordinator.gain("a", 1);
  await until(() => err !== undefined, "fenced");
  assert.ok(err instanceof FencedError);
  await until(() => worker.lanes().length === 0);
  assert.equal(worker.stats().lost.fenced, 1);
  // Nothing was released or failed for a fenced split.
  assert.ok(!coordinator.calls.some((c) => c.op === "release" || c.op === "fail"));
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("worker: re-gaining a split opens a fresh lane with the new epoch and resume progress", async () => {
  const lanes: { id: string; epoch: number; progress: unknown }[] = [];
  const { coordinator, worker } = setup(async (lane) => {
    lanes.push({ id: lane.id, epoch: lane.epoch, progress: lane.progress });
    await lane.commit({ watermark: lane.epoch * 10 });
    await waitAbort(lane.signal);
  });
  coordinator.gain("a", 1);
  await until(() => coordinator.calls.length === 1);
  coordinator.lose("a", "starved");
  await until(() => worker.lanes().length === 0);
  coordinator.gain("a", 2);
  await until(() => coordinator.calls.length === 2);
  assert.equal(lanes.length, 2);
  assert.notEqual(lanes[0].id, lanes[1].id);
  assert.deepEqual(lanes[1], { id: lanes[1].id, epoch: 2, progress: { watermark: 10 } });
  coordinator.lose("a", "expired");
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("worker: cooperative revocation commits the tail, then releases (zero replay)", async () => {
  const { coordinator, worker, lines } = setup(async (lane) => {
    let n = 0;
    while (!lane.revokeSignal.aborted) {
      n++;
      await lane.commit({ watermark: n });
      await settle(1);
    }
    await lane.commit({ watermark: n + 100 }); // the tail
  });
  coordinator.gain("a", 1);
  await until(() => coordinator.calls.length >= 2);
  coordinator.emit({ type: "revokeRequested", splitId: "a" });
  await until(() => coordinator.calls.some((c) => c.op === "release"), "release");
  const ops = coordinator.calls.map((c) => c.op);
  const lastCommit = ops.lastIndexOf("commit");
  assert.ok(lastCommit < ops.indexOf("release"), "tail committed before the release");
  const tail = coordinator.calls[lastCommit];
  assert.ok(tail.op === "commit" && Number(tail.progress.watermark) > 100);
  assert.equal(
    coordinator.durable.get("a")!.progress?.watermark,
    (tail as { progress: { watermark: number } }).progress.watermark,
  );
  assert.equal(worker.stats().revocations.drained, 1);
  assert.equal(worker.stats().released, 1);
  assert.ok(lines.some((l) => l.fields.event === "revocation"));
  // An idempotent second request for an unheld split is a no-op.
  coordinator.emit({ type: "revokeRequested", splitId: "a" });
  await settle();
  assert.equal(coordinator.calls.filter((c) => c.op === "release").length, 1);
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("worker: a source that cannot stop intake declines the revocation and its lane is aborted", async () => {
  let aborted = false;
  const { coordinator, worker } = setup(async (lane) => {
    await waitAbort(lane.signal);
    aborted = true;
  }, { extra: { stopsIntakeOnRevoke: false } });
  coordinator.gain("a", 1);
  await settle();
  coordinator.emit({ type: "revokeRequested", splitId: "a" });
  await until(() => aborted, "abort");
  assert.deepEqual(coordinator.calls.map((c) => c.op), ["declineRevocation"]);
  await until(() => worker.lanes().length === 0);
  assert.equal(worker.stats().revocations.declined, 1);
  assert.equal(worker.stats().lost.revoked, 1);
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
  assert.ok(!coordinator.calls.some((c) => c.op === "release" && c.splitIds.includes("a")));
});

Deno.test("worker: a too-slow revocation is forced (lost/revoked) and a lane ignoring its abort is abandoned after abortGraceMs", async () => {
  const never = deferred();
  const { coordinator, worker, clock, lines } = setup(() => never.promise, { abortGraceMs: 2000, maxInFlight: 1 });
  coordinator.gain("a", 1);
  await settle();
  coordinator.emit({ type: "revokeRequested", splitId: "a" });
  await settle();
  coordinator.lose("a", "revoked"); // the coordinator's drain deadline passed
  await settle();
  assert.equal(worker.stats().revocations.forced, 1);
  assert.equal(worker.lanes().length, 1);
  await clock.advance(1999);
  assert.equal(worker.stats().abandoned, 0);
  await clock.advance(1);
  assert.equal(worker.stats().abandoned, 1);
  assert.equal(worker.lanes().length, 0);
  assert.ok(lines.some((l) => l.fields.event === "abandoned" && l.level === "error"));
  // The slot is free again: a new split runs despite maxInFlight = 1.
  let ran = false;
  coordinator.gain("b", 1);
  await settle();
  // (the source never resolves, but `run` was entered for b)
  ran = worker.lanes().some((l) => l.splitId === "b" && l.state === "running");
  assert.ok(ran);
  coordinator.lose("b", "expired");
  await clock.advance(2000);
  const outcome = worker.shutdown();
  await clock.advance(10);
  assert.equal((await withTimeout(outcome, 20_000, "the worker to shut down")).kind, "drained");
  never.resolve();
});

Deno.test("worker: a descriptor failing the zod schema is reported as poison with its issues and never runs", async () => {
  let runs = 0;
  const { coordinator, worker, lines } = setup<{ n: number }>(async (lane) => {
    runs++;
    await lane.complete();
  }, { extra: { descriptorSchema: z.object({ n: z.number() }) } });
  coordinator.gain("bad", 1, { n: "x" });
  coordinator.gain("good", 1, { n: 1 });
  await until(() => coordinator.calls.length === 2);
  assert.equal(runs, 1);
  const fail = coordinator.calls.find((c) => c.op === "fail");
  assert.ok(fail && fail.op === "fail");
  assert.equal(fail.splitId, "bad");
  assert.match(fail.reason, /invalid descriptor: n: /);
  const poison = lines.find((l) => l.fields.event === "poison");
  assert.ok(poison);
  assert.deepEqual((poison.fields.issues as { path: string[] }[])[0].path, ["n"]);
  assert.equal(worker.stats().failed, 1);
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("worker: lane.fail reports poison; at the attempt cap the quarantine is logged", async () => {
  const { coordinator, worker, lines } = setup(async (lane) => {
    await lane.commit({ watermark: 1 });
    await lane.fail("cannot parse record 7");
  });
  coordinator.maxAttempts = 1;
  coordinator.gain("p", 1);
  await until(() => lines.some((l) => l.fields.event === "quarantined"), "quarantine");
  assert.deepEqual(coordinator.calls.map((c) => c.op), ["commit", "fail"]);
  const f = coordinator.calls[1];
  assert.ok(f.op === "fail" && f.reason === "cannot parse record 7" && f.epoch === 1);
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
  assert.equal(worker.stats().failed, 1);
});

Deno.test("worker: a run that throws is a failed tenancy (pending progress kept, fail reported), not a crash", async () => {
  const { coordinator, worker, lines } = setup(async (lane) => {
    if (lane.splitId === "boom") {
      await lane.commit({ watermark: 3 });
      throw new TypeError("boom");
    }
    await lane.complete({ watermark: 1 });
  });
  coordinator.gain("boom", 1);
  coordinator.gain("ok", 1);
  await until(() => worker.stats().failed === 1 && worker.stats().completed === 1);
  const fail = coordinator.calls.find((c) => c.op === "fail");
  assert.ok(fail && fail.op === "fail" && /run threw: TypeError: boom/.test(fail.reason));
  assert.equal(coordinator.durable.get("boom")!.progress?.watermark, 3);
  assert.ok(lines.some((l) => l.fields.event === "laneFailed" && l.level === "error"));
  assert.equal(worker.finished, false);
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("worker: a run stopped by a store outage (its commit threw StoreUnavailableError) hands the split back: no fail, no attempt", async () => {
  // What a source does with an error it cannot handle: rethrow it (examples/pg_range does).
  const { coordinator, worker, lines } = setup(async (lane) => {
    await lane.commit({ watermark: 5 });
    await lane.complete({ watermark: 10 });
  }, { commitIntervalMs: 0 });
  const commit = coordinator.commit.bind(coordinator);
  let outage = 1;
  coordinator.commit = async (id, epoch, progress, opts) => {
    if (opts?.final && outage-- > 0) throw new StoreUnavailableError("update", 1000, { detail: "jetstream is not enabled" });
    return await commit(id, epoch, progress, opts);
  };
  coordinator.gain("s", 1);
  await until(() => coordinator.calls.some((c) => c.op === "release"), "the hand-back");
  assert.ok(!coordinator.calls.some((c) => c.op === "fail"), "no failure reported: the outage is not the split's fault");
  assert.equal(worker.stats().failed, 0);
  assert.equal(coordinator.durable.get("s")!.progress?.watermark, 5, "the durable progress stays for the next owner");
  assert.ok(lines.some((l) => l.fields.event === "laneOutage" && l.level === "warn"));
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("worker: stalled is fatal by default: distinct outcome after draining", async () => {
  const { coordinator, worker, lines, clock } = setup(async () => {});
  coordinator.emit({ type: "stalled", completed: 8, quarantined: 2 });
  await clock.advance(1000); // the stall stood for the hold (statusIntervalMs)
  const outcome = await withTimeout(worker.done, 20_000, "the worker to finish");
  assert.deepEqual({ ...outcome, stats: undefined }, {
    kind: "stalled",
    completed: 8,
    quarantined: 2,
    stats: undefined,
  });
  assert.ok(coordinator.calls.some((c) => c.op === "drain") && coordinator.calls.some((c) => c.op === "close"));
  // The coordinator logs the stall itself (one line); the worker says what it does about it.
  assert.ok(lines.some((l) => l.fields.event === "draining" && l.fields.reason === "stalled"));
  assert.ok(!lines.some((l) => /stalled/i.test(l.msg)), "no second 'job stalled' line from the worker");
});

Deno.test("worker: stalledIsFatal=false drains with a warning", async () => {
  const { coordinator, worker, clock } = setup(async () => {}, { stalledIsFatal: false });
  coordinator.emit({ type: "stalled", completed: 8, quarantined: 2 });
  await clock.advance(1000);
  const outcome = await withTimeout(worker.done, 20_000, "the worker to finish");
  assert.equal(outcome.kind, "drained");
  assert.ok(
    outcome.kind === "drained" && outcome.reason === "stalled" &&
      /2 split\(s\) quarantined/.test(outcome.warning ?? ""),
  );
});

Deno.test("worker: a stalled outcome withdrawn before the hold ends (reopened) keeps the worker working", async () => {
  const ran: string[] = [];
  const { coordinator, worker, clock } = setup(async (lane) => {
    ran.push(lane.splitId);
    await lane.complete({ watermark: 1 });
  });
  coordinator.emit({ type: "stalled", completed: 1, quarantined: 1 });
  await clock.advance(400);
  assert.equal(worker.draining, false, "a stall is held before the worker acts on it");
  // An operator requeued the quarantined split as the outcome was decided: the outcome is withdrawn.
  coordinator.emit({ type: "reopened", was: "stalled" });
  await clock.advance(5000);
  assert.equal(worker.finished || worker.draining, false, "the withdrawn stall does not end the worker");
  coordinator.gain("requeued", 2);
  await until(() => worker.stats().completed === 1, "the requeued split to run");
  assert.deepEqual(ran, ["requeued"]);
  coordinator.emit({ type: "allComplete" });
  const outcome = await withTimeout(worker.done, 20_000, "the worker to finish");
  assert.ok(outcome.kind === "drained" && outcome.reason === "complete", JSON.stringify(outcome));
});

Deno.test("worker: afterStall wait: a stall that stands never ends the worker; a requeue (reopened) has it take work again", async () => {
  const ran: string[] = [];
  const { coordinator, worker, clock, lines } = setup(async (lane) => {
    ran.push(lane.splitId);
    await lane.complete({ watermark: 1 });
  }, { afterStall: "wait" });
  coordinator.emit({ type: "stalled", completed: 1, quarantined: 1 });
  await clock.advance(60_000); // far beyond the hold: exit mode would have finished long ago
  await settle();
  assert.equal(worker.finished || worker.draining, false, "the stall does not end a waiting worker");
  assert.ok(worker.ready);
  assert.ok(lines.some((l) => l.fields.event === "stallWait" && l.fields.quarantined === 1), "it says why it stays");
  coordinator.emit({ type: "reopened", was: "stalled" });
  coordinator.gain("requeued", 2);
  await until(() => worker.stats().completed === 1, "the requeued split to run");
  assert.deepEqual(ran, ["requeued"]);
  coordinator.emit({ type: "allComplete" });
  const outcome = await withTimeout(worker.done, 20_000, "the worker to finish");
  assert.ok(outcome.kind === "drained" && outcome.reason === "complete", JSON.stringify(outcome));
});

Deno.test("worker: afterStall is exit or wait", () => {
  assert.throws(
    () => startWorker({ coordinator: new ScriptedCoordinator(), source: source(async () => {}), afterStall: "stay" as "wait" }),
    /afterStall must be "exit" or "wait", got "stay"/,
  );
});

Deno.test("worker: a split whose fail report is refused (an unreadable record) is released by the worker on its own, not kept until shutdown", async () => {
  const { coordinator, worker, clock } = setup(async () => {
    throw new Error("cannot commit: record unreadable");
  });
  // The report meets an unreadable record (the split stays held by the coordinator), so does the first release.
  const unreadable = (id: string) => new InvalidRecordError(`split.${id}`, "value is not JSON", []);
  coordinator.fail = async (id, epoch, reason) => {
    await Promise.resolve();
    coordinator.calls.push({ op: "fail", splitId: id, epoch, reason });
    throw unreadable(id);
  };
  const release = coordinator.release.bind(coordinator);
  let refuse = 1;
  coordinator.release = async (ids) => {
    if (refuse-- > 0) {
      coordinator.calls.push({ op: "release", splitIds: [...ids] });
      throw unreadable(ids[0]);
    }
    await release(ids);
  };
  coordinator.gain("g", 1);
  await until(() => coordinator.calls.some((c) => c.op === "fail"), "the fail report");
  await settle(5);
  assert.ok(!coordinator.calls.some((c) => c.op === "release"), "nothing released yet");
  for (let i = 0; i < 8 && !coordinator.calls.some((c) => c.op === "release"); i++) {
    await clock.advance(500);
    await settle(2);
  }
  assert.ok(coordinator.calls.some((c) => c.op === "release" && c.splitIds[0] === "g"), "released within statusIntervalMs, no shutdown or revocation");
  // The refused release is tried again (doubling from statusIntervalMs), still with no shutdown.
  for (let i = 0; i < 8 && coordinator.held.has("g"); i++) {
    await clock.advance(500);
    await settle(2);
  }
  assert.equal(coordinator.held.has("g"), false, "the split is let go of");
  assert.equal(coordinator.calls.filter((c) => c.op === "release").length, 2);
  assert.equal(worker.finished, false);
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("worker: an idle standby drains on allComplete and closes", async () => {
  const { coordinator, worker } = setup(async () => {});
  assert.equal(worker.ready, true);
  coordinator.emit({ type: "allComplete" });
  const outcome = await withTimeout(worker.done, 20_000, "the worker to finish");
  assert.equal(outcome.kind, "drained");
  assert.deepEqual(coordinator.calls.map((c) => c.op), ["drain", "close"]);
  assert.equal(worker.ready, false);
  assert.equal(worker.finished, true);
});

Deno.test("worker: shutdown revokes every lane cooperatively, releases everything and closes", async () => {
  const { coordinator, worker } = setup(async (lane) => {
    await lane.commit({ watermark: 1 });
    await waitAbort(lane.revokeSignal);
    await lane.commit({ watermark: 2 });
  }, { maxInFlight: 2 });
  coordinator.gain("a", 1);
  coordinator.gain("b", 1);
  coordinator.gain("c", 1); // queued: maxInFlight = 2
  await until(() => coordinator.calls.length === 2);
  assert.equal(worker.stats().queued, 1);
  assert.deepEqual(worker.lanes().map((l) => l.state).sort(), ["queued", "running", "running"]);
  const p = worker.shutdown({ reason: "test" });
  assert.equal(worker.draining, true);
  assert.equal(worker.ready, false);
  const outcome = await withTimeout(p, 20_000, "the worker to shut down");
  assert.equal(outcome.kind, "drained");
  assert.equal(outcome.kind === "drained" && outcome.reason, "shutdown");
  assert.equal(coordinator.held.size, 0);
  const released = coordinator.calls.flatMap((c) => (c.op === "release" ? c.splitIds : [])).sort();
  assert.deepEqual(released, ["a", "b", "c"]);
  for (const id of ["a", "b"]) assert.equal(coordinator.durable.get(id)!.progress?.watermark, 2);
  assert.equal(coordinator.calls.at(-1)!.op, "close");
  assert.equal(outcome.stats.released, 3);
});

Deno.test("worker: a burst of events is applied whole before one status check (a status is O(held))", async () => {
  const { coordinator, worker } = setup(async (lane) => {
    await waitAbort(lane.revokeSignal);
  }, { maxInFlight: 300, statusIntervalMs: 0 });
  const before = coordinator.statusCalls;
  for (let i = 0; i < 300; i++) coordinator.gain(`s${i}`, 1);
  await until(() => worker.stats().running === 300, "300 lanes running");
  // Checked once per burst, not once per event (300 events here).
  assert.ok(coordinator.statusCalls - before <= 5, `status() called ${coordinator.statusCalls - before} times for one burst of 300 events`);
  const outcome = await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
  assert.equal(outcome.kind, "drained");
  assert.equal(outcome.stats.released, 300);
});

Deno.test("worker: a shutdown deadline aborts lanes that do not stop and ends `drained` with forced", async () => {
  const { coordinator, worker, clock } = setup(async (lane) => {
    await waitAbort(lane.signal); // ignores revocation, honours abort
  });
  coordinator.gain("a", 1);
  await settle();
  const p = worker.shutdown({ deadlineMs: 500 });
  await clock.advance(500);
  const outcome = await withTimeout(p, 20_000, "the worker to shut down past its deadline");
  assert.ok(outcome.kind === "drained" && outcome.forced === true);
  assert.equal(outcome.stats.lost.shutdown, 1);
  assert.ok(coordinator.calls.some((c) => c.op === "close"));
});

Deno.test("worker: maxInFlight bounds running lanes; a freed slot starts the next", async () => {
  const gates = new Map<string, ReturnType<typeof deferred<void>>>();
  const started: string[] = [];
  const { coordinator, worker } = setup(async (lane) => {
    started.push(lane.splitId);
    const g = deferred();
    gates.set(lane.splitId, g);
    await g.promise;
    await lane.complete();
  }, { maxInFlight: 2 });
  for (const id of ["a", "b", "c"]) coordinator.gain(id, 1);
  await until(() => started.length === 2);
  await settle();
  assert.deepEqual(started, ["a", "b"]);
  gates.get("a")!.resolve();
  await until(() => started.length === 3);
  for (const g of gates.values()) g.resolve();
  await until(() => worker.stats().completed === 3);
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("worker: commit cadence coalesces writes per interval and flushes the tail before release", async () => {
  const { coordinator, worker, clock } = setup(async (lane) => {
    for (let i = 1; i <= 5; i++) await lane.commit({ watermark: i }, { records: 1 });
    await waitAbort(lane.revokeSignal);
    await lane.commit({ watermark: 6 }, { records: 1 });
  }, { commitIntervalMs: 1000 });
  coordinator.gain("a", 1);
  await settle();
  // One write at once (the newest accepted progress), the rest wait for the interval.
  assert.equal(coordinator.calls.length, 1);
  await clock.advance(999);
  assert.equal(coordinator.calls.length, 1);
  await clock.advance(1);
  const marks = () => coordinator.calls.map((c) => c.op === "commit" ? c.progress.watermark : c.op);
  assert.equal(marks().at(-1), 5);
  assert.ok(marks().length <= 2);
  coordinator.emit({ type: "revokeRequested", splitId: "a" });
  await until(() => coordinator.calls.some((c) => c.op === "release"));
  assert.deepEqual(marks().slice(-2), [6, "release"]);
  assert.equal(worker.stats().recordsCommitted, 6);
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("worker: a regressing watermark is a caller error; an outage keeps progress for the next write", async () => {
  let regress: unknown;
  let outage: unknown;
  const { coordinator, worker } = setup(async (lane) => {
    await lane.commit({ watermark: 5 });
    try {
      await lane.commit({ watermark: 4 });
    } catch (e) {
      regress = e;
    }
    coordinator.failNextCommits = 1;
    try {
      await lane.commit({ watermark: 6 });
    } catch (e) {
      outage = e;
    }
    await lane.complete();
  });
  coordinator.gain("a", 1);
  await until(() => worker.stats().completed === 1);
  assert.match(String(regress), /watermark regressed/);
  assert.match(String(outage), /unavailable/);
  assert.equal(coordinator.durable.get("a")!.progress?.watermark, 6);
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("worker: the coordinator failing ends the worker with an `error` outcome and aborts lanes", async () => {
  let aborted = false;
  const { coordinator, worker } = setup(async (lane) => {
    await waitAbort(lane.signal);
    aborted = true;
  });
  coordinator.gain("a", 1);
  await settle();
  coordinator.crash(new Error("bucket deleted"));
  const outcome = await withTimeout(worker.done, 20_000, "the worker to finish");
  assert.equal(outcome.kind, "error");
  assert.match(String(outcome.kind === "error" && outcome.error), /bucket deleted/);
  assert.ok(aborted);
});

Deno.test("worker: elections, plans and the join are the coordinator's lines only (one line each, issue 31)", async () => {
  const { coordinator, worker, clock, lines } = setup(async () => {}, { statusIntervalMs: 100 });
  coordinator.isLeader = true;
  coordinator.planGeneration = 1;
  await clock.advance(100);
  // SplitCoordinator logs "Joined", "Leader elected" and "Plan published"; the worker used to say each again.
  const said = lines.map((l) => l.msg.toLowerCase());
  for (const m of ["joined", "leader elected", "plan published"]) assert.ok(!said.includes(m), `the worker logs no "${m}" line`);
  for (const e of ["joined", "leaderElected", "planPublished"]) assert.ok(!lines.some((l) => l.fields.event === e), e);
  for (const l of lines) JSON.stringify(l.fields);
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
  assert.equal(clock.pending, 0, "no timers left after the worker finished");
});

Deno.test("worker: a commit with a transaction is written at once with its statements; a failed one keeps the earlier accepted progress for the next write", async () => {
  const ran: string[] = [];
  const gate = deferred();
  const { coordinator, worker } = setup(async (lane) => {
    await lane.commit({ watermark: 1 }, { records: 1 }); // the first is written at once
    await lane.flush();
    await lane.commit({ watermark: 2 }, { records: 1 }); // accepted, not written yet (commit interval)
    await assert.rejects(
      lane.commit({ watermark: 3 }, { records: 1, transaction: (tx) => Promise.resolve(void ran.push(`first ${tx}`)) }),
      StoreUnavailableError,
    );
    await lane.commit({ watermark: 4 }, { records: 1, transaction: (tx) => Promise.resolve(void ran.push(`second ${tx}`)) });
    await gate.promise;
    await lane.complete();
  }, { commitIntervalMs: 60_000 });
  const commit = coordinator.commit.bind(coordinator);
  let outage = 1;
  const sent: unknown[] = [];
  coordinator.commit = async (id, epoch, progress, opts) => {
    sent.push(progress.watermark);
    if (opts?.transaction) {
      await opts.transaction("tx");
      if (outage-- > 0) throw new StoreUnavailableError("update", 1000, { detail: "answer lost" });
    }
    return await commit(id, epoch, progress, opts);
  };
  coordinator.gain("s", 1);
  await until(() => ran.length === 2, "both transactional commits");
  assert.deepEqual(ran, ["first tx", "second tx"]);
  // Written at once, in order; watermark 2 (accepted before) was kept after the failed 3 and
  // superseded by 4 (never written on its own).
  assert.deepEqual(sent, [1, 3, 4]);
  assert.equal(coordinator.durable.get("s")!.progress?.watermark, 4);
  gate.resolve();
  await until(() => worker.stats().completed === 1, "completion");
  assert.equal(worker.stats().recordsCommitted, 3, "the records of 1, 2 and 4 (3 did not land)");
  await withTimeout(worker.shutdown(), 20_000, "the worker to shut down");
});

Deno.test("worker: a cut the coordinator refuses hands the split back, never runs on with the shortened range (records past the cut would go to nobody)", async () => {
  const gate = deferred();
  let ranTo = -1;
  const { coordinator, worker } = setup<{ from: number; to: number }>(async (lane) => {
    for (let at = lane.descriptor.from; at < lane.descriptor.to; at++) {
      if (lane.signal.aborted || lane.revokeSignal.aborted) return;
      if (at === 2) await gate.promise; // the ask comes here
      ranTo = at;
      await lane.commit({ watermark: at + 1 });
    }
    await lane.complete({ watermark: lane.descriptor.to });
  }, {
    extra: {
      // Keeps [from, 5) and gives away [5, to): a cut the coordinator refuses (a revocation got there first).
      split: (lane) => ({ keep: { from: lane.descriptor.from, to: 5 }, residuals: [{ descriptor: { from: 5, to: lane.descriptor.to } }] }),
    },
  });
  Object.assign(coordinator, {
    split: () => Promise.reject(new SplitleaseError("INVALID_ARGUMENT", "Split \"s\" is being revoked: it cannot be cut")),
  });
  coordinator.gain("s", 1, { from: 0, to: 10 });
  await until(() => ranTo === 1, "the lane to run");
  coordinator.emit({ type: "splitRequested", splitId: "s", epoch: 1, parts: 2 });
  await settle(5);
  gate.resolve();
  await until(() => coordinator.calls.some((c) => c.op === "release" && c.splitIds.includes("s")), "the split to be handed back");
  assert.ok(!coordinator.calls.some((c) => c.op === "commit" && c.final), "the shortened range was never completed");
  assert.ok(ranTo < 9, `the lane stopped (ran to ${ranTo})`);
  await worker.shutdown({ deadlineMs: 1000 });
});
