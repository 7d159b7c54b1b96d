/**
 * Coordinator configuration: a zod schema with every rule of DESIGN §12.
 * Invalid config fails at construction with every broken rule named.
 *
 * @module
 */
import { z } from "zod";
import { SplitleaseError } from "../errors.ts";

const idPattern = /^[A-Za-z0-9_-]{1,128}$/;
const ms = (min: number) => z.number().int().min(min);

/** Tunables of a coordinator (all optional; defaults per DESIGN §12). */
export interface CoordinatorTunables {
  /** Lease duration in ms: a member silent this long is dead (default 15000). */
  leaseMs?: number;
  /** Per store-operation timeout in ms (default 5000). */
  opTimeoutMs?: number;
  /** Lanes this worker runs at most (default 8). */
  maxInFlight?: number;
  /** Non-graceful ends before a split is quarantined (default 4). */
  maxAttempts?: number;
  /** Time a revoked split may take to drain (default 10000). */
  drainDeadlineMs?: number;
  /** Re-plan interval of open plans (default 60000). */
  replanIntervalMs?: number;
  /** Withhold a departed member's splits this long (default 0: at once). */
  rebalanceDelayMs?: number;
  /** Per-rank claim delay against thundering herds (default 2). */
  claimStaggerMs?: number;
  /** Self-fence this long before peers could judge us dead (default leaseMs/8). */
  selfFenceMarginMs?: number;
  /** Concurrent writes while seeding a plan (default 32). */
  seedConcurrency?: number;
}

/** Validated, complete configuration. */
export interface CoordinatorConfig extends Required<CoordinatorTunables> {
  /** Job name (bucket suffix, id charset). */
  job: string;
  /** This instance id. */
  instance: string;
  /** Job fingerprint checked at join. */
  fingerprint: string;
}

const schema = z.object({
  job: z.string().regex(idPattern, "must be 1-128 characters of [A-Za-z0-9_-]"),
  instance: z.string().regex(idPattern, "must be 1-128 characters of [A-Za-z0-9_-]"),
  fingerprint: z.string().min(1, "must be a non-empty string").max(1024),
  leaseMs: ms(500).default(15000),
  opTimeoutMs: ms(1).default(5000),
  maxInFlight: ms(1).default(8),
  maxAttempts: ms(1).default(4),
  drainDeadlineMs: ms(0).default(10000),
  replanIntervalMs: ms(1).default(60000),
  rebalanceDelayMs: ms(0).default(0),
  claimStaggerMs: ms(0).default(2),
  selfFenceMarginMs: ms(0).optional(),
  seedConcurrency: ms(1).max(1024).default(32),
}).strict().superRefine((c, ctx) => {
  if (c.leaseMs < 2 * c.opTimeoutMs) {
    ctx.addIssue({
      code: "custom",
      path: ["leaseMs"],
      message: `must be at least 2 × opTimeoutMs (${2 * c.opTimeoutMs}), got ${c.leaseMs}`,
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
  if (c.selfFenceMarginMs !== undefined && c.selfFenceMarginMs >= c.leaseMs / 2) {
    ctx.addIssue({
      code: "custom",
      path: ["selfFenceMarginMs"],
      message: `must be below leaseMs / 2 (${c.leaseMs / 2}), got ${c.selfFenceMarginMs}`,
    });
  }
});

/**
 * Validates coordinator configuration and fills in defaults.
 *
 * @throws {SplitleaseError} with code `INVALID_CONFIG`, naming every broken rule.
 *
 * @example
 * ```ts
 * import { parseCoordinatorConfig } from "@splitlease/splitlease";
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
  return { ...c, selfFenceMarginMs: c.selfFenceMarginMs ?? Math.floor(c.leaseMs / 8) };
}
