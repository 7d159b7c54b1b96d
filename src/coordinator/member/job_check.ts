/**
 * The `job` record at join: created by the first joiner, then checked by
 * every later one — a bucket written by another record layout or another
 * job's fingerprint is refused before anything else is read or written.
 *
 * @module
 */
import { SplitleaseError, StoreUnavailableError } from "../../errors.ts";
import { encodeRecord, type JobRecord, JobRecordSchema, RECORD_LAYOUT, safeDecodeRecord } from "../../records.ts";
import { keys } from "../../store/keys.ts";
import type { Store } from "../../store/store.ts";
import type { Core } from "../core.ts";

/**
 * Library version advertised on member records.
 *
 * @example
 * ```ts
 * import { VERSION } from "@splitlease/splitlease/admin";
 * console.log(VERSION);
 * ```
 */
export const VERSION = "0.2.0";

/**
 * Creates the `job` record, or checks the one in the store: its layout
 * (`INCOMPATIBLE_LAYOUT`) and fingerprint (`FINGERPRINT_MISMATCH`).
 */
export async function checkJobRecord(core: Core): Promise<void> {
  const { store, config, clock } = core;
  const { shard } = core;
  const want: JobRecord = { v: RECORD_LAYOUT, fingerprint: config.fingerprint, createdAt: clock.wallNow() };
  if (shard.count > 1) want.shard = { index: shard.index, count: shard.count };
  let cur = await store.get(keys.job);
  if (!cur) {
    const r = await store.create(keys.job, encodeRecord(want));
    if (r.ok) return;
    cur = await store.get(keys.job);
    if (!cur) throw new StoreUnavailableError("get", config.opTimeoutMs, { detail: `job record "job" vanished while joining` });
  }
  const raw = (() => {
    try {
      return JSON.parse(cur.value) as { v?: unknown };
    } catch {
      return undefined;
    }
  })();
  if (raw && typeof raw.v === "number" && raw.v !== RECORD_LAYOUT) {
    throw new SplitleaseError(
      "INCOMPATIBLE_LAYOUT",
      `Job "${config.job}" was written with record layout ${raw.v}${raw.v === 2 ? " (progress kept in the split records)" : ""}; ` +
        `this splitlease (${VERSION}) reads layout ${RECORD_LAYOUT} only${RECORD_LAYOUT === 3 ? " (progress in records of its own)" : ""}. ` +
        `Finish the job with the version that started it, or start it again under a new job name`,
    );
  }
  const job = safeDecodeRecord(keys.job, cur.value, JobRecordSchema);
  if (!job.ok) throw job.error;
  if (job.value.fingerprint !== config.fingerprint) {
    throw new SplitleaseError(
      "FINGERPRINT_MISMATCH",
      `Job "${config.job}" belongs to another job: the store holds fingerprint ${
        JSON.stringify(job.value.fingerprint)
      }, this worker has ${JSON.stringify(config.fingerprint)}`,
    );
  }
  // A member of another shard count would route splits to other shards than the fleet does: some never run, some twice.
  const held = job.value.shard ?? { index: 0, count: 1 };
  if (held.count !== shard.count || held.index !== shard.index) {
    throw new SplitleaseError(
      "INVALID_CONFIG",
      `Job "${config.job}" is ${held.count === 1 ? "not sharded" : `shard ${held.index} of a job of ${held.count} shards`}; ` +
        `this worker joins it as ${shard.count === 1 ? "an unsharded job" : `shard ${shard.index} of ${shard.count}`}. ` +
        `Every member of a job must use the same \`shards\` (${held.count}), or start the job again under a new name`,
    );
  }
}

/**
 * Refuses a store bound to another job than the one the coordinator was
 * given (`INVALID_CONFIG` naming both): data in one job's bucket while logs,
 * metrics and the CLI speak of another is a mistake nothing else reports.
 * A store that binds no job (`MemoryStore`) passes.
 *
 * @example
 * ```ts ignore
 * checkStoreJob(store, "backfill"); // throws when store.job is "other"
 * ```
 */
export function checkStoreJob(store: Store, job: string): void {
  const bound = store.job;
  if (bound === undefined || bound === job) return;
  throw new SplitleaseError(
    "INVALID_CONFIG",
    `The store is bound to job ${JSON.stringify(bound)} but was given job ${JSON.stringify(job)}: ` +
      "name the job once (connect the store with the job you join, or join the store's job)",
  );
}
