/**
 * A span as the cause of store operations: each one a child span, up to a
 * budget (a planner run seeding 100,000 splits, a tenancy committing every
 * second for a day), past which they are only counted
 * (`splitlease.store.untraced`, set when the span ends).
 *
 * @module
 */
import type { Attributes, Span } from "@opentelemetry/api";
import type { Cause, OpTrace, StoreOp } from "./cause.ts";
import { opSpan, type TraceEnv } from "./spans.ts";

/** Most store operations a span has as children by default. */
export const SPAN_CHILDREN = 200;

/** Store operations as children of one span, within a budget. */
export class SpanCause implements Cause {
  readonly #env: TraceEnv;
  readonly #span: Span;
  readonly #budget: number;
  #children = 0;
  #untraced = 0;

  /** Children of `span`, at most `budget` of them. */
  constructor(env: TraceEnv, span: Span, budget: number = SPAN_CHILDREN) {
    this.#env = env;
    this.#span = span;
    this.#budget = budget;
  }

  /** A child span for `op` on `key` (with `attrs`), unless the budget is spent; `always` ignores the budget (a terminal write). */
  op(op: StoreOp, key: string, attrs?: Attributes, always = false): OpTrace | undefined {
    if (!this.#span.isRecording()) return undefined;
    if (!always && this.#children >= this.#budget) {
      this.#untraced++;
      return undefined;
    }
    this.#children++;
    return opSpan(this.#env, this.#span, op, key, attrs);
  }

  /** Notes on the span how many operations went untraced (call before ending it). */
  settle(): void {
    if (this.#untraced > 0) this.#span.setAttribute("splitlease.store.untraced", this.#untraced);
  }
}
