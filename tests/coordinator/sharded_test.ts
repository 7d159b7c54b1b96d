import { MemoryStore, type Store } from "../../mod.ts";
import { FAST, ManualDriver } from "./fleet.ts";
import { shardedScenarios } from "./sharded.ts";

// One MemoryStore per shard of each job; a "connection" is a view of it that closing leaves open.
const stores = new Map<string, MemoryStore>();
function connect(job: string, index: number): Promise<Store> {
  const key = `${job}/${index}`;
  let s = stores.get(key);
  if (!s) stores.set(key, (s = new MemoryStore({ yieldToTimers: false })));
  const shared = s;
  return Promise.resolve(new Proxy(shared, {
    get(t, k) {
      if (k === "close") return () => Promise.resolve();
      const v = Reflect.get(t, k, t);
      return typeof v === "function" ? v.bind(t) : v;
    },
  }));
}

shardedScenarios({ name: "memory", time: () => new ManualDriver(), timings: FAST, store: connect });
