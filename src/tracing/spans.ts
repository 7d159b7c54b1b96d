/**
 * What the spans of one coordinator share (tracer, job, owner, clock, and
 * whether anything records), and the two shapes of a traced store
 * operation: a child span, or an event of the span that caused it.
 *
 * @module
 */
import { type Attributes, type Context, context, ROOT_CONTEXT, type Span, type SpanContext, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";
import type { OpTrace, StoreOp } from "./cause.ts";

/** The instrumentation scope name of splitlease's spans. */
export const TRACER_NAME = "@splitlease/splitlease";

/** Monotonic milliseconds (the coordinator's clock). */
export interface MonotonicClock {
  /** Monotonic milliseconds (never goes back). */
  now(): number;
}

/** What every span of one coordinator (and its worker) shares. */
export interface TraceEnv {
  /** Where spans come from: the global provider's tracer (a no-op without an SDK). */
  readonly tracer: Tracer;
  /** The job (`splitlease.job` on every span). */
  readonly job: string;
  /** This worker's instance id (`splitlease.owner`). */
  readonly owner: string;
  /** Monotonic time, for durations and for cutting long spans into parts. */
  readonly clock: MonotonicClock;
  /**
   * Whether spans are made at all: decided once, when the coordinator joins
   * (the global provider is the API's no-op unless an SDK was registered
   * before). Checked first by every hook, so tracing off costs a branch.
   */
  enabled: boolean;
}

/** A context whose active span is `parent` (an explicit parent: no context manager needed). */
export function under(parent: Span): Context {
  return trace.setSpan(ROOT_CONTEXT, parent);
}

/**
 * Runs `fn` with `span` active: spans `fn` starts (synchronously, or across
 * its awaits when a context manager is registered) nest under it.
 */
export function within<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** Span attributes from structured fields: primitives as they are, anything else as JSON, keys under `splitlease.`. */
export function attributes(fields: Record<string, unknown>): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined || v === null) continue;
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

/** Records `error` on `span` (an `exception` event with its stack) and sets its status to error. */
export function failSpan(span: Span, error: unknown, message?: string): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: message ?? (error instanceof Error ? error.message : String(error)) });
}

/** A store operation as a child span of `parent` (`splitlease.store.<op>`). */
export function opSpan(env: TraceEnv, parent: Span, op: StoreOp, key: string, extra?: Attributes): OpTrace {
  const span = env.tracer.startSpan(`splitlease.store.${op}`, {
    attributes: { "splitlease.job": env.job, "splitlease.store.op": op, "splitlease.store.key": key, ...extra },
  }, under(parent));
  return {
    end(outcome, error) {
      span.setAttribute("splitlease.outcome", outcome);
      if (error !== undefined) failSpan(span, error);
      span.end();
    },
  };
}

/** A store operation as an event of `span`, added when it ends, with its duration (heartbeats: no span each). */
export function opEvent(env: TraceEnv, span: Span, op: StoreOp, key: string): OpTrace {
  const t0 = env.clock.now();
  return {
    end(outcome, error) {
      const attrs: Attributes = {
        "splitlease.store.key": key,
        "splitlease.outcome": outcome,
        "splitlease.store.ms": Math.round(env.clock.now() - t0),
      };
      if (error !== undefined) attrs["splitlease.error"] = error instanceof Error ? error.message : String(error);
      span.addEvent(`splitlease.store.${op}`, attrs);
    },
  };
}

/**
 * The W3C `traceparent` of a span context
 * (`00-<trace id>-<span id>-<flags>`), or `undefined` for an invalid one
 * (no SDK).
 */
export function traceparentOf(sc: SpanContext): string | undefined {
  if (!trace.isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}
