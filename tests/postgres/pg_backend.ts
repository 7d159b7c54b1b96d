// The PostgreSQL backend for the shared coordinator scenarios: the server the
// test command started (PG_URL), a fresh job per fleet, real time, the
// timings of the NATS runs.
import { pgStore } from "../helpers/pg.ts";
import type { Backend } from "../coordinator/fleet.ts";
import { NATS_TIMINGS, realBackend } from "../coordinator/nats_backend.ts";

export function pgBackend(): Backend {
  return realBackend("postgres", (job) => pgStore({ job, opTimeoutMs: NATS_TIMINGS.opTimeoutMs, pollIntervalMs: 250 }));
}
