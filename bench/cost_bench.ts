// Cost per split (issue 32, item 2), one command: the peers bench
// (tiny tasks, hand-back) and the backfill bench (skewed input, with the
// no-coordination baseline) run once per NATS setup asked for
// (`--nats=current,2.9`), then the issue's ratios with their targets, each
// from figures of the same setup in the same run:
//
//   npm run bench -- cost --nats=current,2.9
//
//  - coordination CPU per split on the backfill: (workers + server CPU per
//    planned split) − the same workload with no coordination at all, for
//    splitlease with cuts (and with weights, no hook) ÷ the JetStream work
//    queue's; target ≤ 2;
//  - CPU per tiny task (workers + server) ÷ BullMQ's; target ≤ 1;
//  - tiny-task throughput ÷ BullMQ's at the same concurrency; target ≥ 0.9;
//  - hand-back p50 ÷ a NAK's (the work queue's), the holder leading and a
//    follower holding; target ≤ 1.5.
//
// The sub-benches run as child processes (their own knobs apply, e.g.
// BENCH_PEERS_TASKS); their lines are shown indented, their ::result rows
// are kept out of the summary (the full rows are in their results files).
// Env knobs: BENCH_COST_MIF [8,32] (peers' maxInFlight list),
// BENCH_COST_BACKFILL_SYSTEMS [cuts,weights,jetstream,none].
import { setupKinds } from "./_servers.ts";
import { percentile, result } from "./_common.ts";
import { bin, fileStamp, loadavg, root, writeResults } from "./_procs.ts";
import { eachLine } from "../tests/helpers/lines.ts";

const MIF = Deno.env.get("BENCH_COST_MIF") ?? "8,32";
const BF_SYSTEMS = Deno.env.get("BENCH_COST_BACKFILL_SYSTEMS") ?? "cuts,weights,jetstream,none";

/** Runs bench/<file> with `env`; resolves with the JSON of the results file it names. */
async function sub(file: string, env: Record<string, string>): Promise<Record<string, any>> {
  const child = new Deno.Command(bin("deno"), {
    args: ["run", "-A", `bench/${file}`],
    cwd: root,
    env: { ...env, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  let path = "";
  await eachLine(child.stdout, (line) => {
    const m = /^results: (\S+\.json)/.exec(line);
    if (m) path = m[1];
    if (!line.startsWith("::result ")) console.log(`  | ${line}`);
  });
  const status = await child.status;
  if (!path) throw new Error(`${file} wrote no results file (exit ${status.code})`);
  return JSON.parse(await Deno.readTextFile(path));
}

interface Tp {
  tasksPerSec: number;
  workerCpuMsPerTask: number;
  serverCpuMsPerTask: number;
}

const out: Record<string, unknown> = { started: fileStamp(), loadavgStart: loadavg() };
console.log(`cost bench: setups ${setupKinds().join(", ")}; load average ${out.loadavgStart} (other work on this machine moves every figure; read the ratios)`);
for (const kind of setupKinds()) {
  if (kind.endsWith("r3")) {
    console.log(`${kind}: skipped (the work-queue peer runs on one node)`);
    continue;
  }
  const label = kind === "current" ? "cost 2.15" : `cost ${kind}`;
  console.log(`\n== ${kind}: peers (tiny tasks, maxInFlight ${MIF}; hand-back) ==`);
  const peers = await sub("peers_bench.ts", { BENCH_NATS: kind, BENCH_PEERS_SCENARIOS: "throughput,handback", BENCH_PEERS_MIF: MIF });
  console.log(`\n== ${kind}: backfill (skewed; ${BF_SYSTEMS}) ==`);
  const backfill = await sub("backfill_bench.ts", { BENCH_NATS: kind, BENCH_BACKFILL_CONFIGS: "skewed", BENCH_BACKFILL_SYSTEMS: BF_SYSTEMS });
  out[kind] = { peers, backfill };

  console.log(`\n== ${kind}: ratios (one run) ==`);
  const rows = backfill.rows as { system: string; cpuPerSplit: number; config: string }[];
  const cpu = (s: string) => rows.find((r) => r.system === s && r.cpuPerSplit > 0)?.cpuPerSplit ?? NaN;
  const none = cpu("none"), queue = cpu("jetstream") - none;
  for (const s of ["cuts", "weights"].filter((s) => BF_SYSTEMS.split(",").includes(s))) {
    const own = cpu(s) - none;
    result({
      bench: label,
      metric: `backfill coordination CPU per split, splitlease ${s === "cuts" ? "with cuts" : "with weights"} ÷ JetStream work queue`,
      value: `${own.toFixed(1)} vs ${queue.toFixed(1)} ms (workers + server, less ${none.toFixed(1)} ms with no coordination)`,
      ratio: own / queue,
      target: "≤ 2",
    });
  }
  const tp = peers.throughput as Record<string, Record<string, Tp | undefined>>;
  for (const [key, by] of Object.entries(tp)) {
    const sl = by.splitlease, bull = by.bullmq;
    if (!sl || !bull) continue;
    const what = key.replace(/^mif(\d+)-(\w+)$/, "maxInFlight $1, planning $2");
    const c = (t: Tp) => t.workerCpuMsPerTask + t.serverCpuMsPerTask;
    result({
      bench: label,
      metric: `tiny tasks (${what}): CPU per task (workers + server), splitlease ÷ BullMQ`,
      value: `${c(sl).toFixed(3)} vs ${c(bull).toFixed(3)} ms`,
      ratio: c(sl) / c(bull),
      target: "≤ 1",
    });
    result({
      bench: label,
      metric: `tiny tasks (${what}): throughput, splitlease ÷ BullMQ`,
      value: `${sl.tasksPerSec.toFixed(0)} vs ${bull.tasksPerSec.toFixed(0)}/s`,
      ratio: sl.tasksPerSec / bull.tasksPerSec,
      target: "≥ 0.9",
    });
  }
  const hb = peers.handback as Record<string, number[]>;
  const nak = hb.jetstream?.length ? percentile(hb.jetstream, 50) : NaN;
  const layouts: [string, number[] | undefined][] = [["the holder leads", hb.splitlease], ["a follower holds", peers.handbackFollower]];
  for (const [who, xs] of layouts) {
    if (!xs?.length) continue;
    const p50 = percentile(xs, 50);
    result({
      bench: label,
      metric: `hand-back p50 (${who}) ÷ a NAK's`,
      value: `${p50.toFixed(1)} vs ${nak.toFixed(1)} ms`,
      ratio: p50 / nak,
      target: "≤ 1.5",
    });
  }
}
out.loadavgEnd = loadavg();
console.log(`\nload average at the end ${out.loadavgEnd}; results: ${await writeResults(`cost-${out.started}`, out)}`);
