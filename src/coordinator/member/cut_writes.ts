/**
 * A cut in flight on a tenancy (docs/DESIGN.md, "Stragglers"): every later
 * write of the tenancy carries it until it lands, and the owner creates the
 * residuals' records once it has.
 *
 * @module
 */
import type { Residual, SplitRecord } from "../../records.ts";
import type { Core } from "../core.ts";
import { cutRecord, pruneResiduals, residualRecord } from "../cuts.ts";
import type { Tenancy } from "./tenancy.ts";

/**
 * Every write of a tenancy carries its cut until one lands (so a final
 * commit after a cut lost to an outage still records the residuals its
 * lane stopped short of), and drops the residuals seen to exist.
 */
export function carryCut(t: Tenancy, make: (r: SplitRecord) => SplitRecord): (r: SplitRecord) => SplitRecord {
  if (!t.cut && !t.created?.size) return make;
  return (r) => {
    let x = r;
    if (t.cut && !t.cut.landed) x = cutRecord(x, t.cut.cut);
    if (t.created?.size) x = pruneResiduals(x, t.created);
    return make(x);
  };
}

/**
 * A write of tenancy `t` of split `id` landed `record`: once it lists every
 * residual of the cut in flight, the cut has landed (counted, logged) and
 * the residuals' records are created.
 */
export function cutLanded(core: Core, id: string, t: Tenancy, record: SplitRecord): void {
  const c = t.cut;
  if (!c || c.landed) return;
  const listed = new Set((record.residuals ?? []).map((x) => x.id));
  if (!c.cut.residuals.every((x) => listed.has(x.id) || t.created?.has(x.id))) return;
  c.landed = true;
  core.stats.cuts.performed++;
  core.log("info", "Cut a split's remaining work", { split: id, epoch: t.epoch, residuals: c.cut.residuals.map((x) => x.id) });
  const mine = new Set(c.cut.residuals.map((x) => x.id));
  void createResiduals(core, id, t, (record.residuals ?? []).filter((x) => mine.has(x.id)));
}

/** Creates the residuals' records (if absent: the leader may have been first); those that exist go into `t.created`. */
export async function createResiduals(core: Core, parent: string, t: Tenancy, residuals: readonly Residual[]): Promise<void> {
  const { splits, log } = core;
  const cause = t.trace?.write("residual", false);
  await Promise.all(residuals.map(async (r) => {
    try {
      const w = await splits.create(r.id, residualRecord(parent, t.record, r), "residual", cause);
      const there = w.ok ? undefined : await splits.read(r.id, cause);
      if (!w.ok && there?.record.parent !== parent) {
        log("error", "A residual's id is taken by another split; the leader retries it", { split: parent, residual: r.id });
        return;
      }
      (t.created ??= new Set()).add(r.id);
    } catch (e) {
      // The record still lists it: the leader creates it.
      log("warn", "Creating a residual failed; the leader creates it", { split: parent, residual: r.id, error: String(e) });
    }
  }));
}
