/**
 * Shared launcher of the examples: picks the adapter of the runtime it runs
 * on (Deno, Bun or Node >= 22), and reads the coordination settings common to
 * every example from environment variables.
 *
 * @module
 */
import process from "node:process";
import type { ServeOptions, Service } from "../host.ts";
import { transportFor } from "../adapters/nats_tcp.ts";
import { storeBackendOf } from "../cli/store_backends.ts";
import { probeableUrl, splitStoreUrls, storeKindOfUrls } from "../src/store/store_urls.ts";
import type { NatsStoreOptions } from "../nats.ts";
import { MemoryStore, SplitleaseError, type Store } from "../mod.ts";

/** Which runtime this is. */
export function runtimeName(): "deno" | "bun" | "node" {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  if (g.Deno !== undefined) return "deno";
  if (g.Bun !== undefined) return "bun";
  return "node";
}

/**
 * How this runtime reaches the NATS `servers`: `nats://` and `tls://` URLs
 * through the TCP transport; WebSocket URLs on Deno with the adapter's
 * `denoWebSocket` (Deno's own client stalls bursts of writes ~40 ms:
 * Nagle's algorithm), elsewhere with the runtime's `WebSocket`.
 */
export async function natsTransportHere(
  servers: readonly string[] = [],
): Promise<Pick<NatsStoreOptions, "wsFactory" | "transport">> {
  const transport = transportFor(servers);
  if (transport) return { transport };
  if (runtimeName() !== "deno") return {};
  return { wsFactory: (await import("../adapters/deno.ts")).denoWebSocket };
}

/** Serves `options` with the adapter of the current runtime. */
export async function serveHere<D>(options: ServeOptions<D>): Promise<Service> {
  switch (runtimeName()) {
    case "deno":
      return (await import("../adapters/deno.ts")).serve(options);
    case "bun":
      return (await import("../adapters/bun.ts")).serve(options);
    default:
      return (await import("../adapters/node.ts")).serve(options);
  }
}

function num(env: Record<string, string | undefined>, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new SplitleaseError("INVALID_CONFIG", `${name} must be a number (got ${JSON.stringify(raw)})`);
  return n;
}

/**
 * Coordination options from the environment: `JOB` (required), `INSTANCE`,
 * `PORT` (default 8080), `BIND` (the address to listen on, default 0.0.0.0,
 * as in `examples/object_store`; `HOSTNAME_BIND` is read as an old alias,
 * never `HOSTNAME`, which shells and Kubernetes set to the host or pod name),
 * `STORE_URL` (the coordination store: a `postgres://` or
 * `postgresql://` URL for PostgreSQL, a `redis://` or `rediss://` URL for
 * Redis, or comma-separated NATS URLs:
 * `nats://`/`tls://` through the TCP transport, or `ws://`/`wss://`; the
 * schemes of src/store/store_urls.ts), `NATS_URL` (the same, the older
 * name; without either the embedded MemoryStore serves a single process),
 * `NATS_REPLICAS` (the job bucket's replicas when this worker creates it: 3
 * on a production cluster), `PG_SCHEMA` (the PostgreSQL store's schema,
 * default `splitlease`), `PG_TX_IDLE_TIMEOUT_MS` (its
 * `transactionIdleTimeoutMs`), `REDIS_DURABILITY` (the weakest Redis
 * persistence accepted: `always`, the default, `everysec` or `none`),
 * `REDIS_WAIT_REPLICAS` (replicas each write waits for), `REDIS_KEY_PREFIX`,
 * `SHARDS` (the job's shard count, default 1: docs/OPERATIONS.md, "Sharding
 * a job"; each shard's records under its own job name on the same store
 * URL: a NATS bucket, PostgreSQL job or Redis hash tag per shard),
 * `LEASE_MS`, `OP_TIMEOUT_MS`, `MAX_IN_FLIGHT`, `DRAIN_DEADLINE_MS`,
 * `REPLAN_INTERVAL_MS`, `SHUTDOWN_MARGIN_MS`, `DRAIN_TOKEN`, `DRAIN_OPEN=1`
 * (accept `POST /drain` without a token; without either it answers 403).
 */
export function coordinationFromEnv(
  env: Record<string, string | undefined> = process.env,
): Omit<ServeOptions<never>, "source"> {
  const job = env.JOB;
  if (!job) throw new SplitleaseError("INVALID_CONFIG", "JOB (the job name) must be set");
  const opts: Omit<ServeOptions<never>, "source"> = {
    job,
    instance: env.INSTANCE || undefined,
    port: num(env, "PORT") ?? 8080,
    hostname: env.BIND || env.HOSTNAME_BIND || "0.0.0.0",
    drainToken: env.DRAIN_TOKEN || undefined,
    drainOpen: env.DRAIN_OPEN === "1" || undefined,
    leaseMs: num(env, "LEASE_MS"),
    opTimeoutMs: num(env, "OP_TIMEOUT_MS"),
    maxInFlight: num(env, "MAX_IN_FLIGHT"),
    drainDeadlineMs: num(env, "DRAIN_DEADLINE_MS"),
    replanIntervalMs: num(env, "REPLAN_INTERVAL_MS"),
    shutdownMarginMs: num(env, "SHUTDOWN_MARGIN_MS"),
    ...(env.SHARDS ? { shards: num(env, "SHARDS") } : {}),
    ...storeFromEnv(job, env),
  };
  return opts;
}

/**
 * The store of `STORE_URL` / `NATS_URL`: the backend its URLs name
 * (cli/store_backends.ts: PostgreSQL for a `postgres://` URL, Redis for a
 * `redis://` or `rediss://` one, NATS for
 * `nats://`, `tls://`, `ws://` or `wss://` ones; anything else is refused
 * naming every scheme and what it likely meant), the embedded MemoryStore
 * without either.
 */
function storeFromEnv(
  job: string,
  env: Record<string, string | undefined>,
): { storeFactory: (shard: { index: number; job: string }) => Promise<Store> } | { store: Store } | { stores: Store[] } {
  if (env.STORE_URL && env.NATS_URL) {
    throw new SplitleaseError("INVALID_CONFIG", "STORE_URL and NATS_URL are both set: give the store once (STORE_URL)");
  }
  const name = env.STORE_URL ? "STORE_URL" : "NATS_URL";
  const urls = splitStoreUrls(env.STORE_URL ?? env.NATS_URL ?? "");
  const shards = num(env, "SHARDS") ?? 1;
  // One embedded store per shard (serve refuses a bad SHARDS before it uses them).
  if (urls.length === 0) {
    return shards > 1 && Number.isInteger(shards) && shards <= 64 ? { stores: Array.from({ length: shards }, () => new MemoryStore()) } : { store: new MemoryStore() };
  }
  // Refused here, before anything starts; an http:// or bare host:port URL is refused by the
  // factory, which first asks what listens there to name the URL to give instead.
  if (!urls.some(probeableUrl)) storeKindOfUrls(urls, name);
  return {
    // Called once per shard with its records' job name (`<job>--shard<i>`; the job itself for shard 0 and an unsharded job).
    storeFactory: async (shard) => {
      const backend = await storeBackendOf(urls, name);
      // PostgreSQL and Redis take OP_TIMEOUT_MS and name each worker's connections (pg_stat_activity,
      // CLIENT LIST); NATS keeps its own defaults (as before the registry).
      const pg = backend.kind.id === "postgres" || backend.kind.id === "redis";
      const on = shard?.job ?? job;
      return await backend.connect(urls, {
        job: on,
        ...(pg ? { opTimeoutMs: num(env, "OP_TIMEOUT_MS"), clientName: `splitlease:${on}${env.INSTANCE ? `:${env.INSTANCE}` : ""}` } : {}),
        settings: {
          nats: { replicas: num(env, "NATS_REPLICAS"), ...(await natsTransportHere(urls)) },
          postgres: {
            transactionIdleTimeoutMs: num(env, "PG_TX_IDLE_TIMEOUT_MS"),
            ...(env.PG_SCHEMA ? { schema: env.PG_SCHEMA } : {}),
          },
          redis: {
            ...(env.REDIS_DURABILITY ? { durability: env.REDIS_DURABILITY as "always" | "everysec" | "none" } : {}),
            ...(env.REDIS_WAIT_REPLICAS ? { waitReplicas: num(env, "REDIS_WAIT_REPLICAS") } : {}),
            ...(env.REDIS_KEY_PREFIX ? { keyPrefix: env.REDIS_KEY_PREFIX } : {}),
          },
        },
      });
    },
  };
}

/**
 * Runs a service to its end, then `cleanup` (close pools, files), then exits
 * with the service's exit code.
 */
export async function runToExit(service: Service, cleanup: () => Promise<void>): Promise<never> {
  const { exitCode } = await service.done;
  try {
    await cleanup();
  } catch (e) {
    console.error(JSON.stringify({ level: "warn", msg: "cleanup failed", error: String(e) }));
  }
  process.exit(exitCode);
}
