/**
 * A split's spec (its descriptor) as a worker reads it before running it:
 * inline in the split record, or from `spec.<id>` for large descriptors,
 * re-read a few times when missing (a lagging replica can answer before
 * the spec exists) and cached per worker.
 *
 * @module
 */
import { SpecRecordSchema, type SplitRecord, safeDecodeRecord } from "../../records.ts";
import { keys } from "../../store/keys.ts";
import type { Core } from "../core.ts";
import type { SplitSpec } from "../types.ts";

/** Re-reads of a missing spec before the split is handed back (a lagging replica can answer too early). */
const SPEC_RETRIES_MS = [20, 100, 400];
/** Specs cached per worker (the cache starts over past it). */
const CACHE_LIMIT = 4096;

/** Reads and caches split specs for one worker. */
export class SpecReader {
  readonly #core: Core;
  #cache = new Map<string, SplitSpec>();

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * The split's spec: inline in the record, or read from `spec.<id>`
   * (cached). A missing spec is re-read a few times (a lagging replica can
   * answer before the spec exists); what is still missing or unreadable comes
   * back as a message. Outages throw.
   */
  async read(id: string, rec: SplitRecord): Promise<SplitSpec | string> {
    if (!rec.spec) return rec.root ? { id, descriptor: rec.descriptor ?? null, weight: rec.weight, root: rec.root } : { id, descriptor: rec.descriptor ?? null, weight: rec.weight };
    const cached = this.#cache.get(id);
    if (cached) return cached;
    const key = keys.spec(id);
    for (let i = 0;; i++) {
      const entry = await this.#core.store.get(key);
      if (entry) {
        const r = safeDecodeRecord(key, entry.value, SpecRecordSchema);
        if (!r.ok) return "unreadable: " + r.error.message;
        const spec: SplitSpec = { id, descriptor: r.value.descriptor, weight: rec.weight };
        if (this.#cache.size > CACHE_LIMIT) this.#cache.clear();
        this.#cache.set(id, spec);
        return spec;
      }
      if (i >= SPEC_RETRIES_MS.length) return `missing: spec record "${key}" is missing`;
      await new Promise<void>((res) => this.#core.clock.setTimeout(res, SPEC_RETRIES_MS[i]));
    }
  }
}
