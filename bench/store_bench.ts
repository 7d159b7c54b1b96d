/**
 * CAS updates/s through NatsStore vs raw @nats-io/kv, same server, same run;
 * and through PostgresStore on the PostgreSQL `npm run bench` started
 * (PG_URL), next to them (its ratio is to NatsStore's rate).
 * Run: node_modules/.bin/deno run -A bench/store_bench.ts
 * (starts its own nats-server with the test launcher).
 */
import { natsTransport } from "./_transport.ts";
import { wsconnect } from "@nats-io/nats-core";
import { jetstream } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import { NatsStore } from "../nats.ts";
import type { Store } from "../store.ts";
import { NatsServer } from "../tests/helpers/nats_server.ts";

const VALUE = "x".repeat(100);
const SERIAL_MS = Number(Deno.env.get("BENCH_MS") ?? 3000);
const ROUNDS = 3;

interface Cas {
  create(key: string, value: string): Promise<number>;
  update(key: string, value: string, rev: number): Promise<number>;
}

function rawCas(kv: KV): Cas {
  return {
    create: (k, v) => kv.create(k, v),
    update: (k, v, r) => kv.update(k, v, r),
  };
}

function storeCas(s: Store): Cas {
  return {
    async create(k, v) {
      const r = await s.create(k, v);
      if (!r.ok) throw new Error("conflict");
      return r.revision;
    },
    async update(k, v, rev) {
      const r = await s.update(k, v, rev);
      if (!r.ok) throw new Error("conflict");
      return r.revision;
    },
  };
}

async function serial(cas: Cas, key: string): Promise<number> {
  let rev = await cas.create(key, VALUE);
  let n = 0;
  const t0 = performance.now();
  const end = t0 + SERIAL_MS;
  while (performance.now() < end) {
    rev = await cas.update(key, VALUE, rev);
    n++;
  }
  return n / ((performance.now() - t0) / 1000);
}

async function parallel(cas: Cas, prefix: string, keys = 100): Promise<number> {
  const revs = await Promise.all(Array.from({ length: keys }, (_, i) => cas.create(`${prefix}.${i}`, VALUE)));
  let n = 0;
  const t0 = performance.now();
  const end = t0 + SERIAL_MS;
  await Promise.all(revs.map(async (rev, i) => {
    const key = `${prefix}.${i}`;
    while (performance.now() < end) {
      rev = await cas.update(key, VALUE, rev);
      n++;
    }
  }));
  return n / ((performance.now() - t0) / 1000);
}

await using server = await NatsServer.start();
// The same WebSocket client for both sides (on Deno: the adapter's Nagle-free one).
const nc = await wsconnect({ servers: server.wsUrl, ...(await natsTransport()) });
const kv = await new Kvm(jetstream(nc, { timeout: 5000 })).create("splitlease_benchraw", { history: 1 });
const store = await NatsStore.connect({ servers: server.wsUrl, job: "bench", ...(await natsTransport()) });
const raw = rawCas(kv);
const ours = storeCas(store);

// Warm up both paths.
await serial(raw, "warm.raw");
await serial(ours, "warm.store");

const results: Record<string, { raw: number[]; store: number[] }> = {
  "serial CAS, one key": { raw: [], store: [] },
  "100 keys, 100 in flight": { raw: [], store: [] },
};
// Interleave rounds so drift (GC, disk) hits both sides alike.
for (let r = 0; r < ROUNDS; r++) {
  results["serial CAS, one key"].raw.push(await serial(raw, `s${r}.raw`));
  results["serial CAS, one key"].store.push(await serial(ours, `s${r}.store`));
  results["100 keys, 100 in flight"].raw.push(await parallel(raw, `p${r}.raw`));
  results["100 keys, 100 in flight"].store.push(await parallel(ours, `p${r}.store`));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`nats-server ${nc.info?.version}, WebSocket, R1, ${VALUE.length} B values, ${ROUNDS} rounds of ${SERIAL_MS} ms`);
for (const [name, { raw, store }] of Object.entries(results)) {
  const r = median(raw);
  const s = median(store);
  console.log(
    `${name.padEnd(26)} raw kv ${r.toFixed(0).padStart(6)}/s   NatsStore ${s.toFixed(0).padStart(6)}/s   ` +
      `ratio ${(s / r).toFixed(3)} (overhead ${((1 - s / r) * 100).toFixed(1)}%)`,
  );
  // A summary row for `npm run bench` (scripts/bench.mjs).
  console.log(`::result ${
    JSON.stringify({ metric: `NatsStore ÷ raw kv, ${name}`, value: `${s.toFixed(0)} vs ${r.toFixed(0)}/s`, ratio: s / r })
  }`);
}
await store.close();
await nc.close();

// PostgresStore next to NatsStore: the same CAS loops, the same run.
const pgUrl = Deno.env.get("PG_URL");
if (pgUrl) {
  const { PostgresStore } = await import("../adapters/postgres.ts");
  const pg = await PostgresStore.connect({ url: pgUrl, job: `bench${Date.now()}`, schema: `bench_store_${Date.now().toString(36)}` });
  const pgCas = storeCas(pg);
  await serial(pgCas, "warm.pg");
  const pgResults: Record<string, number[]> = { "serial CAS, one key": [], "100 keys, 100 in flight": [] };
  for (let r = 0; r < ROUNDS; r++) {
    pgResults["serial CAS, one key"].push(await serial(pgCas, `s${r}.pg`));
    pgResults["100 keys, 100 in flight"].push(await parallel(pgCas, `p${r}.pg`));
  }
  for (const [name, rates] of Object.entries(pgResults)) {
    const p = median(rates);
    const n = median(results[name].store);
    console.log(`${name.padEnd(26)} PostgresStore ${p.toFixed(0).padStart(6)}/s   NatsStore ${n.toFixed(0).padStart(6)}/s`);
    console.log(`::result ${JSON.stringify({ metric: `PostgresStore ÷ NatsStore, ${name}`, value: `${p.toFixed(0)} vs ${n.toFixed(0)}/s`, ratio: p / n })}`);
  }
  await pg.close();
}
