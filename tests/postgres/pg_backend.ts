// The PostgreSQL backend for the shared coordinator scenarios: the server the
// test command started (PG_URL), a fresh job per fleet, real time.
import type { Store } from "../../mod.ts";
import { pgStore } from "../helpers/pg.ts";
import { type Backend, Fleet, RealDriver } from "../coordinator/fleet.ts";
import { NATS_TIMINGS } from "../coordinator/nats_backend.ts";

/** The timings of the NATS runs: the same scenarios, the same real-time budget. */
export const PG_TIMINGS = NATS_TIMINGS;

export function pgBackend(): Backend {
  const connect = (job?: string) => pgStore({ ...(job ? { job } : {}), opTimeoutMs: PG_TIMINGS.opTimeoutMs, pollIntervalMs: 250 });
  return {
    name: "postgres",
    realtime: true,
    async fleet(wrap?: (s: Store) => Store) {
      const store = await connect();
      const f = new Fleet(wrap ? wrap(store) : store, new RealDriver(400));
      f.job = store.job;
      f.timings = PG_TIMINGS;
      (f as Fleet & { raw: Store }).raw = store;
      if (wrap) f.onDispose.push(() => store.close());
      return f;
    },
    async extraStore(f: Fleet) {
      const s = await connect(f.job);
      f.onDispose.push(() => s.close());
      return s;
    },
  };
}
