/**
 * What the three serverless examples share: the source (ranges of numbers,
 * a few milliseconds per batch, so one job spans several invocations) and the
 * slice options built from the platform's environment (bindings on Workers,
 * environment variables on Lambda and Deno Deploy).
 *
 * | variable | default | meaning |
 * |---|---|---|
 * | `NATS_URL` | (required) | `ws://` or `wss://` URL(s) of nats-server, comma-separated |
 * | `JOB` | `numbers` | job name (bucket `splitlease_<job>`) |
 * | `SPLITS`, `RECORDS`, `BATCH_MS` | 6, 400, 20 | the job: splits × records, one batch of 20 records per `BATCH_MS` |
 * | `BUDGET_MS` | 25000 | an invocation's time budget on Workers and Deno Deploy; not read on Lambda, where each invocation works for what the function timeout leaves (`aws_lambda.ts` sets `budgetMs: undefined`) |
 * | `OP_TIMEOUT_MS`, `DRAIN_DEADLINE_MS`, `LEASE_MS` | 1000, 2000, 3000 | short, so short budgets are valid |
 * | `TOKEN` | (none) | bearer token the HTTP trigger requires |
 *
 * @module
 */
import { type SplitSource, splitIdFrom } from "../../mod.ts";
import { NatsStore, type NatsStoreOptions } from "../../nats.ts";
import type { SliceOptions } from "../../adapters/serverless.ts";

/** One split: the numbers `[from, to)`. */
export interface Range {
  from: number;
  to: number;
}

/** The environment the examples read (strings, as platforms give them; unset may be `null` or `""`). */
export type Env = Record<string, string | null | undefined>;

const num = (env: Env, key: string, dflt: number): number => {
  const raw = env[key];
  if (!raw) return dflt; // unset: undefined, or null/"" from platforms that bind every declared name
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`${key} must be a number, got ${JSON.stringify(raw)}`);
  return n;
};

/** SPLITS ranges of RECORDS numbers; a batch of 20 takes BATCH_MS; one commit per batch. */
export function numbersSource(env: Env): SplitSource<Range> {
  const splits = num(env, "SPLITS", 6);
  const records = num(env, "RECORDS", 400);
  const batchMs = num(env, "BATCH_MS", 20);
  return {
    fingerprint: () => `numbers-v1:${splits}x${records}`,
    async plan() {
      const out = [];
      for (let i = 0; i < splits; i++) {
        out.push({ id: await splitIdFrom(["numbers", i]), descriptor: { from: i * records, to: (i + 1) * records } });
      }
      return { splits: out, finality: "final" as const };
    },
    async run(lane) {
      let at = Number(lane.progress?.watermark ?? lane.descriptor.from);
      while (at < lane.descriptor.to && !lane.signal.aborted && !lane.revokeSignal.aborted) {
        const end = Math.min(at + 20, lane.descriptor.to);
        await new Promise((r) => setTimeout(r, batchMs)); // "process" numbers [at, end)
        await lane.commit({ watermark: end }, { records: end - at });
        at = end;
      }
      if (at >= lane.descriptor.to) await lane.complete();
    },
  };
}

/**
 * Slice options from `env`. `runtime` names the platform on the member
 * record. `budgetMs` comes from `BUDGET_MS`; `aws_lambda.ts` replaces it
 * with `undefined`, so on Lambda each invocation's budget is the time its
 * function timeout leaves. `transport` carries the platform's WebSocket
 * client where it needs one (`denoWebSocket` on Deno Deploy).
 */
export function sliceOptions(env: Env, runtime: string, transport: Pick<NatsStoreOptions, "wsFactory"> = {}): SliceOptions<Range> {
  const servers = (env.NATS_URL ?? "").split(",").filter(Boolean);
  if (servers.length === 0) throw new Error("NATS_URL must name the nats-server WebSocket URL (ws:// or wss://)");
  const job = env.JOB || "numbers";
  const opTimeoutMs = num(env, "OP_TIMEOUT_MS", 1000);
  return {
    // A connection per invocation: platforms freeze or drop idle sockets between invocations.
    storeFactory: () => NatsStore.connect({ servers, job, opTimeoutMs, name: runtime, ...transport }),
    source: numbersSource(env),
    job,
    budgetMs: num(env, "BUDGET_MS", 25_000),
    opTimeoutMs,
    drainDeadlineMs: num(env, "DRAIN_DEADLINE_MS", 2000),
    leaseMs: num(env, "LEASE_MS", 3000),
    maxInFlight: 4,
    token: env.TOKEN || undefined,
    runtime,
    instancePrefix: runtime.replace(/[^A-Za-z0-9_-]/g, "-").slice(0, 40),
  };
}
