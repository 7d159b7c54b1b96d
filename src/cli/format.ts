/**
 * Text output of the `splitlease` CLI for a person (pure; `--json` prints
 * the values themselves).
 *
 * @module
 */
import type { FleetSplit, FleetView } from "../fleet/types.ts";

/** Left-aligned columns, two spaces apart. */
export function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join("  ").trimEnd();
  return [line(head), ...rows.map(line)].join("\n");
}

const iso = (ms: number) => new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");

/** `splitlease status`. */
export function formatStatus(job: string, v: FleetView): string {
  const c = v.counts;
  const pct = c.weight > 0 ? Math.floor((100 * c.completedWeight) / c.weight) : 0;
  const out: string[] = [];
  out.push(`job ${job}${v.fingerprint ? ` (fingerprint ${v.fingerprint})` : " (no worker has joined yet)"}`);
  out.push(
    `leader ${v.leader ? `${v.leader.instance} (term ${v.leader.term}, beat ${v.leader.beat})` : "none"} · ` +
      (v.plan
        ? `plan ${v.plan.finality}, ${v.plan.planned} planned, generation ${v.plan.generation}` +
          (v.plan.outcome ? ` · outcome ${v.plan.outcome}` : "")
        : "no plan yet"),
  );
  out.push(
    `splits ${c.total}: ${c.completed} completed, ${c.runnable} runnable (${c.owned} owned, ${c.unclaimed} unclaimed), ` +
      `${c.quarantined} quarantined, ${c.cancelled} cancelled` + (c.invalid ? `, ${c.invalid} unreadable` : "") +
      ` (${pct}% of the weight completed)`,
  );
  if (c.quarantined > 0) out.push(`  see them: splitlease splits --state quarantined; requeue: splitlease requeue --all`);
  out.push("");
  if (v.members.length === 0) out.push("no members");
  else {
    out.push(`members (${v.members.length}); liveness is judged by the leader: a beat that grows between two runs means alive`);
    out.push(table(
      ["INSTANCE", "RUNTIME", "VERSION", "SPLITS", "BEAT", "STATE"],
      v.members.map((m) => [
        m.instance + (m.leader ? " (leader)" : ""),
        m.runtime,
        m.version,
        `${m.owned}/${m.maxInFlight}`,
        String(m.beat),
        m.draining ? "draining" : m.maxInFlight === 0 ? "standby" : "",
      ]),
    ));
  }
  for (const i of v.invalid) out.push(`unreadable record ${i.key}: ${i.message}`);
  return out.join("\n");
}

function progress(s: FleetSplit): string {
  if (!s.progress) return "-";
  return s.progress.watermark === null ? "(state)" : String(s.progress.watermark);
}

/** A failure under its split: when, who, what, and the stack's first frame (the rest is in `--json`). */
function failureLines(f: FleetSplit["failures"][number]): string[] {
  const line = `    ${iso(f.at)} ${f.worker}: ${f.message}`;
  const first = f.stack?.split("\n", 1)[0];
  if (!first) return [line];
  const more = f.stack!.includes("\n") ? " (full stack: --json)" : "";
  return [line, `      ${first}${more}`];
}

/** `splitlease splits`. */
export function formatSplits(v: FleetView): string {
  const out: string[] = [];
  const what = [v.page.state ? v.page.state.join(",") : "all", v.page.owner ? `owned by ${v.page.owner}` : ""].filter(Boolean).join(" ");
  if (v.splits.length === 0) return `no splits (${what})`;
  const rows: string[][] = [];
  const failures = new Map<number, string[]>();
  for (const s of v.splits) {
    rows.push([s.id, s.status, s.owner ?? "-", String(s.epoch), String(s.attempts), progress(s), s.descriptor ?? "(spec record)", s.parent ?? "-"]);
    if (s.failures.length) failures.set(rows.length - 1, s.failures.flatMap(failureLines));
    else if (s.lastFailure) failures.set(rows.length - 1, [`    last failure: ${s.lastFailure}`]);
  }
  const lines = table(["SPLIT", "STATE", "OWNER", "EPOCH", "ATTEMPTS", "PROGRESS", "DESCRIPTOR", "CUT FROM"], rows).split("\n");
  out.push(lines[0]);
  lines.slice(1).forEach((l, i) => out.push(l, ...(failures.get(i) ?? [])));
  out.push("");
  out.push(
    `${v.splits.length} of ${v.page.matched} (${what})` +
      (v.page.next ? `; next page: --after ${v.page.next}` : ""),
  );
  return out.join("\n");
}
