/**
 * A long-lived activity traced as a run of bounded spans ("parts"): a
 * worker's membership lasts as long as the process, a leadership term as
 * long as the leader, and a span is exported only when it ends. So each
 * part ends after {@linkcode PART_MS}, or once it has
 * {@linkcode PART_CHILDREN} store operations as children or
 * {@linkcode PART_EVENTS} events, and the next part (same name,
 * `splitlease.part` one higher, linked to the one before) goes on: a
 * trace stays small, and what happened is exported within minutes. Parts
 * roll over lazily, when something is recorded: no timer of their own.
 *
 * @module
 */
import { type Attributes, type Link, ROOT_CONTEXT, type Span } from "@opentelemetry/api";
import type { Cause, OpTrace, StoreOp } from "./cause.ts";
import { failSpan, opEvent, opSpan, type TraceEnv, under } from "./spans.ts";

/** Longest a part lasts (ms): what it recorded is exported at most this late. */
export const PART_MS = 10 * 60_000;
/** Most store operations a part has as child spans. */
export const PART_CHILDREN = 100;
/** Most events a part has (below the SDK's default limit of 128 per span). */
export const PART_EVENTS = 100;

/** One long-lived activity, as parts. */
export class SpanParts implements Cause {
  readonly #env: TraceEnv;
  readonly #name: string;
  readonly #attributes: Attributes;
  readonly #parent: (() => Span | undefined) | undefined;
  #span: Span | undefined;
  #startedAt = 0;
  #part = 0;
  #children = 0;
  #events = 0;
  #closed = false;
  /** Store operations recorded as events of the current part (heartbeats). */
  readonly events: Cause;

  /** Parts named `name` with `attributes`, each a child of `parent()` when given (else a root). */
  constructor(env: TraceEnv, name: string, attributes: Attributes, parent?: () => Span | undefined) {
    this.#env = env;
    this.#name = name;
    this.#attributes = { ...attributes };
    this.#parent = parent;
    this.events = { op: (op, key) => this.#opEvent(op, key) };
  }

  /** The current part (rolled over if it is due), or `undefined` once closed or when tracing is off. */
  get span(): Span | undefined {
    if (this.#closed || !this.#env.enabled) return undefined;
    if (this.#span === undefined || this.#due()) this.#roll();
    return this.#span;
  }

  /** Sets `attributes` on this part and every later one (a term known once it was written). */
  set(attributes: Attributes): void {
    Object.assign(this.#attributes, attributes);
    this.#span?.setAttributes(attributes);
  }

  /** Opens the first part now, whether or not tracing is on yet (the membership decides it from this span). */
  start(): Span {
    this.#roll();
    return this.#span!;
  }

  /** A store operation as a child span of the current part. */
  op(op: StoreOp, key: string): OpTrace | undefined {
    const span = this.span;
    if (span === undefined || !span.isRecording()) return undefined;
    this.#children++;
    return opSpan(this.#env, span, op, key);
  }

  #opEvent(op: StoreOp, key: string): OpTrace | undefined {
    const span = this.span;
    if (span === undefined || !span.isRecording()) return undefined;
    this.#events++;
    return opEvent(this.#env, span, op, key);
  }

  /** Adds an event to the current part. */
  event(name: string, attributes?: Attributes): void {
    const span = this.span;
    if (span === undefined || !span.isRecording()) return;
    this.#events++;
    span.addEvent(name, attributes);
  }

  /** Ends the last part with `attributes` (its outcome) and, given one, the error it ended with; later calls do nothing. */
  close(attributes: Attributes, error?: unknown): void {
    if (this.#closed) return;
    this.#closed = true;
    const span = this.#span;
    this.#span = undefined;
    if (!span) return;
    span.setAttributes(attributes);
    if (error !== undefined) failSpan(span, error);
    span.end();
  }

  #due(): boolean {
    return this.#children >= PART_CHILDREN || this.#events >= PART_EVENTS ||
      this.#env.clock.now() - this.#startedAt >= PART_MS;
  }

  #roll(): void {
    const prev = this.#span;
    if (prev) {
      prev.setAttribute("splitlease.continued", true);
      prev.end();
    }
    const parent = this.#parent?.();
    const links: Link[] = prev ? [{ context: prev.spanContext() }] : [];
    this.#span = this.#env.tracer.startSpan(this.#name, {
      attributes: { ...this.#attributes, "splitlease.part": ++this.#part },
      links,
    }, parent ? under(parent) : ROOT_CONTEXT); // a root whatever is active: a roll-over runs in whichever task records
    this.#startedAt = this.#env.clock.now();
    this.#children = 0;
    this.#events = 0;
  }
}
