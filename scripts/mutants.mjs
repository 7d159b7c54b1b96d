// The curated safety mutants of `npm run mutate` (scripts/mutate.mjs).
//
// Each mutant breaks one safety rule of docs/DESIGN.md with one or more
// search/replace edits; every `search` must occur exactly once in its file
// (`npm run mutate -- --check` verifies that in a second). Keep the search
// text short and specific, so it survives unrelated edits; when the code a
// mutant targets moves, rewrite the mutant against the new code rather than
// dropping it.
//
// `suites` lists the suites that should kill the mutant, in the order they
// run (scripts/mutate.mjs stops at the first one that fails):
//   unit         tests/unit
//   store        tests/store/conformance_test.ts (MemoryStore and NatsStore over the Deno adapter's WebSocket), listing_test.ts, watch_replay_test.ts,
//                maybe_landed_test.ts, unsent_test.ts
//   store29      the same store suite on Debian's nats-server 2.9.10 (its hazards do not show on 2.15)
//   coordinator  tests/coordinator/*_test.ts on MemoryStore (manual clock)
//   regressions  tests/sim/regressions_test.ts, stale_reads_test.ts (the simulation under stale reads)
//   sim          tests/sim/sim_test.ts at 300 seeds
//   nats         the coordinator scenarios of tests/nats/backend_test.ts (real nats-server)
//   runtime      tests/runtime/worker_test.ts
//   http         tests/runtime/fleet_http_test.ts, tests/runtime/http_test.ts (the HTTP app in process)
//   outage       the outage suites of tests/nats/backend_test.ts and tests/store/outage_test.ts (a nats-server paused, stopped, restarted, connections killed)
//   pg           the fenced-sink tests of tests/examples/pg_range_test.ts on a PostgreSQL the gate starts
//   pgstore      tests/postgres/store_test.ts and the conformance suites of backend_test.ts (PostgresStore) on a PostgreSQL the gate starts
//   pgonce       tests/postgres/exactly_once_test.ts (rows and progress in one transaction, workers frozen and killed)
//   onesource    tests/runtime/one_source_test.ts (maxInFlight and the job name from one place, real processes)
//   tcptls       tests/tcp/tls_e2e_test.ts (tls:// by URL: workers configured by STORE_URL and the CLI, a CA of the test's)
//   redis        tests/redis/backend_test.ts (the kit's conformance suite) and durability_test.ts on a redis-server the gate starts

const C = "src/coordinator/";
const COORD = ["coordinator", "regressions", "sim", "nats"];

/** @type {{ name: string, breaks: string, edits: { file: string, search: string, replace: string }[], suites: string[] }[]} */
export const mutants = [
  // --- liveness: self-fence, judging, twins -------------------------------------------
  {
    name: "self-fence-margin-dropped",
    breaks: "the worker fences itself at lastOk + leaseMs, not leaseMs − selfFenceMarginMs: no longer strictly before the leader can judge it dead",
    edits: [
      {
        file: C + "member/membership.ts",
        search: "const at = this.#lastOk + timings.selfFenceAfterMs;",
        replace: "const at = this.#lastOk + timings.deadAfterMs;",
      },
      {
        file: C + "member/membership.ts",
        search: "clock.now() >= this.#lastOk + timings.selfFenceAfterMs",
        replace: "clock.now() >= this.#lastOk + timings.deadAfterMs",
      },
    ],
    suites: ["coordinator", "sim", "nats"],
  },
  {
    name: "self-fence-from-write-end",
    breaks: "a heartbeat dates the self-fence from the end of its write, not its start: a slow reply pushes the fence past the leader's judgement",
    edits: [{
      file: C + "member/membership.ts",
      search: "this.#lastOk = start;\n      this.#armSelfFence();",
      replace: "this.#lastOk = clock.now();\n      this.#armSelfFence();",
    }],
    suites: ["coordinator", "sim", "nats"],
  },
  {
    name: "fence-only-by-timer",
    breaks: "the self-fence is only a timer: a process woken from a pause acts on what it learned meanwhile (judges, leads, starts grants, writes) before its overdue timer runs",
    edits: [{
      file: C + "member/membership.ts",
      search: "if (this.#running && !this.#starved && clock.now() >= this.#lastOk + timings.selfFenceAfterMs) this.#fence();",
      replace: "",
    }],
    // Since elections and leader passes need a heartbeat younger than the twin
    // wait, only a holder's write shows the rule; self_fence_test checks it directly.
    suites: ["coordinator", "sim", "regressions", "nats"],
  },
  {
    name: "self-fence-keeps-lanes",
    breaks: "a self-fence stops claiming and leading but leaves every held tenancy running",
    edits: [{
      file: C + "member_parts.ts",
      search: 'const t = tenancies.lose(id, "starved");',
      replace: "const t = undefined;",
    }],
    suites: COORD,
  },
  {
    name: "liveness-half-lease",
    breaks: "observers judge a record dead after half a lease (members after their self-fence margin, leaders too early)",
    edits: [{
      file: C + "liveness.ts",
      search: "return s ? s.since + leaseMs : undefined;",
      replace: "return s ? s.since + leaseMs / 2 : undefined;",
    }],
    suites: COORD,
  },
  {
    name: "twin-check-removed",
    breaks: "a joiner takes over a member record that is still moving (a live twin) instead of failing with DUPLICATE_INSTANCE",
    edits: [{
      file: C + "member/registration.ts",
      // The takeover's CAS at the revision read before the wait is the twin check: at one read after it, a moving record is taken.
      search: "? await store.update(key, encodeRecord(record), cur.revision)",
      replace: "? await store.update(key, encodeRecord(record), (await store.get(key))?.revision ?? cur.revision)",
    }],
    suites: COORD,
  },
  {
    name: "twin-leader-elects-unproven",
    breaks: "a session elects itself while its membership is unproven (a leader woken from a freeze, whose member record a twin took over, " +
      "elects itself over the twin's leader record: a leadership ping-pong between two sessions of one instance)",
    edits: [{ file: C + "leadership.ts", search: "this.#fresh = fresh;", replace: "this.#fresh = () => true;" }],
    suites: COORD,
  },
  {
    name: "duplicate-keeps-writing",
    breaks: "a coordinator that failed with DUPLICATE_INSTANCE still writes (a task between its read and its write when it failed, " +
      "an in-flight lane or leader task): the process that lost its instance to a twin goes on writing under it",
    edits: [{ file: C + "coordinator.ts", search: "this.#store.refuseWrites(error);", replace: "" }],
    suites: ["sim"], // seed 133: a frozen member that was closing wakes, its heartbeat finds the twin, then its close releases its self-fenced splits
  },
  {
    name: "claim-without-freshness",
    breaks: "offers are claimed while the last landed heartbeat is stale (a process that was frozen claims before its membership is proven ours)",
    edits: [{
      file: C + "coordinator.ts",
      search: "return this.#active() && !this.#draining && !this.#follower.paused && this.#membershipFresh();",
      replace: "return this.#active() && !this.#draining && !this.#follower.paused;",
    }],
    suites: COORD,
  },

  // --- transitions of a split record ---------------------------------------------------
  {
    name: "open-no-epoch-bump",
    breaks: "a claim, grant or takeover keeps the epoch: two owners share one fencing token",
    edits: [{
      file: "src/records/transitions.ts",
      search: "const next: SplitRecord = { ...r, epoch: r.epoch + 1, owner: to ?",
      replace: "const next: SplitRecord = { ...r, epoch: r.epoch, owner: to ?",
    }],
    suites: COORD,
  },
  {
    name: "handoff-no-epoch-bump",
    breaks: "a release to a named successor keeps the epoch: the successor writes at the releaser's fencing token",
    edits: [{
      file: "src/records/transitions.ts",
      search: "const next: SplitRecord = { ...base, epoch: r.epoch + 1, owner: { instance: to.instance",
      replace: "const next: SplitRecord = { ...base, owner: { instance: to.instance",
    }],
    suites: COORD,
  },
  {
    name: "drain-keeps-withdrawn-successor",
    breaks: "a revoke the leader lists again without a successor (the one it named left) keeps the old one: a draining member releases " +
      "to a member that is gone, and the leader takes the split over from it, charging an attempt for a graceful drain",
    edits: [{ file: C + "member/revoke_requests.ts", search: "if (to || byLeader) this.#set.succeed(t, to);", replace: "if (to) this.#set.succeed(t, to);" }],
    suites: COORD,
  },
  {
    name: "drain-keeps-first-successor",
    breaks: "a revoke the leader lists again with another successor, or without one, does not replace the successor first named: " +
      "the member releases to a member the leader no longer names (one that left, or was replaced)",
    edits: [{ file: C + "member/revoke_requests.ts", search: "if (to || byLeader) this.#set.succeed(t, to);", replace: "if (!t.to && to) this.#set.succeed(t, to);" }],
    suites: ["coordinator", "sim", "nats"],
  },
  {
    name: "takeover-charges-clean-leave",
    breaks: "the leader charges an attempt for a split still naming a session that left cleanly (a drain's release that reached its " +
      "successor after the successor left): a graceful drain charges an attempt, and rolling restarts quarantine healthy splits",
    edits: [{
      file: C + "leader/judge.ts",
      search: "why: clean ? \"left\" : heir ? \"restarted\" : \"gone\", charge: !clean });",
      replace: "why: clean ? \"left\" : heir ? \"restarted\" : \"gone\", charge: true });",
    }],
    suites: COORD,
  },
  {
    name: "commit-lower-watermark",
    breaks: "commitRecord accepts a watermark below the committed one (durable progress regresses)",
    edits: [{
      file: "src/records/transitions.ts",
      search: "compareWatermarks(prev, progress.watermark) > 0",
      replace: "compareWatermarks(prev, progress.watermark) > 0 && false",
    }],
    suites: COORD,
  },
  {
    name: "release-charges",
    breaks: "a graceful release to nobody consumes an attempt",
    edits: [{
      file: "src/records/transitions.ts",
      search: "if (!to) return withTenancy({ ...base, owner: null }, at, end);",
      replace: "if (!to) return withTenancy({ ...base, owner: null, attempts: r.attempts + 1 }, at, end);",
    }],
    suites: COORD,
  },

  // --- the leader's revocations: lanes kept free for successors --------------------------------
  {
    name: "takeover-lane-not-held",
    breaks: "a takeover's successor is dealt offers for the lane its takeover is on its way to: a restarted member claims free splits, then starts its reclaims, past maxInFlight",
    edits: [{ file: C + "leader/takeovers.ts", search: 'if (m.to) reserved.set(m, d.reserve(m.to, "takeover"));', replace: "" }],
    suites: ["coordinator"],
  },
  {
    name: "incoming-kept-after-settle",
    breaks: "a settled or withdrawn revocation still counts against its successor's free lanes (it is offered less and less)",
    edits: [{ file: C + "leader/assignment_tracker.ts", search: "    this.#revokedFrom.delete(id);\n    this.#successor(r.to)?.expected.delete(id);", replace: "    this.#revokedFrom.delete(id);" }],
    suites: ["unit", ...COORD],
  },
  {
    name: "successor-named-without-lane",
    breaks: "a drain's successor named later by the balancing pass does not keep a lane free for it (it is offered other work meanwhile)",
    edits: [{ file: C + "leader/assignment_tracker.ts", search: "    this.#touched.add(m);\n    this.#book(to).expected.add(id);", replace: "    this.#touched.add(m);" }],
    suites: ["unit", ...COORD],
  },
  // --- cutting a running split's remaining work (cuts.ts, tenancy_writes.ts, leader/cut_asks.ts) ----
  {
    name: "cut-residuals-before-shrink",
    breaks: "the residuals of a cut are created before the cut lands on the parent (a crash in between leaves a range in two splits)",
    edits: [{
      file: C + "member/tenancy_writes.ts",
      search: 'import { carryCut, cutLanded } from "./cut_writes.ts";',
      replace: 'import { carryCut, createResiduals, cutLanded } from "./cut_writes.ts";',
    }, {
      file: C + "member/tenancy_writes.ts",
      search: 't.cut = { cut, landed: false };\n    await this.#cas(id, epoch, false, (r) => r, "cut");',
      replace: 't.cut = { cut, landed: false };\n    await createResiduals(this.#core, id, t, cut.residuals);\n    await this.#cas(id, epoch, false, (r) => r, "cut");',
    }],
    suites: ["sim"],
  },
  {
    name: "cut-not-carried",
    breaks: "a tenancy's writes do not carry its cut: the lane stops at the kept range while the record keeps the whole range, and completes it",
    edits: [{ file: C + "member/cut_writes.ts", search: "if (t.cut && !t.cut.landed) x = cutRecord(x, t.cut.cut);", replace: "" }],
    suites: ["sim"],
  },
  {
    name: "cut-spec-stale",
    breaks: "a tenancy resumed after its own cut landed runs the planned descriptor, past the kept range",
    edits: [{ file: C + "cuts.ts", search: "if (record.cuts === undefined || record.descriptor === undefined) return spec;", replace: "return spec;" }],
    suites: ["sim"],
  },
  {
    name: "outcome-ignores-pending-residuals",
    breaks: "the job outcome is decided while a cut lists a residual whose record does not exist yet",
    edits: [{
      file: C + "leader/completion.ts",
      search: "if (v.counts.runnable > 0 || v.splits.size < planned || v.pendingResiduals.size > 0) return false;",
      replace: "if (v.counts.runnable > 0 || v.splits.size < planned) return false;",
    }],
    suites: ["unit", "sim"],
  },
  {
    name: "planned-counts-residuals",
    breaks: "a leader that plans again after a cut counts the residuals as planned: no outcome ever matches the store",
    edits: [{ file: C + "leader/split_table.ts", search: "if (Math.max(this.#run[s], 1) >= run && this.#extra.get(s)?.parent === undefined) n++;", replace: "if (Math.max(this.#run[s], 1) >= run) n++;" }],
    suites: ["sim"],
  },
  // --- the gateway for split records (split_records.ts) -------------------------------------
  {
    name: "split-cas-writes-over-moved",
    breaks: "the CAS-and-reread loop of split records writes again over a record that moved to another owner or epoch",
    edits: [{
      file: C + "split_records.ts",
      search: "if (!cur || !opts.keep(cur.record)) return { ok: false, current: cur };",
      replace: "if (!cur) return { ok: false, current: cur };",
    }],
    suites: ["unit", ...COORD],
  },
  {
    name: "split-landed-before-writer",
    breaks: "a landed split write reaches the leader's view before its writer's bookkeeping (a release seen while its tenancy still counts as held)",
    edits: [{
      file: C + "split_records.ts",
      search: "opts.onLanded?.(next, r.revision);\n        this.#landed({ id, record: next, revision: r.revision, kind: opts.kind });",
      replace: "this.#landed({ id, record: next, revision: r.revision, kind: opts.kind });\n        opts.onLanded?.(next, r.revision);",
    }],
    suites: ["unit", ...COORD],
  },
  // --- the holder's writes (tenancy_writes.ts) -------------------------------------------
  {
    name: "commit-retry-after-move",
    breaks: "a commit whose CAS conflicts is retried without checking that the record still carries our epoch, owner and session",
    edits: [{
      file: C + "member/tenancy_writes.ts",
      search: "keep: (rec) => heldBy(rec, me, epoch),",
      replace: "keep: () => true,",
    }],
    suites: COORD,
  },
  {
    name: "forced-release-after-move",
    breaks: "a forced release whose CAS conflicts is retried over a record that moved to another owner",
    edits: [{
      file: C + "member/tenancy_writes.ts",
      search: "keep: (r) => heldBy(r, this.#core.me, t.epoch),",
      replace: "keep: () => true,",
    }],
    suites: COORD,
  },
  {
    name: "terminal-write-keeps-tenancy",
    breaks: "a final commit, release or fail that landed does not end its tenancy (a later write lands on a finished split)",
    edits: [{
      file: C + "member/tenancy_writes.ts",
      search: "if (terminal) this.#set.end(id, t);",
      replace: "",
    }],
    suites: ["regressions", "coordinator", "sim", "nats"],
  },

  {
    name: "heldby-ignores-status",
    breaks: "a record counts as held by us whatever its status: a conflicting write of ours is retried over a split that completed or was quarantined",
    edits: [{
      file: "src/records/transitions.ts",
      search: 'return r.status === "runnable" && r.epoch === epoch',
      replace: "return r.epoch === epoch",
    }],
    suites: COORD,
  },

  // --- the member side (follower.ts) -----------------------------------------------------
  {
    name: "member-view-takes-older-revision",
    breaks: "a member applies a late delivery of an older revision of its own assignment record (or of the plan or leader record) over the newer one it already applied, from its watch or from a read of its own: the newer record's revocations are withdrawn, a job decided complete reopens",
    edits: [{ file: C + "member/follower.ts", search: "    if (held && held.revision >= ev.revision) return;\n", replace: "" }],
    suites: ["coordinator", "sim"],
  },
  {
    name: "member-assign-view-unguarded",
    breaks: "the revision guard covers the leader and plan records but not the member's own assignment record: an older assignment delivered late withdraws the newer one's revocations",
    edits: [{ file: C + "member/follower.ts", search: "filter === keys.plan ? this.plan : this.assign;", replace: "filter === keys.plan ? this.plan : undefined;" }],
    suites: ["coordinator", "sim"],
  },
  {
    name: "member-plan-view-unguarded",
    breaks: "the revision guard skips the plan record: a plan revision the watch delivers after the leader's own read and write of newer ones reopens the job it decided complete",
    edits: [{ file: C + "member/follower.ts", search: "const held = filter === keys.leader ? this.leader : filter === keys.plan ? this.plan : this.assign;", replace: "const held = filter === keys.leader ? this.leader : filter === keys.plan ? undefined : this.assign;" }],
    suites: ["coordinator", "sim"],
  },
  {
    name: "claim-charges",
    breaks: "claiming an offered free split consumes an attempt",
    edits: [{
      file: C + "member/claims.ts",
      search: "const next = openRecord(rec, me, false, config.maxAttempts, this.#core.clock.wallNow());",
      replace: "const next = openRecord(rec, me, true, config.maxAttempts, this.#core.clock.wallNow());",
    }],
    suites: COORD,
  },
  {
    name: "claim-fresh-revision",
    breaks: "an offer is claimed by CAS at a freshly read revision instead of the offered one (a stale offer overwrites a peer's claim)",
    edits: [{
      file: C + "member/claims.ts",
      search: "splits.write(o.id, next, rev, \"claim\"),",
      replace: "splits.read(o.id).then((e) => splits.write(o.id, next, e!.revision, \"claim\")),",
    }],
    suites: ["sim", "coordinator", "regressions", "nats"],
  },
  {
    name: "grant-after-ended",
    breaks: "a grant is started for a tenancy of ours that already ended (a stale assignment record restarts a finished split)",
    edits: [
      {
        file: C + "member/claims.ts",
        search: "if ((this.#tenancies.ended.get(g.id) ?? -1) >= g.epoch || this.#claiming.has(g.id)) return;",
        replace: "if (this.#claiming.has(g.id)) return;",
      },
      {
        file: C + "member/claims.ts",
        search: "if ((this.#tenancies.ended.get(g.id) ?? -1) >= g.epoch) return;\n      if (!this.#mayClaim()) {",
        replace: "if (!this.#mayClaim()) {",
      },
    ],
    suites: ["sim", "coordinator", "regressions", "nats"],
  },
  {
    name: "grant-while-not-taking-work",
    breaks: "a member that takes no work (leaving, draining, fenced) starts a grant instead of keeping it dormant: a closing member abandons it to a charged takeover",
    edits: [{
      file: C + "member/claims.ts",
      search: "if (!this.#mayClaim()) {\n        // Fenced, draining",
      replace: "if (false) {\n        // Fenced, draining",
    }],
    suites: ["sim", "coordinator", "regressions", "nats"],
  },
  {
    name: "grant-without-heldby",
    breaks: "a grant is started without checking that the split record names this session at that epoch",
    edits: [{
      file: C + "member/claims.ts",
      search: "if (!heldBy(rec, me, g.epoch)) return;",
      replace: "",
    }],
    suites: ["sim", "coordinator", "regressions", "nats"],
  },
  {
    name: "resume-after-move",
    breaks: "after a self-fence a worker resumes a split that moved on meanwhile (opens an epoch over another owner)",
    edits: [{
      file: C + "member/dormant.ts",
      search: "keep: (rec) => heldBy(rec, me, d.epoch) }); // moved on meanwhile",
      replace: "keep: () => true });",
    }],
    suites: ["sim", "coordinator", "regressions", "nats"],
  },

  // --- the leader: judging, takeovers, completion ------------------------------------------
  {
    name: "takeover-no-reread",
    breaks: "the leader takes over a member judged dead without re-reading its member record (a lagging view takes a live member's splits)",
    edits: [
      // Neither the re-read's newer revision nor the member watch's position is asked before the verdict.
      { file: C + "leader/judge.ts", search: "if (cur && cur.revision > (seen ?? 0)) {", replace: "if (false) {" },
      { file: C + "leader/judge.ts", search: "if (caught === false || (caught === undefined && cur && cur.revision < (seen ?? 0))) return \"later\";", replace: "" },
    ],
    suites: COORD,
  },
  {
    name: "takeover-no-charge",
    breaks: "a takeover from a dead owner consumes no attempt (a split that kills its workers is never quarantined)",
    edits: [{
      file: C + "leader/takeovers.ts",
      search: "openRecord(cur.record, heir?.owner ?? null, charge, core.config.maxAttempts, core.clock.wallNow())",
      replace: "openRecord(cur.record, heir?.owner ?? null, false, core.config.maxAttempts, core.clock.wallNow())",
    }],
    suites: COORD,
  },
  {
    name: "takeover-fresh-revision",
    breaks: "a takeover CASes at a freshly read revision instead of the one its decision was made on (it overwrites a split completed meanwhile)",
    edits: [{
      file: C + "leader/takeovers.ts",
      search: "await core.splits.write(id, next, cur.revision, \"takeover\");",
      replace: "await core.splits.write(id, next, (await core.splits.read(id))!.revision, \"takeover\");",
    }],
    suites: ["regressions", "coordinator", "sim", "nats"],
  },
  {
    name: "takeover-stale-view-spins",
    breaks: "a takeover that finds the record moved past the leader's (lagging) view leaves the view as it was: the next pass reads and gives up again, forever, and the split never moves",
    edits: [{
      file: C + "leader/takeovers.ts",
      search: "if (!cur || cur.revision !== held.revision) return view.learn(read?.entry);",
      replace: "if (!cur || cur.revision !== held.revision) return;",
    }],
    suites: ["sim", "coordinator", "regressions", "nats"],
  },
  {
    name: "fence-stale-view-spins",
    breaks: "a fence of a deaf owner that finds the record moved past the leader's (lagging) view leaves the view as it was: the next pass reads and gives up again, forever",
    edits: [{
      file: C + "leader/revocations.ts",
      search: "if (!cur || cur.revision !== held.revision) return view.learn(read?.entry);",
      replace: "if (!cur || cur.revision !== held.revision) return;",
    }],
    suites: ["sim", "coordinator", "regressions", "nats"],
  },
  {
    name: "completion-without-listing",
    breaks: "the leader announces the outcome from its view alone, without the confirming listing of split.",
    edits: [{
      file: C + "leader/completion.ts",
      search: "const found = await this.#confirm(planned);",
      replace:
        'const c = this.#view.counts, found = { state: "done", outcome: c.quarantined === 0 ? { kind: "allComplete", completed: c.completed } : { kind: "stalled", completed: c.completed, quarantined: c.quarantined } };',
    }],
    suites: COORD,
  },
  {
    name: "completion-trusts-lagging-watch",
    breaks: "the leader's split watch counts as caught up whatever it has applied: a view that is behind the store decides the outcome",
    edits: [{
      file: C + "watch_set.ts",
      search: "return this.#current.get(filter) === cur && cur.applied >= at;",
      replace: "return this.#current.get(filter) === cur;",
    }],
    suites: COORD,
  },
  {
    name: "completion-ignores-unreadable",
    breaks: "an unreadable split record counts as finished (in the view checks and in the listing)",
    edits: [
      {
        file: C + "leader/completion.ts",
        search: "v.pendingResiduals.size > 0) return false;\n  for (const k of v.invalid.keys()) if (k.startsWith(keys.splitPrefix)) return false;",
        replace: "v.pendingResiduals.size > 0) return false;",
      },
      {
        file: C + "leader/completion.ts",
        search: 'if (!r.ok || r.value.status === "runnable") return OPEN;',
        replace: 'if (!r.ok) continue;\n      if (r.value.status === "runnable") return OPEN;',
      },
    ],
    suites: COORD,
  },
  {
    name: "completion-on-open-plan",
    breaks: "completion is decided while the plan is still open (more splits may come)",
    edits: [{
      file: C + "leader/completion.ts",
      search: 'if (!plan || plan.finality !== "final" || ',
      replace: "if (!plan || ",
    }],
    suites: COORD,
  },

  // --- election, term fence, planning ----------------------------------------------------------
  {
    name: "election-reread-current",
    breaks: "the election's re-read is compared with the current liveness revision instead of the judged one (a live leader is deposed when the watch caught up meanwhile)",
    edits: [{
      file: C + "leadership.ts",
      search: "if (cur && cur.revision > judged) {",
      replace: "if (cur && cur.revision !== f.leaderLiveness.get(keys.leader)?.revision) {",
    }],
    suites: COORD,
  },
  {
    name: "election-no-term-bump",
    breaks: "a new leader does not bump plan.term: two leaders share a term and the leader fence is gone",
    edits: [{
      file: C + "term_bump.ts",
      search: "next = { ...prev.value, term: prev.value.term + 1 };",
      replace: "next = { ...prev.value, term: prev.value.term };",
    }],
    suites: ["sim", "coordinator", "regressions", "nats"],
  },
  {
    name: "deposed-leader-keeps-leading",
    breaks: "a leader that sees a newer plan term keeps leading (assigning, planning) instead of stepping down",
    edits: [{
      file: C + "leadership.ts",
      search: "if (plan && plan.term > this.#term) {",
      replace: "if (false) {",
    }],
    suites: COORD,
  },
  {
    name: "publish-fresh-revision",
    breaks: "the plan is published at a freshly read revision instead of the one read before planning (a deposed leader's late publish lands)",
    edits: [{
      file: C + "leader/planning.ts",
      search: "const r = await store.update(keys.plan, encodeRecord(next), cur.revision);",
      replace: "const r = await store.update(keys.plan, encodeRecord(next), (await store.get(keys.plan)).revision);",
    }],
    suites: COORD,
  },

  // --- stores -----------------------------------------------------------------------------------------
  {
    name: "memory-cas-ignores-revision",
    breaks: "MemoryStore.update succeeds at any revision (no compare-and-swap)",
    edits: [{
      file: "src/store/memory_store.ts",
      search: "if (!slot || slot.revision !== revision) {",
      replace: "if (!slot) {",
    }],
    suites: ["unit", "store", "coordinator"],
  },
  {
    name: "memory-create-overwrites",
    breaks: "MemoryStore.create overwrites a live key instead of losing the race",
    edits: [{
      file: "src/store/memory_store.ts",
      search: "if (slot && slot.value !== null) return this.#deliver<WriteResult>({ ok: false, conflict: true });",
      replace: "",
    }],
    suites: ["unit", "store", "coordinator"],
  },
  {
    name: "memory-delete-unguarded",
    breaks: "MemoryStore.delete ignores its revision guard (a resigning leader deletes its successor's record)",
    edits: [{
      file: "src/store/memory_store.ts",
      search: "if (revision !== undefined && slot.revision !== revision) {",
      replace: "if (false) {",
    }],
    suites: ["unit", "store", "coordinator"],
  },
  {
    name: "nats-conflict-wrong-code",
    breaks: "NatsStore recognises a lost CAS by the wrong JetStream code (a conflict becomes an outage)",
    edits: [{
      file: "src/nats/connection.ts",
      search: "return code === WRONG_LAST_SEQUENCE || code === WRONG_LAST_SEQUENCE_UNKNOWN;",
      replace: "return code === STREAM_NAME_IN_USE;",
    }],
    suites: ["store", "nats"],
  },

  // --- balancing and lanes ----------------------------------------------------------------------------------
  {
    name: "balance-steals-while-claimable",
    breaks: "planMoves plans steals while a split is still claimable (claim first)",
    edits: [{
      file: "src/balance/plan_moves.ts",
      search: "if (members.size < 2 || claimable || unknownHandoff) return [];",
      replace: "if (members.size < 2 || unknownHandoff) return [];",
    }],
    suites: ["unit", "coordinator"],
  },
  {
    name: "balance-oscillates",
    breaks: "planMoves admits a move that does not lower the load gap by more than the split's weight (ping-pong)",
    edits: [{
      file: "src/balance/plan_moves.ts",
      search: "if (!(gap - w > tol)) continue;",
      replace: "if (!(gap > tol)) continue;",
    }],
    suites: ["unit", "coordinator"],
  },
  {
    name: "busy-member-robbed",
    breaks: "planMoves takes a running split from a member whose every lane is busy while nothing is unstarted: no lane starts work sooner (issue 25)",
    edits: [{
      file: "src/balance/plan_moves.ts",
      search: "all.filter((m) => m.movable.length > 0 && m.count !== m.max)",
      replace: "all.filter((m) => m.movable.length > 0)",
    }],
    suites: ["unit", "coordinator"],
  },

  // --- work order (issue 25) --------------------------------------------------------------------------
  {
    name: "plan-seeded-in-plan-order",
    breaks: "a plan is seeded (and its first lanes granted) in the planner's order, not heaviest first: weights are ignored at the start of a job",
    edits: [{
      file: C + "leader/plan_intake.ts",
      search: "planned.sort((a, b) => (b.weight ?? 1) - (a.weight ?? 1));",
      replace: "",
    }],
    suites: ["coordinator"],
  },
  {
    name: "seed-run-past-lanes",
    breaks: "a run of seeds stays with its member once its lanes are full: grants beyond its lanes (it runs more splits than it has lanes)",
    edits: [{
      file: C + "leader/seed_runs.ts",
      search: "run.n < length && runLoad < Infinity && runLoad",
      replace: "run.n < length && runLoad",
    }],
    suites: ["coordinator"],
  },
  {
    name: "offers-listed-as-dealt",
    breaks: "an assignment record lists offers in the order they were dealt, not in dealing order: a member without a leader runs its spares latest first",
    edits: [{
      file: C + "leader/assign_build.ts",
      search: "for (const [id, rev] of dealing) {",
      replace: "for (const [id, rev] of m.offers) {",
    }],
    suites: ["unit", "coordinator"],
  },
  {
    name: "spares-claimed-at-once",
    breaks: "a member claims its spare offers as soon as a lane frees instead of waiting for the leader's next split in order: the prefetch reorders the plan",
    edits: [{
      file: C + "member/claims.ts",
      search: "if (now - this.#laneIdleSince < this.#core.timings.spareClaimAfterMs) break;",
      replace: "",
    }],
    suites: ["coordinator"],
  },
  // --- found by the simulation past its default range (tests/sim/sim_test.ts FOUND) ------
  {
    name: "beat-adopts-as-fresh",
    breaks: "a heartbeat whose CAS only adopts our own earlier (maybe-landed) write counts as a fresh one: the self-fence comes after the leader's judgement",
    edits: [{
      file: C + "member/membership.ts",
      search: "const c = await this.#onConflict();",
      replace: 'const c0 = await this.#onConflict();\n          const c = c0 === "adopted" ? "landed" : c0;',
    }],
    suites: ["coordinator", "sim"],
  },
  {
    name: "lagged-delete-applied",
    breaks: "the leader's view applies a lagging watch's old delete over a newer record a read brought in: a live restarted member is taken over",
    edits: [{ file: C + "leader/leader_view.ts", search: "if (cur && cur.revision > revision) return;", replace: "" }],
    suites: ["unit", "sim"],
  },
  {
    name: "gone-member-no-recheck",
    breaks: "a split claimed by a member judged dead is taken over at once, without re-reading the member record (it may have woken while the leader's member watch lags)",
    edits: [{
      file: C + "leader/judge.ts",
      search: "if (!heir && gone?.checked !== undefined && newestSplitOf(view, k) > gone.checked) {",
      replace: "if (false) {",
    }],
    suites: ["sim"],
  },
  {
    name: "grant-after-fence-started",
    breaks: "a grant made before our last self-fence is started without a write once the fence ends, while the leader may be taking it over",
    edits: [{ file: C + "member/claims.ts", search: "if (rev < this.restoredAt) {", replace: "if (false) {" }],
    suites: ["coordinator", "sim"],
  },
  {
    name: "resume-while-leaving-kept",
    breaks: "a resume whose CAS lands while the member is leaving (or fenced) keeps the tenancy running instead of handing it back",
    edits: [{
      file: C + "member/dormant.ts",
      search: "if (!this.#mayClaim()) {\n          // Fenced or leaving while the CAS",
      replace: "if (false) {\n          // Fenced or leaving while the CAS",
    }],
    suites: ["coordinator", "sim"],
  },
  {
    name: "election-lost-create-spins",
    breaks: "a candidate that loses the election's create does not learn the winner's record: with a lagging watch it retries at once, forever",
    edits: [{ file: C + "leadership.ts", search: "if (cur) f.applyRead(keys.leader, cur);", replace: "" }],
    suites: ["coordinator", "sim"],
  },
  {
    name: "handback-no-backoff",
    breaks: "a split handed back with a problem (its spec missing) is offered again at once: claim, re-read, hand back, in a loop",
    edits: [{ file: C + "leader/retry_backoff.ts", search: "const handedBack = released && !failed && newFailure(prev, rec);", replace: "const handedBack = false;" }],
    suites: ["coordinator"],
  },
  // --- the job outcome against operator repairs (issue 21, item 2) ------------------------
  {
    name: "outcome-written-blindly",
    breaks: "an outcome whose CAS lost is written again at a fresh read of plan without confirming the splits again: a decision taken before an operator's requeue or cancel lands after it",
    edits: [{
      file: C + "leader/completion.ts",
      search: "at = undefined; // the plan moved since the confirmation began: confirm again",
      replace: "const cur = await this.#read();\n      if (cur && !cur.plan.outcome && (await this.#cas(cur, { ...cur.plan, outcome })).ok) return;\n      at = undefined;",
    }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "outcome-kept-against-store",
    breaks: "a standing outcome is revisited only when a split is runnable again: stalled {quarantined: 1} stays for good after its last quarantined split was cancelled",
    edits: [{ file: C + "leader/completion.ts", search: "if (plan.outcome) return outcomeDisagrees(v, plan.outcome, plan.planned) ?", replace: "if (plan.outcome) return v.counts.runnable > 0 ?" }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "operator-no-plan-rewrite",
    breaks: "a requeue or cancel writes plan only when it holds a stalled outcome: a stalled decision still on its way lands after the repair",
    edits: [{
      file: "src/fleet/actions.ts",
      search: 'if (!stalled && (r.value.outcome || r.value.finality !== "final" || r.value.generation === 0)) return false;',
      replace: "if (!stalled) return false;",
    }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "outcome-never-withdrawn",
    breaks: "a member announces an outcome once and never withdraws it: cleared after a repair, the job's real outcome never reaches it",
    edits: [{ file: C + "member/follower.ts", search: 'if (plan && (was === "allComplete" || was === "stalled") && !sameOutcome(o, this.#announced)) {', replace: "if (false) {" }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "outcome-withdrawn-only-by-kind",
    breaks: "an announced outcome is withdrawn only when the plan's outcome changes kind: a plan watch that lagged past the record clearing it delivers a new stalled outcome with other counts, and the member keeps announcing the old one",
    edits: [{ file: C + "member/follower.ts", search: "&& !sameOutcome(o, this.#announced)) {", replace: "&& o?.kind !== was) {" }],
    suites: ["sim"],
  },
  {
    name: "stall-acted-on-at-once",
    breaks: "a worker finishes the moment it hears stalled: an outcome withdrawn a round trip later (a requeue as it was decided) has already ended it",
    edits: [{ file: "src/runtime/worker.ts", search: "stallHoldMs: settings.statusIntervalMs,", replace: "stallHoldMs: 0," }],
    suites: ["runtime"],
  },
  // --- a held split nothing runs (issue 21, item 7) ----------------------------------------
  {
    name: "stuck-split-counted-held",
    breaks: "a split whose holder gave it up (its fail refused by a garbage record) still counts as held in heartbeats: the leader's anti-entropy never notices it, and it is held forever",
    edits: [{ file: C + "member_parts.ts", search: "tenancies.held.size - tenancies.stuck +", replace: "tenancies.held.size +" }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "regrant-ignores-stuck",
    breaks: "a member re-granted a split it holds but nothing runs ignores the grant (it has the tenancy): the anti-entropy cannot move it",
    edits: [{ file: C + "member/claims.ts", search: "if (cur?.stuck && this.#tenancies.unstick(g.id, g.epoch)) return void this.#dormant.resume();", replace: "" }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "dormant-forgets-unreadable",
    breaks: "a split whose release met a garbage record is forgotten: once repaired it names this member, which ignores the leader's re-grant of a tenancy it had",
    edits: [{ file: C + "member/dormant.ts", search: '} else if (e instanceof SplitleaseError && e.code === "INVALID_RECORD") {', replace: "} else if (false) {" }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "orphans-kept-until-shutdown",
    breaks: "a split whose lane ended without a release (its fail refused) is released only at shutdown or on a revocation: held with nothing running it",
    edits: [{ file: "src/runtime/worker_lanes.ts", search: "if (this.#orphanTimer !== null || this.#stopped) return;", replace: "return;" }],
    suites: ["runtime"],
  },
  {
    name: "r3-create-timeout-fatal",
    breaks: "a replicated bucket's create that times out while the rest of the fleet creates it too fails the connect: a fleet starting at once loses workers",
    edits: [{ file: "src/nats/bucket.ts", search: "if (opts.replicas > 1 && (e instanceof TimeoutError || unplaced) && Date.now() < deadline) {", replace: "if (opts.replicas > 1 && (e instanceof TimeoutError || unplaced) && Date.now() < deadline && false) {" }],
    suites: ["unit", "cluster"],
  },
  {
    name: "forced-release-keeps-withdrawn-successor",
    breaks: "a forced release retried after a conflict still goes to the successor of a revoke the leader has since withdrawn (the successor left): it reaches a member that is gone",
    edits: [{ file: C + "member/follower.ts", search: "this.#tenancies.renameReleasing(id, t.epoch, r?.to ?? null);", replace: "void r;" }],
    suites: ["coordinator", "sim"],
  },
  {
    name: "outage-charges-attempt",
    breaks: "a run stopped by a store outage (a commit that threw StoreUnavailableError) is reported as the split's failure: each stream-leader election charges healthy splits an attempt, and a rolling restart can quarantine them",
    edits: [{ file: "src/runtime/worker_lanes.ts", search: "if (threw && !cooperative && isStoreOutage(error)) {", replace: "if (threw && !cooperative && isStoreOutage(error) && false) {" }],
    suites: ["runtime"],
  },
  {
    name: "assign-record-unbounded",
    breaks: "the assignment record is built without a size bound: a member owed thousands of grants gets a write the store refuses",
    edits: [{ file: C + "leader/assign_build.ts", search: "if (size + n + 1 > RECORD_LIMIT) return false;", replace: "" }],
    suites: ["unit"],
  },
  {
    name: "nats-list-whole-deadline",
    breaks: "a NatsStore listing is bounded by one op timeout for the whole call, not by progress: a large listing fails under load",
    edits: [{ file: "src/nats/nats_store.ts", search: "progressed();\n      if (m.value === undefined)", replace: "if (m.value === undefined)" }],
    suites: ["store"],
  },
  {
    name: "nats-position-from-consumer",
    breaks: "a NatsStore watch's position is its consumer's delivered sequence, which nats-server 2.9 moves past other keys: a caught-up leader looks behind and waits an op timeout to confirm a completion",
    edits: [{
      file: "src/nats/watch.ts",
      search: "    return await lastRevisionUnder(this.#conn, this.#filter);\n  }",
      replace: "    return (await this.#scan.consumer.info()).delivered.stream_seq;\n  }",
    }],
    suites: ["store29", "store"],
  },
  {
    name: "nats-list-trusts-pending",
    breaks: "a NatsStore listing ends only on a message with nothing pending, which nats-server 2.9 may never send: a listing of a prefix being written fails for want of progress",
    edits: [
      { file: "src/nats/nats_store.ts", search: "if (endAt !== undefined ? handled >= endAt : blind && m.pending === 0) finish();", replace: "if (m.pending === 0) finish();" },
      { file: "src/nats/nats_store.ts", search: "          if (handled >= at) finish();\n", replace: "" },
    ],
    suites: ["store29", "store"],
  },
  {
    name: "nats-watch-trusts-pending",
    breaks: "a NatsWatch says ready on a message with nothing pending, not once it handled the last revision under its filter: 2.9 may never send one (the watch is never ready) and a loaded replicated stream sends one before the snapshot",
    edits: [
      { file: "src/nats/watch.ts", search: "if (endAt !== undefined ? last >= endAt : blind && m.pending === 0) end();", replace: "if (m.pending === 0) end();" },
      { file: "src/nats/watch.ts", search: "      if (last >= at) end();\n", replace: "" },
    ],
    suites: ["store29", "store"],
  },
  {
    name: "failed-tenancy-span-ok",
    breaks: "a tenancy that failed (a throwing run, lane.fail, a fenced or expired lane) ends its span without an error status: a trace backend shows the failed split as a success",
    edits: [{
      file: "src/tracing/tenancy_trace.ts",
      search: "      else span.setStatus({ code: SpanStatusCode.ERROR, message: this.#error ?? this.#reason ?? outcome });\n",
      replace: "",
    }],
    suites: ["tracing"],
  },
  {
    name: "quarantined-tenancy-span-ok",
    breaks: "a quarantined tenancy is not a failure to its span: no exception for a reason given without one (lane.fail with a message) and no error status, so a trace backend shows the split that stalled the job as a success",
    edits: [
      { file: "src/tracing/tenancy_trace.ts", search: 'const FAILED = new Set(["failed", "quarantined", "abandoned"]);', replace: 'const FAILED = new Set(["failed", "abandoned"]);' },
      { file: "src/tracing/tenancy_trace.ts", search: '(outcome === "failed" || outcome === "quarantined") && this.#error === undefined', replace: 'outcome === "failed" && this.#error === undefined' },
    ],
    suites: ["tracing"],
  },
  {
    name: "plan-run-span-ok",
    breaks: "a planner run that throws ends its span without the exception or an error status: the failed plan looks like a success in a trace",
    edits: [{ file: C + "leader/planning.ts", search: "      if (span) failSpan(span, e);\n", replace: "" }],
    suites: ["tracing"],
  },
  {
    name: "own-release-hold-uncapped",
    breaks: "the leader's hold on a successor's assignment write while its own releases to it keep coming has no opTimeoutMs cap: releases that trickle in (one every 40 ms) hold the successor's grants until the last one",
    edits: [{ file: C + "leader/release_hold.ts", search: "Math.min(since + opTimeoutMs, Math.max(since, activeAt) + RELEASE_HOLD_MS)", replace: "Math.max(since, activeAt) + RELEASE_HOLD_MS" }],
    suites: ["unit", "coordinator"],
  },
  {
    name: "drain-release-unanswered",
    breaks: "a draining follower releases a split its source stopped at once without waiting for the leader's answer: it goes to nobody, and the member it is dealt to claims it with a write of its own instead of starting it on a grant",
    edits: [{ file: "src/coordinator/member/revoke_requests.ts", search: "    if (!answered && !to) t.unanswered = () => {};\n", replace: "" }],
    suites: ["coordinator"],
  },
  {
    name: "drain-hold-needs-record-first",
    breaks: "the leader holds the others' assignment writes for a follower's drain only once its member watch has delivered the draining record: releases that the split watch delivered first go out one by one (a first rewrite with 1 split of 30 on PostgreSQL)",
    edits: [{
      file: C + "leader/role.ts",
      search: "const follower = from.instance !== this.#core.me.instance && prev !== undefined && releasedGracefully(prev, rec);",
      replace: "const follower = false;",
    }],
    suites: ["coordinator"],
  },
  {
    name: "drain-record-starts-no-hold",
    breaks: "a member's draining record does not start the drain's hold: when it arrives after the first releases, the rest of the drain is waited for only a quiet window, and a slower second half goes in a second rewrite",
    edits: [{ file: C + "leader/role.ts", search: "      this.#hold.drains({ instance, session: r.session }, clock.now());\n", replace: "" }],
    suites: ["coordinator"],
  },
  {
    name: "operator-drain-unnoticed",
    breaks: "a worker never reads that an operator drained its member: its coordinator hands the splits back, and the worker runs on idle instead of finishing",
    edits: [{ file: "src/runtime/worker_status.ts", search: "if (state === \"draining\" && !this.#d.draining()", replace: "if (state === \"stopped\" && !this.#d.draining()" }],
    suites: ["runtime"],
  },
  {
    name: "lane-accepts-regression",
    breaks: "a lane accepts a watermark below the one it accepted before",
    edits: [{
      file: "src/runtime/lane.ts",
      search: "  return b < a;\n}",
      replace: "  return false;\n}",
    }],
    suites: ["runtime"],
  },
  // === issue 21, item 9: the rules of the surfaces added last, each killed by a test of that rule ===
  // --- operator writes (DESIGN "Operator writes", OPERATIONS "Requeueing", "Cancelling", "Draining a member") ---
  {
    name: "requeue-epoch-not-bumped",
    breaks: "a requeue keeps the split's epoch: a stale owner of the quarantined split is not fenced by it",
    edits: [{ file: "src/fleet/actions.ts", search: "status: \"runnable\", attempts: 0, owner: null, epoch: rec.epoch + 1 }", replace: "status: \"runnable\", attempts: 0, owner: null, epoch: rec.epoch }" }],
    suites: ["unit"],
  },
  {
    name: "requeue-epoch-reset",
    breaks: "a requeue resets the epoch to 1: fenced sinks, which rely on a split's epoch only growing, accept a zombie's rows again",
    edits: [{ file: "src/fleet/actions.ts", search: "status: \"runnable\", attempts: 0, owner: null, epoch: rec.epoch + 1 }", replace: "status: \"runnable\", attempts: 0, owner: null, epoch: 1 }" }],
    suites: ["unit"],
  },
  {
    name: "requeue-keeps-attempts",
    breaks: "a requeue keeps the attempts: the first failure after it quarantines the split again",
    edits: [{ file: "src/fleet/actions.ts", search: "status: \"runnable\", attempts: 0, owner: null,", replace: "status: \"runnable\", owner: null," }],
    suites: ["unit"],
  },
  {
    name: "requeue-drops-history",
    breaks: "a requeue drops the split's failure history, which it must keep",
    edits: [{ file: "src/fleet/actions.ts", search: "{ ...rec, status: \"runnable\",", replace: "{ ...rec, failures: undefined, status: \"runnable\"," }],
    suites: ["unit"],
  },
  {
    name: "requeue-any-state",
    breaks: "a requeue rewrites a split that is not quarantined (runnable, cancelled): it un-cancels, or bumps a running split's epoch",
    edits: [{ file: "src/fleet/actions.ts", search: "if (rec.status !== \"quarantined\") {", replace: "if (rec.status === \"completed\") {" }],
    suites: ["unit"],
  },
  {
    name: "requeue-all-lists-any",
    breaks: "requeue --all rewrites every split, not only the quarantined ones",
    edits: [{ file: "src/fleet/actions.ts", search: "if (r.ok && r.value.status === \"quarantined\") quarantined.push(e);", replace: "if (r.ok) quarantined.push(e);" }],
    suites: ["unit"],
  },
  {
    name: "requeue-all-no-reopen",
    breaks: "requeue --all leaves a stalled outcome in plan: restarted workers read it at join and exit before running the requeued splits",
    edits: [{ file: "src/fleet/actions.ts", search: "reopened: requeued > 0 && await reopenStalled(store)", replace: "reopened: false" }],
    suites: ["unit"],
  },
  {
    name: "requeue-all-reopens-on-nothing",
    breaks: "requeue --all clears a stalled outcome when it requeued nothing: a job that is stalled for good is reported open",
    edits: [{ file: "src/fleet/actions.ts", search: "reopened: requeued > 0 && await reopenStalled(store)", replace: "reopened: await reopenStalled(store)" }],
    suites: ["unit"],
  },
  {
    name: "requeue-no-reopen",
    breaks: "a requeue leaves a stalled outcome in plan: restarted workers exit before running the split",
    edits: [{ file: "src/fleet/actions.ts", search: "if (r.outcome === \"requeued\") r.reopened = await reopenStalled(store);", replace: "" }],
    suites: ["unit"],
  },
  {
    name: "cancel-no-reopen",
    breaks: "a cancel leaves a stalled outcome in plan: cancelling the last quarantined split never lets the job complete",
    edits: [{ file: "src/fleet/actions.ts", search: "    r.reopened = await reopenStalled(store);\n  }\n  return r;", replace: "  }\n  return r;" }],
    suites: ["unit"],
  },
  {
    name: "reopen-clears-any-outcome",
    breaks: "a requeue or cancel clears any outcome from plan, allComplete included",
    edits: [{ file: "src/fleet/actions.ts", search: "const stalled = r.value.outcome?.kind === \"stalled\";", replace: "const stalled = r.value.outcome !== undefined;" }],
    suites: ["unit"],
  },
  {
    name: "cancel-completed",
    breaks: "a completed split can be cancelled: its result is counted as cancelled and its epoch moves",
    edits: [{ file: "src/fleet/actions.ts", search: "if (rec.status === \"completed\") {", replace: "if (false) {" }],
    suites: ["unit"],
  },
  {
    name: "cancel-epoch-not-bumped",
    breaks: "a cancel keeps the epoch: the owner's next commit is not fenced by it",
    edits: [{ file: "src/fleet/actions.ts", search: "status: \"cancelled\", owner: null, epoch: rec.epoch + 1 }", replace: "status: \"cancelled\", owner: null, epoch: rec.epoch }" }],
    suites: ["unit"],
  },
  {
    name: "cancel-keeps-owner",
    breaks: "a cancelled split keeps its owner: the leader never sees the owner leave the record, so sends no drop",
    edits: [{ file: "src/fleet/actions.ts", search: "status: \"cancelled\", owner: null,", replace: "status: \"cancelled\"," }],
    suites: ["unit"],
  },
  {
    name: "cancel-rewrites-cancelled",
    breaks: "cancelling a cancelled split writes it again (epoch + 1) instead of answering alreadyCancelled",
    edits: [{ file: "src/fleet/actions.ts", search: "if (rec.status === \"cancelled\") return", replace: "if (false) return" }],
    suites: ["unit"],
  },
  {
    name: "action-no-reread",
    breaks: "an operator action retries its CAS at the revision it first read: every retry conflicts, a racing commit always wins",
    edits: [{ file: "src/fleet/actions.ts", search: "    cur = await store.get(key);\n", replace: "" }],
    suites: ["unit"],
  },
  {
    name: "action-tries-once",
    breaks: "an operator action answers conflict after one lost CAS instead of five tries",
    edits: [{ file: "src/fleet/actions.ts", search: "const TRIES = 5;", replace: "const TRIES = 1;" }],
    suites: ["unit"],
  },
  {
    name: "action-tries-more",
    breaks: "an operator action tries 20 times, not five, before answering conflict",
    edits: [{ file: "src/fleet/actions.ts", search: "const TRIES = 5;", replace: "const TRIES = 20;" }],
    suites: ["unit"],
  },
  {
    name: "drain-member-new-session",
    breaks: "drain writes draining with another session: the member finds a foreign session (DUPLICATE_INSTANCE) instead of adopting its drain",
    edits: [{ file: "src/fleet/actions.ts", search: "write: encodeRecord({ ...r.value, draining: true }),", replace: "write: encodeRecord({ ...r.value, draining: true, session: \"operator\" })," }],
    suites: ["unit"],
  },
  {
    name: "drain-member-rewrites-draining",
    breaks: "draining a draining member writes the record again instead of answering alreadyDraining",
    edits: [{ file: "src/fleet/actions.ts", search: "if (r.value.draining) {", replace: "if (false) {" }],
    suites: ["unit"],
  },
  // --- HTTP answers of the operator routes (OPERATIONS "Operator HTTP routes") ---------------------
  {
    name: "http-notfound-409",
    breaks: "an action on an unknown split or member answers 409, not 404",
    edits: [{ file: "src/http/fleet_routes.ts", search: "case \"notFound\":\n      return 404;", replace: "case \"notFound\":\n      return 409;" }],
    suites: ["http"],
  },
  {
    name: "http-already-completed-200",
    breaks: "cancelling a completed split answers 200, not 409",
    edits: [{ file: "src/http/fleet_routes.ts", search: "case \"notPaused\":\n      return 200;", replace: "case \"notPaused\":\n    case \"alreadyCompleted\":\n      return 200;" }],
    suites: ["http"],
  },
  {
    name: "http-conflict-200",
    breaks: "an action that lost its CAS five times answers 200, not 409",
    edits: [{ file: "src/http/fleet_routes.ts", search: "case \"notPaused\":\n      return 200;", replace: "case \"notPaused\":\n    case \"conflict\":\n      return 200;" }],
    suites: ["http"],
  },
  {
    name: "http-unreadable-200",
    breaks: "an action on an unreadable record answers 200, not 409",
    edits: [{ file: "src/http/fleet_routes.ts", search: "case \"notPaused\":\n      return 200;", replace: "case \"notPaused\":\n    case \"unreadable\":\n      return 200;" }],
    suites: ["http"],
  },
  {
    name: "http-actions-unguarded",
    breaks: "the operator actions skip the drainToken check",
    edits: [{ file: "src/http/fleet_routes.ts", search: "app.post(path, sameOrigin, o.guard, o.bodyLimit,", replace: "app.post(path, sameOrigin, o.bodyLimit," }],
    suites: ["http"],
  },
  {
    name: "http-actions-no-body-limit",
    breaks: "the operator actions read a body of any size instead of refusing one above 4 KiB (413)",
    edits: [{ file: "src/http/fleet_routes.ts", search: "app.post(path, sameOrigin, o.guard, o.bodyLimit,", replace: "app.post(path, sameOrigin, o.guard," }],
    suites: ["http"],
  },
  {
    name: "http-actions-cross-site",
    breaks: "the operator actions accept browser requests from another site",
    edits: [{ file: "src/http/fleet_routes.ts", search: "app.post(path, sameOrigin, o.guard, o.bodyLimit,", replace: "app.post(path, o.guard, o.bodyLimit," }],
    suites: ["http"],
  },
  {
    name: "http-sec-fetch-ignored",
    breaks: "Sec-Fetch-Site is ignored: a cross-site browser request without an Origin acts",
    edits: [{ file: "src/http/fleet_routes.ts", search: "let cross = site === \"cross-site\" || site === \"same-site\";", replace: "let cross = false;" }],
    suites: ["http"],
  },
  {
    name: "http-same-site-allowed",
    breaks: "a browser request from another site of the same domain (Sec-Fetch-Site: same-site) acts",
    edits: [{ file: "src/http/fleet_routes.ts", search: "let cross = site === \"cross-site\" || site === \"same-site\";", replace: "let cross = site === \"cross-site\";" }],
    suites: ["http"],
  },
  {
    name: "http-origin-ignored",
    breaks: "an Origin other than the worker's host is accepted",
    edits: [{ file: "src/http/fleet_routes.ts", search: "cross = new URL(origin).host !== (c.req.header(\"host\") ?? new URL(c.req.url).host);", replace: "cross = false;" }],
    suites: ["http"],
  },
  {
    name: "http-bad-origin-allowed",
    breaks: "an Origin that is no URL (\"null\") is accepted",
    edits: [{ file: "src/http/fleet_routes.ts", search: "    } catch {\n      cross = true;", replace: "    } catch {\n      cross = false;" }],
    suites: ["http"],
  },
  {
    name: "http-outage-500",
    breaks: "a store that does not answer is a 500, not a 503",
    edits: [{ file: "src/http/fleet_routes.ts", search: "return json({ error: `the store did not answer: ${e.message}` }, 503);", replace: "throw e;" }],
    suites: ["http"],
  },
  {
    name: "http-bad-id-500",
    breaks: "a malformed split id or query is a 500, not a 400",
    edits: [{ file: "src/http/fleet_routes.ts", search: "if (e instanceof InvalidKeyError || (e instanceof SplitleaseError && e.code === \"INVALID_ARGUMENT\")) {", replace: "if (false) {" }],
    suites: ["http"],
  },
  {
    name: "http-view-not-invalidated",
    breaks: "an action leaves the cached fleet view in place: GET /fleet shows the state from before it",
    edits: [{ file: "src/http/fleet_routes.ts", search: "        invalidate();\n", replace: "" }],
    suites: ["http"],
  },
  {
    name: "http-closed-route-open",
    breaks: "without drainToken or drainOpen the drain and operator routes are open, not 403",
    edits: [{ file: "src/http/drain_auth.ts", search: "if (options.drainOpen === true) return (_c, next) => next();", replace: "if (options.drainOpen !== false) return (_c, next) => next();" }],
    suites: ["http"],
  },
  {
    name: "http-token-prefix-accepted",
    breaks: "the bearer token is compared over its own length only: a token with extra characters after it is accepted",
    edits: [{ file: "src/util/timing_safe_equal.ts", search: "let diff = a.length ^ b.length;", replace: "let diff = 0;" }],
    suites: ["http"],
  },
  // --- config bounds (OPERATIONS "Coordinator configuration") --------------------------------------
  {
    name: "config-lease-under-2-ops",
    breaks: "leaseMs down to 1 × opTimeoutMs is accepted (the rule is 2 ×): one slow write self-fences",
    edits: [{ file: "src/coordinator/timings.ts", search: "return 2 * opTimeoutMs;", replace: "return opTimeoutMs;" }],
    suites: ["unit"],
  },
  {
    name: "config-drain-under-op",
    breaks: "drainDeadlineMs below opTimeoutMs is accepted",
    edits: [{ file: "src/coordinator/config.ts", search: "if (c.drainDeadlineMs < c.opTimeoutMs) {", replace: "if (false) {" }],
    suites: ["unit"],
  },
  {
    name: "config-replan-under-lease",
    breaks: "replanIntervalMs below leaseMs is accepted",
    edits: [{ file: "src/coordinator/config.ts", search: "if (c.replanIntervalMs < c.leaseMs) {", replace: "if (false) {" }],
    suites: ["unit"],
  },
  {
    name: "config-backoff-max-under-min",
    breaks: "retryBackoffMaxMs below retryBackoffMs is accepted",
    edits: [{ file: "src/coordinator/config.ts", search: "if (c.retryBackoffMaxMs < c.retryBackoffMs) {", replace: "if (false) {" }],
    suites: ["unit"],
  },
  {
    name: "config-self-fence-margin-over-half",
    breaks: "selfFenceMarginMs up to leaseMs is accepted (the rule is < leaseMs / 2)",
    edits: [{ file: "src/coordinator/config.ts", search: "c.selfFenceMarginMs >= selfFenceMarginLimitMs(c.leaseMs)", replace: "c.selfFenceMarginMs > c.leaseMs" }],
    suites: ["unit"],
  },
  {
    name: "config-self-fence-default",
    breaks: "selfFenceMarginMs defaults to leaseMs / 2, not leaseMs / 8",
    edits: [{ file: "src/coordinator/timings.ts", search: "return Math.floor(leaseMs / 8);", replace: "return Math.floor(leaseMs / 2);" }],
    suites: ["unit"],
  },
  {
    name: "config-lease-floor",
    breaks: "leaseMs below 500 is accepted",
    edits: [{ file: "src/coordinator/config.ts", search: "duration(500).default(15000),", replace: "duration(1).default(15000)," }],
    suites: ["unit"],
  },
  {
    name: "config-max-in-flight-cap",
    breaks: "maxInFlight above 4096 is accepted",
    edits: [{ file: "src/coordinator/config.ts", search: "ms(0).max(4096).default(8),", replace: "ms(0).default(8)," }],
    suites: ["unit"],
  },
  {
    name: "config-max-attempts-zero",
    breaks: "maxAttempts 0 is accepted",
    edits: [{ file: "src/coordinator/config.ts", search: "ms(1).default(4),", replace: "ms(0).default(4)," }],
    suites: ["unit"],
  },
  {
    name: "config-seed-concurrency-cap",
    breaks: "seedConcurrency above 1024 is accepted",
    edits: [{ file: "src/coordinator/config.ts", search: "ms(1).max(1024).default(128),", replace: "ms(1).default(128)," }],
    suites: ["unit"],
  },
  {
    name: "config-plan-attempts-cap",
    breaks: "planAttempts above 1000 is accepted",
    edits: [{ file: "src/coordinator/config.ts", search: "ms(1).max(1000).default(5),", replace: "ms(1).default(5)," }],
    suites: ["unit"],
  },
  {
    name: "config-op-timeout-zero",
    breaks: "opTimeoutMs 0 is accepted",
    edits: [{ file: "src/coordinator/config.ts", search: "opTimeoutMs: option(duration(1).default(5000),", replace: "opTimeoutMs: option(duration(0).default(5000)," }],
    suites: ["unit"],
  },
  {
    name: "config-fingerprint-unbounded",
    breaks: "a fingerprint above 1024 characters is accepted",
    edits: [{ file: "src/coordinator/config.ts", search: "z.string().min(1, \"must be a non-empty string\").max(1024),", replace: "z.string().min(1, \"must be a non-empty string\")," }],
    suites: ["unit"],
  },
  // --- slice budgets (README "Serverless", DESIGN "Runtime") ---------------------------------------
  {
    name: "slice-window-one-lease",
    breaks: "a slice budget need only hold marginMs + 1 lease: after a cut-off invocation no later one can take over",
    edits: [{ file: "src/coordinator/timings.ts", search: "return 2 * leaseMs;", replace: "return leaseMs;" }],
    suites: ["unit"],
  },
  {
    name: "slice-margin-default-drain",
    breaks: "marginMs defaults to 1000, not drainDeadlineMs + 1000",
    edits: [{ file: "src/slice/slice_options.ts", search: "const marginMs = options.marginMs ?? drainDeadlineMs + 1000;", replace: "const marginMs = options.marginMs ?? 1000;" }],
    suites: ["unit"],
  },
  {
    name: "slice-margin-equal-drain",
    breaks: "marginMs equal to drainDeadlineMs is accepted: no time is left to release and leave after the drain",
    edits: [{ file: "src/slice/slice_options.ts", search: "marginMs <= drainDeadlineMs) {", replace: "marginMs < drainDeadlineMs) {" }],
    suites: ["unit"],
  },
  {
    name: "slice-token-post-only",
    breaks: "with a token configured, the slice fetch handler checks the bearer only on POST: a GET runs a slice without authentication (and other methods learn the allowed ones)",
    edits: [{ file: "src/http/slice_handler.ts", search: "    if (options.token !== undefined) {\n", replace: '    if (options.token !== undefined && request.method === "POST") {\n' }],
    suites: ["unit"],
  },
  {
    name: "lambda-token-post-only",
    breaks: "with a token configured, the Lambda handler checks the bearer of HTTP events only on POST: a GET event runs a slice without authentication",
    edits: [{ file: "adapters/lambda.ts", search: "if (request && options.token !== undefined) {", replace: 'if (request && options.token !== undefined && request.method === "POST") {' }],
    suites: ["unit"],
  },
  {
    name: "slice-request-budget-unchecked",
    breaks: "a per-request budget below the smallest one is run instead of answered 400",
    edits: [{ file: "src/http/slice_handler.ts", search: "if (n < minBudgetMs) {", replace: "if (false) {" }],
    suites: ["unit"],
  },
  {
    name: "slice-request-budget-raises",
    breaks: "a per-request budget above the configured one is used as given",
    edits: [{ file: "src/http/slice_handler.ts", search: "budget = Math.min(n, maxBudget);", replace: "budget = n;" }],
    suites: ["unit"],
  },
  {
    name: "slice-lease-default",
    breaks: "slices default to a 15 s lease: the default 30 s budget no longer holds two leases",
    edits: [{ file: "src/coordinator/config.ts", search: "Object\n  .freeze({ leaseMs: 6000,", replace: "Object\n  .freeze({ leaseMs: 15000," }],
    suites: ["unit"],
  },
  {
    name: "slice-window-whole-budget",
    breaks: "an invocation works until its whole budget, keeping no margin for its drain, release and leave",
    edits: [{ file: "src/slice/slice_run.ts", search: "const workMs = Math.max(0, budgetMs - marginMs - (clock.now() - started));", replace: "const workMs = Math.max(0, budgetMs - (clock.now() - started));" }],
    suites: ["unit"],
  },
  // --- record fast checks: refuse what the schema refuses ------------------------------------------
  {
    name: "fast-split-weight-zero",
    breaks: "the fast check accepts a split of weight 0, which its schema refuses",
    edits: [{ file: "src/records/fast_checks.ts", search: "!(w > 0)", replace: "!(w >= 0)" }],
    suites: ["unit"],
  },
  {
    name: "fast-owner-any-instance",
    breaks: "the fast check accepts an owner whose instance is no id",
    edits: [{ file: "src/records/fast_checks.ts", search: "isObj(x) && typeof x.instance === \"string\" && ID_RE.test(x.instance) &&", replace: "isObj(x) && typeof x.instance === \"string\" &&" }],
    suites: ["unit"],
  },
  {
    name: "fast-owner-empty-session",
    breaks: "the fast check accepts an owner with an empty session",
    edits: [{ file: "src/records/fast_checks.ts", search: "typeof x.session === \"string\" &&\n  x.session.length > 0;", replace: "typeof x.session === \"string\";" }],
    suites: ["unit"],
  },
  {
    name: "fast-entry-rev-zero",
    breaks: "the fast check accepts an offer or grant at revision 0 without the record its claim would create",
    edits: [{ file: "src/records/fast_checks.ts", search: "(x.rec === undefined ? x.rev > 0 || x.page !== undefined : isSplitRecord(x.rec))", replace: "(x.rec === undefined ? x.rev >= 0 : isSplitRecord(x.rec))" }],
    suites: ["unit"],
  },
  {
    name: "fast-drop-any-reason",
    breaks: "the fast check accepts a drop for any reason string",
    edits: [{ file: "src/records/fast_checks.ts", search: "(d.reason === \"fenced\" || d.reason === \"expired\" || d.reason === \"cancelled\")", replace: "typeof d.reason === \"string\"" }],
    suites: ["unit"],
  },
  {
    name: "fast-member-empty-session",
    breaks: "the fast check accepts a member record with an empty session",
    edits: [{ file: "src/records/fast_checks.ts", search: "isObj(x) && x.v === 2 && typeof x.session === \"string\" && x.session.length > 0 && isCount(x.maxInFlight)", replace: "isObj(x) && x.v === 2 && typeof x.session === \"string\" && isCount(x.maxInFlight)" }],
    suites: ["unit"],
  },
  {
    name: "fast-assign-empty-session",
    breaks: "the fast check accepts an assignment record for an empty session",
    edits: [{ file: "src/records/fast_checks.ts", search: "if (typeof x.session !== \"string\" || x.session.length === 0) return false;", replace: "if (typeof x.session !== \"string\") return false;" }],
    suites: ["unit"],
  },
  {
    name: "fast-split-any-spec",
    breaks: "the fast check accepts a spec flag other than true",
    edits: [{ file: "src/records/fast_checks.ts", search: "if (x.spec !== undefined && x.spec !== true) return false;", replace: "" }],
    suites: ["unit"],
  },
  {
    name: "fast-entry-any-why",
    breaks: "the fast check accepts a grant or offer for any reason",
    edits: [{ file: "src/records/fast_checks.ts", search: "(x.why === undefined || WHY.has(x.why as string))", replace: "true" }],
    suites: ["unit"],
  },
  {
    name: "fast-revoke-any-successor",
    breaks: "the fast check accepts a revoke naming a successor that is no owner",
    edits: [{ file: "src/records/fast_checks.ts", search: "(r.to === undefined || isOwner(r.to))", replace: "true" }],
    suites: ["unit"],
  },
  {
    name: "fast-failure-any-at",
    breaks: "the fast check accepts a failure entry without a finite time",
    edits: [{ file: "src/records/fast_checks.ts", search: "isObj(f) && typeof f.at === \"number\" && Number.isFinite(f.at) &&", replace: "isObj(f) &&" }],
    suites: ["unit"],
  },
  // --- PostgresStore: a write whose answer is lost, the transactional commit ------------------------
  {
    name: "pg-maybe-landed-same-bytes",
    breaks: "a write whose answer was lost counts as landed when the key holds the same bytes at the revision it expected: one that never reached the server is reported written",
    // The rule lives once, in the store kit's write guard: PostgreSQL's own suite must catch it there too.
    edits: [{ file: "src/store/write_guard.ts", search: "entry.value === value && entry.revision > before", replace: "entry.value === value && entry.revision >= before" }],
    suites: ["pgstore"],
  },
  {
    name: "pg-tx-lost-cas-commits-rows",
    breaks: "a transactional commit whose compare-and-swap lost commits the source's rows anyway: a zombie's rows land",
    edits: [{ file: "src/postgres/pg_store.ts", search: "`${literal(channelsOfKey(this.#jobId, key))}, true)::text as r; commit`", replace: "`${literal(channelsOfKey(this.#jobId, key))}, false)::text as r; commit`" }],
    suites: ["pgstore", "pgonce"],
  },
  {
    name: "pg-job-create-race",
    breaks: "a worker whose insert of a new job waited for another worker's does not read the row again: workers starting together fail with 'there is no job'",
    edits: [{ file: "src/postgres/setup.ts", search: "if (rows.length === 0 && opts.createJob) {", replace: "if (rows.length === 0 && opts.createJob && false) {" }],
    suites: ["pgstore"],
  },
  {
    name: "pg-listener-not-reconnected",
    breaks: "a LISTEN connection the server ended is not connected again: watches hear of changes only at their poll (pollIntervalMs), not by notification",
    edits: [{ file: "src/postgres/notifications.ts", search: "void this.#connect();", replace: "" }],
    suites: ["pgstore"],
  },
  {
    name: "pg-literal-tag-ends-early",
    breaks: "the dollar-quote tag of an inlined literal is chosen by whether the value contains it, not where it first occurs in value + tag: a value ending in \"$sl\" ends the literal early and its transactional commit fails",
    edits: [{ file: "src/postgres/queries.ts", search: "(text + tag).indexOf(tag) !== text.length", replace: "text.includes(tag)" }],
    suites: ["pgstore"],
  },
  // --- the fenced sink of examples/pg_range (OPERATIONS failure modes) -----------------------------
  {
    name: "pg-fence-refuses-own-retry",
    breaks: "the fenced sink refuses a write at the epoch it stored: the same tenancy retrying a batch is refused",
    edits: [{ file: "examples/pg_range/source.ts", search: "} <= excluded.${", replace: "} < excluded.${" }],
    suites: ["pg"],
  },
  {
    name: "pg-fence-inverted",
    breaks: "the fenced sink keeps rows of the older epoch: a newer tenancy's write is refused, a zombie's accepted",
    edits: [{ file: "examples/pg_range/source.ts", search: "} <= excluded.${", replace: "} >= excluded.${" }],
    suites: ["pg"],
  },
  {
    name: "pg-fence-compares-other-splits",
    breaks: "the fenced sink compares epochs of different splits (overlapping plans): another split's write is refused",
    edits: [{ file: "examples/pg_range/source.ts", search: "} is distinct from excluded.${", replace: "} is distinct from ${sinkTable}.${" }],
    suites: ["pg"],
  },
  {
    name: "pg-fence-token-per-tenancy",
    breaks: "rows carry the lane id (split@epoch) as their split: no two tenancies are comparable, a zombie's write lands",
    edits: [{ file: "examples/pg_range/source.ts", search: "[config.splitColumn!]: lane.fencingToken.splitId,", replace: "[config.splitColumn!]: lane.id," }],
    suites: ["pg"],
  },
  {
    name: "pg-fence-refusal-ignored",
    breaks: "a lane whose batch the fence refused goes on reading, writing and committing",
    edits: [{
      file: "examples/pg_range/source.ts",
      search: "if (refusedBy(result.count)) return; // a newer tenancy owns the split: stop",
      replace: "refusedBy(result.count); // a newer tenancy owns the split: stop",
    }],
    suites: ["pg"],
  },
  {
    name: "pg-fence-partial-refusal-ignored",
    breaks: "a batch refused only in part is taken as written: the zombie lane goes on",
    edits: [{ file: "examples/pg_range/source.ts", search: "if (!fenced || count >= rows.length) return false;", replace: "if (!fenced || count > 0) return false;" }],
    suites: ["pg"],
  },
  {
    name: "pg-fence-half-configured",
    breaks: "splitColumn without epochColumn is accepted: the sink is not fenced",
    edits: [{ file: "examples/pg_range/source.ts", search: "if ((c.splitColumn === undefined) !== (c.epochColumn === undefined)) {", replace: "if (false) {" }],
    suites: ["pg"],
  },
  // --- assignment records (DESIGN "How a split reaches a worker"): members -------------------------
  {
    name: "assign-other-session-applied",
    breaks: "a member applies an assignment record addressed to another session of its instance",
    edits: [{ file: "src/coordinator/member/follower.ts", search: "if (a.session !== me.session) return; // addressed to a predecessor (or a twin): not ours", replace: "" }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "assign-older-term-applied",
    breaks: "a member applies an assignment record from an older term than one it has seen (a deposed leader's late write)",
    edits: [{ file: "src/coordinator/member/follower.ts", search: "if (a.term < this.maxTerm) return; // a deposed leader's late write", replace: "" }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "drop-any-epoch",
    breaks: "a drop of an earlier epoch stops the member's newer tenancy of the split",
    edits: [{ file: "src/coordinator/member/follower.ts", search: "if (held.get(d.id)?.epoch === d.epoch) this.#tenancies.lose(", replace: "if (held.has(d.id)) this.#tenancies.lose(" }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "drop-ignored",
    breaks: "a member ignores drops: a cancelled split runs on until its next commit",
    edits: [{ file: "src/coordinator/member/follower.ts", search: "if (held.get(d.id)?.epoch === d.epoch) this.#tenancies.lose(", replace: "if (false) this.#tenancies.lose(" }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "revoke-any-epoch",
    breaks: "a revoke of an earlier epoch drains the member's newer tenancy of the split",
    edits: [{ file: "src/coordinator/member/follower.ts", search: "if (held.get(r.id)?.epoch !== r.epoch) continue;", replace: "if (!held.has(r.id)) continue;" }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "revoke-withdrawal-ignored",
    breaks: "a revoke missing from a newer record is not withdrawn: the member drains a split the leader no longer asks for",
    edits: [{ file: "src/coordinator/member/follower.ts", search: "if (t.byLeader && !this.paused) this.#tenancies.cancelRevoke(id);", replace: "if (t.byLeader) continue;" }],
    suites: ["coordinator", "nats"],
  },
  // --- assignment records: the leader's record and offers ------------------------------------------
  {
    name: "assign-ack-before-seen",
    breaks: "a grant is dropped from the record once written, before the member's heartbeat says it applied it: a missed version orphans it",
    edits: [{ file: "src/coordinator/leader/assignment_tracker.ts", search: "if (g.at !== undefined && g.at <= seen) grants.delete(id);", replace: "if (g.at !== undefined) grants.delete(id);" }],
    suites: ["unit"],
  },
  {
    name: "assign-no-inline-budget",
    breaks: "split records go inline past the 48 KiB budget",
    edits: [{ file: "src/coordinator/leader/assign_build.ts", search: "if (n <= inline && fits(bare + n)) {", replace: "if (fits(bare + n)) {" }],
    suites: ["unit"],
  },
  {
    name: "assign-listed-grants-first",
    breaks: "grants listed before go into the record ahead of new ones: a member owed many grants never gets the new ones",
    edits: [{ file: "src/coordinator/leader/assign_build.ts", search: "for (const first of [true, false]) {", replace: "for (const first of [false, true]) {" }],
    suites: ["unit"],
  },
  {
    name: "assign-stale-grant-listed",
    breaks: "a grant is listed after the split's epoch moved past it",
    edits: [{ file: "src/coordinator/leader/assign_build.ts", search: "if (!cur || cur.record.epoch !== g.epoch) continue;", replace: "if (!cur) continue;" }],
    suites: ["unit"],
  },
  {
    name: "assign-stale-offer-listed",
    breaks: "an offer is listed at a revision the split has moved past",
    edits: [{ file: "src/coordinator/leader/assign_build.ts", search: "if (!cur || cur.revision !== rev) continue; // moved on", replace: "if (!cur) continue; // moved on" }],
    suites: ["unit"],
  },
  {
    name: "assign-deposed-overwrites",
    breaks: "a leader overwrites an assignment record of a newer term instead of standing down",
    edits: [{ file: "src/coordinator/leader/assign_writer.ts", search: "if (read?.ok && read.value.term > term) {", replace: "if (false) {" }],
    suites: ["unit"],
  },
  {
    name: "assign-revokes-unbounded",
    breaks: "revokes are not counted against the record's size bound: thousands of them make a write the store refuses",
    edits: [{ file: "src/coordinator/leader/assign_build.ts", search: "    if (fits(JSON.stringify(v).length)) revokes.push(v);", replace: "    revokes.push(v);" }],
    suites: ["unit"],
  },
  {
    name: "offers-to-draining",
    breaks: "a draining member is offered work",
    edits: [{ file: "src/coordinator/leader/offers.ts", search: "if (!m.draining && m.maxInFlight > 0) out.push(m);", replace: "if (m.maxInFlight > 0) out.push(m);" }],
    suites: ["unit"],
  },
  {
    name: "offers-no-max",
    breaks: "a member's offers are not capped at 256",
    edits: [{ file: "src/coordinator/leader/offers.ts", search: "export const MAX_OFFERS = 256;", replace: "export const MAX_OFFERS = 1e9;" }],
    suites: ["unit"],
  },
  // --- the NATS reconnect path ---------------------------------------------------------------------
  {
    name: "nats-reconnect-watch-not-restarted",
    breaks: "a NatsStore watch is not restarted after a reconnect: it misses what changed while it was cut off",
    edits: [{ file: "src/nats/connection.ts", search: "for (const fn of this.#reconnectListeners) fn(`reconnected to ${server}`);", replace: "" }],
    suites: ["outage"],
  },
  {
    name: "nats-reconnect-waiters-not-woken",
    breaks: "ops waiting for the connection are not woken by the reconnect: they fail at their deadline",
    edits: [{ file: "src/nats/connection.ts", search: "          this.#connected = true;\n          for (const w of this.#waiters.splice(0)) w();", replace: "          this.#connected = true;" }],
    suites: ["outage"],
  },
  {
    name: "nats-disconnect-unnoticed",
    breaks: "a disconnect is not noticed: ops are sent into a dead connection and a reconnect restarts nothing",
    edits: [{ file: "src/nats/connection.ts", search: "if (s.type === \"disconnect\" || s.type === \"staleConnection\") {\n          this.#connected = false;", replace: "if (s.type === \"disconnect\" || s.type === \"staleConnection\") {" }],
    suites: ["outage"],
  },
  {
    name: "nats-ops-sent-disconnected",
    breaks: "ops are sent while disconnected instead of waiting for the connection: the request is lost",
    edits: [{ file: "src/nats/nats_store.ts", search: "    if (this.#conn.connected) return;\n    if (!(await this.#conn.waitConnected(deadline - this.#reserve))) {", replace: "    return;\n    if (!(await this.#conn.waitConnected(deadline - this.#reserve))) {" }],
    suites: ["outage"],
  },
  // --- the Redis store (issue 42) -----------------------------------------------------------------
  {
    name: "redis-cas-unchecked",
    breaks: "the Redis write script takes the next revision without comparing the key's: two writers at one revision both land",
    edits: [{ file: "src/redis/scripts.ts", search: "elseif not cur or tonumber(cur) ~= tonumber(ARGV[3]) then", replace: "elseif not cur then" }],
    suites: ["redis"],
  },
  {
    name: "redis-wait-skipped",
    breaks: "a write on a primary with replicas is reported landed without WAIT: an acknowledged write is lost in a failover to a replica that never had it",
    edits: [{ file: "src/redis/redis_kv_store.ts", search: "    const n = this.#mode.waitReplicas;\n    if (n === 0) return;", replace: "    const n = this.#mode.waitReplicas;\n    return;" }],
    suites: ["redis"],
  },
  {
    name: "redis-durability-unchecked",
    breaks: "a server with appendonly no (or fsync everysec) is accepted without the weaker mode named: a restart loses acknowledged writes",
    edits: [{ file: "src/redis/durability.ts", search: "if (DURABILITY_LEVELS.indexOf(level) > DURABILITY_LEVELS.indexOf(wanted)) {", replace: "if (false) {" }],
    suites: ["unit", "redis"],
  },
  {
    name: "redis-restart-unseen",
    breaks: "a Redis watch reads without the server's run id: after a restart (which may have lost what it read) it goes on instead of a reset and a fresh snapshot",
    edits: [{ file: "src/redis/redis_watch.ts", search: "this.#prefix, String(SCAN_ROWS), from, \"1\"]", replace: "this.#prefix, String(SCAN_ROWS), from, \"\"]" }],
    suites: ["redis"],
  },
  // --- what the fleet view reads from a split record (issue 24 item 1) -----------------
  {
    name: "fast-check-estimate",
    breaks: "the fast check of a split or progress record accepts a malformed progress estimate (more left than the total) that the schema refuses",
    edits: [{ file: "src/records/fast_checks.ts", search: "  return p.estimate === undefined || estimateProblem(p.estimate) === null;", replace: "  return true;" }],
    suites: ["unit"],
  },
  {
    name: "fast-check-tenancy-end",
    breaks: "the fast check of a split record accepts a tenancy ended in a way the protocol has not",
    edits: [{ file: "src/records/fast_checks.ts", search: "(t.end === undefined || ENDS.has(t.end))", replace: "true" }],
    suites: ["unit"],
  },
  {
    name: "commit-final-keeps-tenancy-open",
    breaks: "a completion leaves its tenancy open: the record holds no completion time, so the rate and ETA never count it",
    edits: [{ file: "src/records/transitions.ts", search: "owner: null }, at, \"completed\")", replace: "owner: null }, at, null)" }],
    suites: ["unit"],
  },
  {
    name: "lane-accepts-bad-estimate",
    breaks: "a lane passes a malformed estimate on instead of refusing it at the call (the source learns it only from the store write)",
    edits: [{ file: "src/runtime/lane.ts", search: "const bad = progress.estimate === undefined ? null : estimateProblem(progress.estimate);", replace: "const bad = null;" }],
    suites: ["unit"],
  },

  // --- what is promised to whom (issue 29: the assignment tracker and the view-change decisions) ---
  {
    name: "opened-split-not-granted",
    breaks: "a split opened for a member by someone else (a release to a successor, a fence, a takeover) is not granted to it: it never starts it",
    edits: [{ file: C + "leader/view_changes.ts", search: "if (st && !(prev.owner.instance === o.instance && prev.owner.session === o.session)) {", replace: "if (false) {" }],
    suites: ["coordinator", "sim"],
  },
  {
    name: "cancelled-split-not-dropped",
    breaks: "a member whose split an operator cancelled is not told to stop: it runs on until its next commit is fenced",
    edits: [{ file: C + "leader/view_changes.ts", search: 'if (st) out.push({ kind: "drop", member: st, id, drop: { epoch: prev.epoch, reason: "cancelled" } });', replace: "" }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "anti-entropy-never-resends",
    breaks: "a member the view names for more splits than it reports holding is never sent them again: a split whose holder gave it up waits for ever",
    edits: [{ file: C + "leader/view_changes.ts", search: 'if (grants.length > 0) out.push({ kind: "resend", member: m, grants, owned: owned.size, held: r.held });', replace: "" }],
    suites: ["coordinator", "sim"],
  },
  {
    name: "lane-offers-not-trimmed",
    breaks: "lane offers are not taken back when a grant or a handoff fills the lane: a member is offered more splits for lanes than it has",
    edits: [{ file: C + "leader/offers.ts", search: "if (o.plain(m) > Math.min(MAX_OFFERS, free + prefetch)) o.trim(m, Math.min(MAX_OFFERS, free + prefetch));", replace: "" }],
    suites: ["unit", "coordinator", "sim"],
  },
  // --- the cost per split (issue 32) ------------------------------------------------------
  {
    name: "commit-wakes-leader-pass",
    breaks: "progress commits go to the split records the leader watches: each one a delivery to the leader, as before issue 38",
    edits: [{
      file: C + "prog_records.ts",
      search: "  async commit(id: string, hold: ProgHold, progress: SplitProgress, opts: ProgCommitOptions = {}): Promise<ProgOutcome> {\n    const key = keys.prog(id);",
      replace: "  async commit(id: string, hold: ProgHold, progress: SplitProgress, opts: ProgCommitOptions = {}): Promise<ProgOutcome> {\n    const key = keys.split(id);",
    }],
    suites: ["coordinator"],
  },
  // --- hardening III (issue 33) --------------------------------------------------------
  {
    name: "completion-lost-cas-not-learned",
    breaks: "a completion write that loses its CAS re-reads plan but leaves the leader's view of it stale: with a plan watch that never delivers, it decides on the stale record for ever and no outcome is written",
    edits: [{ file: C + "leader/completion.ts", search: "this.#learn(cur);\n    return { plan, revision: cur.revision };", replace: "return { plan, revision: cur.revision };" }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "completion-clears-unjudged-outcome",
    breaks: "a clear that lost its CAS clears whatever outcome the fresh read holds (one it never judged: a fresh, correct allComplete), and rewrites plan unchanged when it holds none",
    edits: [{
      file: C + "leader/completion.ts",
      search: "if (!at || at.plan.term !== term || !sameOutcome(at.plan.outcome, judged)) return this.#core.schedule();",
      replace: "if (!at || at.plan.term !== term) return this.#core.schedule();",
    }],
    suites: ["unit", "sim"],
  },
  {
    name: "completion-clears-unconfirmed",
    breaks: "a clear is decided on the view alone: a view whose split watch lags clears a right outcome",
    edits: [{
      file: C + "leader/completion.ts",
      search: 'if (found.state === "behind" || (found.state === "done" && sameOutcome(found.outcome, judged))) {',
      replace: "if (false) {",
    }],
    suites: ["unit", "sim"],
  },
  {
    name: "grant-past-free-lanes",
    breaks: "a grant that finds every lane taken is started anyway: a member whose leader died before telling it of a split opened for it runs past maxInFlight once the next leader grants it",
    edits: [{ file: C + "member/claims.ts", search: "if (this.busyLanes(g.id) >= this.#core.lanes()) {", replace: "if (false) {" }],
    suites: ["coordinator", "sim", "nats"],
  },
  {
    name: "recovered-claim-past-lanes",
    breaks: "a claim whose reply was lost holds no lane while it is read again, and starts when found ours even though its lane was claimed meanwhile: past maxInFlight",
    edits: [
      { file: C + "member/claim_recovery.ts", search: "!this.#mayClaim() || this.#lanesFull(id)) {", replace: "!this.#mayClaim()) {" },
      { file: C + "member/claims.ts", search: "this.#dormant.size + this.#recovery.pending;", replace: "this.#dormant.size;" },
    ],
    suites: ["sim"],
  },
  {
    name: "resume-frees-lane-early",
    breaks: "a split being resumed after a self-fence does not take a lane while its CAS is out: the lane is claimed meanwhile, and the resume puts the member past maxInFlight",
    edits: [{ file: C + "member/dormant.ts", search: "return this.#entries.size + this.#resuming.size;", replace: "return this.#entries.size;" }],
    suites: ["coordinator", "sim"],
  },
  {
    name: "new-leader-dates-from-sighting",
    breaks: "a new leader dates every member record from its first sighting: a leader that died between its member beat and its leader beat has its splits wait an extra lease",
    edits: [{ file: C + "leader/judge.ts", search: "let since = Math.min(seen.since, landed.before(m.revision) ?? Infinity);", replace: "let since = seen.since;" }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "unknown-owner-not-reread",
    breaks: "splits of an owner the leader's view holds no member record of are taken over at once as a clean leave: a member that joined between the new leader's two snapshots loses its split",
    edits: [{ file: C + "leader/judge.ts", search: "if (!heir && !gone && !view.members.has(owner.instance)) {", replace: "if (false) {" }],
    suites: ["coordinator", "nats"],
  },
  {
    name: "worker-lanes-own-default",
    breaks: "a worker composed by hand runs its own default of 8 lanes whatever maxInFlight its coordinator joined with",
    edits: [{ file: "src/runtime/worker_options.ts", search: "return given ?? announced ?? TUNABLE_DEFAULTS.maxInFlight;", replace: "return given ?? TUNABLE_DEFAULTS.maxInFlight;" }],
    suites: ["onesource"],
  },
  {
    name: "worker-lanes-mismatch-accepted",
    breaks: "a worker given another maxInFlight than its coordinator's runs silently with two sources of one number",
    edits: [{ file: "src/runtime/worker_options.ts", search: "if (given !== undefined && announced !== undefined && given !== announced) {", replace: "if (false) {" }],
    suites: ["onesource"],
  },
  {
    name: "store-job-mismatch-accepted",
    breaks: "a store bound to one job joins another: data in one bucket, logs, metrics and the CLI about another",
    edits: [{ file: C + "member/job_check.ts", search: "if (bound === undefined || bound === job) return;", replace: "return;" }],
    suites: ["onesource"],
  },
  // --- rules found unguarded by a review (issue 33 item 8) ------------------------------
  {
    name: "grant-acknowledged-before-listed",
    breaks: "a grant no assignment record has listed yet is cleared by any `seen` of the member: it never hears of the split",
    edits: [{ file: C + "leader/assignment_tracker.ts", search: "if (g.at !== undefined && g.at <= seen)", replace: "if (g.at === undefined || g.at <= seen)" }],
    suites: ["unit"],
  },
  {
    name: "operator-cas-at-reread",
    breaks: "an operator action writes at a revision read after its decision, not the one it decided on: a completion that landed in between is overwritten by a cancel",
    edits: [{ file: "src/fleet/actions.ts", search: "const r = await store.update(key, step.write, cur!.revision);", replace: "const r = await store.update(key, step.write, (await store.get(key))!.revision);" }],
    suites: ["unit"],
  },
  {
    name: "refused-cut-keeps-running",
    breaks: "a cut the coordinator refuses leaves the lane running its shortened range: the records past the cut are left to nobody",
    edits: [{ file: "src/runtime/lane_cut.ts", search: "        deps.handBack(lane);\n        return;", replace: "        return;" }],
    suites: ["runtime"],
  },
  // --- a lane's state (src/runtime/lane_state.ts, issue 29 item 5) ---
  {
    name: "lane-writes-after-loss",
    breaks: "a lane that was lost (fenced, expired, shut down) still takes its source's commits: a zombie's progress is sent on instead of refused at the lane",
    edits: [{ file: "src/runtime/lane_state.ts", search: "return s.kind === \"queued\" || isOpen(s);", replace: "return s.kind !== \"closed\";" }],
    suites: ["unit"],
  },
  {
    name: "lane-cuts-overlap",
    breaks: "a lane answers the leader's next ask to cut while its last cut is still being written: two cuts of one range race",
    edits: [{ file: "src/runtime/lane_state.ts", search: "return s.kind === \"running\" && !s.cutting;", replace: "return s.kind === \"running\";" }],
    suites: ["unit"],
  },
  {
    name: "assign-entry-rec-unchecked",
    breaks: "the fast check of an assignment record accepts an offer or grant whose inline split record is no split record",
    edits: [{ file: "src/records/fast_checks.ts", search: "(x.rec === undefined ? x.rev > 0 || x.page !== undefined : isSplitRecord(x.rec))", replace: "(x.rec === undefined ? x.rev > 0 || x.page !== undefined : isObj(x.rec))" }],
    suites: ["unit"],
  },
  {
    name: "maybe-landed-at-old-revision",
    breaks: "a write whose reply is lost counts as landed when the key holds its bytes at the revision seen before it: an update that never reached the server is reported ok at the old revision",
    edits: [{ file: "src/store/write_guard.ts", search: "entry.value === value && entry.revision > before", replace: "entry.value === value && entry.revision >= before" }],
    suites: ["store"],
  },
  {
    name: "replicated-create-unplaced-not-retried",
    breaks: "a replicated bucket's create answered 'no suitable peers for placement' (a peer a new cluster has not counted yet) fails the connect instead of being tried again",
    edits: [{ file: "src/nats/bucket.ts", search: "const unplaced = e instanceof JetStreamApiError && /no suitable peers|peer offline|insufficient resources/i.test(e.message);", replace: "const unplaced = false;" }],
    // The cluster suite starts a fleet with two of its three nodes, the third 2 s later.
    suites: ["unit", "cluster"],
  },
  {
    name: "jetstream-not-ready-fatal",
    breaks: "a connect to a cluster whose nodes are starting (no meta leader yet: JetStream's account info unanswered) fails at once instead of asking again: a fleet started together with its cluster loses every worker",
    edits: [{ file: "src/nats/bucket.ts", search: "if (opts.replicas > 1 && settling && Date.now() < deadline) {", replace: "if (false) {" }],
    suites: ["unit", "cluster"],
  },
  {
    name: "transport-for-ignores-tls",
    breaks: "transportFor picks the TCP transport only when a server list names nats://: a tls://-only list (a TLS cluster) goes to WebSocket and every worker configured by URL, and the CLI, fail 'is a NATS TCP URL, which needs the TCP transport'",
    edits: [{ file: "adapters/nats_tcp.ts", search: "list.some((s) => /^\\s*(nats|tls):\\/\\//i.test(s))", replace: "list.some((s) => /^\\s*nats:\\/\\//i.test(s))" }],
    suites: ["unit", "tcptls"],
  },
  {
    name: "unsent-write-not-retried",
    breaks: "a write answered 'no responders' (nobody received it: a replicated bucket electing its leader) fails at once as an outage instead of being sent again within the op timeout",
    edits: [{ file: "src/nats/unsent.ts", search: "if (!isNoResponders(e) || Date.now() + pause >= deadline) throw e;", replace: "throw e;" }],
    suites: ["store"],
  },

  // --- progress apart from ownership (issue 38: prog.<split>, fenced by its own CAS) -----------
  {
    name: "prog-fence-skipped",
    breaks: "a tenancy opened over a predecessor that may still commit (a takeover, a resume, a release with a write in flight) starts without fencing the progress record: it starts behind a commit, or a zombie's commit lands after it started",
    edits: [{ file: "src/records/transitions.ts", search: "  return (r.closed ?? 0) < epoch;", replace: "  return false;" }],
    suites: ["sim", "coordinator"],
  },
  {
    name: "prog-settled-with-write-in-flight",
    breaks: "a tenancy whose progress write is in flight (or of unknown outcome) still closes the progress record at its release: the next tenancy starts without a fence and the late write lands under it",
    edits: [{ file: "src/coordinator/member/tenancy_writes.ts", search: "    if ((t.progWriting ?? 0) > 0 || t.progUnsure) return undefined;", replace: "" }],
    suites: ["sim"],
  },
  {
    name: "prog-commit-over-newer-epoch",
    breaks: "a progress commit that conflicts writes over the re-read record whatever its epoch: a zombie's commit lands over the new owner's fence",
    edits: [{
      file: "src/coordinator/prog_records.ts",
      search: "      if (rec.epoch !== hold.epoch || !sameOwner(rec.owner, hold.owner)) return { ok: false, epoch: rec.epoch };",
      replace: "",
    }],
    suites: ["coordinator", "sim"],
  },
  {
    name: "prog-fence-over-newer-epoch",
    breaks: "a fence writes its epoch over a progress record a newer tenancy already fenced: a stale tenancy starts, and the newer one's commits are refused",
    edits: [{
      file: "src/coordinator/prog_records.ts",
      search: "      if (cur && (cur.record.epoch > hold.epoch || (cur.record.epoch === hold.epoch && !sameOwner(cur.record.owner, hold.owner)))) {\n        return { ok: false, epoch: cur.record.epoch };\n      }\n      if (cur && cur.record.epoch === hold.epoch)",
      replace: "      if (cur && cur.record.epoch === hold.epoch)",
    }],
    suites: ["sim"],
  },
  {
    name: "prog-fence-drops-progress",
    breaks: "a fence carries the split record's position instead of the progress record's: the new owner starts behind the last commit and replays it",
    edits: [{
      file: "src/coordinator/prog_records.ts",
      search: "      const from = cur && cur.record.epoch >= (hold.closed ?? 0) ? { progress: cur.record.progress, records: cur.record.records } : hold;",
      replace: "      const from = hold;",
    }],
    suites: ["coordinator", "sim"],
  },
  {
    name: "cancel-no-prog-fence",
    breaks: "an operator's cancel leaves the progress record open: the owner's progress commits keep landing until the leader's drop reaches it",
    edits: [{ file: "src/fleet/actions.ts", search: "    await fenceProgress(store, id, r.epoch);\n", replace: "" }],
    suites: ["coordinator"],
  },
  {
    name: "completion-over-split-progress",
    breaks: "a completion merges over the split record's position (its last ownership change) instead of the tenancy's last commit: the records count of the commits that landed is lost",
    edits: [{ file: "src/coordinator/member/tenancy_writes.ts", search: "      if (t && t.prog.records > 0) base.records = t.prog.records;\n", replace: "" }],
    suites: ["coordinator"],
  },
  {
    name: "beat-estimates-after-cut",
    breaks: "a member's heartbeat reports an estimate committed before a cut of the split: the leader ranks the kept range by the whole range's work left",
    edits: [{ file: "src/coordinator/member/tenancies.ts", search: "if (e && !t.stuck && (t.record.cuts ?? 0) <= (t.prog.cuts ?? 0))", replace: "if (e && !t.stuck)" }],
    suites: ["coordinator"],
  },
  {
    name: "handback-unstarted-not-ended",
    breaks: "a grant handed back before it started is not remembered as ended: a later delivery of the same grant starts it after the hand-back closed its progress record, and its first commit lands under the next tenancy (simulation seed 856)",
    edits: [{ file: "src/coordinator/member/claim_recovery.ts", search: "    if ((before ?? -1) < claimed.epoch) ended.set(id, claimed.epoch);\n", replace: "" }],
    suites: ["sim"],
  },
  {
    name: "overlapping-starts-older-wins",
    breaks: "two starts of one split overlapping while a fence is out (a grant, and our own resume at the next epoch) both start: two tenancies of one split (simulation seed 177)",
    edits: [{ file: "src/coordinator/member/tenancies.ts", search: "    if ((this.#opening.get(id) ?? -1) > t.epoch) return false;\n", replace: "" }],
    suites: ["sim"],
  },
  {
    name: "prefetch-never",
    breaks: "tiny splits are not prefetched: a freed lane waits for the leader's next assignment write, a round trip per split",
    edits: [{ file: "src/coordinator/leader/offers.ts", search: "export const PREFETCH_BELOW_MS = 250;", replace: "export const PREFETCH_BELOW_MS = 0;" }],
    suites: ["coordinator"],
  },
  {
    name: "prefetch-refill-every-split",
    breaks: "the prefetch is topped up after every split a lane takes from it, not once half is used: one assignment write per split again",
    edits: [
      {
        file: "src/coordinator/leader/offers.ts",
        search: "const lanes = Math.min(MAX_OFFERS, free + (prefetch > 0 && held > prefetch / 2 ? held : prefetch));",
        replace: "const lanes = Math.min(MAX_OFFERS, free + prefetch);",
      },
      { file: "src/coordinator/leader/offers.ts", search: "&& plain - free <= prefetch / 2) return true;", replace: "&& plain - free < prefetch) return true;" },
    ],
    suites: ["coordinator"],
  },
  // --- the operator's views of members and jobs (issue 40, items 3 and 5) ---------------
  {
    name: "gone-members-removed-while-running",
    breaks: "a finishing member removes the records of members past their lease before the job has an outcome: a split still naming a dead session then reads as a clean leave, its takeover charges no attempt, and a split that kills its workers is never quarantined",
    edits: [{ file: "src/fleet/gone_members.ts", search: "if (kind !== \"allComplete\" && kind !== \"stalled\") return [];", replace: "if (kind === \"planFailed\") return [];" }],
    suites: ["unit"],
  },
  {
    name: "gone-members-removed-without-cas",
    breaks: "a dead member's record is deleted whatever its revision: a member that beat between the read and the delete loses its record",
    edits: [{ file: "src/fleet/gone_members.ts", search: "await store.delete(e.key, e.revision)", replace: "await store.delete(e.key)" }],
    suites: ["unit"],
  },
  {
    name: "delete-member-without-time-not-live",
    breaks: "jobs and delete count a member record with no time at all (an older version, a backend without write times) as dead: delete removes a job under a worker it cannot judge",
    edits: [{ file: "src/fleet/job_summary.ts", search: "return pastLease(r.ok ? r.value : undefined, e.writtenAt, now) !== true;", replace: "return pastLease(r.ok ? r.value : undefined, e.writtenAt, now) === false;" }],
    suites: ["unit"],
  },
  {
    name: "delete-stalled-without-force",
    breaks: "delete removes a stalled job without --force: its quarantined splits' progress, which lives only in its records, goes with it",
    edits: [{ file: "src/fleet/job_summary.ts", search: "if (s.state === \"complete\" || s.state === \"empty\") return null;", replace: "if (s.state === \"complete\" || s.state === \"empty\" || s.state === \"stalled\") return null;" }],
    suites: ["unit"],
  },
  {
    name: "delete-counts-lease-from-oldest-time",
    breaks: "a member's liveness is dated from the older of its own beat time and the server's write time: a member whose clock runs behind counts as dead while the server sees it write, and delete removes the job under it",
    edits: [{ file: "src/fleet/member_liveness.ts", search: "return times.length ? Math.max(...times) : null;", replace: "return times.length ? Math.min(...times) : null;" }],
    suites: ["unit"],
  },
  {
    name: "start-after-fence-unchecked",
    breaks: "a start whose fence was out does not check again that the member takes work: a process paused meanwhile wakes and starts a tenancy a newer epoch fenced (simulation seed 395)",
    edits: [{ file: "src/coordinator/member/tenancies.ts", search: "    if (fenced && !this.#mayStart()) {", replace: "    if (false) {" }],
    suites: ["sim"],
  },
  {
    name: "handback-unknown-started-again",
    breaks: "a hand-back whose write may land yet is followed by a start of the same epoch when the record still shows it ours: the late hand-back closes the progress record under the running tenancy (simulation seed 2008)",
    edits: [{
      file: "src/coordinator/member/claim_recovery.ts",
      search: "      this.#tenancies.onOrphan(id, { epoch: claimed.epoch, revision, record: claimed, spec, release: true });",
      replace: "      undo();\n      this.recover(id, claimed.epoch, err, 1);",
    }],
    suites: ["sim"],
  },
  {
    name: "recovery-start-takes-no-lane",
    breaks: "a split a claim recovery found ours takes no lane while it starts (its spec read, its fence): another claim fills the lane, one past maxInFlight (simulation seed 2505)",
    edits: [{ file: "src/coordinator/member/claim_recovery.ts", search: "          this.#starting.add(id);\n", replace: "" }],
    suites: ["sim"],
  },
  // --- fresh reads (issue 40, item 1; DESIGN "Fresh reads") ------------------------------------------
  {
    name: "stale-read-taken-as-fresh",
    breaks: "a read older than a revision already known for its key counts as fresh: every decision that reads past a floor takes a stale replica's answer for the truth",
    edits: [{ file: C + "fresh_read.ts", search: "const reached = (e: StoreEntry | undefined) => floor <= 0 ||", replace: "const reached = (e: StoreEntry | undefined) => true ||" }],
    suites: ["coordinator", "regressions"],
  },
  {
    name: "plan-read-before-term-trusted",
    breaks: "planning decides on whatever `plan` a read returns, older than its own term bump: a stale one shows the term before ours and the planner never runs in the term",
    edits: [
      { file: C + "leader/planning.ts", search: "const floor = Math.max(known?.revision ?? 0, this.#past);", replace: "const floor = 0;" },
      { file: C + "leader/planning.ts", search: "return known && known.revision > read.revision ? known : read;", replace: "return read;" },
    ],
    suites: ["coordinator", "regressions"],
  },
  {
    name: "split-cas-reread-unfloored",
    breaks: "a split CAS that lost re-reads the record without reading past the revision that lost: a stale record from before the claim fences a healthy tenancy",
    edits: [{ file: C + "split_records.ts", search: "const cur = await this.readPast(id, revision + 1, cause);", replace: "const cur = await this.read(id, cause);" }],
    suites: ["coordinator", "regressions"],
  },
  {
    name: "spare-claim-read-unfloored",
    breaks: "a spare's claim reads its split record without reading past the revision offered: an answer from before the split was seeded makes the claim give up, and the offer, marked tried, is never claimed",
    edits: [{ file: C + "member/claims.ts", search: "await splits.readPast(o.id, o.rev)", replace: "await splits.read(o.id)" }],
    suites: ["coordinator", "regressions"],
  },
  {
    name: "heartbeat-conflict-reread-unfloored",
    breaks: "a heartbeat that lost its CAS decides on a re-read from before its own revision: an old version of the predecessor's record stops a healthy member with DUPLICATE_INSTANCE",
    edits: [{ file: C + "member/membership.ts", search: "await this.#readPast(store, this.#revision + 1);", replace: "await this.#readPast(store, 0);" }],
    suites: ["coordinator", "regressions"],
  },
  {
    name: "register-takes-first-answer",
    breaks: "the twin check takes over at the first revision it read, and refuses at the first lost CAS: an old first answer refuses a restart as a twin",
    edits: [
      { file: C + "member/registration.ts", search: "entry = newer(entry, e);", replace: "void e;" },
      { file: C + "member/registration.ts", search: "if ((!stale && round >= 2) || round >= 4) throw duplicateInstance(core);", replace: "throw duplicateInstance(core);" },
    ],
    suites: ["coordinator", "regressions"],
  },
  {
    name: "leader-beat-reread-unfloored",
    breaks: "a leader beat that lost its CAS decides on a re-read from before its own last beat (and ignores its watch): an old leader record deposes a healthy leader",
    edits: [
      { file: C + "leadership.ts", search: "readAtLeast(() => store.get(keys.leader), rev + 1, this.#wait());", replace: "readAtLeast(() => store.get(keys.leader), 0, this.#wait());" },
      { file: C + "leadership.ts", search: "const cur = newer(read, watched && watched.revision > rev ? watched : undefined);", replace: "const cur = read;" },
    ],
    suites: ["coordinator"],
  },
  {
    name: "election-older-reread-is-a-move",
    breaks: "an election's re-read older than the revision judged silent counts as a move: the lease restarts from an old revision and the election waits another lease",
    edits: [
      { file: C + "leadership.ts", search: "store.get(keys.leader), judged, this.#wait(), \"fresh\");", replace: "store.get(keys.leader), 0, this.#wait(), \"fresh\");" },
      { file: C + "leadership.ts", search: "if (cur && cur.revision > judged) {", replace: "if (cur && cur.revision !== judged) {" },
    ],
    suites: ["coordinator"],
  },
  {
    name: "judge-dead-on-stale-reread",
    breaks: "the death judge takes a re-read that shows the silent revision for the truth while its member watch is behind the store: a live member is judged dead and its splits taken over",
    edits: [{ file: C + "leader/judge.ts", search: "if (caught === false || (caught === undefined && cur && cur.revision < (seen ?? 0))) return \"later\";", replace: "" }],
    suites: ["coordinator", "regressions"],
  },
  {
    name: "planning-forgets-written-pages",
    breaks: "a run after a failed publish starts over at the published page count: it finds nothing new and publishes no pages, and the splits of the pages it wrote are never dealt (seed 354)",
    edits: [{ file: C + "leader/plan_seeder.ts", search: "        this.#written = { run, pages: landed };", replace: "" }],
    suites: ["coordinator", "sim"],
  },
  {
    name: "publish-before-grants-land",
    breaks: "a plan is published while grants of its seeding are still in flight: their splits are not in the view yet, so `planned` misses them and the job can be judged complete without them",
    edits: [{ file: C + "leader/plan_seeder.ts", search: "      await Promise.all(granting);\n", replace: "" }],
    suites: ["coordinator", "sim"],
  },
  {
    name: "page-read-takes-absent",
    breaks: "a published page read from before it was written (absent) counts as missing: a new leader never deals its splits (seed 208), a claim leaves its offer to the next leader",
    edits: [{ file: C + "read_page.ts", search: "await readAtLeast(() => store.get(key), floor, wait);", replace: "await readAtLeast(() => store.get(key), 0, wait);" }],
    suites: ["sim", "coordinator"],
  },
  {
    name: "recheck-trusts-unheld-read",
    breaks: "a re-check takes any record of an owner the view never held for proof it lives: a departed member read from before it left comes back and its hand-overs are charged (seed 34)",
    edits: [{ file: C + "leader/judge.ts", search: "if (ours && gone?.revision !== undefined && ours.revision > gone.revision)", replace: "if (ours && (gone === undefined || (gone.revision !== undefined && ours.revision > gone.revision)))" }],
    suites: ["sim", "coordinator"],
  },
  {
    name: "prog-commit-reread-unfloored",
    breaks: "a progress commit that lost its CAS decides on a re-read from before the revision that lost: the previous tenancy's record gives the split up as fenced while its split record names us (seed 598)",
    edits: [{ file: C + "prog_records.ts", search: "const cur = await this.#entry(key, c, hold.rev! + 1);", replace: "const cur = await this.#entry(key, c);" }],
    suites: ["sim", "coordinator"],
  },
  // --- pausing a job (issue 41): not a safety rule, the promise an operator stops a backfill by -----
  {
    name: "pause-leader-deals",
    breaks: "the leader's dealing gate ignores the pause: offers, spares and cut asks go out while the job is paused",
    edits: [
      // The pass's rules (offers, steals, cuts) and, after them, its completion judgement: both read the gate.
      { file: C + "leader/role.ts", search: "const dealing = this.gate.open;\n    let next = this.#apply(", replace: "const dealing = true;\n    let next = this.#apply(" },
      { file: C + "leader/role.ts", search: "const dealing = this.gate.open;\n    const owed = own.owed;", replace: "const dealing = true;\n    const owed = own.owed;" },
    ],
    suites: ["coordinator"],
  },
  {
    name: "pause-member-claims",
    breaks: "a member claims while the job is paused (a spare of a record its dead leader never took back)",
    edits: [{ file: C + "coordinator.ts", search: "!this.#draining && !this.#follower.paused && this.#membershipFresh()", replace: "!this.#draining && this.#membershipFresh()" }],
    suites: ["coordinator"],
  },
  {
    name: "pause-takeover-grants",
    breaks: "a paused job's takeovers grant the dead member's splits to live members (who hand them back) instead of freeing them",
    edits: [{ file: C + "leader/takeovers.ts", search: "const dealing = this.#ctx.dealing?.() ?? true;", replace: "const dealing = true;" }],
    suites: ["coordinator"],
  },
  {
    name: "pause-decides-outcome",
    breaks: "completion is judged while the job is paused: the last split finishing during a pause ends the job",
    edits: [
      { file: C + "leader/role.ts", search: "const outcome = dealing ? decideCompletion(", replace: "const outcome = true ? decideCompletion(" },
      { file: C + "leader/completion.ts", search: "plan.term !== term || plan.paused) return undefined;", replace: "plan.term !== term) return undefined;" },
    ],
    suites: ["coordinator"],
  },
  {
    name: "rerun-epoch-below-base",
    breaks: "a rerun seeds a split at its own old epoch, not above every epoch of the runs before: its lineage's new tenancies can run at an epoch a fenced sink already saw from the old run",
    edits: [{ file: "src/records/transitions.ts", search: "r.epoch = Math.max(epochBase, prev?.epoch ?? 0);", replace: "r.epoch = prev?.epoch ?? 0;" }],
    suites: ["coordinator"],
  },
  {
    name: "rerun-carries-old-progress",
    breaks: "a rerun's first fence carries the old run's progress record over: the split resumes at the position the last run reached and skips its work",
    edits: [{ file: "src/coordinator/prog_records.ts", search: "const from = cur && cur.record.epoch >= (hold.closed ?? 0) ?", replace: "const from = cur ?" }],
    suites: ["coordinator"],
  },
  // --- a sharded job's operator surfaces (issue 39, item 4; OPERATIONS "Sharding a job") ---
  {
    name: "shards-of-another-count-accepted",
    breaks: "the operator's tools fold shards whose job records name another count: a job whose members route its splits two ways is shown, waited on and repaired as one",
    edits: [{ file: "src/fleet/job_shards.ts", search: "if (e === undefined || (theirs?.index === index && theirs.count === seat.count)) return;", replace: "return;" }],
    suites: ["unit"],
  },
  {
    name: "sharded-rerun-partial",
    breaks: "a sharded job is rerun while one of its shards still runs: the finished shards start run 2 beside the unfinished one's run 1",
    edits: [{ file: "src/fleet/shard_actions.ts", search: "if (!r.value.outcome) return { outcome: \"running\"", replace: "if (false) return { outcome: \"running\"" }],
    suites: ["unit"],
  },
  {
    name: "split-action-on-its-routed-shard-only",
    breaks: "a split's requeue or cancel looks only in the shard its id routes to: a split cut from a running one (it lives in its parent's shard) is never found",
    edits: [{ file: "src/fleet/job_shards.ts", search: "const others = shards.stores.map((_, i) => i).filter((i) => i !== home);", replace: "const others: number[] = [];" }],
    suites: ["unit"],
  },
  {
    name: "sharded-gauges-from-every-leader",
    breaks: "a member that leads some shards exports every shard's job-wide gauges: two members leading different shards count a shard twice in sum()",
    edits: [{ file: "src/http/render_metrics.ts", search: "status.shards.filter((x) => x.isLeader).map(", replace: "status.shards.map(" }],
    suites: ["unit"],
  },
  {
    name: "sharded-page-misses-lone-shard",
    breaks: "the job's page of splits ends where the shards' pages together do: a query whose next splits all lie in one shard loses its cursor",
    edits: [{ file: "src/fleet/shard_views.ts", search: "const more = listed.length > limit || views.some((v) => v.page.next !== null);", replace: "const more = listed.length > limit;" }],
    suites: ["unit"],
  },
  {
    name: "pass-per-event",
    breaks: "a busy leader runs a pass per watch delivery instead of gathering the deliveries of a moment into one: 1.5 passes per tiny split instead of 0.04, a third of its throughput",
    edits: [{ file: C + "reconcile_loop.ts", search: "if (this.#clock.now() - this.#lastPass < GATHER_MS) {", replace: "if (false) {" }],
    suites: ["unit"],
  },
  {
    name: "shard-plans-every-split",
    breaks: "a shard's leader seeds every split of the plan, not only those routed to it: every split runs once per shard",
    edits: [{ file: C + "leader/plan_intake.ts", search: "if (shard.count > 1 && shardOf(s.id, shard.count) !== shard.index) continue;", replace: "" }],
    suites: ["coordinator"],
  },
  {
    name: "shard-lanes-ignore-others",
    breaks: "each shard's member counts only its own lanes: a member of K shards runs up to K × maxInFlight splits",
    edits: [{ file: C + "build_core.ts", search: "lanes: seat ? () => Math.max(0, config.maxInFlight - seat.lanesElsewhere()) : () => config.maxInFlight,", replace: "lanes: () => config.maxInFlight," }],
    suites: ["coordinator"],
  },
  {
    name: "shard-leader-ignores-away",
    breaks: "a shard's leader deals a member its full maxInFlight whatever it holds in other shards: offers it cannot claim, lanes promised twice",
    edits: [{ file: C + "leader/role.ts", search: "const lanes = Math.max(0, r.maxInFlight - (r.away ?? 0));", replace: "const lanes = r.maxInFlight;" }],
    suites: ["coordinator"],
  },
  {
    name: "shard-no-early-beat",
    breaks: "lanes freed in one shard wait for the next regular beat (a heartbeat interval) before another shard's leader deals them",
    edits: [{ file: C + "member_parts.ts", search: "    membership.lanesChanged();", replace: "" }],
    suites: ["coordinator"],
  },
  {
    name: "shard-outcome-first-shard",
    breaks: "a sharded job is declared complete as soon as one shard is, while the others still run",
    edits: [{ file: C + "shard_outcome.ts", search: "if (outcomes.some((o) => o === undefined)) return undefined;", replace: "if (outcomes.every((o) => o === undefined)) return undefined;\n  outcomes = outcomes.filter((o) => o !== undefined);" }],
    suites: ["coordinator"],
  },
  {
    name: "shard-count-unchecked",
    breaks: "a member of another shard count joins the job: it routes splits to other shards than the fleet does",
    edits: [{ file: C + "member/job_check.ts", search: "if (held.count !== shard.count || held.index !== shard.index) {", replace: "if (false) {" }],
    suites: ["coordinator"],
  },
  {
    name: "shard-residual-routed-by-hash",
    breaks: "a member routes a residual's commits by its id's hash instead of the shard that gained it: they reach a shard that has no such split, and the residual never completes",
    edits: [
      { file: C + "sharded_coordinator.ts", search: "    for (const id of ids) this.#where.set(id, i);\n", replace: "" },
      { file: C + "sharded_coordinator.ts", search: "        this.#where.set(ev.split.id, i);\n", replace: "" },
    ],
    suites: ["coordinator"],
  },
  {
    name: "plan-result-unchecked",
    breaks: "a planner's malformed result (finality missing) is published: the leader's own schema refuses the record, repairs it and plans again, about 250 plan writes a second for ever",
    edits: [{ file: C + "leader/planning.ts", search: "const { splits, finality, cursor, more } = checkPlanResult(await (span ? within(span, planner) : planner()));", replace: "const { splits, finality, cursor, more } = await (span ? within(span, planner) : planner());" }],
    suites: ["coordinator"],
  },
  {
    name: "snapshot-mark-lost-on-change",
    breaks: "a split record the snapshot brought and a read then changed loses its mark: the snapshot's ready removes it from the leader's view, which then deals and judges without a split that exists",
    edits: [{ file: C + "leader/split_table.ts", search: " | (permanentlyFailed(r) ? PERMANENT : 0) | mark;", replace: " | (permanentlyFailed(r) ? PERMANENT : 0);" }],
    suites: ["unit"],
  },
  {
    name: "snapshot-marks-kept-across-resets",
    breaks: "a new snapshot starts with the last one's marks: a split record deleted between the two (its delete lost with the watch) stays in the leader's view for ever",
    edits: [{ file: C + "leader/split_table.ts", search: "    for (let s = 0; s < this.#used; s++) this.#flags[s] &= ~MARK;\n", replace: "" }],
    suites: ["unit"],
  },
  {
    name: "plan-more-waits-replan-interval",
    breaks: "a planner that returns its listing in parts (more: true) is called again only after replanIntervalMs: a million-split plan in 20 parts takes 20 minutes to list",
    edits: [{ file: C + "leader/planning.ts", search: "this.schedule(more ? 0 : config.replanIntervalMs);", replace: "this.schedule(config.replanIntervalMs);" }],
    suites: ["coordinator"],
  },
  {
    name: "shard-seeds-every-lane",
    breaks: "each shard's leader grants a member's every idle lane at once: K times its lanes granted, all but one share handed back, a write each",
    edits: [{ file: C + "leader/seed_runs.ts", search: "const lanes = shards > 1 ? Math.ceil(m.maxInFlight / shards) : m.maxInFlight;", replace: "const lanes = m.maxInFlight;" }],
    suites: ["coordinator"],
  },
  {
    name: "sharded-fatal-closes-others",
    breaks: "a member whose coordinator of one shard failed (DUPLICATE_INSTANCE: a twin took its instance over) closes the other shards gracefully: it releases and deletes member records there after it failed, records its twin is taking over",
    edits: [{ file: C + "sharded_coordinator.ts", search: "      void this.abandon();", replace: "      void this.#closeAll();" }],
    suites: ["coordinator"],
  },
  {
    name: "sharded-lanes-before-joined",
    breaks: "a member's shard joined first takes lanes while another shard's join is slow: it holds splits it does not run (their events wait for the join) under live heartbeats",
    edits: [{ file: C + "sharded_coordinator.ts", search: "            if (!seated) return Number.MAX_SAFE_INTEGER;\n", replace: "" }],
    suites: ["coordinator"],
  },
  {
    name: "sharded-join-leaks-slow-shard",
    breaks: "a sharded join that fails in one shard leaves a shard whose join answered later open: a coordinator heartbeating that nothing closes, refusing the instance's next join there",
    edits: [{ file: C + "sharded_coordinator.ts", search: "      await settled(list.map(", replace: "      await Promise.all(list.map(" }],
    suites: ["coordinator"],
  },
  {
    name: "beat-skips-overdue-fence",
    breaks: "a heartbeat that starts past the self-fence's due time (a paused process whose beat timer ran first) lands and re-arms the fence without fencing: a grant written while it was presumed dead, delivered late, starts without a write after its split was taken over",
    edits: [{ file: C + "member/membership.ts", search: "    this.checkFence();\n    const start = clock.now();", replace: "    const start = clock.now();" }],
    suites: ["shardsim"],
  },
  {
    name: "page-offer-given-up",
    breaks: "an offer of a split not dealt yet whose page read \"absent\" past the read's budget (a stale replica) stays marked tried at revision 0: never claimed again while offered, the job never ends with one member",
    edits: [{
      file: C + "member/claims.ts",
      search: "        if (o.rev === 0 && o.page !== undefined) this.#recovery.recover(",
      replace: "        if (false) this.#recovery.recover(",
    }],
    suites: ["coordinator"],
  },
];
