/**
 * The span of one tenancy (`splitlease.tenancy`: one split held by this
 * worker at one epoch). The coordinator opens it when the split is gained
 * and says how the tenancy ended; the worker's lane attaches to it, runs
 * the source's `run()` inside its context and says how the run ended. The
 * span ends when both are done, so it covers the run that outlives its
 * tenancy (a lost split whose run is still stopping) and the write that
 * outlives its run (a release after the run returned).
 *
 * @module
 */
import { type Attributes, type Span, SpanStatusCode } from "@opentelemetry/api";
import type { SplitRecord } from "../records.ts";
import type { Cause, OpTrace, StoreOp } from "./cause.ts";
import { SpanCause } from "./span_cause.ts";
import { failSpan, type TraceEnv, traceparentOf, within } from "./spans.ts";

/** Outcomes that are failures of the split (error status). */
const FAILED = new Set(["failed", "quarantined", "abandoned"]);

/** One tenancy's span. */
export class TenancyTrace implements Cause {
  /** The span (the source's spans nest under it). */
  readonly span: Span;
  readonly splitId: string;
  readonly epoch: number;
  /** The coordinator's hold, plus the lane's once attached. */
  #holders = 1;
  #ended = false;
  /** The coordinator's tenancy ended (its hold released). */
  #finished = false;
  #outcome: string | undefined;
  #reason: string | undefined;
  /** An exception the lane recorded (its message is the status). */
  #error: string | undefined;
  /** Its store operations, as children within a budget. */
  readonly #ops: SpanCause;

  /** Told once the coordinator's tenancy ended (nothing new attaches then). */
  readonly #onFinish: (t: TenancyTrace) => void;

  /** Wraps the tenancy span of `splitId` at `epoch`; `onFinish` is told when the coordinator's tenancy ends. */
  constructor(env: TraceEnv, span: Span, splitId: string, epoch: number, onFinish: (t: TenancyTrace) => void) {
    this.span = span;
    this.#ops = new SpanCause(env, span);
    this.splitId = splitId;
    this.epoch = epoch;
    this.#onFinish = onFinish;
  }

  /** A store operation of the tenancy as a child span, within its budget. */
  op(op: StoreOp, key: string): OpTrace | undefined {
    return this.#ops.op(op, key);
  }

  /**
   * The cause of one write of the tenancy: its store operations carry
   * `splitlease.write` (`commit`, `complete`, `release`, `fail`, `cut`,
   * `residual`); a `terminal` one is traced even past the budget.
   */
  write(kind: string, terminal: boolean): Cause {
    const attrs = { "splitlease.write": kind };
    return { op: (op, key) => this.#ops.op(op, key, attrs, terminal) };
  }

  /** Adds an event (a revocation, a handoff, a store outage). */
  event(name: string, attributes?: Attributes): void {
    if (this.span.isRecording()) this.span.addEvent(name, attributes);
  }

  /** Records an error of the run or of the split (an `exception` event with its stack; error status). */
  exception(error: unknown): void {
    if (!this.span.isRecording()) return;
    this.span.recordException(error instanceof Error ? error : String(error));
    this.#error ??= error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  }

  /** The lane takes a hold (it runs the source); `undefined` once the span ended. */
  attach(): this | undefined {
    if (this.#ended) return undefined;
    this.#holders++;
    return this;
  }

  /** The lane settled (its run returned, or it was abandoned): releases its hold. */
  detach(): void {
    this.#release();
  }


  /** The lane was abandoned: its run ignored the abort past the grace period. */
  abandoned(reason: string): void {
    this.#outcome = "abandoned";
    this.#reason = reason;
  }

  /**
   * The coordinator's tenancy ended `outcome` (`completed`, `released`,
   * `failed`, `quarantined`, `lost`, `orphaned`, `stopped`), for `reason`
   * when one is known: releases its hold. A failure without an exception
   * recorded gets one with its reason (there is no stack to give).
   */
  finish(outcome: string, reason?: string): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#onFinish(this);
    this.#outcome ??= outcome;
    if (reason !== undefined) this.#reason ??= reason;
    if ((outcome === "failed" || outcome === "quarantined") && this.#error === undefined) this.exception(reason ?? outcome);
    this.#release();
  }

  /**
   * A terminal write of the tenancy landed, `next` over `prev`: it ended
   * `completed`, `quarantined`, `failed` (an attempt charged, the reason
   * its last failure) or `released` — a `handoff` event naming the
   * successor the record now names, else a `release` event.
   */
  wrote(prev: SplitRecord, next: SplitRecord): void {
    if (next.status === "completed") return this.finish("completed");
    if (next.status === "quarantined") return this.finish("quarantined", next.lastFailure);
    if (next.attempts > prev.attempts) return this.finish("failed", next.lastFailure);
    this.event(next.owner ? "handoff" : "release", next.owner ? { "splitlease.to": next.owner.instance } : undefined);
    this.finish("released");
  }

  /** Runs `fn` with the span active (spans `fn` starts nest under it when a context manager is registered). */
  run<T>(fn: () => T): T {
    return within(this.span, fn);
  }

  /** The W3C `traceparent` of the span (`undefined` without an SDK). */
  get traceparent(): string | undefined {
    return traceparentOf(this.span.spanContext());
  }

  #release(): void {
    if (this.#ended || --this.#holders > 0) return;
    this.#ended = true;
    const span = this.span;
    const outcome = this.#outcome ?? "stopped";
    span.setAttribute("splitlease.outcome", outcome);
    if (this.#reason !== undefined) span.setAttribute("splitlease.reason", this.#reason);
    this.#ops.settle();
    if (FAILED.has(outcome) || this.#error !== undefined) {
      if (outcome === "abandoned" && this.#error === undefined) failSpan(span, this.#reason ?? outcome);
      else span.setStatus({ code: SpanStatusCode.ERROR, message: this.#error ?? this.#reason ?? outcome });
    }
    span.end();
  }
}
