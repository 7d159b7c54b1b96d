/**
 * Completion (DESIGN §9): a final plan whose every split completed is
 * `allComplete`; nothing runnable but quarantined splits left is `stalled`.
 * Announced once, on every worker, after an authoritative listing confirms it.
 *
 * @module
 */
import { safeDecodeRecord, SplitRecordSchema } from "../records.ts";
import { keys } from "../store/keys.ts";
import type { Core } from "./core.ts";

/** Watches for the end of a bounded job. */
export class Completion {
  readonly #core: Core;
  #outcome: "allComplete" | "stalled" | null = null;
  #confirming = false;

  /** Creates the detector of a coordinator. */
  constructor(core: Core) {
    this.#core = core;
  }

  /** The job outcome once announced. */
  get outcome(): "allComplete" | "stalled" | null {
    return this.#outcome;
  }

  /** Checks the view; confirms by listing and announces when the job ended. */
  async check(): Promise<void> {
    const { view, store, events, log } = this.#core;
    const plan = view.plan?.record;
    if (this.#outcome || this.#confirming || !plan || plan.finality !== "final" || plan.generation === 0) return;
    if (view.statusCounts.runnable > 0 || view.splits.size < plan.planned) return;
    this.#confirming = true;
    try {
      let completed = 0, quarantined = 0, runnable = 0;
      for (const e of await store.list(keys.splitPrefix)) {
        const r = safeDecodeRecord(e.key, e.value, SplitRecordSchema);
        // An unreadable record cannot be proven complete: it blocks completion.
        if (!r.ok) runnable++;
        else if (r.value.status === "completed") completed++;
        else if (r.value.status === "quarantined") quarantined++;
        else runnable++;
      }
      if (runnable > 0 || completed + quarantined < plan.planned || this.#outcome) return;
      if (quarantined === 0) {
        this.#outcome = "allComplete";
        events.push({ type: "allComplete" });
        log("info", "Job complete", { completed });
      } else {
        this.#outcome = "stalled";
        events.push({ type: "stalled", completed, quarantined });
        log("error", "Job stalled on quarantined splits", { completed, quarantined });
      }
    } finally {
      this.#confirming = false;
    }
  }
}
