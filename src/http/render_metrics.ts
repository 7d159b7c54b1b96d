/**
 * The `/metrics` text: a coordinator's (and optionally a worker's) status
 * and counters as Prometheus samples.
 *
 * @module
 */
import type { CoordinatorStats } from "../coordinator/coordinator_stats.ts";
import type { CoordinatorStatus } from "../coordinator/types.ts";
import type { Worker } from "../runtime/worker_types.ts";
import { newHistogram } from "../coordinator/stats.ts";
import { MetricsRegistry } from "./metrics.ts";
import type { ProcessSample } from "./process_metrics.ts";

/**
 * Label values every labelled counter renders from the first scrape on (at
 * 0 until the first event), so `rate()` and `increase()` see the series
 * before anything happens. A value the coordinator reports beyond these is
 * rendered too.
 */
const KNOWN_LABEL_VALUES = {
  /** How a split was gained (`kind` of the `Gained split` log line). */
  acquisitions: ["claim", "grant", "takeover", "reclaim", "handoff", "resume"],
  /** Why a split was lost (`LostReason`). */
  losses: ["fenced", "expired", "starved", "revoked"],
  /** What became of a revocation. */
  revocations: ["requested", "drained", "forced", "cancelled", "withdrawn", "fenced"],
  /** Outcome of a store write. */
  writes: ["ok", "conflict", "unavailable", "error"],
  /** Store operations timed by the coordinator. */
  storeOps: ["create", "update", "delete", "get", "list"],
} as const;

/**
 * Renders a coordinator's (and optionally a worker's) metrics in the
 * Prometheus text format. Every sample carries `splitlease_job` (the job
 * name: aggregate by it); the info metric names the worker (instance id)
 * and session in `worker` and `session`, never in `job` or `instance`,
 * which Prometheus attaches to every target. Job-wide gauges (`splits_planned`,
 * `splits_runnable`, `splits_unclaimed`, `splits_completed`,
 * `splits_quarantined`, `splits_cancelled`, `live_workers`, `job_stalled`, `job_paused`) are exported by
 * the leader only (the replica whose `leader` gauge is 1), so any
 * aggregation over replicas counts them once; elsewhere they have no sample.
 * Of a sharded job (`status.shards`) each shard's leader exports that
 * shard's, labelled `shard` (`"0"` … `"K-1"`): the job's split counts are
 * their sum over `shard`, its live workers their max.
 * With a `host` sample (the process's reading) it adds the process metrics (heap, resident
 * memory, event-loop lag).
 *
 * @example
 * ```ts
 * import { type Coordinator } from "@splitlease/splitlease";
 * declare const coordinator: Coordinator;
 * const text = renderMetrics(coordinator.status(), coordinator.stats());
 * ```
 */
export function renderMetrics(
  status: CoordinatorStatus,
  stats: CoordinatorStats,
  worker?: Worker,
  prefix = "etl_coordination_",
  host?: ProcessSample,
): string {
  const r = new MetricsRegistry(prefix, { splitlease_job: status.job });
  const draining = status.held.filter((h) => h.draining).length;
  r.gauge("info", "Identity of this worker: instance id and session (value is always 1).").set(1, {
    worker: status.instance,
    session: status.session,
  });
  r.gauge("up", "1 while the coordinator is starting, running or draining.").set(
    status.state === "failed" || status.state === "stopped" ? 0 : 1,
  );
  r.gauge("connected", "1 while heartbeats succeed.").set(status.connected ? 1 : 0);
  r.gauge("leader", "1 on the leader, the one replica that exports the job-wide gauges.").set(status.isLeader ? 1 : 0);
  r.gauge("splits_owned", "Splits held by this instance.").set(status.held.length);
  r.gauge("splits_owned_weight", "Total weight of the splits held by this instance.").set(
    status.held.reduce((s, h) => s + h.weight, 0),
  );
  r.gauge("idle", "1 when this instance holds no split.").set(status.held.length === 0 ? 1 : 0);
  r.gauge("splits_draining", "Held splits under revocation.").set(draining);
  // Job-wide: only the leader knows them first hand (members hold a copy from
  // its last heartbeat); exported once, by the leader, so sum() and max() agree.
  // Of a sharded job each shard's leader exports its shard's, labelled `shard`
  // (members lead different shards): sum the split counts over `shard`.
  const led = status.shards
    ? status.shards.filter((x) => x.isLeader).map((x) => ({
      labels: { shard: String(x.index) },
      counts: x.counts,
      members: x.members,
      stalled: x.outcome === "stalled",
      paused: x.paused,
    }))
    : status.isLeader
    ? [{ labels: {}, counts: status.counts, members: status.members, stalled: status.outcome === "stalled", paused: status.paused === true }]
    : [];
  type Led = (typeof led)[number];
  const jobWide = (name: string, help: string, value: (x: Led) => number) => {
    const g = r.gauge(name, `${help} Job-wide, exported by the leader only.`);
    for (const x of led) g.set(value(x), x.labels);
  };
  jobWide("splits_planned", "Splits in the published plan.", (x) => x.counts.planned);
  jobWide("splits_runnable", "Runnable splits (owned or not).", (x) => x.counts.runnable);
  jobWide("splits_unclaimed", "Runnable splits with no live owner (the backlog).", (x) => x.counts.unclaimed);
  jobWide("splits_completed", "Completed splits.", (x) => x.counts.completed);
  jobWide("splits_quarantined", "Quarantined (poison) splits.", (x) => x.counts.quarantined);
  jobWide("splits_cancelled", "Cancelled splits.", (x) => x.counts.cancelled);
  jobWide("live_workers", "Live members, standbys included.", (x) => x.members);
  jobWide(
    "job_stalled",
    "1 while the job's outcome is stalled (only quarantined splits left; cleared by a requeue or cancel), else 0.",
    (x) => (x.stalled ? 1 : 0),
  );
  jobWide(
    "job_paused",
    "1 while an operator has paused the job (nothing new is dealt, claimed or decided; splitlease resume lifts it), else 0.",
    (x) => (x.paused ? 1 : 0),
  );
  const counterBy = (name: string, help: string, label: string, known: readonly string[], values: Record<string, number>) => {
    const c = r.counter(name, help);
    for (const k of known) c.set(values[k] ?? 0, { [label]: k });
    for (const [k, v] of Object.entries(values)) if (!known.includes(k)) c.set(v, { [label]: k });
  };
  counterBy("acquisitions_total", "Splits gained, by reason.", "reason", KNOWN_LABEL_VALUES.acquisitions, stats.acquisitions);
  counterBy("split_losses_total", "Splits lost, by reason.", "reason", KNOWN_LABEL_VALUES.losses, stats.losses);
  r.counter("releases_total", "Graceful releases.").set(stats.releases);
  counterBy("revocations_total", "Revocations, by outcome.", "outcome", KNOWN_LABEL_VALUES.revocations, stats.revocations);
  counterBy("writes_total", "Store writes, by outcome.", "outcome", KNOWN_LABEL_VALUES.writes, stats.writes);
  r.counter("self_fences_total", "Self-fences after heartbeat starvation.").set(stats.selfFences);
  r.counter("leader_passes_total", "The leader's full passes while this instance led (one per ownership or membership change, none per progress commit).").set(stats.leaderPasses);
  r.counter("claim_attempts_total", "Ownership writes tried (claims, resumes, a leader's takeovers), won or lost.").set(stats.claimAttempts);
  r.counter("records_replaced_total", "Unreadable control records replaced by CAS.").set(stats.recordsReplaced);
  r.counter("plan_failures_total", "Failed planner runs while leading.").set(stats.planFailures);
  const ops = r.histogram("store_op_duration_seconds", "Store operation latency, by op.");
  for (const op of KNOWN_LABEL_VALUES.storeOps) ops.set(stats.storeOpSeconds[op] ?? newHistogram(), { op });
  for (const [op, h] of Object.entries(stats.storeOpSeconds)) {
    if (!(KNOWN_LABEL_VALUES.storeOps as readonly string[]).includes(op)) ops.set(h, { op });
  }
  r.histogram("handover_seconds", "Steal requested to thief gained.").set(stats.handoverSeconds);
  const cuts = r.counter("cuts_total", "Cuts of running splits' remaining work, by outcome: asked (while leading), performed, declined.");
  cuts.set(stats.cuts?.asked ?? 0, { outcome: "asked" });
  cuts.set(stats.cuts?.performed ?? 0, { outcome: "performed" });
  cuts.set(worker?.stats().cuts?.declined ?? 0, { outcome: "declined" });
  if (worker) {
    const w = worker.stats();
    r.gauge("lanes_running", "Lanes running now.").set(w.running);
    r.gauge("lanes_queued", "Gained splits waiting for a free lane.").set(w.queued);
    r.counter("lanes_abandoned_total", "Lanes that ignored their abort beyond the grace period.").set(w.abandoned);
    r.counter("lane_failures_total", "Failed tenancies (thrown run, fail, bad descriptor).").set(w.failed);
    r.counter("lane_commits_total", "Progress writes that landed.").set(w.commits);
    r.counter("records_committed_total", "Records covered by commits that landed.").set(w.recordsCommitted);
    r.counter("splits_completed_here_total", "Splits completed by this worker.").set(w.completed);
  }
  if (host) {
    // Rendered when the host measures them (serve does); a value not known yet has no sample.
    const gauge = (name: string, help: string, value: number | undefined) => {
      const g = r.gauge(name, help);
      if (value !== undefined && Number.isFinite(value)) g.set(value);
    };
    gauge("heap_used_bytes", "JavaScript heap in use (bytes), as the runtime reports it.", host.heapUsedBytes);
    gauge("heap_total_bytes", "JavaScript heap reserved (bytes), as the runtime reports it.", host.heapTotalBytes);
    gauge("resident_memory_bytes", "Resident set size of the process (bytes).", host.residentBytes);
    gauge("event_loop_lag_seconds", "How late the last event-loop probe timer fired (seconds).", host.eventLoopLagSeconds);
    gauge(
      "event_loop_lag_max_seconds",
      "The largest event-loop lag measured in the last 10 seconds (seconds).",
      host.eventLoopLagMaxSeconds,
    );
  }
  return r.render();
}
