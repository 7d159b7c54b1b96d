/**
 * For store backends: the six primitives every coordination store
 * implements with the same semantics (NATS JetStream KV is the reference
 * model), their result and event types, the key rules, and the embedded
 * MemoryStore to test a backend against.
 *
 * @example
 * ```ts
 * import { MemoryStore, type Store } from "@splitlease/splitlease/store";
 * const store: Store = new MemoryStore();
 * const r = await store.create("plan", "{}");
 * if (r.ok) await store.update("plan", "{\"v\":2}", r.revision);
 * await store.close();
 * ```
 *
 * @module
 */
export {
  type DeleteResult,
  type KeyFilter,
  MAX_VALUE_BYTES,
  type Store,
  type StoreEntry,
  type TransactionWork,
  type Watch,
  type WatchEvent,
  type WriteResult,
} from "./src/store/store.ts";
export { MemoryStore, type MemoryStoreOptions } from "./src/store/memory_store.ts";
// A backend's view of a whole server: its jobs (`splitlease jobs`, `splitlease delete`).
export { type CatalogEntry, type JobCatalog, type JobListing, readJobListing } from "./src/store/job_catalog.ts";
export {
  assertValidFilter,
  assertValidId,
  assertValidKey,
  isValidId,
  matchesFilter,
  MAX_KEY_LENGTH,
} from "./src/store/keys.ts";
export { type ErrorCode, InvalidKeyError, SplitleaseError, StoreUnavailableError, ValueTooLargeError } from "./src/errors.ts";
