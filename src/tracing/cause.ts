/**
 * What caused a store operation (docs/OPERATIONS.md, "Tracing"): the span a
 * coordinator's store call is traced under — a tenancy, a leadership term,
 * the membership — or the span it is an event of (heartbeats). The cause is
 * passed with each call rather than found in an async context: no context
 * manager is a Web standard, and a coordinator's tasks (timers, watch
 * handlers) would not carry one anyway.
 *
 * @module
 */
import type { DeleteResult, KeyFilter, Store, StoreEntry, TransactionWork, WriteResult } from "../store/store.ts";

/** A store operation, as its span is named (`splitlease.store.<op>`). */
export type StoreOp = "create" | "update" | "updateInTransaction" | "delete" | "get" | "list";

/** One traced store operation, ended once with how it went. */
export interface OpTrace {
  /** Ends it: `outcome` as in docs/OPERATIONS.md ("Tracing"), and the error it threw, if any. */
  end(outcome: string, error?: unknown): void;
}

/** Where the trace of a store operation goes. */
export interface Cause {
  /** Starts tracing `op` on `key`, or `undefined` when it is not traced (tracing off, the span's budget spent). */
  op(op: StoreOp, key: string): OpTrace | undefined;
}

/**
 * A store whose operations may name their {@linkcode Cause} (the
 * coordinator's instrumented store). A store that ignores the extra
 * argument (every backend) fits too.
 */
export interface CausedStore extends Store {
  /** As {@linkcode Store.create}, traced under `cause`. */
  create(key: string, value: string, cause?: Cause): Promise<WriteResult>;
  /** As {@linkcode Store.update}, traced under `cause`. */
  update(key: string, value: string, revision: number, cause?: Cause): Promise<WriteResult>;
  /** As {@linkcode Store.delete}, traced under `cause`. */
  delete(key: string, revision?: number, cause?: Cause): Promise<DeleteResult>;
  /** As {@linkcode Store.get}, traced under `cause`. */
  get(key: string, cause?: Cause): Promise<StoreEntry | undefined>;
  /** As {@linkcode Store.list}, traced under `cause`. */
  list(filter: KeyFilter, cause?: Cause): Promise<StoreEntry[]>;
  /** As {@linkcode Store.updateInTransaction}, traced under `cause` (present when the store has it). */
  readonly updateInTransaction?: CausedUpdateInTransaction;
}

/** {@linkcode Store.updateInTransaction} with the {@linkcode Cause} it is traced under. */
export type CausedUpdateInTransaction = (
  key: string,
  value: string,
  revision: number,
  work: TransactionWork,
  cause?: Cause,
) => Promise<WriteResult>;

/**
 * `store` with every operation traced under `cause` unless the call names
 * another: what one part of a coordinator (the leader of a term, a
 * planner run, the heartbeat) is given, made once per part, not per call.
 * Closing it closes nothing (the store is its owner's).
 */
export function causedStore(store: CausedStore, cause: Cause): CausedStore {
  const inTx = store.updateInTransaction;
  return {
    ...(inTx ? { updateInTransaction: (key: string, value: string, revision: number, work: TransactionWork, c?: Cause) => inTx(key, value, revision, work, c ?? cause) } : {}),
    create: (key, value, c) => store.create(key, value, c ?? cause),
    update: (key, value, revision, c) => store.update(key, value, revision, c ?? cause),
    delete: (key, revision, c) => store.delete(key, revision, c ?? cause),
    get: (key, c) => store.get(key, c ?? cause),
    list: (filter, c) => store.list(filter, c ?? cause),
    watch: (filter) => store.watch(filter),
    close: () => Promise.resolve(),
    [Symbol.asyncDispose]: () => Promise.resolve(),
  };
}
