/**
 * OpenTelemetry tracing of a served worker, through `@opentelemetry/api`
 * only: with no SDK registered every span is the API's no-op. What it
 * records (docs/OPERATIONS.md, "Tracing"):
 *
 * - a span per tenancy (`splitlease.tenancy`: one split held by this
 *   worker at one epoch, from its gain to its end), with the split id, the
 *   epoch, the owner, how it came and its outcome, and events for its
 *   commits (with their outcome), a takeover or handoff it came from, a
 *   revocation, the handoff it ends with;
 * - a span per store operation (`splitlease.store.<op>`) with its outcome:
 *   `landed`, `conflict`, `maybe-landed` (the store did not answer in time:
 *   the write may have landed) or `error` for writes; `found`, `absent`,
 *   `ok`, `unavailable` or `error` for reads;
 * - a span per leadership term (`splitlease.leadership`) with the leader's
 *   decisions as events (plans, steals, takeovers, fences, quarantines,
 *   the job's outcome).
 *
 * Tenancies and the leader's decisions are read from the structured log
 * lines the worker and the coordinator write anyway (their `event` field or
 * message), so tracing adds no hook to the protocol; commits come from the
 * coordinator's `commit`, store operations from the store.
 *
 * @module
 */
import { type Attributes, type Span, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";
import type { Coordinator, Logger } from "../coordinator/types.ts";
import { FencedError, StoreUnavailableError } from "../errors.ts";
import type { Store } from "../store/store.ts";

/** The instrumentation scope name of splitlease's spans. */
export const TRACER_NAME = "@splitlease/splitlease";

/** Leader log messages that are decisions, and the span event each becomes. */
const LEADER_DECISIONS: ReadonlyMap<string, string> = new Map([
  ["Plan published", "plan.published"],
  ["Planning failed; retrying", "plan.failed"],
  ["Planning failed for good: the job fails", "plan.failed_for_good"],
  ["Steal requested", "revocation.requested"],
  ["Fenced an owner that did not answer a revocation", "revocation.fenced"],
  ["Member judged dead: its record did not move for a lease", "member.judged_dead"],
  ["Taking over the splits of a member that is gone", "takeover"],
  ["Split quarantined", "split.quarantined"],
  ["Job outcome decided", "outcome.decided"],
  ["Job outcome cleared: the split records no longer support it", "outcome.cleared"],
  ["Re-sent grants to a member that may not know all its splits", "grants.resent"],
]);

/** Span attributes from log fields: primitives as they are, anything else as JSON, keys under `splitlease.`. */
function attributes(fields: Record<string, unknown>): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(fields)) {
    if (k === "event" || v === undefined || v === null) continue;
    const key = `splitlease.${k}`;
    if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") out[key] = v;
    else if (v instanceof Error) out[key] = v.message;
    else {
      try {
        out[key] = JSON.stringify(v);
      } catch {
        out[key] = String(v);
      }
    }
  }
  return out;
}

/** How a write ended, for its span and the tenancy's commit event. */
function writeOutcome(e: unknown): "fenced" | "maybe-landed" | "error" {
  if (e instanceof FencedError) return "fenced";
  for (let c = e, depth = 0; c instanceof Error && depth < 5; c = c.cause, depth++) {
    if (c instanceof StoreUnavailableError) return "maybe-landed";
  }
  return "error";
}

/**
 * The tracing of one served worker: wraps its logger, store and
 * coordinator, and keeps the open tenancy and leadership spans.
 */
export class Tracing {
  readonly #tracer: Tracer;
  readonly #job: string;
  #owner = "";
  /** Open tenancy spans by split id. */
  readonly #tenancies = new Map<string, Span>();
  #leadership: Span | undefined;

  /** Spans of job `job` from `tracer` (default: the global provider's, a no-op without an SDK). */
  constructor(job: string, tracer?: Tracer) {
    this.#job = job;
    this.#tracer = tracer ?? trace.getTracer(TRACER_NAME);
  }

  /** The instance id of this worker (known once it joined): the owner of its tenancies. */
  set owner(instance: string) {
    this.#owner = instance;
  }

  /** A logger that records what `next` is told as spans and events, then passes it on. */
  logger(next: Logger): Logger {
    return (level, message, fields) => {
      try {
        this.#observe(message, fields ?? {});
      } catch {
        // Tracing never breaks logging.
      }
      next(level, message, fields);
    };
  }

  /** The store with a span per operation. */
  store(store: Store): Store {
    const span = (op: string, attrs: Attributes) =>
      this.#tracer.startSpan(`splitlease.store.${op}`, { attributes: { "splitlease.job": this.#job, "splitlease.store.op": op, ...attrs } });
    const end = (s: Span, outcome: string, error?: unknown) => {
      s.setAttribute("splitlease.outcome", outcome);
      if (error !== undefined) {
        s.recordException(error instanceof Error ? error : String(error));
        s.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      }
      s.end();
    };
    const write = <T extends { ok: boolean }>(op: string, key: string, run: () => Promise<T>): Promise<T> => {
      const s = span(op, { "splitlease.store.key": key });
      return run().then(
        (r) => (end(s, r.ok ? "landed" : "conflict"), r),
        (e) => {
          end(s, writeOutcome(e) === "maybe-landed" ? "maybe-landed" : "error", e);
          throw e;
        },
      );
    };
    const read = <T>(op: string, attrs: Attributes, run: () => Promise<T>, outcome: (r: T) => string): Promise<T> => {
      const s = span(op, attrs);
      return run().then(
        (r) => (end(s, outcome(r)), r),
        (e) => {
          end(s, writeOutcome(e) === "maybe-landed" ? "unavailable" : "error", e);
          throw e;
        },
      );
    };
    const traced: Partial<Store> = {
      create: (key, value) => write("create", key, () => store.create(key, value)),
      update: (key, value, revision) => write("update", key, () => store.update(key, value, revision)),
      delete: (key, revision) => write("delete", key, () => store.delete(key, revision)),
      get: (key) => read("get", { "splitlease.store.key": key }, () => store.get(key), (r) => (r ? "found" : "absent")),
      list: (filter) =>
        read("list", { "splitlease.store.filter": typeof filter === "string" ? filter : JSON.stringify(filter) }, () => store.list(filter), () => "ok"),
    };
    // Everything else (watch, close, a backend's own members) is the store's own, bound to it.
    return new Proxy(store, {
      get(target, prop) {
        if (typeof prop === "string" && Object.hasOwn(traced, prop)) return traced[prop as keyof Store];
        const v = Reflect.get(target, prop, target);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  }

  /** The coordinator with each commit recorded as an event of its tenancy span. */
  coordinator<C extends Coordinator>(coordinator: C): C {
    const commit: Coordinator["commit"] = (splitId, epoch, progress, opts) => {
      const attrs = { "splitlease.split.epoch": epoch, "splitlease.final": opts?.final === true };
      return coordinator.commit(splitId, epoch, progress, opts).then(
        (r) => {
          this.#tenancies.get(splitId)?.addEvent("commit", { ...attrs, "splitlease.outcome": "landed" });
          return r;
        },
        (e) => {
          this.#tenancies.get(splitId)?.addEvent("commit", { ...attrs, "splitlease.outcome": writeOutcome(e) });
          throw e;
        },
      );
    };
    return new Proxy(coordinator, {
      get(target, prop) {
        if (prop === "commit") return commit;
        const v = Reflect.get(target, prop, target);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  }

  /** Ends the spans still open (the worker has finished): tenancies with outcome `stopped`. */
  end(): void {
    for (const id of [...this.#tenancies.keys()]) this.#endTenancy(id, "stopped", {});
    this.#endLeadership("stopped");
  }

  #observe(message: string, fields: Record<string, unknown>): void {
    const splitId = typeof fields.splitId === "string" ? fields.splitId : undefined;
    switch (fields.event) {
      case "gained":
        if (splitId) this.#startTenancy(splitId, fields);
        return;
      case "revocation":
        if (splitId) this.#tenancies.get(splitId)?.addEvent("revocation", attributes(fields));
        return;
      case "laneOutage":
        if (splitId) this.#tenancies.get(splitId)?.addEvent("store.outage", attributes(fields));
        return;
      case "completed":
        if (splitId) this.#endTenancy(splitId, "completed", fields);
        return;
      case "released":
        if (splitId) this.#endTenancy(splitId, "released", fields);
        return;
      case "lost":
        if (splitId) this.#endTenancy(splitId, "lost", fields);
        return;
      case "laneFailed":
      case "poison":
        if (splitId) this.#endTenancy(splitId, "failed", fields);
        return;
      case "quarantined":
        if (splitId) this.#endTenancy(splitId, "quarantined", fields);
        return;
      case "abandoned":
        if (splitId) this.#endTenancy(splitId, "abandoned", fields);
        return;
    }
    // The coordinator's lines (no `event` field): handoffs, leadership, the leader's decisions.
    if (message === "Released split" && typeof fields.split === "string") {
      const to = typeof fields.to === "string" ? fields.to : undefined;
      this.#tenancies.get(fields.split)?.addEvent(to ? "handoff" : "release", to ? { "splitlease.to": to } : {});
      return;
    }
    if (message === "Leader elected") {
      this.#endLeadership("replaced");
      this.#leadership = this.#tracer.startSpan("splitlease.leadership", {
        attributes: { "splitlease.job": this.#job, "splitlease.owner": this.#owner || String(fields.instance ?? ""), ...attributes({ term: fields.term }) },
      });
      return;
    }
    if (message === "Leader deposed") {
      this.#leadership?.setAttribute("splitlease.reason", String(fields.why ?? ""));
      this.#endLeadership("deposed");
      return;
    }
    if (message === "Left") {
      this.#endLeadership("left");
      return;
    }
    const decision = LEADER_DECISIONS.get(message);
    if (decision && fields.event === undefined) this.#leadership?.addEvent(decision, attributes(fields));
  }

  #startTenancy(splitId: string, fields: Record<string, unknown>): void {
    // A re-gain always carries a higher epoch: the tenancy before it is over.
    this.#endTenancy(splitId, "superseded", {});
    const kind = typeof fields.kind === "string" ? fields.kind : undefined;
    const span = this.#tracer.startSpan("splitlease.tenancy", {
      attributes: {
        "splitlease.job": this.#job,
        "splitlease.split.id": splitId,
        "splitlease.split.epoch": Number(fields.epoch),
        "splitlease.owner": this.#owner,
        ...(kind ? { "splitlease.acquired": kind } : {}),
        ...(typeof fields.attempts === "number" ? { "splitlease.attempts": fields.attempts } : {}),
      },
    });
    if (kind === "takeover" || kind === "reclaim") span.addEvent("takeover", { "splitlease.acquired": kind });
    else if (kind === "handoff") span.addEvent("handoff.received");
    this.#tenancies.set(splitId, span);
  }

  #endTenancy(splitId: string, outcome: string, fields: Record<string, unknown>): void {
    const span = this.#tenancies.get(splitId);
    if (!span) return;
    this.#tenancies.delete(splitId);
    span.setAttribute("splitlease.outcome", outcome);
    if (typeof fields.reason === "string") span.setAttribute("splitlease.reason", fields.reason);
    if (outcome === "failed" || outcome === "quarantined" || outcome === "abandoned") {
      const error = fields.error instanceof Error ? fields.error.message : fields.error === undefined ? outcome : String(fields.error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    }
    span.end();
  }

  #endLeadership(outcome: string): void {
    if (!this.#leadership) return;
    this.#leadership.setAttribute("splitlease.outcome", outcome);
    this.#leadership.end();
    this.#leadership = undefined;
  }
}
