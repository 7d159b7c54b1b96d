/**
 * OpenTelemetry tracing of one coordinator and the worker that runs its
 * lanes, through `@opentelemetry/api` only (docs/OPERATIONS.md,
 * "Tracing"): the coordinator and the worker call these hooks directly.
 * With no SDK registered when the coordinator joins, every hook returns at
 * its first branch: nothing is made per heartbeat, commit or watch event.
 *
 * The tree of a worker:
 *
 * - `splitlease.membership` (a root; in parts of at most ten minutes, see
 *   span_parts.ts): the join's and the member side's store operations
 *   (claims, resumes, the leave) as child spans, each heartbeat's as an
 *   event; and, while this worker leads,
 *   - `splitlease.leadership` (one term, in parts): the leader's store
 *     operations, its decisions as events, its beats as events;
 *     - `splitlease.plan` (one planner run, the planner's own spans
 *       nested): the plan's reads, seeds and publish.
 * - `splitlease.tenancy` (a root, linked to the membership): one split held
 *   at one epoch; the source's `run()` inside its context, its writes
 *   (commits, the completion, the release or the failure) as child spans.
 *
 * @module
 */
import { type Span, trace, type Tracer } from "@opentelemetry/api";
import type { Owner } from "../records.ts";
import { SpanCause } from "./span_cause.ts";
import { SpanParts } from "./span_parts.ts";
import { attributes, type MonotonicClock, type TraceEnv, TRACER_NAME, under } from "./spans.ts";
import { TenancyTrace } from "./tenancy_trace.ts";

/** The tracing of one coordinator (and its worker). */
export class CoordinatorTrace {
  readonly #env: TraceEnv;
  /** The worker's membership: the default cause of its store operations. */
  readonly membership: SpanParts;
  #leadership: SpanParts | undefined;
  /** Open tenancy spans by split id (for the lane to attach to). */
  readonly #tenancies = new Map<string, TenancyTrace>();
  #left = false;

  /**
   * The tracing of `coordinator`, member `me` of `job` on `runtime`, made
   * as it joins (spans from `tracer`, default the global provider's): opens
   * the membership and decides whether tracing is on — it is when that span
   * has a valid context, i.e. an SDK made it (sampled or not).
   */
  constructor(coordinator: object, job: string, me: Owner, runtime: string, clock: MonotonicClock, tracer: Tracer = trace.getTracer(TRACER_NAME)) {
    this.#env = { tracer, job, owner: me.instance, clock, enabled: false };
    this.membership = new SpanParts(this.#env, "splitlease.membership", {
      "splitlease.job": job,
      "splitlease.owner": me.instance,
      "splitlease.session": me.session,
      "splitlease.runtime": runtime,
    });
    const span = this.membership.start();
    this.#env.enabled = trace.isSpanContextValid(span.spanContext());
    if (!this.#env.enabled) span.end();
    TRACES.set(coordinator, this);
  }

  /** Whether spans are made (an SDK was registered when the coordinator joined). */
  get enabled(): boolean {
    return this.#env.enabled;
  }

  /** An event of the membership (`self-fenced`, `heartbeat.restored`, `drain.requested`). */
  memberEvent(name: string, fields?: Record<string, unknown>): void {
    if (this.#env.enabled) this.membership.event(name, fields ? attributes(fields) : undefined);
  }

  /**
   * This worker won an election: a leadership span under the membership,
   * the cause of the leader's store operations (`undefined` when tracing
   * is off). A term still open ends `replaced`.
   */
  leadership(): SpanParts | undefined {
    if (!this.#env.enabled) return undefined;
    this.#leadership?.close({ "splitlease.outcome": "replaced" });
    const { job, owner } = this.#env;
    this.#leadership = new SpanParts(
      this.#env,
      "splitlease.leadership",
      { "splitlease.job": job, "splitlease.owner": owner },
      () => this.membership.span,
    );
    this.#leadership.start();
    return this.#leadership;
  }

  /** The term ended (`deposed`, `resigned`, `stopped`), for `reason` when given; later calls do nothing. */
  endLeadership(lead: SpanParts | undefined, outcome: string, reason?: string): void {
    if (!lead) return;
    lead.close(reason === undefined ? { "splitlease.outcome": outcome } : { "splitlease.outcome": outcome, "splitlease.reason": reason });
    if (this.#leadership === lead) this.#leadership = undefined;
  }

  /** A decision of the leader (`plan.published`, `takeover`, `split.quarantined`, …) as an event of its term. */
  decision(name: string, fields: Record<string, unknown>): void {
    if (this.#env.enabled) this.#leadership?.event(name, attributes(fields));
  }

  /**
   * One planner run of the current term: a `splitlease.plan` span under
   * it, ended by the caller; `undefined` when tracing is off.
   */
  planRun(term: number): Span | undefined {
    const parent = this.#env.enabled ? this.#leadership?.span : undefined;
    if (!parent) return undefined;
    return this.#env.tracer.startSpan("splitlease.plan", {
      attributes: { "splitlease.job": this.#env.job, "splitlease.owner": this.#env.owner, "splitlease.term": term },
    }, under(parent));
  }

  /** `span` as the cause of store operations (a planner run's), within the default budget. */
  spanCause(span: Span): SpanCause {
    return new SpanCause(this.#env, span);
  }

  /**
   * A tenancy began (`kind`: how the split came; `attempts` charged so far):
   * its span, a root linked to the membership, or `undefined` when tracing
   * is off. One still open for the split is superseded.
   */
  tenancy(splitId: string, epoch: number, kind: string, attempts: number): TenancyTrace | undefined {
    if (!this.#env.enabled) return undefined;
    const { tracer, job, owner } = this.#env;
    this.#tenancies.get(splitId)?.finish("superseded");
    const member = this.membership.span;
    const span = tracer.startSpan("splitlease.tenancy", {
      root: true,
      attributes: {
        "splitlease.job": job,
        "splitlease.split.id": splitId,
        "splitlease.split.epoch": epoch,
        "splitlease.owner": owner,
        "splitlease.acquired": kind,
        "splitlease.attempts": attempts,
      },
      links: member ? [{ context: member.spanContext() }] : [],
    });
    if (kind === "takeover" || kind === "reclaim") span.addEvent("takeover", { "splitlease.acquired": kind });
    else if (kind === "handoff") span.addEvent("handoff.received");
    const t = new TenancyTrace(this.#env, span, splitId, epoch, (done) => {
      if (this.#tenancies.get(splitId) === done) this.#tenancies.delete(splitId);
    });
    this.#tenancies.set(splitId, t);
    return t;
  }

  /** The lane of `splitId` at `epoch` takes a hold of its tenancy span (`undefined`: none open, or tracing off). */
  attach(splitId: string, epoch: number): TenancyTrace | undefined {
    if (!this.#env.enabled) return undefined;
    const t = this.#tenancies.get(splitId);
    if (!t || t.epoch !== epoch) return undefined;
    return t.attach();
  }

  /** The member left the job cleanly (its record deleted): the membership ends `left`. */
  left(): void {
    this.#left = true;
  }

  /**
   * The coordinator stopped (`stopped`, `failed`; `left` if it left the
   * job): the leadership and the membership end, the membership with the
   * error that stopped it (a failed join, a twin) when given; later calls
   * do nothing.
   */
  close(state: string, error?: unknown): void {
    this.endLeadership(this.#leadership, "stopped");
    this.membership.close({ "splitlease.outcome": this.#left ? "left" : state }, error);
  }
}

/** Each coordinator's tracing, for the worker that runs its lanes (no public surface). */
const TRACES = new WeakMap<object, CoordinatorTrace>();

/** The tracing of `coordinator` (a `SplitCoordinator`), or `undefined` for one that has none (a scripted one). */
export function traceOf(coordinator: object): CoordinatorTrace | undefined {
  return TRACES.get(coordinator);
}
