/**
 * Coordinator configuration: a zod schema with every rule of docs/OPERATIONS.md, "Coordinator configuration".
 * Invalid config fails at construction with every broken rule named.
 *
 * @module
 */
import * as z from "zod";
import { SplitleaseError } from "../errors.ts";
import { unknownKeysMessage } from "../util/options.ts";
import type { Equal } from "../util/option_schema.ts";
import { MAX_TIMER_MS } from "../util/timers.ts";
import { defaultSelfFenceMarginMs, minLeaseMs, selfFenceMarginLimitMs } from "./timings.ts";

const idPattern = /^[A-Za-z0-9_-]{1,128}$/;
const ms = (min: number) => z.number().int().min(min);
/** A duration: at most MAX_TIMER_MS, above which a timer fires at once. */
const duration = (min: number) =>
  ms(min).max(MAX_TIMER_MS, {
    error: (iss) => `must be at most ${MAX_TIMER_MS} ms (the longest timer delay), got ${String(iss.input)}`,
  });

/**
 * Tunables of a coordinator (all optional; defaults in docs/OPERATIONS.md).
 *
 * @example
 * ```ts
 * import type { CoordinatorTunables } from "@splitlease/splitlease/host";
 * const tunables: CoordinatorTunables = { leaseMs: 10000, opTimeoutMs: 2000, maxInFlight: 4 };
 * ```
 */
export interface CoordinatorTunables {
  /** Lease duration in ms: a member silent this long is dead (default 15000). */
  leaseMs?: number;
  /** Per store-operation timeout in ms (default 5000). */
  opTimeoutMs?: number;
  /** Lanes this worker runs at most (default 8; 0: a standby that holds nothing). */
  maxInFlight?: number;
  /** Non-graceful ends before a split is quarantined (default 4). */
  maxAttempts?: number;
  /** Time a revoked split may take to drain (default 10000). */
  drainDeadlineMs?: number;
  /** Re-plan interval of open plans (default 60000). */
  replanIntervalMs?: number;
  /** Withhold a departed member's splits this long (default 0: at once). */
  rebalanceDelayMs?: number;
  /** Self-fence this long before peers could judge us dead (default leaseMs/8). */
  selfFenceMarginMs?: number;
  /** Concurrent writes while seeding a plan (default 128). */
  seedConcurrency?: number;
  /** Consecutive failed planner runs before the job fails (default 5). */
  planAttempts?: number;
  /** Wait before a failed split is offered again, doubled per attempt, with jitter (default 1000). */
  retryBackoffMs?: number;
  /** Longest wait before a failed split is offered again (default 60000). */
  retryBackoffMaxMs?: number;
  /** This member's source cuts a running split's remaining work when asked (default false; the worker sets it when the source has a `split` hook). */
  splittable?: boolean;
  /** Least estimated work left (in weight units) for the leader to ask a running split to be cut (default 0: the source decides). */
  cutMinWork?: number;
}

/**
 * Validated, complete configuration.
 *
 * @example
 * ```ts
 * import { parseCoordinatorConfig, type CoordinatorConfig } from "@splitlease/splitlease/admin";
 * const c: CoordinatorConfig = parseCoordinatorConfig({ job: "j", instance: "w1", fingerprint: "f" });
 * console.log(c.maxInFlight); // 8
 * ```
 */
export interface CoordinatorConfig extends Required<CoordinatorTunables> {
  /** Job name (bucket suffix, id charset). */
  job: string;
  /** This instance id. */
  instance: string;
  /** Job fingerprint checked at join. */
  fingerprint: string;
}

/**
 * One coordinator option, declared once: its schema (the default included)
 * and its row of the reference (docs/OPERATIONS.md, "Coordinator
 * configuration", is checked against {@linkcode coordinatorConfigDocs}).
 * `shown` overrides the default column for a required or derived value.
 */
function option<T extends z.ZodType>(schema: T, rule: string, meaning: string, shown?: string): { schema: T; doc: Omit<ConfigDoc, "key"> } {
  const fallback = schema instanceof z.ZodDefault ? String(schema.def.defaultValue) : "(required)";
  return { schema, doc: { default: shown ?? fallback, rule, meaning } };
}

const OPTIONS = {
  job: option(
    z.string().regex(idPattern, "must be 1-128 characters of [A-Za-z0-9_-]"),
    "1-128 of [A-Za-z0-9_-]",
    "Job name; the NATS bucket is splitlease_<job>.",
  ),
  instance: option(
    z.string().regex(idPattern, "must be 1-128 characters of [A-Za-z0-9_-]"),
    "1-128 of [A-Za-z0-9_-]",
    "Instance id (pod name). Two live processes with one id is fatal; a restart with the same id reclaims its splits at once.",
    "generated",
  ),
  fingerprint: option(
    z.string().min(1, "must be a non-empty string").max(1024),
    "non-empty, at most 1024 chars",
    "Config-derived job identity; a bucket holding another fingerprint is refused at join.",
    "the job name",
  ),
  leaseMs: option(
    duration(500).default(15000),
    ">= 500 and >= 2 × opTimeoutMs, <= 2^31 − 1",
    "A member whose record has not moved for this long (on the leader's clock) is dead; so is a leader whose record has not moved (on each member's clock).",
  ),
  opTimeoutMs: option(duration(1).default(5000), "1..2^31 − 1", "Timeout of every store operation."),
  maxInFlight: option(
    ms(0).max(4096).default(8),
    "0..4096",
    "Splits (lanes) held at most; advertised on the member record. 0 makes a standby: it holds nothing, watches the job, reports its outcome and may lead.",
  ),
  maxAttempts: option(
    ms(1).default(4),
    ">= 1",
    "Non-graceful ends (takeovers, crash reclaims, fail reports) before a split is quarantined.",
  ),
  drainDeadlineMs: option(
    duration(0).default(10000),
    ">= opTimeoutMs, <= 2^31 − 1",
    "Time a revoked split may take to drain before it is released forcibly.",
  ),
  replanIntervalMs: option(duration(1).default(60000), ">= leaseMs, <= 2^31 − 1", "Re-plan interval of open (discovery) plans."),
  rebalanceDelayMs: option(
    duration(0).default(0),
    "0..2^31 − 1",
    "Withhold a dead or departed member's splits this long so a fast restart reclaims its own work; 0 takes over at once.",
  ),
  selfFenceMarginMs: option(
    duration(0).optional(),
    ">= 0 and < leaseMs / 2",
    "Self-fence this long before peers could judge this worker dead.",
    "leaseMs / 8",
  ),
  seedConcurrency: option(
    ms(1).max(1024).default(128),
    "1..1024",
    "Seed writes the leader keeps in flight while it streams a plan into the store.",
  ),
  planAttempts: option(
    ms(1).max(1000).default(5),
    "1..1000",
    "Consecutive failed planner runs (a throw, a duplicate id, a descriptor over 256 KiB) before the job fails: every member then stops with exit code 4. A new leader (a restart) tries again.",
  ),
  retryBackoffMs: option(
    duration(0).default(1000),
    "0..2^31 − 1",
    "Wait before a split that failed (fail() or a throwing run) is offered again; doubled per attempt, ±25% jitter.",
  ),
  retryBackoffMaxMs: option(duration(0).default(60000), ">= retryBackoffMs, <= 2^31 − 1", "Longest retry wait."),
  splittable: option(
    z.boolean().default(false),
    "boolean",
    "This member's source cuts a running split's remaining work when the leader asks (idle lanes, nothing left to start); advertised on its member record. The worker runtime sets it when the source has a `split` hook.",
  ),
  cutMinWork: option(
    z.number().min(0).finite().default(0),
    ">= 0",
    "Least estimated work left (the split's weight × the fraction its last estimate says is left) for the leader to ask for a cut; the source may still decline.",
  ),
};
type Options = typeof OPTIONS;
const shape = Object.fromEntries(Object.entries(OPTIONS).map(([k, o]) => [k, o.schema])) as { [K in keyof Options]: Options[K]["schema"] };
const base = z.strictObject(shape, {
  error: (iss) =>
    iss.code === "unrecognized_keys" ? unknownKeysMessage(iss.keys, Object.keys(shape)) : undefined,
});

const schema = Object.assign(base.superRefine((c, ctx) => {
  if (c.leaseMs < minLeaseMs(c.opTimeoutMs)) {
    ctx.addIssue({
      code: "custom",
      path: ["leaseMs"],
      message: `must be at least 2 × opTimeoutMs (${minLeaseMs(c.opTimeoutMs)}), got ${c.leaseMs}`,
    });
  }
  if (c.drainDeadlineMs < c.opTimeoutMs) {
    ctx.addIssue({
      code: "custom",
      path: ["drainDeadlineMs"],
      message: `must be at least opTimeoutMs (${c.opTimeoutMs}), got ${c.drainDeadlineMs}`,
    });
  }
  if (c.replanIntervalMs < c.leaseMs) {
    ctx.addIssue({
      code: "custom",
      path: ["replanIntervalMs"],
      message: `must be at least leaseMs (${c.leaseMs}), got ${c.replanIntervalMs}`,
    });
  }
  if (c.retryBackoffMaxMs < c.retryBackoffMs) {
    ctx.addIssue({
      code: "custom",
      path: ["retryBackoffMaxMs"],
      message: `must be at least retryBackoffMs (${c.retryBackoffMs}), got ${c.retryBackoffMaxMs}`,
    });
  }
  if (c.selfFenceMarginMs !== undefined && c.selfFenceMarginMs >= selfFenceMarginLimitMs(c.leaseMs)) {
    ctx.addIssue({
      code: "custom",
      path: ["selfFenceMarginMs"],
      message: `must be below leaseMs / 2 (${selfFenceMarginLimitMs(c.leaseMs)}), got ${c.selfFenceMarginMs}`,
    });
  }
}), { shape: base.shape });

/**
 * One documented configuration knob.
 *
 * @example
 * ```ts
 * import { coordinatorConfigDocs, type ConfigDoc } from "@splitlease/splitlease/admin";
 * const lease: ConfigDoc | undefined = coordinatorConfigDocs().find((d) => d.key === "leaseMs");
 * console.log(lease?.default); // 15000
 * ```
 */
export interface ConfigDoc {
  /** Option name. */
  key: string;
  /** Default (`undefined` when required or derived). */
  default: string;
  /** Validation rule. */
  rule: string;
  /** What it does. */
  meaning: string;
}

/**
 * Reference of every coordinator option (docs/OPERATIONS.md is checked
 * against it by a test, so the two cannot drift).
 *
 * @example
 * ```ts
 * import { coordinatorConfigDocs } from "@splitlease/splitlease/admin";
 * for (const d of coordinatorConfigDocs()) console.log(d.key, d.default);
 * ```
 */
export function coordinatorConfigDocs(): ConfigDoc[] {
  return Object.entries(OPTIONS).map(([key, o]) => ({ key, ...o.doc }));
}

/** Names of every {@linkcode CoordinatorTunables} option, for code that forwards them. */
export const TUNABLE_KEYS: readonly (keyof CoordinatorTunables)[] = Object.keys(OPTIONS)
  .filter((k) => k !== "job" && k !== "instance" && k !== "fingerprint") as (keyof CoordinatorTunables)[];

/**
 * The default of every tunable that has a fixed one (`selfFenceMarginMs`
 * is derived from `leaseMs`), read from the schema: code outside the
 * coordinator that needs one (the worker's lanes, the shutdown deadline)
 * reads it here.
 */
export const TUNABLE_DEFAULTS: Readonly<Required<Omit<CoordinatorTunables, "selfFenceMarginMs">>> = Object.freeze(
  (({ job: _j, instance: _i, fingerprint: _f, selfFenceMarginMs: _s, ...d }) => d)(
    base.parse({ job: "j", instance: "i", fingerprint: "f" }),
  ),
);

/**
 * The timing defaults of a serverless slice (`runSlice`,
 * `createSliceHandler`, the Lambda handler) where its options leave them
 * out; every other tunable defaults as for any worker
 * ({@linkcode TUNABLE_DEFAULTS}). Shorter than a long-running worker's
 * (15 s lease, 5 s operations, 10 s drain) because a slice's work window
 * (its budget less the drain margin, `drainDeadlineMs + 1000`) must hold
 * two leases (docs/DESIGN.md, "Runtime"): with these the default 30 s
 * budget has a 25 s window, two leases and more; with the worker's, a
 * budget would need 41 s.
 *
 * @example
 * ```ts
 * import { SLICE_TIMING_DEFAULTS } from "./config.ts";
 * console.log(SLICE_TIMING_DEFAULTS.leaseMs); // 6000
 * ```
 */
export const SLICE_TIMING_DEFAULTS: Readonly<{ leaseMs: number; opTimeoutMs: number; drainDeadlineMs: number }> = Object
  .freeze({ leaseMs: 6000, opTimeoutMs: 2000, drainDeadlineMs: 4000 });

/** The budget of a slice invocation when neither the call nor the options give one (ms). */
export const SLICE_DEFAULT_BUDGET_MS = 30_000;

/** The compiler refuses a {@linkcode CoordinatorTunables} that differs from the schema's input. */
const _tunablesAreTheSchema: Equal<
  Required<CoordinatorTunables>,
  Required<Omit<z.input<typeof base>, "job" | "instance" | "fingerprint">>
> = true;

/**
 * Picks the coordinator tunables out of a larger options object.
 */
export function pickTunables(options: CoordinatorTunables): CoordinatorTunables {
  const out: CoordinatorTunables = {};
  for (const k of TUNABLE_KEYS) if (options[k] !== undefined) (out as Record<string, unknown>)[k] = options[k];
  return out;
}

/** Keys the schema accepts (for the docs test). */
export function coordinatorConfigKeys(): string[] {
  return Object.keys(schema.shape);
}

/**
 * Validates coordinator configuration and fills in defaults.
 *
 * @throws {SplitleaseError} with code `INVALID_CONFIG`, naming every broken rule.
 *
 * @example
 * ```ts
 * import { parseCoordinatorConfig } from "@splitlease/splitlease/admin";
 * const c = parseCoordinatorConfig({ job: "j", instance: "w1", fingerprint: "f" });
 * console.log(c.leaseMs); // 15000
 * ```
 */
export function parseCoordinatorConfig(input: Record<string, unknown>): CoordinatorConfig {
  const r = schema.safeParse(input);
  if (!r.success) {
    const rules = r.error.issues.map((i) => `${i.path.map(String).join(".") || "(config)"}: ${i.message}`);
    throw new SplitleaseError("INVALID_CONFIG", `Invalid coordinator config: ${rules.join("; ")}`);
  }
  const c = r.data;
  return { ...c, selfFenceMarginMs: c.selfFenceMarginMs ?? defaultSelfFenceMarginMs(c.leaseMs) };
}
