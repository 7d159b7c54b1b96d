/**
 * Typed errors of splitlease. Every error carries a stable `code` so callers
 * can branch without matching message text.
 *
 * Expected outcomes (a lost compare-and-swap, a key that already exists) are
 * never errors: the store returns them as result values. Errors are for
 * outages, corrupt data, bad input and lost ownership.
 *
 * @module
 */

/**
 * Stable machine-readable codes of {@linkcode SplitleaseError}.
 *
 * `STORE_UNAVAILABLE` is an outage (retrying later may work);
 * `STORE_AUTH_FAILED` means the store refused the credentials, or the
 * permissions the job needs (its bucket's subjects), which no retry fixes:
 * `NatsStore.connect` throws it at once, and `serve` exits 1.
 *
 * @example
 * ```ts
 * import { SplitleaseError } from "@splitlease/splitlease";
 * import { type ErrorCode } from "@splitlease/splitlease/store";
 * const code: ErrorCode = new SplitleaseError("INVALID_ARGUMENT", "bad watermark").code;
 * ```
 *
 * @example
 * ```ts
 * import { SplitleaseError } from "@splitlease/splitlease";
 * import { NatsStore } from "@splitlease/splitlease/nats";
 * try {
 *   await NatsStore.connect({ servers: "ws://worker:wrong@127.0.0.1:8080", job: "backfill" });
 * } catch (e) {
 *   if (e instanceof SplitleaseError && e.code === "STORE_AUTH_FAILED") console.error("fix the credentials:", e.message);
 * }
 * ```
 */
export type ErrorCode =
  | "STORE_UNAVAILABLE"
  | "STORE_AUTH_FAILED"
  | "INVALID_RECORD"
  | "VALUE_TOO_LARGE"
  | "INVALID_KEY"
  | "INVALID_CONFIG"
  | "FENCED"
  | "FINGERPRINT_MISMATCH"
  | "INCOMPATIBLE_LAYOUT"
  | "PLAN_FAILED"
  | "DUPLICATE_INSTANCE"
  | "UNSUPPORTED_SERVER"
  | "INVALID_ARGUMENT"
  | "CLOSED";

/**
 * Base class of every error splitlease throws on purpose.
 *
 * @example
 * ```ts
 * import { SplitleaseError } from "@splitlease/splitlease";
 * try {
 *   // ...
 * } catch (e) {
 *   if (e instanceof SplitleaseError && e.code === "FENCED") {
 *     // stop working on the split
 *   }
 * }
 * ```
 */
export class SplitleaseError extends Error {
  /** Stable code naming the kind of failure. */
  readonly code: ErrorCode;
  /** Creates an error with a code and a message. */
  constructor(code: ErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/**
 * The store could not be reached, or an operation did not finish within its
 * timeout. The operation may or may not have been applied.
 *
 * @example
 * ```ts
 * import { StoreUnavailableError } from "@splitlease/splitlease";
 * const e = new StoreUnavailableError("update", 5000);
 * console.log(e.message); // Store operation "update" failed: the store is unavailable (timeout 5000 ms)
 * ```
 */
export class StoreUnavailableError extends SplitleaseError {
  /** The store operation that failed (`create`, `update`, ...). */
  readonly op: string;
  /** The operation timeout in milliseconds. */
  readonly timeoutMs: number;
  /** Creates the error for `op` with its timeout. */
  constructor(op: string, timeoutMs: number, options?: ErrorOptions & { detail?: string }) {
    super(
      "STORE_UNAVAILABLE",
      // "after N ms" would be wrong for a refusal that came at once: name the bound instead.
      `Store operation "${op}" failed: the store is unavailable (timeout ${timeoutMs} ms)` +
        (options?.detail ? ` (${options.detail})` : ""),
      options,
    );
    this.op = op;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * A store operation failed because the job's records are gone from the
 * server: its NATS bucket does not exist any more (`splitlease delete`,
 * `nats kv del`). It is a {@linkcode StoreUnavailableError}, so whatever
 * waits out an outage treats it as one; the fleet routes tell it apart to
 * say that the job is gone rather than that the store does not answer.
 *
 * @example
 * ```ts
 * import { JobGoneError, StoreUnavailableError } from "./errors.ts";
 * const e = new JobGoneError("list", 5000, { detail: "bucket splitlease_backfill does not exist" });
 * console.log(e instanceof StoreUnavailableError, e.code); // true STORE_UNAVAILABLE
 * ```
 */
export class JobGoneError extends StoreUnavailableError {
  /** What is gone, in a few words (`bucket splitlease_backfill does not exist any more`). */
  readonly reason: string;
  /** Creates the error for `op`; `detail` says what is gone. */
  constructor(op: string, timeoutMs: number, options: ErrorOptions & { detail: string }) {
    super(op, timeoutMs, options);
    this.reason = options.detail;
  }
}

/**
 * Whether `e` (or what caused it, up to five causes deep) is the store not
 * answering ({@linkcode StoreUnavailableError}): a write may have landed,
 * and a lane stopped by it is not the split's fault.
 *
 * @example
 * ```ts ignore
 * isStoreOutage(new Error("commit failed", { cause: new StoreUnavailableError("update", 500) })); // true
 * ```
 */
export function isStoreOutage(e: unknown): boolean {
  for (let c = e, depth = 0; c instanceof Error && depth < 5; c = c.cause, depth++) {
    if (c instanceof StoreUnavailableError) return true;
  }
  return false;
}

/**
 * One problem found in a record, as reported by the schema validator.
 *
 * @example
 * ```ts
 * import { InvalidRecordError, type RecordIssue } from "@splitlease/splitlease/admin";
 * const issue: RecordIssue = { path: ["epoch"], message: "expected number" };
 * console.log(new InvalidRecordError("split.a", "bad shape", [issue]).message);
 * ```
 */
export interface RecordIssue {
  /** Path of the offending field, e.g. `["owner", "session"]`. */
  path: PropertyKey[];
  /** What is wrong with it. */
  message: string;
}

/**
 * A value read from the store is not valid JSON or does not match the record
 * schema for its key.
 *
 * @example
 * ```ts
 * import { InvalidRecordError } from "@splitlease/splitlease/admin";
 * const e = new InvalidRecordError("split.a", "not JSON", []);
 * console.log(e.key); // split.a
 * ```
 */
export class InvalidRecordError extends SplitleaseError {
  /** The key whose value is invalid. */
  readonly key: string;
  /** Every schema issue found (empty when the value is not JSON at all). */
  readonly issues: RecordIssue[];
  /** Creates the error naming `key`, a reason and the issues. */
  constructor(key: string, reason: string, issues: RecordIssue[], options?: ErrorOptions) {
    const detail = issues.length
      ? ": " + issues.map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`).join("; ")
      : "";
    super("INVALID_RECORD", `Invalid record at key "${key}": ${reason}${detail}`, options);
    this.key = key;
    this.issues = issues;
  }
}

/**
 * A value exceeds the store's value size limit.
 *
 * @example
 * ```ts
 * import { ValueTooLargeError } from "@splitlease/splitlease/store";
 * const e = new ValueTooLargeError("spec.a", 300000, 262144);
 * console.log(e.size > e.limit); // true
 * ```
 */
export class ValueTooLargeError extends SplitleaseError {
  /** The key being written. */
  readonly key: string;
  /** The encoded value size in bytes. */
  readonly size: number;
  /** The store's largest value in bytes, which `size` exceeds. */
  readonly limit: number;
  /** Creates the error for `key` with the size and limit (and a message that says more, if given). */
  constructor(key: string, size: number, limit: number, message?: string) {
    super(
      "VALUE_TOO_LARGE",
      message ?? `Value for key "${key}" is too large: ${size} bytes exceeds the limit of ${limit} bytes`,
    );
    this.key = key;
    this.size = size;
    this.limit = limit;
  }
}

/**
 * A key, key prefix, split id or instance id is not well formed.
 *
 * @example
 * ```ts
 * import { InvalidKeyError } from "@splitlease/splitlease/store";
 * const e = new InvalidKeyError("a b", "contains a space");
 * console.log(e.code); // INVALID_KEY
 * ```
 */
export class InvalidKeyError extends SplitleaseError {
  /** The key the store refused (as given). */
  readonly key: string;
  /** Creates the error naming the key and why it is invalid. */
  constructor(key: string, reason: string) {
    super("INVALID_KEY", `Invalid key ${JSON.stringify(key)}: ${reason}`);
    this.key = key;
  }
}

/**
 * A commit (or release) was rejected because the split's epoch moved: another
 * owner holds it now. Nothing was written. Stop processing the split.
 *
 * @example
 * ```ts
 * import { FencedError } from "@splitlease/splitlease";
 * const e = new FencedError("s1", 3, 4);
 * console.log(e.message); // Commit to split "s1" was fenced: epoch 3 is stale, the split is at epoch 4
 * ```
 */
export class FencedError extends SplitleaseError {
  /** The split that was lost. */
  readonly splitId: string;
  /** The epoch the caller held. */
  readonly epoch: number;
  /** The epoch found in the store (or -1 when the record is gone). */
  readonly currentEpoch: number;
  /** Creates the error for a stale `epoch` against `currentEpoch`. */
  constructor(splitId: string, epoch: number, currentEpoch: number, detail?: string) {
    super(
      "FENCED",
      `Commit to split "${splitId}" was fenced: ` +
        (detail ?? `epoch ${epoch} is stale, the split is at epoch ${currentEpoch}`),
    );
    this.splitId = splitId;
    this.epoch = epoch;
    this.currentEpoch = currentEpoch;
  }
}

/**
 * Thrown (or passed to `lane.fail`) by a source whose split cannot succeed
 * however often it runs — a 404, a schema violation, input malformed for
 * good: the split is quarantined at once (one attempt charged, the one
 * that failed; no retry, no backoff), with this error's message and stack
 * in its failure history marked `permanent`, until an operator requeues or
 * cancels it. BullMQ's `UnrecoverableError`, Temporal's non-retryable
 * errors. Any other error that carries `permanent: true` counts the same
 * (an error class of your own, or one from another copy of this package).
 *
 * @example
 * ```ts
 * import { PermanentFailure, type SplitSource } from "@splitlease/splitlease";
 * const source: SplitSource<{ url: string }> = {
 *   fingerprint: () => "fetch-v1",
 *   plan: () => Promise.resolve({ finality: "final", splits: [{ id: "a", descriptor: { url: "https://example.com/a" } }] }),
 *   async run(lane) {
 *     const res = await fetch(lane.descriptor.url);
 *     if (res.status === 404) throw new PermanentFailure(`${lane.descriptor.url}: 404, it will not appear by retrying`);
 *     await lane.complete({ watermark: 1 });
 *   },
 * };
 * ```
 */
export class PermanentFailure extends Error {
  /** Always `true`: what {@linkcode isPermanentFailure} looks for. */
  readonly permanent = true as const;
  /** Creates the error with its message (and `cause`, if given). */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "PermanentFailure";
  }
}

/**
 * Whether `e` says its split can never succeed: a {@linkcode PermanentFailure},
 * or any object with `permanent: true` (checked by property, not by class,
 * so a copy of the package loaded twice still agrees).
 *
 * @example
 * ```ts
 * import { isPermanentFailure, PermanentFailure } from "./errors.ts";
 * isPermanentFailure(new PermanentFailure("404")); // true
 * isPermanentFailure(Object.assign(new Error("schema"), { permanent: true })); // true
 * isPermanentFailure(new Error("ECONNRESET")); // false
 * ```
 */
export function isPermanentFailure(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { permanent?: unknown }).permanent === true;
}
