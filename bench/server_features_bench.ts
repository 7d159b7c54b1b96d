// What current nats-server releases offer, measured before any of it is used
// (issue 20, item 6; the decision is in docs/DESIGN.md, "Replicated buckets").
//
//   npm run bench -- server_features
//
// Atomic batch publish (2.12+, `allow_atomic` on the stream): is it a
// multi-key compare-and-swap on a KV bucket (each message with its own
// Nats-Expected-Last-Subject-Sequence, all or nothing), and what does a
// batch of two cost against two CAS writes, serially and 40 in flight?
// Runs on the pinned current release (NATS_SERVER); skipped on 2.9.
import { headers, wsconnect } from "@nats-io/nats-core";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { NatsServer } from "../tests/helpers/nats_server.ts";
import { result } from "./_common.ts";

const enc = new TextEncoder();
const PAIRS = Number(Deno.env.get("BENCH_PAIRS") ?? 300);
const IN_FLIGHT = 40;

await using server = await NatsServer.start();
const [major, minor] = server.version.split(".").map(Number);
if (major < 2 || (major === 2 && minor < 12)) {
  result({ bench: "server_features", metric: "atomic batch publish", value: `skipped: nats-server ${server.version} has none (2.12+)` });
  Deno.exit(0);
}
const nc = await wsconnect({ servers: server.wsUrl });
const js = jetstream(nc, { timeout: 5000 });
const jsm = await js.jetstreamManager();
const kv = await new Kvm(js).create("features", { history: 1 });
const info = await jsm.streams.info("KV_features");
await jsm.streams.update("KV_features", { ...info.config, allow_atomic: true } as never);
const expect = (seq: number) => {
  const h = headers();
  h.set("Nats-Expected-Last-Subject-Sequence", String(seq));
  return h;
};
const subj = (key: string) => `$KV.features.${key}`;
/** One atomic batch of CAS writes: [key, value, expected revision] each. */
async function batch(writes: [string, string, number][]): Promise<boolean> {
  try {
    const [first, ...rest] = writes;
    const b = await js.startBatch(subj(first[0]), enc.encode(first[1]), { headers: expect(first[2]) } as never);
    for (const w of rest.slice(0, -1)) await b.add(subj(w[0]), enc.encode(w[1]), { headers: expect(w[2]) } as never);
    const last = rest.at(-1)!;
    await b.commit(subj(last[0]), enc.encode(last[1]), { headers: expect(last[2]) } as never);
    return true;
  } catch {
    return false;
  }
}

// 1. Semantics: a shrink of split.a at its revision plus the creation of its residual.
const rev = await kv.create("split.a", "whole");
const ok = await batch([["split.a", "shrunk", rev], ["split.a-r1", "residual", 0]]);
const landed = (await kv.get("split.a"))?.string() === "shrunk" && (await kv.get("split.a-r1"))?.string() === "residual";
// A batch whose second CAS is stale: nothing of it may land.
const refused = !(await batch([["split.b", "new", 0], ["split.a", "stale", rev]]));
const nothing = (await kv.get("split.b")) === null && (await kv.get("split.a"))?.string() === "shrunk";
result({
  bench: "server_features",
  metric: `atomic batch as a multi-key CAS on nats-server ${server.version}`,
  value: `both writes landed together: ${ok && landed}; a batch with a stale CAS refused whole: ${refused && nothing}`,
  target: "true, true",
});

// 2. Cost: a pair of CAS creates against one atomic batch of the same pair.
let t = performance.now();
for (let i = 0; i < PAIRS; i++) {
  await kv.create(`p.${i}`, "x");
  await kv.create(`p.${i}.s`, "y");
}
const twoSerial = (performance.now() - t) / PAIRS;
t = performance.now();
for (let i = 0; i < PAIRS; i++) await batch([[`q.${i}`, "x", 0], [`q.${i}.s`, "y", 0]]);
const batchSerial = (performance.now() - t) / PAIRS;
t = performance.now();
await Promise.all(Array.from({ length: IN_FLIGHT }, async (_, i) => {
  await kv.create(`r.${i}`, "x");
  await kv.create(`r.${i}.s`, "y");
}));
const twoPar = performance.now() - t;
t = performance.now();
const parOk = await Promise.all(Array.from({ length: IN_FLIGHT }, (_, i) => batch([[`w.${i}`, "x", 0], [`w.${i}.s`, "y", 0]])));
const batchPar = performance.now() - t;
result({
  bench: "server_features",
  metric: "atomic batch of two ÷ two CAS creates, serial (ms per pair)",
  value: `${batchSerial.toFixed(2)} vs ${twoSerial.toFixed(2)} ms`,
  ratio: batchSerial / twoSerial,
});
result({
  bench: "server_features",
  metric: `${IN_FLIGHT} pairs in flight: atomic batches ÷ CAS creates (ms for all)`,
  value: `${batchPar.toFixed(0)} vs ${twoPar.toFixed(0)} ms, ${parOk.filter(Boolean).length}/${IN_FLIGHT} batches accepted`,
  ratio: batchPar / twoPar,
});
await nc.close();
