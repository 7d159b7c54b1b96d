/**
 * The `job` record at join: created by the first joiner, then checked by
 * every later one — a bucket written by another record layout or another
 * job's fingerprint is refused before anything else is read or written.
 *
 * @module
 */
import { SplitleaseError, StoreUnavailableError } from "../errors.ts";
import { encodeRecord, JobRecordSchema, RECORD_LAYOUT, safeDecodeRecord } from "../records.ts";
import { keys } from "../store/keys.ts";
import type { Core } from "./core.ts";

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
  const want = { v: RECORD_LAYOUT, fingerprint: config.fingerprint, createdAt: clock.wallNow() };
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
      `Job "${config.job}" was written with record layout ${raw.v}; this splitlease (${VERSION}) reads layout ${RECORD_LAYOUT} ` +
        `only. Finish the job with the version that started it, or start it again under a new job name`,
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
}
