#!/usr/bin/env node
/**
 * The `splitlease` command line: watch and repair a job from outside the
 * fleet, over the same store connection settings as the workers (NATS
 * URLs, a PostgreSQL `postgres://` URL, or a Redis `redis://` URL).
 *
 * ```sh
 * deno run -A cli.ts status --servers nats://nats:4222 --job backfill   # this repository
 * npx splitlease dev                                                    # a local nats-server
 * npx splitlease splits --state quarantined                            # in a project that installed the package
 * npx @splitlease/splitlease jobs                                      # anywhere else (NATS_URL set)
 * node dist/cli.js requeue --all --json
 * ```
 *
 * Commands, options and exit codes: `splitlease --help` (src/cli/args.ts).
 * It never creates a bucket (or a PostgreSQL job or schema): a mistyped job
 * name exits 1 naming it. Outside a project that depends on the package,
 * name the package itself (`npx @splitlease/splitlease …`): a bare
 * `npx splitlease` asks the npm registry for an unscoped package of that
 * name, which is not this one.
 *
 * @module
 */
import process from "node:process";
import type { CliOptions, Command } from "./src/cli/args.ts";
import type { SplitleaseError as SplitleaseErrorType } from "./src/errors.ts";
import type { Store } from "./src/store/store.ts";
import type { JobCatalog } from "./src/store/job_catalog.ts";
import type { JobShards } from "./src/fleet/job_shards.ts";
import type { BackendConnectOptions, StoreBackend } from "./cli/store_backends.ts";

/** Node.js 22 is the first with a global WebSocket, which the NATS client needs (package.json `engines`). */
const MIN_NODE_MAJOR = 22;
// Checked before anything else is loaded (everything below is a dynamic
// import): on Node 20 the command used to wait on a connection that could
// never open and exit 13 (an unsettled top-level await) without a word.
if (!("Deno" in globalThis) && !("Bun" in globalThis) && Number(process.versions.node?.split(".")[0]) < MIN_NODE_MAJOR) {
  process.stderr.write(
    `splitlease: needs Node.js ${MIN_NODE_MAJOR} or later (this is Node.js ${process.versions.node}); ` +
      "upgrade Node.js, or run it with Deno or Bun\n",
  );
  process.exit(1);
}

const { readFileSync } = await import("node:fs");
const { hostname } = await import("node:os");
const { CLI_EXIT, parseArgs, USAGE, UsageError } = await import("./src/cli/args.ts");
const { formatJobs, formatSplits, formatStatus, runLine } = await import("./src/cli/format.ts");
const { SplitleaseError } = await import("./src/errors.ts");
const { cancelSplitIn, drainMemberIn, pauseShards, requeueQuarantinedIn, requeueSplitIn, rerunShards, resumeShards } = await import(
  "./src/fleet/shard_actions.ts"
);
const { openJobShards } = await import("./src/fleet/job_shards.ts");
const { readJobOverview, readJobSplits } = await import("./src/fleet/shard_reads.ts");
const { UI_INSTANCE_PREFIX } = await import("./src/fleet/fleet_view.ts");
const { deleteRefusal, summarizeJob } = await import("./src/fleet/job_summary.ts");
const { listJobs, readJobListings, summarizeShards } = await import("./src/fleet/sharded_listings.ts");
const { VERSION } = await import("./src/coordinator/member/job_check.ts");
const { storeBackendOf } = await import("./cli/store_backends.ts");
const { SplitCoordinator } = await import("./src/coordinator/coordinator.ts");
const { ShardedCoordinator } = await import("./src/coordinator/sharded_coordinator.ts");
const { maxOpTimeoutMs } = await import("./src/coordinator/timings.ts");
const { waitForOutcome } = await import("./src/fleet/wait.ts");
const { jobResultOf } = await import("./src/fleet/job_result.ts");
const { EXIT_UNREACHABLE, exitCodeForResult, exitCodeForWait } = await import("./src/runtime/exit_codes.ts");
const { endLine, WaitDisplay } = await import("./src/cli/wait_display.ts");
const { jsonLogger } = await import("./src/util/logger.ts");

const out = (text: string) => process.stdout.write(text + "\n");
const err = (text: string) => process.stderr.write(text + "\n");

/** Exit code of an action's outcome. */
function exitOf(outcome: string): number {
  const done = ["requeued", "cancelled", "draining", "alreadyCancelled", "alreadyDraining", "paused", "alreadyPaused", "resumed", "notPaused", "rerun"];
  if (done.includes(outcome)) return CLI_EXIT.ok;
  return outcome === "conflict" ? CLI_EXIT.conflict : CLI_EXIT.notApplied;
}

/**
 * The backend of `--servers` / STORE_URL (src/store/store_urls.ts: a URL
 * no backend takes is refused naming every scheme, with what it likely
 * meant) and its connection settings from the command line. The NATS
 * credential flags are refused for any other backend: its user and
 * password go in the URL.
 */
async function backendOf(o: CliOptions): Promise<{ backend: StoreBackend; settings: BackendConnectOptions }> {
  const backend = await storeBackendOf(o.servers, "--servers");
  const flags = o.user !== undefined || o.pass !== undefined || o.token !== undefined || o.creds !== undefined;
  if (flags && backend.kind.id !== "nats") {
    throw new SplitleaseError("INVALID_CONFIG", `--user, --pass, --token and --creds are NATS options: put ${backend.kind.name}'s user and password in the URL`);
  }
  let creds: string | undefined;
  if (o.creds) {
    try {
      creds = readFileSync(o.creds, "utf8");
    } catch (e) {
      throw new SplitleaseError("INVALID_CONFIG", `cannot read the creds file ${o.creds}: ${(e as Error).message}`);
    }
  }
  return {
    backend,
    settings: {
      job: o.job,
      opTimeoutMs: o.opTimeoutMs,
      clientName: "splitlease-cli",
      // It never creates anything: a mistyped job exits 1 naming it.
      createMissing: false,
      // One plain line per failed attempt while connect waits for a server (retries only: the
      // connection budget a PostgreSQL store logs at connect is for workers' logs).
      logger: (level, message, f) =>
        (level === "warn" || level === "error") && f?.attempt !== undefined
          ? err(`splitlease: ${message}: ${f?.servers ?? f?.server ?? ""}, attempt ${f?.attempt} (${f?.error})`)
          : undefined,
      settings: {
        nats: {
          ...(o.user !== undefined ? { user: o.user } : {}),
          ...(o.pass !== undefined ? { pass: o.pass } : {}),
          ...(o.token !== undefined ? { token: o.token } : {}),
          ...(creds !== undefined ? { creds } : {}),
        },
        postgres: { poolSize: 2 },
        // An operator's tool reads and repairs whatever the workers run on: the workers' own
        // connect is where a Redis too weak for them is refused (its writes are still fenced).
        redis: { durability: "none" },
      },
    },
  };
}

/** `splitlease jobs` and `splitlease delete`: the server's jobs, not one job's store. */
async function catalogCommand(command: Extract<Command, { name: "jobs" | "delete" }>, o: CliOptions): Promise<number> {
  const { backend, settings: { job: _, createMissing: __, settings: extra, ...settings } } = await backendOf(o);
  // The catalog takes a NATS connection's credentials; a PostgreSQL one opens a single connection of its own.
  await using catalog = await backend.catalog(o.servers, { ...settings, settings: { nats: extra?.nats } });
  const where = backend.recordsOf(o.job);
  if (command.name === "jobs") {
    const jobs = await listJobs(catalog, o.job || undefined);
    out(o.json ? JSON.stringify({ jobs }, null, 2) : jobs.length === 0 ? backend.noJobs : formatJobs(jobs));
    return CLI_EXIT.ok;
  }
  // A sharded job: every shard's listing (its first shard's job record names the count).
  const listings = await readJobListings(catalog, o.job);
  if (listings.length === 0) {
    const message = `job "${o.job}" has no ${where}: nothing to delete`;
    out(o.json ? JSON.stringify({ outcome: "notFound", message }) : message);
    return CLI_EXIT.notApplied;
  }
  const summary = listings.length === 1 ? summarizeJob(listings[0]!, Date.now()) : summarizeShards(o.job, listings, Date.now());
  const refusal = deleteRefusal(summary, command.force);
  if (refusal) {
    out(o.json ? JSON.stringify({ outcome: "refused", message: refusal, job: summary }) : `not deleted: ${refusal}`);
    return CLI_EXIT.notApplied;
  }
  // The other shards first, shard 0 (which names the count) last: a delete cut short is finished by running it again.
  const present = listings.flatMap((l) => (l ? [l.job] : []));
  for (const job of present.slice(1).reverse()) await catalog.remove(job);
  await catalog.remove(o.job);
  const records = present.length > 1 ? `${present.length} shards: ${present.map((j) => backend.recordsOf(j)).join(", ")}` : where;
  const message = `deleted job "${o.job}" (${summary.state}; ${records})`;
  out(o.json ? JSON.stringify({ outcome: "deleted", message, job: summary }) : message);
  return CLI_EXIT.ok;
}

/**
 * A command on the job's shards (one store for an unsharded job, or one
 * shard named directly): reads fold every shard's view into the job's,
 * the job's actions act on every shard, a split's on the shard holding it.
 */
async function run(shards: JobShards, command: Exclude<Command, { name: "help" | "version" | "jobs" | "delete" }>, o: CliOptions): Promise<number> {
  const show = (value: unknown, text: string) => out(o.json ? JSON.stringify(value, null, 2) : text);
  switch (command.name) {
    case "status": {
      // A job of more than FULL_READ_MAX_SPLITS splits: its summary (the leader's beat), unless --full.
      const view = await readJobOverview(shards, { full: command.full });
      const { splits: _, page: __, ...summary } = view;
      // The same result fields as `wait --json` (where the job stands, its outcome record, what it skipped, wait's exit code).
      const result = view.plan?.result ?? jobResultOf(undefined);
      show({ job: o.job, ...summary, result: { ...result, exitCode: exitCodeForResult(result) } }, formatStatus(o.job, view));
      return CLI_EXIT.ok;
    }
    case "wait":
      return await wait(shards, command, o);
    case "pause": {
      // Who paused it, for the record and the page: the operator's user and host.
      const by = [process.env.USER ?? process.env.USERNAME, hostname()].filter(Boolean).join("@") || "splitlease CLI";
      const r = await pauseShards(shards, { by, ...(command.reason ? { reason: command.reason } : {}) });
      show(r, r.message);
      return exitOf(r.outcome);
    }
    case "resume": {
      const r = await resumeShards(shards);
      show(r, r.message);
      return exitOf(r.outcome);
    }
    case "rerun": {
      const r = await rerunShards(shards);
      show(r, r.outcome === "rerun" ? `${r.message}\n  previous: ${runLine(r.previous)}` : r.message);
      return exitOf(r.outcome);
    }
    case "splits": {
      const { name: _, ...query } = command;
      // A large job (or shard): one page, decoding only the records that can be on it (the counts: its summary).
      const view = await readJobSplits(shards, query);
      const perShard = view.shards ? { shards: view.shards.map(({ index, job, counts }) => ({ index, job, counts })) } : {};
      show({ job: o.job, counts: view.counts, splits: view.splits, page: view.page, ...perShard }, formatSplits(view));
      return CLI_EXIT.ok;
    }
    case "requeue": {
      if (command.all) {
        const r = await requeueQuarantinedIn(shards);
        const failed = r.results.filter((x) => x.outcome !== "requeued");
        const lines = [`${r.requeued} of ${r.found} quarantined split(s) requeued` + (r.reopened ? "; the stalled job is open again" : "")];
        for (const f of failed) lines.push(`  ${f.id}: ${f.message}`);
        show(r, lines.join("\n"));
        if (failed.length === 0) return CLI_EXIT.ok;
        return failed.every((f) => f.outcome === "conflict") ? CLI_EXIT.conflict : CLI_EXIT.notApplied;
      }
      const r = await requeueSplitIn(shards, command.id!);
      show(r, r.message + (r.outcome === "requeued" && r.reopened ? "; the stalled job is open again" : ""));
      return exitOf(r.outcome);
    }
    case "cancel": {
      const r = await cancelSplitIn(shards, command.id);
      show(r, r.message);
      return exitOf(r.outcome);
    }
    case "drain": {
      const r = await drainMemberIn(shards, command.instance);
      show(r, r.message);
      return exitOf(r.outcome);
    }
    case "ui":
      return await ui(shards, command, o);
  }
}

/**
 * `splitlease wait`: waits for the job's outcome (waitForOutcome), drawing
 * a live bar on a terminal or a plain line every --interval otherwise (none
 * with --json), and exits by how it ended (src/runtime/exit_codes.ts).
 */
async function wait(shards: JobShards, command: Extract<Command, { name: "wait" }>, o: CliOptions): Promise<number> {
  const tty = !o.json && process.stdout.isTTY === true;
  // A terminal that reports no width (a pty nobody sized) gets COLUMNS, else 80.
  const columns = process.stdout.columns || Number(process.env.COLUMNS) || 80;
  const display = new WaitDisplay(o.job, { tty, columns, write: (t) => process.stdout.write(t) });
  // A deleted NATS bucket answers every read as an outage: on one, the server's job list tells.
  const { backend, settings: { job: _, createMissing: __, settings: extra, ...settings } } = await backendOf(o);
  let catalog: JobCatalog | undefined;
  const exists = backend.kind.id !== "nats" ? undefined : async () => {
    catalog ??= await backend.catalog(o.servers, { ...settings, settings: { nats: extra?.nats } });
    // Every shard's bucket: a sharded job whose shard was deleted cannot complete.
    const listed = await Promise.all(shards.jobs.map((j) => catalog!.list(j)));
    return listed.every((l) => l.length > 0);
  };
  const stop = new AbortController();
  const interrupt = () => stop.abort(new Error("interrupted"));
  process.once("SIGINT", interrupt);
  try {
    const w = await waitForOutcome(shards, {
      job: o.job,
      signal: stop.signal,
      unreachableMs: command.unreachableMs,
      ...(command.timeoutMs !== undefined ? { timeoutMs: command.timeoutMs } : {}),
      ...(o.json ? {} : { onProgress: (v) => display.show(v), progressMs: tty ? 1000 : command.intervalMs }),
      ...(exists ? { exists } : {}),
    });
    const code = exitCodeForWait(w);
    // What the job did, for the last line (best effort: the store may be gone).
    const view = w.kind === "outcome" ? await readJobOverview(shards).catch(() => undefined) : undefined;
    // A sharded job's stall: the quarantined splits of each stalled shard (a few of each, best effort).
    const stalled = w.kind === "outcome" && w.outcome.kind === "stalled" && w.shards
      ? await stalledSplits(shards, w.shards.filter((s) => s.outcome.kind === "stalled").map((s) => s.index)).catch(() => undefined)
      : undefined;
    if (o.json) {
      out(JSON.stringify(
        {
          job: o.job,
          waited: w.kind,
          ...(w.kind === "unreachable" ? { error: w.error } : {}),
          result: w.result && { ...w.result, exitCode: exitCodeForResult(w.result) },
          exitCode: code,
          ...(view ? { counts: view.counts, summary: view.summary } : {}),
          ...(w.kind === "outcome" && w.shards ? { shards: w.shards } : {}),
          ...(stalled ? { stalled } : {}),
        },
        null,
        2,
      ));
    } else display.end(endLine(o.job, w, view, code, stalled));
    return code;
  } catch (e) {
    if (stop.signal.aborted) {
      display.end(`${o.job}: interrupted; the job runs on`);
      return 130;
    }
    throw e;
  } finally {
    process.off("SIGINT", interrupt);
    await catalog?.close().catch(() => {});
  }
}

/** Up to five quarantined split ids of each of a sharded job's stalled shards, and how many it has. */
async function stalledSplits(shards: JobShards, indexes: number[]): Promise<{ index: number; job: string; quarantined: number; splits: string[] }[]> {
  return await Promise.all(indexes.map(async (index) => {
    const one = { job: shards.jobs[index], stores: [shards.stores[index]], jobs: [shards.jobs[index]] };
    const v = await readJobSplits(one, { state: "quarantined", limit: 5 });
    return { index, job: shards.jobs[index], quarantined: v.page.matched, splits: v.splits.map((s) => s.id) };
  }));
}

/** The HTTP adapter of the runtime the CLI runs on. */
async function adapterServe(): Promise<typeof import("./adapters/node.ts").serve> {
  if ("Deno" in globalThis) return (await import("./adapters/deno.ts")).serve;
  if ("Bun" in globalThis) return (await import("./adapters/bun.ts")).serve;
  return (await import("./adapters/node.ts")).serve;
}

/**
 * `splitlease ui`: joins the job as a member that holds no work (a standby
 * without a planner: it leads only a published plan, so it never plans) and
 * serves the worker's HTTP app — the fleet page, /fleet, the operator routes,
 * /metrics (the job-wide gauges while it leads), /status — through stalls
 * (afterStall "wait") and past the job's completion (afterCompletion
 * "idle": the page then shows the finished job read-only, from its records)
 * until SIGINT/SIGTERM (exit 0). A job that is complete already is joined
 * and left at once, as a restarted worker does, and served the same way.
 */
async function ui(shards: JobShards, command: Extract<Command, { name: "ui" }>, o: CliOptions): Promise<number> {
  const view = await readJobOverview(shards);
  if (!view.fingerprint) throw new SplitleaseError("INVALID_CONFIG", `job "${o.job}" has no job record yet: start a worker first`);
  const fingerprint = view.fingerprint;
  const drainToken = process.env.DRAIN_TOKEN?.trim() || undefined;
  const loopback = /^(127\.|::1$|localhost$|\[::1\]$)/.test(command.bind);
  const serve = await adapterServe();
  const refuse = () => Promise.reject(new Error("splitlease ui runs no split"));
  const finished = view.plan?.outcome === "allComplete";
  const sharded = shards.stores.length > 1;
  const service = await serve({
    // A sharded job: a member of every shard, its page and operator routes over all of them.
    ...(sharded ? { stores: shards.stores, shards: shards.stores.length } : { store: shards.stores[0] }),
    job: o.job,
    instance: `${UI_INSTANCE_PREFIX}${crypto.randomUUID().slice(0, 8)}`,
    source: { fingerprint: () => fingerprint, plan: refuse, run: refuse },
    // No planner: it may lead a published plan (and export the job-wide gauges), never plan one.
    ...(sharded
      ? { joinSharded: (j) => ShardedCoordinator.join({ ...j, planner: undefined }) }
      : { join: (j) => SplitCoordinator.join({ ...j, planner: undefined }) }),
    leaseMs: command.leaseMs,
    opTimeoutMs: Math.min(o.opTimeoutMs, maxOpTimeoutMs(command.leaseMs)),
    maxInFlight: 0,
    afterStall: "wait",
    afterCompletion: "idle",
    port: command.port,
    hostname: command.bind,
    // The terminal is the operator's: warnings and errors only (the fleet's own lines are the workers' to write).
    logger: jsonLogger({ level: "warn" }),
    ...(drainToken ? { drainToken } : loopback ? { drainOpen: true } : {}),
    exit: false,
  });
  err(
    `splitlease ui: job ${o.job} at http://${command.bind.includes(":") ? `[${command.bind}]` : command.bind}:${service.port}/ ` +
      (finished
        ? "(the job is complete: read-only; Ctrl-C to stop)"
        : `(operator routes ${drainToken ? "take DRAIN_TOKEN" : loopback ? "open: loopback" : "closed: set DRAIN_TOKEN"}; Ctrl-C to stop)`),
  );
  void service.worker.done.then((outcome) => {
    if (outcome.kind === "drained" && outcome.reason === "complete" && !finished) {
      err(`splitlease ui: job ${o.job} is complete; its page stays up read-only until Ctrl-C`);
    }
  });
  return (await service.done).exitCode;
}

async function main(): Promise<number> {
  // `dev` runs a local server: no store, no job (cli/dev.ts).
  if (process.argv[2] === "dev") return await (await import("./cli/dev.ts")).dev(process.argv.slice(3), process.env);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs(process.argv.slice(2), process.env);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    err(`splitlease: ${e.message}\n\n${USAGE}`);
    return CLI_EXIT.usage;
  }
  const { command, options } = parsed;
  if (command.name === "help") {
    out(USAGE);
    return CLI_EXIT.ok;
  }
  if (command.name === "version") {
    out(`splitlease ${VERSION}`);
    return CLI_EXIT.ok;
  }
  let store: Store | undefined;
  let shards: (JobShards & { close(): Promise<void> }) | undefined;
  try {
    if (command.name === "jobs" || command.name === "delete") return await catalogCommand(command, options);
    const { backend, settings } = await backendOf(options);
    store = await backend.connect(options.servers, settings);
    // A sharded job (its job record names its shard count): every shard's store, each checked to be that shard.
    shards = await openJobShards(options.job, store, (job) => backend.connect(options.servers, { ...settings, job }));
    return await run(shards, command, options);
  } catch (e) {
    // wait's code for a store that does not answer is 7 from the start too (scripts tell it from "no such job").
    const unreachable = command.name === "wait" && e instanceof SplitleaseError && e.code === "STORE_UNAVAILABLE";
    const code = e instanceof SplitleaseError ? ` (${e.code})` : "";
    err(`splitlease: ${e instanceof Error ? e.message : String(e)}${code}`);
    if (options.json) out(JSON.stringify({ error: e instanceof Error ? e.message : String(e), code: (e as SplitleaseErrorType).code ?? null }));
    return unreachable ? EXIT_UNREACHABLE : CLI_EXIT.error;
  } finally {
    await shards?.close().catch(() => {});
    await store?.close().catch(() => {});
  }
}

process.exit(await main());
