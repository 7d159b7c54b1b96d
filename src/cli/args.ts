/**
 * Command-line parsing of the `splitlease` CLI (pure: `cli.ts` at the
 * repository root does the I/O). Connection settings come from flags or the
 * environment, the same names the example workers read.
 *
 * @module
 */
import { isValidId } from "../store/keys.ts";
import type { FleetState } from "../fleet/fleet_query.ts";
import { FLEET_STATE_ALIASES, FLEET_STATES } from "../fleet/fleet_view.ts";
import { nearestName } from "../util/options.ts";
import { schemeList, splitStoreUrls, STORE_URL_KINDS, storeSchemesText } from "../store/store_urls.ts";

/** Exit codes of the CLI. */
export const CLI_EXIT = {
  /** Done (or already so: a cancelled split cancelled again, a draining member drained again). */
  ok: 0,
  /** The store could not be reached, refused the credentials, or has no such job. */
  error: 1,
  /** Bad command line. */
  usage: 2,
  /** Not applied: no such split or member, or it is in another state (not quarantined, completed). */
  notApplied: 3,
  /** Lost a race five times in a row (a busy split): run it again. */
  conflict: 4,
} as const;

/** A bad command line: exit code 2 with the message and the usage. */
export class UsageError extends Error {}

/** A parsed command. */
export type Command =
  /** `full`: read every record whatever the job's size. */
  | { name: "status"; full: boolean }
  | { name: "splits"; state?: FleetState[]; owner?: string; limit: number; after?: string }
  | { name: "requeue"; id?: string; all: boolean }
  | { name: "cancel"; id: string }
  | { name: "drain"; instance: string }
  | { name: "ui"; port: number; bind: string; leaseMs: number }
  /** `timeoutMs` absent: no limit; `intervalMs`: the plain lines' period when stdout is not a terminal. */
  | { name: "wait"; timeoutMs?: number; unreachableMs: number; intervalMs: number }
  | { name: "pause"; reason?: string }
  | { name: "resume" }
  | { name: "rerun" }
  | { name: "jobs" }
  | { name: "delete"; yes: boolean; force: boolean }
  | { name: "help" }
  | { name: "version" };

/** Connection settings and output mode. */
export interface CliOptions {
  servers: string[];
  /** The job (`""` for `jobs` without `--job`: every job). */
  job: string;
  user?: string;
  pass?: string;
  token?: string;
  /** Path of a `.creds` file. */
  creds?: string;
  opTimeoutMs: number;
  json: boolean;
}

/**
 * The `--servers` lines of the usage, from the store URL registry: every
 * backend's schemes (src/store/store_urls.ts).
 */
const STORE_LINES = STORE_URL_KINDS.map((k, i) => {
  const head = (i === 0 ? "  --servers, -s URLS   " : " ".repeat(23)) + (i === 0 ? "STORE_URL" : i === 1 ? "or NATS_URL" : "").padEnd(15);
  const urls = `${k.many ? "comma-separated" : "one"} ${schemeList(k.schemes.map((x) => x.scheme))} URL${k.many ? "s" : ""}`;
  const last = i === STORE_URL_KINDS.length - 1;
  return `${head}${i === 0 ? "" : "or "}${urls} (${k.name}${k.many ? "" : "; user and password in the URL"})${last ? "" : ","}`;
}).join("\n");

/** The usage text. */
export const USAGE = `usage: splitlease <command> [options]

commands:
  dev [--port N] [--ws-port N]    run a local nats-server (JetStream, nats:// and ws:// on 127.0.0.1)
                                  until Ctrl-C; takes no connection options (splitlease dev --help)
  status [--full]                 job, leader, plan, split counts, members; the result once finished
                                  (a job of more than 10,000 splits: counts, rate and ETA from the
                                  leader's beat, no split record read; --full reads every record)
  splits [--state S[,S]] [--owner INSTANCE] [--limit N] [--after ID]
                                  splits by id (states: runnable, owned, unclaimed, completed, quarantined,
                                  cancelled; owned and unclaimed are the two halves of runnable); one
                                  page per call, --after the last id for the next
  requeue <split-id> | --all      requeue a quarantined split, or every one
  cancel <split-id>               cancel a split (terminal; its owner stops at once)
  drain <instance>                drain a member: it hands its splits over and exits 0
  ui [--port N] [--bind ADDR] [--lease-ms N]
                                  serve the fleet page, /fleet, the operator routes and /metrics as a
                                  member that holds no work (it may lead), through stalls, repairs and
                                  the job's end, until Ctrl-C; a finished job is served read-only without
                                  joining (default 127.0.0.1:8080; the operator routes take DRAIN_TOKEN,
                                  open without one on a loopback address; --lease-ms or LEASE_MS: the
                                  fleet's leaseMs, default 15000)
  wait [JOB] [--timeout T] [--unreachable T] [--interval T]
                                  wait for the job's outcome: a live progress bar on a terminal, else a
                                  plain line every --interval (default 10s); exits by the outcome (below).
                                  T: 90s, 10m, 2h, 500ms (a bare number is seconds); --unreachable: how
                                  long the store may fail every read (default 60s); JOB: instead of --job
  pause [JOB] [--reason TEXT]     pause the whole job: the leader deals nothing new, every member hands back
                                  what it runs (no attempt charged) and claims nothing, no outcome is
                                  decided; survives a new leader and a restart of the fleet
  resume [JOB]                    resume a paused job: work continues from the last commits
  rerun [JOB]                     run a finished job again: a new run of it (its last outcome and each
                                  split's summary kept as history), planned again by its next leader;
                                  refused while the job runs
  jobs                            the jobs on the server (JOB is not read; --job: that one only):
                                  outcome, splits, members, created, finished
  delete --yes [--force]          delete a finished job's records for good (its bucket); refused while a
                                  member is live, and for an unfinished job unless --force

a sharded job (shards: K; its records in K buckets or jobs, <job> and <job>--shard1 .. --shard<K-1>):
  every command takes the job's name and folds or acts on all its shards (a split's on the shard that
  holds it); jobs lists it once; --job <job>--shard<i> reaches that one shard alone

connection (flags, or the environment):
${STORE_LINES}
  --job, -j NAME       JOB            the job name (bucket splitlease_<job>, or the job's rows; of a
                                      sharded job, shard 0's, whose job record names the others)
  --user USER          NATS_USER      with --pass / NATS_PASS (prefer the environment for secrets)
  --token TOKEN        NATS_TOKEN
  --creds FILE         NATS_CREDS     a .creds file
  --op-timeout-ms N    OP_TIMEOUT_MS  per store operation (default 5000)

output:
  --json               machine-readable JSON on stdout
  --help, -h           this text
  --version, -V        the version

exit codes: 0 done, 1 store or job error, 2 usage, 3 not applied (no such split or member,
or another state; a delete, pause or rerun refused), 4 lost a race 5 times (run again)
exit codes of wait: 0 every split completed, 1 error (no such job), 2 usage, 3 stalled (quarantined
splits left), 4 planning failed, 5 complete except cancelled splits, 6 the job was deleted while
waiting, 7 the store did not answer (for --unreachable), 8 --timeout passed`;

/** Every command, for the usage check and its suggestions. */
const COMMANDS = ["status", "splits", "requeue", "cancel", "drain", "ui", "wait", "pause", "resume", "rerun", "jobs", "delete", "help", "version"] as const;
const FLAGS_WITH_VALUE = new Set([
  "--servers", "-s", "--job", "-j", "--user", "--pass", "--token", "--creds", "--op-timeout-ms", "--state", "--owner", "--limit", "--after",
  "--port", "--bind", "--lease-ms", "--timeout", "--unreachable", "--interval", "--reason",
]);
const BOOLEAN_FLAGS = new Set(["--json", "--help", "-h", "--version", "-V", "--all", "--yes", "--force", "--full"]);
/** Flags that belong to one command only. */
const COMMAND_FLAGS: Readonly<Record<string, Command["name"]>> = {
  "--all": "requeue",
  "--full": "status",
  "--state": "splits",
  "--owner": "splits",
  "--limit": "splits",
  "--after": "splits",
  "--port": "ui",
  "--bind": "ui",
  "--lease-ms": "ui",
  "--yes": "delete",
  "--force": "delete",
  "--timeout": "wait",
  "--unreachable": "wait",
  "--interval": "wait",
  "--reason": "pause",
};

/**
 * A duration given on the command line, in ms: `90s`, `10m`, `2h`,
 * `500ms`, or a bare number of seconds; `what` names the flag in the error.
 */
export function parseDuration(what: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?$/.exec(text.trim());
  const unit = ({ ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000 } as Record<string, number>)[m?.[2] ?? "s"];
  const ms = m && unit ? Math.round(Number(m[1]) * unit) : NaN;
  if (!(ms > 0)) throw new UsageError(`${what} must be a duration above 0 such as 90s, 10m, 2h or 500ms, got ${JSON.stringify(text)}`);
  return ms;
}

/** "; did you mean X?" when `given` is a plausible typo of one of `known`, else "". */
function suggestion(given: string, known: Iterable<string>): string {
  const near = nearestName(given, [...known]);
  return near ? `; did you mean ${near}?` : "";
}

/**
 * Parses `argv` (without the program) with `env` for defaults. Throws
 * {@linkcode UsageError} naming what is wrong (with the nearest command or
 * option when a word looks like a typo of one).
 */
export function parseArgs(argv: readonly string[], env: Record<string, string | undefined>): { command: Command; options: CliOptions } {
  const flags = new Map<string, string>();
  const bools = new Set<string>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    let value: string | undefined;
    const eq = a.startsWith("--") ? a.indexOf("=") : -1;
    if (eq > 0) [a, value] = [a.slice(0, eq), a.slice(eq + 1)];
    if (FLAGS_WITH_VALUE.has(a)) {
      value ??= argv[++i];
      if (value === undefined) throw new UsageError(`${a} needs a value`);
      flags.set(a, value);
    } else if (BOOLEAN_FLAGS.has(a)) {
      if (value !== undefined) throw new UsageError(`${a} takes no value`);
      bools.add(a);
    } else if (a.startsWith("-") && a !== "-") {
      // Long options are suggested among long options only: "-x" is no typo of "--json".
      const known = [...FLAGS_WITH_VALUE, ...BOOLEAN_FLAGS].filter((f) => f.startsWith("--") === a.startsWith("--"));
      throw new UsageError(`unknown option ${a}${a.startsWith("--") ? suggestion(a, known) : ""}`);
    } else positional.push(a);
  }
  const flag = (...names: string[]) => names.map((n) => flags.get(n)).find((v) => v !== undefined);
  const json = bools.has("--json");
  const [name, ...rest] = positional;
  const none: CliOptions = { servers: [], job: "", opTimeoutMs: 5000, json };
  if (bools.has("--help") || bools.has("-h") || name === "help") return { command: { name: "help" }, options: none };
  if (bools.has("--version") || bools.has("-V") || name === "version") return { command: { name: "version" }, options: none };
  if (name === undefined) return { command: { name: "help" }, options: none };
  const id = (what: string, v: string | undefined): string => {
    if (v === undefined) throw new UsageError(`${name} needs a ${what}`);
    if (!isValidId(v)) throw new UsageError(`${JSON.stringify(v)} is not a ${what} (1-128 of [A-Za-z0-9_-])`);
    return v;
  };
  const noMore = (n: number) => {
    if (rest.length > n) throw new UsageError(`unexpected argument ${JSON.stringify(rest[n])} for ${name}`);
  };
  let command: Command;
  // `wait JOB` names the job as its argument (the same as --job or JOB).
  let positionalJob: string | undefined;
  switch (name) {
    case "status":
      noMore(0);
      command = { name, full: bools.has("--full") };
      break;
    case "jobs":
      noMore(0);
      command = { name };
      break;
    case "splits": {
      noMore(0);
      // The words `status` prints; the old ones (running, waiting) as aliases.
      const state = flag("--state")?.split(",").map((s) => s.trim()).filter(Boolean).map((s) => {
        const canonical = FLEET_STATE_ALIASES[s] ?? s;
        if (!FLEET_STATES.includes(canonical as FleetState)) {
          throw new UsageError(`unknown state ${JSON.stringify(s)}${suggestion(s, FLEET_STATES)}; states: ${FLEET_STATES.join(", ")}`);
        }
        return canonical as FleetState;
      });
      const limitText = flag("--limit") ?? "100";
      const limit = Number(limitText);
      if (!/^\d+$/.test(limitText) || limit < 1 || limit > 1000) throw new UsageError(`--limit must be an integer from 1 to 1000, got ${JSON.stringify(limitText)}`);
      const owner = flag("--owner");
      const after = flag("--after");
      command = {
        name,
        limit,
        ...(state ? { state } : {}),
        ...(owner !== undefined ? { owner: id("instance id", owner) } : {}),
        ...(after !== undefined ? { after: id("split id", after) } : {}),
      };
      break;
    }
    case "requeue":
      if (bools.has("--all")) {
        noMore(0);
        command = { name, all: true };
      } else {
        noMore(1);
        command = { name, all: false, id: id("split id (or --all)", rest[0]) };
      }
      break;
    case "cancel":
      noMore(1);
      command = { name, id: id("split id", rest[0]) };
      break;
    case "drain":
      noMore(1);
      command = { name, instance: id("instance id", rest[0]) };
      break;
    case "ui": {
      noMore(0);
      const portText = flag("--port") ?? "8080";
      const port = Number(portText);
      if (!/^\d+$/.test(portText) || port > 65535) throw new UsageError(`--port must be an integer from 0 to 65535, got ${JSON.stringify(portText)}`);
      const bind = flag("--bind") ?? "127.0.0.1";
      if (bind === "") throw new UsageError("--bind needs an address");
      const leaseText = flag("--lease-ms") ?? env.LEASE_MS ?? "15000";
      const leaseMs = Number(leaseText);
      if (!/^\d+$/.test(leaseText) || leaseMs < 500) throw new UsageError(`--lease-ms must be an integer >= 500, got ${JSON.stringify(leaseText)}`);
      command = { name, port, bind, leaseMs };
      break;
    }
    case "wait": {
      noMore(1);
      positionalJob = rest[0];
      const timeout = flag("--timeout");
      command = {
        name,
        unreachableMs: parseDuration("--unreachable", flag("--unreachable") ?? "60s"),
        intervalMs: parseDuration("--interval", flag("--interval") ?? "10s"),
        ...(timeout !== undefined ? { timeoutMs: parseDuration("--timeout", timeout) } : {}),
      };
      break;
    }
    case "pause": {
      noMore(1);
      positionalJob = rest[0];
      const reason = flag("--reason")?.trim();
      if (reason !== undefined && (reason === "" || reason.length > 500)) throw new UsageError("--reason needs 1-500 characters");
      command = { name, ...(reason ? { reason } : {}) };
      break;
    }
    case "resume":
    case "rerun":
      noMore(1);
      positionalJob = rest[0];
      command = { name };
      break;
    case "delete":
      noMore(0);
      if (!bools.has("--yes")) {
        throw new UsageError("delete removes the job's records for good: add --yes to confirm (see `splitlease jobs` for its outcome first)");
      }
      command = { name, yes: true, force: bools.has("--force") };
      break;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(name)}${suggestion(name, [...COMMANDS, "dev"])}`); // dev runs before parsing (cli.ts)
  }
  for (const [f, owner] of Object.entries(COMMAND_FLAGS)) {
    if ((flags.has(f) || bools.has(f)) && command.name !== owner) throw new UsageError(`${f} goes with ${owner} only`);
  }

  const given = flag("--servers", "-s") ?? env.STORE_URL ?? env.NATS_URL ?? "";
  // A backend that takes one URL gets all of it (a multi-host postgres:// URL has commas of its own).
  const servers = splitStoreUrls(given);
  if (servers.length === 0) {
    throw new UsageError(`no store: give --servers or set STORE_URL or NATS_URL (${storeSchemesText()}; \`splitlease dev\` runs a local NATS)`);
  }
  // `jobs` lists every job of the server (JOB is not read; --job lists that one only).
  const flagJob = flag("--job", "-j");
  if (positionalJob !== undefined && flagJob !== undefined && positionalJob !== flagJob) {
    throw new UsageError(`two jobs: ${JSON.stringify(positionalJob)} and --job ${JSON.stringify(flagJob)}; give one`);
  }
  const job = positionalJob ?? flagJob ?? (command.name === "jobs" ? "" : env.JOB);
  if (job === undefined || (job === "" && command.name !== "jobs")) throw new UsageError("no job: give --job or set JOB");
  const timeoutText = flag("--op-timeout-ms") ?? env.OP_TIMEOUT_MS ?? "5000";
  const opTimeoutMs = Number(timeoutText);
  if (!/^\d+$/.test(timeoutText) || opTimeoutMs < 50) throw new UsageError(`--op-timeout-ms must be an integer >= 50, got ${JSON.stringify(timeoutText)}`);
  const options: CliOptions = { servers, job, opTimeoutMs, json };
  const user = flag("--user") ?? env.NATS_USER, pass = flag("--pass") ?? env.NATS_PASS;
  const token = flag("--token") ?? env.NATS_TOKEN, creds = flag("--creds") ?? env.NATS_CREDS;
  if (user) options.user = user;
  if (pass) options.pass = pass;
  if (token) options.token = token;
  if (creds) options.creds = creds;
  return { command, options };
}
