/**
 * How programs configured by a store URL (the `splitlease` CLI's
 * `--servers`, the examples' `STORE_URL`) connect to each backend of the
 * store URL registry (`src/store/store_urls.ts`). The registry is data and
 * stays Web-only in `src/`: each backend's name and schemes. This file wires
 * each backend to its runtime adapter: NATS through the TCP transport for
 * `nats://`/`tls://` (or WebSocket), PostgreSQL through postgres.js and
 * Redis through node-redis, each loaded only when a URL names it. A backend added to the registry does not
 * type-check here until it is wired ({@linkcode STORE_BACKENDS} is keyed by
 * every registry id).
 *
 * @example
 * ```ts
 * import { storeBackendOf } from "./store_backends.ts";
 * const urls = ["nats://127.0.0.1:4222"];
 * const backend = await storeBackendOf(urls, "STORE_URL");
 * const store = await backend.connect(urls, { job: "backfill" });
 * await store.close();
 * ```
 *
 * @module
 */
import type { Store } from "../src/store/store.ts";
import type { JobCatalog } from "../src/store/job_catalog.ts";
import type { Logger } from "../src/util/logger.ts";
import { probeableUrl, type StoreKindId, storeKindOfUrls, STORE_URL_KINDS, type StoreUrlKind } from "../src/store/store_urls.ts";
import { pointMisdirectedUrl } from "../src/nats/listener.ts";
import { NatsStore } from "../src/nats/nats_store.ts";
import { NatsJobCatalog } from "../src/nats/nats_jobs.ts";
import type { NatsStoreOptions } from "../src/nats/options.ts";
import { transportFor } from "../adapters/nats_tcp.ts";
import type { PostgresStoreOptions } from "../adapters/postgres.ts";
import type { RedisStoreOptions } from "../adapters/redis.ts";

/**
 * Settings of one backend, by its registry id, for what the common options
 * do not cover (NATS credentials and replicas, a PostgreSQL schema or pool
 * size): spread over the backend's own connect options.
 *
 * @example
 * ```ts
 * import type { BackendSettings } from "./store_backends.ts";
 * const settings: BackendSettings = { nats: { replicas: 3 }, postgres: { schema: "jobs" } };
 * ```
 */
export interface BackendSettings {
  /** Extra `NatsStore.connect` options (credentials, `replicas`, `wsFactory`, `transport`). */
  nats?: Partial<NatsStoreOptions>;
  /** Extra `PostgresStore.connect` options (`schema`, `poolSize`, `transactionIdleTimeoutMs`). */
  postgres?: Partial<PostgresStoreOptions>;
  /** Extra `RedisStore.connect` options (`keyPrefix`, `durability`, `waitReplicas`, `tls`). */
  redis?: Partial<RedisStoreOptions>;
}

/**
 * What every backend's connection takes.
 *
 * @example
 * ```ts
 * import type { BackendConnectOptions } from "./store_backends.ts";
 * const cli: BackendConnectOptions = { job: "backfill", clientName: "splitlease-cli", createMissing: false };
 * ```
 */
export interface BackendConnectOptions {
  /** The job. */
  job: string;
  /** Bound of each store operation (the backend's default when absent). */
  opTimeoutMs?: number;
  /** The connection's name in server monitoring (NATS connection name, PostgreSQL `application_name`). */
  clientName?: string;
  /** Create what is missing: the bucket, the schema, the job (default true). Tools that only read or repair pass `false`. */
  createMissing?: boolean;
  /** Where connection attempts are logged. */
  logger?: Logger;
  /** Backend-specific settings. */
  settings?: BackendSettings;
}

/**
 * One backend as URL-configured programs reach it: its registry entry, its
 * store, its job catalog, and how messages name a job's records there.
 *
 * @example
 * ```ts
 * import { STORE_BACKENDS } from "./store_backends.ts";
 * console.log(STORE_BACKENDS.postgres.recordsOf("backfill")); // "rows in PostgreSQL"
 * ```
 */
export interface StoreBackend {
  /** The registry entry: id, display name, schemes. */
  readonly kind: StoreUrlKind;
  /** The store of `options.job` at `urls` (validated by {@linkcode storeBackendOf}). */
  connect(urls: readonly string[], options: BackendConnectOptions): Promise<Store>;
  /** The job catalog of the server at `urls` (`splitlease jobs`, `delete`). */
  catalog(urls: readonly string[], options: Omit<BackendConnectOptions, "job" | "createMissing">): Promise<JobCatalog>;
  /** Where one job's records live, for messages. */
  recordsOf(job: string): string;
  /** What an empty catalog listing means, for messages. */
  readonly noJobs: string;
}

const kind = (id: StoreKindId): StoreUrlKind => STORE_URL_KINDS.find((k) => k.id === id)!;

/** The NATS options every NATS connection of a URL-configured program shares: the transport by the URLs' scheme. */
function natsOptions(urls: readonly string[], o: Omit<BackendConnectOptions, "job" | "createMissing">) {
  return {
    servers: [...urls],
    // nats:// and tls:// go through the TCP transport; ws:// and wss:// through WebSocket.
    transport: transportFor(urls),
    ...(o.opTimeoutMs !== undefined ? { opTimeoutMs: o.opTimeoutMs } : {}),
    ...(o.clientName !== undefined ? { name: o.clientName } : {}),
    ...(o.logger !== undefined ? { logger: o.logger } : {}),
    ...o.settings?.nats,
  };
}

/**
 * Every backend of the registry, wired: keyed by registry id, so a backend
 * added to `STORE_URL_KINDS` fails to type-check until it has an entry here.
 *
 * @example
 * ```ts
 * import { STORE_BACKENDS } from "./store_backends.ts";
 * console.log(Object.values(STORE_BACKENDS).map((b) => b.kind.name)); // ["NATS", "PostgreSQL", "Redis"]
 * ```
 */
export const STORE_BACKENDS: { readonly [K in StoreKindId]: StoreBackend } = {
  nats: {
    kind: kind("nats"),
    connect: (urls, o) => NatsStore.connect({ ...natsOptions(urls, o), job: o.job, createBucket: o.createMissing ?? true }),
    catalog: (urls, o) => NatsJobCatalog.connect(natsOptions(urls, o)),
    recordsOf: (job) => `bucket splitlease_${job}`,
    noJobs: "no jobs (no splitlease_* bucket on this server)",
  },
  postgres: {
    kind: kind("postgres"),
    async connect(urls, o) {
      const { PostgresStore } = await import("../adapters/postgres.ts");
      const create = o.createMissing ?? true;
      return await PostgresStore.connect({
        url: urls[0],
        job: o.job,
        ...(o.opTimeoutMs !== undefined ? { opTimeoutMs: o.opTimeoutMs } : {}),
        ...(o.clientName !== undefined ? { applicationName: o.clientName.slice(0, 63) } : {}),
        ...(o.logger !== undefined ? { logger: o.logger } : {}),
        ...(create ? {} : { createSchema: false, createJob: false }),
        ...o.settings?.postgres,
      });
    },
    async catalog(urls, o) {
      const { PostgresJobCatalog } = await import("../adapters/postgres.ts");
      const schema = o.settings?.postgres?.schema;
      return await PostgresJobCatalog.connect({
        url: urls[0],
        ...(o.opTimeoutMs !== undefined ? { opTimeoutMs: o.opTimeoutMs } : {}),
        ...(o.clientName !== undefined ? { applicationName: o.clientName.slice(0, 63) } : {}),
        ...(schema !== undefined ? { schema } : {}),
      });
    },
    recordsOf: () => "rows in PostgreSQL",
    noJobs: "no jobs (no job rows in this database's splitlease schema)",
  },
  redis: {
    kind: kind("redis"),
    async connect(urls, o) {
      const { RedisStore } = await import("../adapters/redis.ts");
      return await RedisStore.connect({
        url: urls[0],
        job: o.job,
        ...(o.opTimeoutMs !== undefined ? { opTimeoutMs: o.opTimeoutMs } : {}),
        ...(o.clientName !== undefined ? { clientName: o.clientName } : {}),
        ...(o.logger !== undefined ? { logger: o.logger } : {}),
        ...(o.createMissing === false ? { createJob: false } : {}),
        ...o.settings?.redis,
      });
    },
    async catalog(urls, o) {
      const { RedisJobCatalog } = await import("../adapters/redis.ts");
      const r = o.settings?.redis;
      return await RedisJobCatalog.connect({
        url: urls[0],
        ...(o.opTimeoutMs !== undefined ? { opTimeoutMs: o.opTimeoutMs } : {}),
        ...(o.clientName !== undefined ? { clientName: o.clientName } : {}),
        ...(r?.keyPrefix !== undefined ? { keyPrefix: r.keyPrefix } : {}),
        ...(r?.tls !== undefined ? { tls: r.tls } : {}),
      });
    },
    recordsOf: (job) => `keys splitlease:{${job}}:* in Redis`,
    noJobs: "no jobs (no names in this server's splitlease:jobs set)",
  },
};

/**
 * The backend of a store setting's URLs (`what` names the setting in
 * messages: `--servers`, `STORE_URL`). A URL no backend takes is probed
 * first (an `http://` or bare `host:port` URL at a nats-server listener is
 * answered with the URL of the right listener), then refused with
 * `INVALID_CONFIG` naming every scheme of the registry and the likely fix.
 *
 * @example
 * ```ts
 * import { storeBackendOf } from "./store_backends.ts";
 * const backend = await storeBackendOf(["postgres://app@db:5432/app"], "STORE_URL");
 * console.log(backend.kind.name); // "PostgreSQL"
 * ```
 */
export async function storeBackendOf(urls: readonly string[], what: string): Promise<StoreBackend> {
  const odd = urls.filter(probeableUrl);
  const found = await Promise.all(odd.map((u) => pointMisdirectedUrl(u, AbortSignal.timeout(1000))));
  const probed = new Map(odd.flatMap((u, i) => (found[i] ? [[u, found[i]!] as [string, string]] : [])));
  return STORE_BACKENDS[storeKindOfUrls(urls, what, STORE_URL_KINDS, probed).id as StoreKindId];
}
