// A real-time backend for the shared coordinator scenarios: a fresh job per
// fleet on stores of a real server (each backend's harness passes how it
// connects; see tests/store/backend_suites.ts).
import { type Store, StoreUnavailableError } from "../../mod.ts";
import { type Backend, Fleet, RealDriver, type Timings } from "./fleet.ts";

/** Real-time timings: short, but inside every config rule (the same on every backend). */
export const REAL_TIMINGS: Timings = {
  leaseMs: 1000,
  opTimeoutMs: 400,
  drainDeadlineMs: 500,
  replanIntervalMs: 1000,
  retryBackoffMs: 50,
  retryBackoffMaxMs: 400,
};

let seq = 0;

/**
 * The fleet's first store, which creates its bucket: setting up, not under
 * test, so an outage here (a busy server creating the bucket past the
 * scenario's 400 ms op timeout) is waited out for up to 5 s.
 */
async function setUp(open: () => Promise<Store>): Promise<Store> {
  const until = Date.now() + 5000;
  for (;;) {
    try {
      return await open();
    } catch (e) {
      if (!(e instanceof StoreUnavailableError) || Date.now() >= until) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** A real-time backend: a fresh job per fleet, on stores `connect(job)` opens (another process's connection each). */
export function realBackend(name: string, connect: (job: string) => Promise<Store>, timings: Timings = REAL_TIMINGS): Backend {
  return {
    name,
    realtime: true,
    async fleet(wrap?: (s: Store) => Store) {
      const job = `t${Date.now().toString(36)}${seq++}`;
      const store = await setUp(() => connect(job));
      const f = new Fleet(wrap ? wrap(store) : store, new RealDriver());
      f.job = job;
      f.timings = timings;
      (f as Fleet & { raw: Store }).raw = store;
      if (wrap) f.onDispose.push(() => store.close());
      return f;
    },
    connect: (job) => setUp(() => connect(job)),
    async extraStore(f: Fleet) {
      const s = await connect(f.job);
      f.onDispose.push(() => s.close());
      return s;
    },
  };
}
