/**
 * Text output of the `splitlease` CLI for a person (pure; `--json` prints
 * the values themselves).
 *
 * @module
 */
import type { FleetSummary } from "../fleet/fleet_figures.ts";
import type { FleetSplit } from "../fleet/fleet_split.ts";
import type { FleetView } from "../fleet/types.ts";
import type { JobSummary } from "../fleet/job_summary.ts";
import type { JobOutcome, JobRun } from "../records.ts";

/** Left-aligned columns, two spaces apart. */
export function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join("  ").trimEnd();
  return [line(head), ...rows.map(line)].join("\n");
}

const iso = (ms: number) => new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");

/** A duration for a person: 0.3 s, 42 s, 3 min 07 s, 2 h 05 min, 3 d 4 h. */
export function duration(ms: number): string {
  // Under 10 s to a tenth, as the fleet page says it: a job of a few
  // seconds "took 0 s" beside a rate measured over it.
  if (ms < 10_000) return `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min` + (s % 60 ? ` ${String(s % 60).padStart(2, "0")} s` : "");
  const h = Math.floor(m / 60);
  return h < 48 ? `${h} h ${String(m % 60).padStart(2, "0")} min` : `${Math.floor(h / 24)} d ${h % 24} h`;
}

const num = (n: number) => Math.round(n).toLocaleString("en-US");

/**
 * The result line of a job (`status` once it has one, the done page says
 * the same): records, retries, failures, cuts, how long it took and the rate
 * over that same time.
 */
export function formatSummary(s: FleetSummary, completed: number): string {
  const parts = [
    `${num(completed)} split(s) completed`,
    s.splitsWithRecords > 0 ? `${num(s.records)} records` : "no records reported",
    `${s.retries} retr${s.retries === 1 ? "y" : "ies"}`,
    `${s.failures} failure(s)`,
    `${s.cuts} cut(s)`,
  ];
  if (s.tookMs !== null) {
    const rate = [
      s.perMinute !== null ? `${s.perMinute.toFixed(1)} splits/min` : "",
      s.recordsPerSecond !== null ? `${num(s.recordsPerSecond)} records/s` : "",
    ].filter(Boolean).join(", ");
    parts.push(`took ${duration(s.tookMs)}` + (rate ? ` (${rate} over that time)` : ""));
  }
  return parts.join(" · ");
}

/** What an outcome skipped, as a parenthesis (`" (1 cancelled, 2 permanent)"`), or `""` when nothing. */
export function skippedText(s: { cancelled: number; permanent: number }): string {
  const parts = [s.cancelled ? `${num(s.cancelled)} cancelled` : "", s.permanent ? `${num(s.permanent)} permanently failed` : ""].filter(Boolean);
  return parts.length ? ` (${parts.join(", ")})` : "";
}

/** `splitlease status`. */
export function formatStatus(job: string, v: FleetView): string {
  const c = v.counts;
  const pct = c.weight > 0 ? Math.floor((100 * c.completedWeight) / c.weight) : 0;
  const out: string[] = [];
  out.push(`job ${job}${v.fingerprint ? ` (fingerprint ${v.fingerprint})` : " (no worker has joined yet)"}`);
  out.push(
    `leader ${v.leader ? `${v.leader.instance} (term ${v.leader.term}, beat ${v.leader.beat})` : "none"} · ` +
      (v.plan
        ? (v.plan.run > 1 ? `run ${v.plan.run} · ` : "") + `plan ${v.plan.finality}, ${v.plan.planned} planned, generation ${v.plan.generation}` +
          (v.plan.outcome ? ` · outcome ${v.plan.outcome}${skippedText(v.plan.result.skipped)}` : "")
        : "no plan yet"),
  );
  const paused = v.plan?.result.paused;
  if (paused) {
    out.push(
      `PAUSED since ${iso(paused.at)}${paused.by ? ` by ${paused.by}` : ""}${paused.reason ? `: ${paused.reason}` : ""} · ` +
        "nothing new is dealt or claimed and no outcome is decided; splitlease resume to continue",
    );
  }
  // A finished job leads with what it did (a summary knows only its counts: the rest is in the split records).
  if (v.plan?.outcome === "allComplete" || (v.rate.eta.state === "done" && c.total > 0)) {
    out.push(v.basis === "beat"
      ? `result: ${num(c.completed)} split(s) completed (records, retries, failures and how long it took: splitlease status --full)`
      : `result: ${formatSummary(v.summary, c.completed)}`);
  }
  out.push(
    `splits ${c.total}: ${c.completed} completed, ${c.runnable} runnable (${c.owned} owned, ${c.unclaimed} unclaimed), ` +
      `${c.quarantined} quarantined${c.permanent ? ` (${c.permanent} permanent)` : ""}, ${c.cancelled} cancelled` +
      (c.invalid ? `, ${c.invalid} unreadable` : "") +
      ` (${pct}% of the weight completed)`,
  );
  if (c.quarantined > 0) {
    if (v.rate.eta.thenStalled) out.push(`  the job stalls on them once the runnable work is done, unless they are requeued or cancelled`);
    out.push(`  see them: splitlease splits --state quarantined; requeue: splitlease requeue --all`);
  }
  if (v.basis === "beat") out.push(...summaryLines(v));
  out.push("");
  if (v.members.length === 0) out.push("no members");
  else {
    const past = v.members.filter((m) => m.liveness === "gone" || m.liveness === "unresponsive").length;
    out.push(
      `members (${v.members.length}${past ? `, ${past} past their lease` : ""}); a member whose last beat is older than its lease ` +
        "is unresponsive while splits still name it, then gone",
    );
    out.push(table(
      ["INSTANCE", "RUNTIME", "VERSION", "SPLITS", "LAST SEEN", "STATE"],
      v.members.map((m) => [
        m.instance + (m.leader ? " (leader)" : ""),
        m.runtime,
        m.version,
        `${m.owned}/${m.maxInFlight}`,
        m.lastBeatAt === null ? `beat ${m.beat}` : `${duration(v.at - m.lastBeatAt)} ago`,
        m.ui && m.liveness !== "gone" && m.liveness !== "unresponsive" ? "ui" : m.activity,
      ]),
    ));
  }
  for (const i of v.invalid) out.push(`unreadable record ${i.key}: ${i.message}`);
  if (v.shards) out.push("", ...shardLines(v));
  if (v.plan?.history.length) {
    out.push("", "earlier runs:");
    for (const r of v.plan.history) out.push(`  ${runLine(r)}`);
  }
  return out.join("\n");
}

/** A sharded job's shards under its `status`: each one's records, where it stands, its leader and counts. */
function shardLines(v: FleetView): string[] {
  const shards = v.shards!;
  return [
    `shards (${shards.length}; each with its own leader and records)`,
    table(
      ["SHARD", "RECORDS OF", "STATE", "LEADER", "COMPLETED", "RUNNABLE", "QUARANTINED", "CANCELLED"],
      shards.map((s) => [
        String(s.index),
        s.job,
        s.state,
        s.leader ? `${s.leader.instance} (term ${s.leader.term})` : "none",
        `${num(s.counts.completed)}/${num(s.planned || s.counts.total)}`,
        num(s.counts.runnable),
        num(s.counts.quarantined),
        num(s.counts.cancelled),
      ]),
    ),
  ];
}

/**
 * What a summary of a large job adds to `status` (its counts are the
 * leader's beat, or the outcome's): the rate and ETA the beat carries, and
 * where the rest is.
 */
function summaryLines(v: FleetView): string[] {
  const r = v.rate, e = r.eta;
  const rate = r.perMinute === null ? "no rate yet" : `${r.perMinute.toFixed(1)} splits/min over the last ${duration(r.windowMs)}`;
  const eta = e.state === "estimated" && e.at !== null
    ? `ETA ${iso(e.at)} (in ${duration(e.inMs ?? 0)})${e.thenStalled ? ", then stalled on the quarantined splits" : ""}`
    : e.state === "unknown" ? "ETA unknown (nothing completed lately)" : e.state === "stalled" ? "stalled: only quarantined splits are left" : "";
  const source = v.plan?.outcome && v.plan.outcome !== "planFailed" ? "the outcome's counts" : v.leader ? `the leader's beat ${v.leader.beat}` : "no leader beat yet";
  return [
    [rate, eta].filter(Boolean).join(" · "),
    `counts from ${source} (a job of more than 10,000 splits: no split record read; splitlease status --full reads them all)`,
  ];
}

/** An outcome in a few words: "allComplete 20 completed (1 cancelled)". */
function outcomeWords(o: JobOutcome): string {
  if (o.kind === "planFailed") return `planFailed after ${o.attempts} attempt(s)`;
  const skipped = skippedText({ cancelled: o.cancelled ?? 0, permanent: o.kind === "stalled" ? o.permanent ?? 0 : 0 });
  return `${o.kind} ${num(o.completed)} completed` + (o.kind === "stalled" ? `, ${num(o.quarantined)} quarantined` : "") + skipped;
}

/** One earlier run: its number, outcome, records, failures and when it finished. */
export function runLine(r: JobRun): string {
  return [
    `run ${r.run}: ${outcomeWords(r.outcome)} of ${num(r.planned)} planned`,
    r.records !== undefined ? `${num(r.records)} records` : "",
    r.failures ? `${r.failures} failure(s)` : "",
    r.tookMs !== undefined ? `took ${duration(r.tookMs)}` : "",
    `finished ${iso(r.finishedAt)}`,
  ].filter(Boolean).join(" · ");
}

function progress(s: FleetSplit): string {
  if (!s.progress) return "-";
  return s.progress.watermark === null ? "(state)" : String(s.progress.watermark);
}

/** A failure under its split: when, who, what, and the stack's first frame (the rest is in `--json`). */
function failureLines(f: FleetSplit["failures"][number]): string[] {
  const line = `    ${iso(f.at)} ${f.worker}${f.permanent ? " (permanent)" : ""}: ${f.message}`;
  const first = f.stack?.split("\n", 1)[0];
  if (!first) return [line];
  const more = f.stack!.includes("\n") ? " (full stack: --json)" : "";
  return [line, `      ${first}${more}`];
}

/**
 * A split's state as `splits` prints it, in the words of the query: a
 * runnable split is `runnable` when the query asked for `runnable`, else
 * `owned` or `unclaimed` (the words `status` counts it by).
 */
export function stateWord(s: FleetSplit, asked: readonly string[] | null): string {
  return s.status === "runnable" && asked?.includes("runnable") ? "runnable" : s.state;
}

/** `splitlease splits`. */
export function formatSplits(v: FleetView): string {
  const out: string[] = [];
  const what = [v.page.state ? v.page.state.join(",") : "all", v.page.owner ? `owned by ${v.page.owner}` : ""].filter(Boolean).join(" ");
  if (v.splits.length === 0) return `no splits (${what})`;
  const rows: string[][] = [];
  const failures = new Map<number, string[]>();
  for (const s of v.splits) {
    // A permanent quarantine says so in its state: requeueing it without fixing its input fails again.
    const state = stateWord(s, v.page.state) + (s.permanent ? " (permanent)" : "");
    rows.push([s.id, state, s.owner ?? "-", String(s.epoch), String(s.attempts), progress(s), s.descriptor ?? "(spec record)", s.parent ?? "-"]);
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

const when = (ms: number | null) => (ms === null ? "-" : iso(ms));

/** `splitlease jobs`. */
export function formatJobs(jobs: readonly JobSummary[]): string {
  if (jobs.length === 0) return "no jobs (no splitlease_* bucket on this server)";
  const rows = jobs.map((j) => [
    // A sharded job is one line, its shard count beside its name; a shard listed on its own says whose it is.
    j.job + (j.shards ? ` (${j.shards} shards)` : j.shard ? ` (shard ${j.shard.index} of ${j.shard.count})` : ""),
    j.run === null ? "-" : String(j.run),
    j.state,
    j.counts ? `${num(j.counts.completed)}/${j.planned === null ? "?" : num(j.planned)}` : j.planned === null ? "-" : `?/${num(j.planned)}`,
    // What the job skipped: "done except 1 cancelled" is not "all done".
    j.counts ? String(j.counts.cancelled) : "-",
    j.counts ? String(j.counts.quarantined) + (j.counts.permanent ? ` (${j.counts.permanent} permanent)` : "") : "-",
    `${j.liveMembers.length}/${j.members}`,
    when(j.createdAt),
    when(j.finishedAt),
    j.bytes === null ? "-" : j.bytes < 1e6 ? `${Math.ceil(j.bytes / 1000)} kB` : `${(j.bytes / 1e6).toFixed(1)} MB`,
  ]);
  // The runs before each job's current one (its generations), under the table.
  const earlier = jobs.flatMap((j) => j.history.map((r) => `  ${j.job} ${runLine(r)}`));
  const problems = jobs.flatMap((j) => (j.problem ? [`  ${j.job}: ${j.problem}`] : []));
  return table(["JOB", "RUN", "STATE", "COMPLETED", "CANCELLED", "QUARANTINED", "LIVE/MEMBERS", "CREATED", "FINISHED", "SIZE"], rows) +
    (problems.length ? "\n\nproblems:\n" + problems.join("\n") : "") +
    (earlier.length ? "\n\nearlier runs:\n" + earlier.join("\n") : "") +
    "\n\nrun a finished job again: splitlease rerun NAME (its history is kept), then start its workers";
}
