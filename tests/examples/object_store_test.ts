/**
 * The object-store backfill example: planner bin-packing, record framing,
 * lane behaviour (resume, cadence, revocation, loss), the S3 backend against
 * a local s3rver, the directory backend, and a fleet of Deno, Bun and Node
 * worker processes over a real nats-server with one of them SIGKILLed.
 */
import assert from "node:assert/strict";
import { withTimeout } from "../helpers/deadline.ts";
import { MemoryStore, runWorker, SplitCoordinator, splitIdFrom } from "../../mod.ts";
import type { Lane, SplitProgress } from "../../mod.ts";
import {
  cutRemaining,
  descriptorSchema,
  directoryBackend,
  fileEtag,
  ndjsonRecords,
  type ObjectBackend,
  ObjectChangedError,
  type ObjectEntry,
  type ObjectRecord,
  type ObjectSplit,
  objectStoreSource,
  packObjects,
  parseListPage,
  s3Backend,
} from "../../examples/object_store/mod.ts";
import { freePort, NatsServer } from "../helpers/nats_server.ts";
import { eachLine, parseLogLine } from "../helpers/lines.ts";

const root = new URL("../../", import.meta.url).pathname;
const bin = (n: string) => `${root}node_modules/.bin/${n}`;
const enc = new TextEncoder();

const o = (key: string, size: number, etag = `e-${key}`): ObjectEntry => ({ key, size, etag });

async function* chunksOf(...parts: (string | Uint8Array)[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield typeof p === "string" ? enc.encode(p) : p;
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

// --- planner --------------------------------------------------------------

Deno.test("object store: bin-packing gives exact splits for a listing (key order, target, big objects alone)", async () => {
  const listing = [o("g", 120), o("c", 40), o("a", 30), o("e", 10), o("d", 100), o("b", 50), o("f", 0)];
  const splits = await packObjects(listing, 100);
  assert.deepEqual(
    splits.map((s) => s.descriptor.objects.map((x) => x.key)),
    [["a", "b"], ["c"], ["d"], ["e", "f"], ["g"]],
  );
  assert.deepEqual(splits.map((s) => s.weight), [80, 40, 100, 10, 120]);
  // Ids come from the sorted keys and ETags through the library's splitIdFrom.
  assert.equal(splits[0].id, await splitIdFrom(["objstore-v1", "a", "e-a", "b", "e-b"]));
  assert.deepEqual(splits[3].descriptor, { objects: [o("e", 10), o("f", 0)] });
  // Deterministic whatever the listing order; every descriptor passes the schema.
  const again = await packObjects([...listing].reverse(), 100);
  assert.deepEqual(again, splits);
  for (const s of splits) assert.ok(descriptorSchema.safeParse(s.descriptor).success);
  // Object cap.
  const capped = await packObjects([o("a", 1), o("b", 1), o("c", 1), o("d", 1), o("e", 1)], 100, 2);
  assert.deepEqual(capped.map((s) => s.descriptor.objects.length), [2, 2, 1]);
  // An all-empty split still weighs 1.
  assert.deepEqual((await packObjects([o("z", 0)], 100)).map((s) => s.weight), [1]);
  await assert.rejects(packObjects([o("a", 1), o("a", 2)], 10), /twice/);
  await assert.rejects(packObjects([o("a", 1)], 0), /targetSplitBytes/);
});

Deno.test("object store: an overwritten object (new ETag) makes a new split id; the others keep theirs", async () => {
  const before = await packObjects([o("a", 30), o("b", 50), o("c", 90)], 100);
  const after = await packObjects([o("a", 30), o("b", 50, "e-b2"), o("c", 90)], 100);
  assert.equal(before.length, 2);
  assert.notEqual(after[0].id, before[0].id, "the split holding b is new work");
  assert.equal(after[1].id, before[1].id, "the split of c is unchanged");
  assert.ok(before.every((s) => /^[A-Za-z0-9_-]{32}$/.test(s.id)));
});

Deno.test("object store: descriptorSchema rejects malformed descriptors", () => {
  assert.equal(descriptorSchema.safeParse({ objects: [] }).success, false);
  assert.equal(descriptorSchema.safeParse({ objects: [{ key: "a", size: -1, etag: "x" }] }).success, false);
  assert.equal(descriptorSchema.safeParse({ objects: [{ key: "a", size: 1 }] }).success, false);
  assert.equal(descriptorSchema.safeParse({ objects: [o("a", 1)], extra: 1 }).success, false);
  assert.equal(descriptorSchema.safeParse({ objects: [o("a", 1)] }).success, true);
});

// --- framing ---------------------------------------------------------------

Deno.test("object store: ndjson framing tracks byte offsets across chunks, CRLF, blank lines, a last line without newline", async () => {
  const euro = enc.encode("€"); // 3 bytes, split across chunks below
  const recs = await collect(ndjsonRecords(
    chunksOf("ab\nc", "d\r\n\n", new Uint8Array([0x78, euro[0]]), new Uint8Array([euro[1], euro[2], 0x0a]), "tail"),
    100,
  ));
  assert.deepEqual(recs, [
    { offset: 100, end: 103, line: "ab" },
    { offset: 103, end: 107, line: "cd" },
    { offset: 108, end: 113, line: "x€" },
    { offset: 113, end: 117, line: "tail" },
  ]);
});

// --- lanes (a scripted lane, no coordinator) ---------------------------------

const memBackend = (files: Record<string, string>): ObjectBackend & { reads: [string, number][] } => {
  const reads: [string, number][] = [];
  return {
    describe: "mem",
    reads,
    probe: () => Promise.resolve(),
    async *list() {
      for (const [key, text] of Object.entries(files)) yield o(key, enc.encode(text).length, "v1");
    },
    async *read(entry, offset) {
      reads.push([entry.key, offset]);
      if (entry.etag !== "v1") throw new ObjectChangedError(entry.key, "etag");
      const bytes = enc.encode(files[entry.key]).subarray(offset);
      for (let i = 0; i < bytes.length; i += 4) yield bytes.subarray(i, i + 4);
    },
  };
};

interface ScriptedLane extends Lane<ObjectSplit> {
  commits: { progress: SplitProgress; records: number }[];
  completed?: SplitProgress;
  failed?: string;
  abort: AbortController;
  revoke: AbortController;
}

function scriptedLane(objects: ObjectEntry[], progress?: SplitProgress): ScriptedLane {
  const abort = new AbortController();
  const revoke = new AbortController();
  const lane: ScriptedLane = {
    id: "l1",
    splitId: "s1",
    spec: { id: "s1", descriptor: { objects }, weight: 1 },
    descriptor: { objects },
    epoch: 1,
    fencingToken: { splitId: "s1", epoch: 1 },
    progress,
    signal: abort.signal,
    revokeSignal: revoke.signal,
    abort,
    revoke,
    commits: [],
    commit(p, opts) {
      lane.commits.push({ progress: p, records: opts?.records ?? 0 });
      return Promise.resolve();
    },
    flush: () => Promise.resolve(),
    complete(p) {
      lane.completed = p;
      return Promise.resolve();
    },
    fail(reason) {
      lane.failed = String(reason);
      return Promise.resolve();
    },
  };
  return lane;
}

const files = { "a.ndjson": "a1\na2\na3\n", "b.ndjson": "b1\nb2\n" }; // 9 + 6 bytes
const objs = [o("a.ndjson", 9, "v1"), o("b.ndjson", 6, "v1")];

Deno.test("object store: a lane streams every record, commits every N records with a monotonic watermark, then completes", async () => {
  const got: ObjectRecord[] = [];
  let flushes = 0;
  const source = objectStoreSource({
    backend: memBackend(files),
    sink: { write: (r) => void got.push(r), flush: () => void flushes++ },
    commitEveryRecords: 2,
    commitEveryMs: 60_000,
  });
  const lane = scriptedLane(objs);
  await source.run(lane);
  assert.deepEqual(got.map((r) => `${r.key}@${r.offset}:${r.line}`), [
    "a.ndjson@0:a1",
    "a.ndjson@3:a2",
    "a.ndjson@6:a3",
    "b.ndjson@0:b1",
    "b.ndjson@3:b2",
  ]);
  assert.deepEqual(lane.commits, [
    { progress: { watermark: 6, state: { object: 0, offset: 6 }, estimate: { left: 9, total: 15, unit: "bytes" } }, records: 2 },
    { progress: { watermark: 12, state: { object: 1, offset: 3 }, estimate: { left: 3, total: 15, unit: "bytes" } }, records: 2 },
  ]);
  assert.deepEqual(lane.completed, { watermark: 15, state: { object: 2, offset: 0 }, estimate: { left: 0, total: 15, unit: "bytes" } });
  assert.equal(flushes, 3, "the sink is flushed before every commit and the completion");
});

Deno.test("object store: a lane resumes mid-object from the committed byte offset (no replay before it)", async () => {
  const backend = memBackend(files);
  const got: string[] = [];
  const source = objectStoreSource({ backend, sink: (r) => void got.push(r.line) });
  const lane = scriptedLane(objs, { watermark: 6, state: { object: 0, offset: 6 } });
  await source.run(lane);
  assert.deepEqual(got, ["a3", "b1", "b2"]);
  assert.deepEqual(backend.reads, [["a.ndjson", 6], ["b.ndjson", 0]]);
  assert.deepEqual(lane.completed?.watermark, 15);
  assert.deepEqual(lane.completed?.state, { object: 2, offset: 0 });
  await assert.rejects(
    source.run(scriptedLane(objs, { watermark: 0, state: { object: 5, offset: 0 } })),
    /outside the split/,
  );
});

Deno.test("object store: revokeSignal stops intake at a record boundary and commits the tail; signal stops at once with no commit", async () => {
  // Revocation after the second record.
  let lane = scriptedLane(objs);
  let n = 0;
  let source = objectStoreSource({
    backend: memBackend(files),
    sink: () => {
      if (++n === 2) lane.revoke.abort();
    },
    commitEveryRecords: 100,
  });
  await source.run(lane);
  assert.equal(n, 2);
  assert.deepEqual(lane.commits, [
    { progress: { watermark: 6, state: { object: 0, offset: 6 }, estimate: { left: 9, total: 15, unit: "bytes" } }, records: 2 },
  ]);
  assert.equal(lane.completed, undefined);
  // Loss after the second record: return at once, nothing committed.
  lane = scriptedLane(objs);
  n = 0;
  source = objectStoreSource({
    backend: memBackend(files),
    sink: () => {
      if (++n === 2) lane.abort.abort();
    },
    commitEveryRecords: 1,
  });
  await source.run(lane);
  assert.equal(n, 2);
  assert.deepEqual(lane.commits.map((c) => c.progress.watermark), [3]);
  assert.equal(lane.completed, undefined);
});

Deno.test("object store: an object changed since planning fails the split (poison) with a clear reason", async () => {
  const source = objectStoreSource({ backend: memBackend(files), sink: () => {} });
  const lane = scriptedLane([o("a.ndjson", 9, "v0")]);
  await source.run(lane);
  assert.match(lane.failed ?? "", /changed since it was planned/);
  assert.throws(() => objectStoreSource({ backend: memBackend(files), sink: () => {}, commitEveryRecords: 0 }), /commitEveryRecords/);
});

// --- cuts (the split hook) -----------------------------------------------------

/** Runs one lane of `d` to its end with the scripted lane; returns `key@offset:line` of every record. */
async function runPiece(files: Record<string, string>, d: ObjectSplit, progress?: SplitProgress): Promise<string[]> {
  const got: string[] = [];
  const source = objectStoreSource({ backend: memBackend(files), sink: (r) => void got.push(`${r.key}@${r.offset}:${r.line}`) });
  const lane = scriptedLane(d.objects, progress);
  await source.run(lane);
  assert.ok(lane.completed, `a piece completes: ${JSON.stringify(d)}`);
  return got;
}

/** `key@offset:line` of every record of `files`, in key order. */
async function allRecords(files: Record<string, string>): Promise<string[]> {
  const out: string[] = [];
  for (const key of Object.keys(files).sort()) {
    for await (const r of ndjsonRecords(chunksOf(files[key]), 0)) out.push(`${key}@${r.offset}:${r.line}`);
  }
  return out;
}

const tricky: Record<string, string> = {
  // CRLF, blank lines, a long line, a multi-byte character, no final newline.
  "a.ndjson": "a1\r\n\n\na2-long-line-xxxxxxxxxxxxxxxxxxx\na3\r\n\r\na4-€\na5",
  "b.ndjson": "\n\nb1\nb2\n",
  "c.ndjson": "c1\n",
};
const entriesOf = (files: Record<string, string>): ObjectEntry[] =>
  Object.keys(files).sort().map((k) => o(k, enc.encode(files[k]).length, "v1"));

Deno.test("object store cuts: two byte ranges cut at any byte of an object share no line and miss none", async () => {
  const files = { "a.ndjson": tricky["a.ndjson"] };
  const [a] = entriesOf(files);
  const expected = await allRecords(files);
  for (let c = 1; c < a.size; c++) {
    const got = [
      ...await runPiece(files, { objects: [{ ...a, to: c }] }),
      ...await runPiece(files, { objects: [{ ...a, from: c }] }),
    ];
    assert.deepEqual(got, expected, `cut at byte ${c}`);
  }
  // Three ranges, every pair of cuts.
  for (let c1 = 1; c1 < a.size; c1++) {
    for (let c2 = c1 + 1; c2 < a.size; c2++) {
      const got = [
        ...await runPiece(files, { objects: [{ ...a, to: c1 }] }),
        ...await runPiece(files, { objects: [{ ...a, from: c1, to: c2 }] }),
        ...await runPiece(files, { objects: [{ ...a, from: c2 }] }),
      ];
      assert.deepEqual(got, expected, `cuts at bytes ${c1} and ${c2}`);
    }
  }
  // Ranges pass the schema; bad ones do not.
  assert.ok(descriptorSchema.safeParse({ objects: [{ ...a, from: 3, to: 9 }] }).success);
  for (const bad of [{ from: 9, to: 9 }, { from: 9, to: 3 }, { to: a.size + 1 }, { from: a.size }, { from: -1 }]) {
    assert.equal(descriptorSchema.safeParse({ objects: [{ ...a, ...bad }] }).success, false, JSON.stringify(bad));
  }
});

Deno.test("object store cuts: cutRemaining pieces (multi-object, from any position, cut again) cover the rest exactly once", async () => {
  const objects = entriesOf(tricky);
  const expected = await allRecords(tricky);
  const total = objects.reduce((n, x) => n + x.size, 0);
  // Every line start of the split as the position reached, every number of parts.
  const starts: { object: number; offset: number }[] = [{ object: 0, offset: 0 }];
  objects.forEach((x, i) => {
    const t = tricky[x.key];
    for (let b = 0; b < t.length; b++) if (t[b] === "\n") starts.push({ object: i, offset: enc.encode(t.slice(0, b + 1)).length });
  });
  let checked = 0;
  for (const at of starts) {
    const done = await runPiece(tricky, { objects }, undefined).then((all) => all.filter((r) => {
      const [key, off] = [r.slice(0, r.indexOf("@")), Number(r.slice(r.indexOf("@") + 1, r.indexOf(":")))];
      const i = objects.findIndex((x) => x.key === key);
      return i < at.object || (i === at.object && off < at.offset);
    }));
    for (let parts = 2; parts <= 6; parts++) {
      const cut = cutRemaining(objects, at, parts, 1);
      const before = objects.slice(at.object).reduce((n, x) => n + x.size, 0) - at.offset;
      if (before < parts) continue;
      assert.ok(cut, `a cut at ${JSON.stringify(at)} into ${parts}`);
      assert.equal(cut.residuals.length, parts - 1);
      for (const d of [cut.keep, ...cut.residuals.map((r) => r.descriptor)]) assert.ok(descriptorSchema.safeParse(d).success, JSON.stringify(d));
      // The kept piece resumes from the position reached; nothing before it is redone.
      const progress = { watermark: 0, state: at };
      const kept = (await runPiece(tricky, cut.keep, progress));
      const rest = [];
      for (const r of cut.residuals) {
        // A residual cut again: its first half then its second.
        const again = cutRemaining(r.descriptor.objects, { object: 0, offset: r.descriptor.objects[0].from ?? 0 }, 2, 1);
        if (again) {
          rest.push(...await runPiece(tricky, again.keep), ...await runPiece(tricky, again.residuals[0].descriptor));
        } else rest.push(...await runPiece(tricky, r.descriptor));
      }
      assert.deepEqual([...done, ...kept, ...rest], expected, `position ${JSON.stringify(at)}, ${parts} parts`);
      // Weights are the pieces' bytes: together the bytes left (plus the kept bytes before the position).
      const sum = cut.weight + cut.residuals.reduce((n, r) => n + r.weight, 0);
      assert.ok(sum <= total + parts, `weights ${sum} of ${total} bytes`);
      checked++;
    }
  }
  assert.ok(checked > 40, `${checked} cuts checked`);
  // Too little left: fewer pieces, then none.
  const big = [o("big", 1000, "v1")];
  assert.equal(cutRemaining(big, { object: 0, offset: 0 }, 4, 300)?.residuals.length, 2, "1000 bytes make 3 pieces of >= 300");
  assert.equal(cutRemaining(big, { object: 0, offset: 500 }, 4, 300), undefined, "500 bytes left: no two pieces of 300");
  assert.deepEqual(cutRemaining(big, { object: 0, offset: 100 }, 3, 200), {
    keep: { objects: [{ ...big[0], to: 400 }] },
    weight: 400,
    residuals: [
      { descriptor: { objects: [{ ...big[0], from: 400, to: 700 }] }, weight: 300 },
      { descriptor: { objects: [{ ...big[0], from: 700 }] }, weight: 300 },
    ],
  });
});

Deno.test("object store cuts: split() mid-run cuts after the record being written; run stops at the kept end; residuals do the rest once", async () => {
  // 300 blank lines before r5: while r5 is written, the position after the
  // last record written (r4) is 300 bytes before it, more than a piece.
  const text = Array.from({ length: 40 }, (_, i) => (i === 5 ? "\n".repeat(300) : "") + `r${i}-${"x".repeat(i % 7)}`).join("\n") + "\n";
  const files = { "big.ndjson": text };
  const objects = entriesOf(files);
  const expected = await allRecords(files);
  const warnings: string[] = [];
  for (const cutAt of [1, 5, 6, 20, 38]) {
    const got: string[] = [];
    const lane = scriptedLane(objects);
    let cut: ReturnType<NonNullable<ReturnType<typeof objectStoreSource>["split"]>>;
    const source = objectStoreSource({
      backend: memBackend(files),
      commitEveryRecords: 3,
      minCutBytes: 10,
      onWarning: (m) => void warnings.push(m),
      sink: (r) => {
        got.push(`${r.key}@${r.offset}:${r.line}`);
        if (got.length === cutAt) {
          // The leader's ask arrives while this record is being written.
          cut = source.split!(lane, { parts: 3, fraction: 1 / 3 });
          if (cut) (lane as { descriptor: ObjectSplit }).descriptor = cut.keep;
        }
      },
    });
    await source.run(lane);
    assert.ok(cut, `cut after ${cutAt} records`);
    const end = cut.keep.objects[0].to!;
    const writtenAt = Number(got[cutAt - 1].split("@")[1].split(":")[0]);
    assert.ok(end > writtenAt, `the record being written (at ${writtenAt}) stays with the lane (kept to ${end})`);
    assert.ok(got.every((r) => Number(r.split("@")[1].split(":")[0]) < end), "run wrote nothing past the kept range");
    assert.ok(lane.completed, "the lane completes its kept range");
    assert.deepEqual(lane.completed.estimate, { left: 0, total: end, unit: "bytes" }, "the estimate follows the kept range");
    const after = lane.commits.filter((c) => (c.progress.watermark as number) > writtenAt).map((c) => c.progress.estimate?.total);
    assert.ok(after.every((t) => t === end), `commits after the cut estimate the kept range: ${after}`);
    const rest: string[] = [];
    for (const r of cut.residuals) rest.push(...await runPiece(files, r.descriptor));
    assert.deepEqual([...got, ...rest], expected, `every record once (cut after ${cutAt} records)`);
  }
  // Too little left: declined.
  const source = objectStoreSource({ backend: memBackend(files), sink: () => {}, minCutBytes: 1024 });
  assert.equal(source.split!(scriptedLane(objects), { parts: 2, fraction: 0.5 }), undefined);
  // Pieces whose descriptors would not fit 2048 bytes of JSON (many objects): declined, with a warning.
  const many: Record<string, string> = {};
  for (let i = 0; i < 60; i++) many[`some/rather/long/prefix/of/keys/part-${String(i).padStart(4, "0")}.ndjson`] = "x\n".repeat(50);
  const wide = objectStoreSource({ backend: memBackend(many), sink: () => {}, minCutBytes: 1, onWarning: (m) => void warnings.push(m) });
  assert.equal(wide.split!(scriptedLane(entriesOf(many)), { parts: 2, fraction: 0.5 }), undefined);
  assert.ok(warnings.some((m) => /over 2048 bytes/.test(m)), warnings.join("; "));
});

// --- S3 (s3rver) -------------------------------------------------------------

const S3_KEYS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };

/**
 * Runs s3rver in a Node 24 child process (it assigns `Object.prototype.__proto__`,
 * which Deno disables, and its paginated listings need OpenSSL's legacy
 * provider) with a bucket `data`; stops it and removes its data after `fn`.
 */
async function withS3rver(fn: (endpoint: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "splitlease-s3rver-" });
  const child = new Deno.Command(bin("node"), {
    // s3rver encrypts continuation tokens with DES, which OpenSSL 3 only has in its legacy provider.
    args: ["--openssl-legacy-provider", `${root}tests/examples/fixtures/s3rver_main.mjs`, dir, "data"],
    cwd: root,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("\n")) {
      const { done, value } = await withTimeout(reader.read(), 30_000, "s3rver to print its port");
      if (done) throw new Error(`s3rver exited before listening: ${text}`);
      text += value;
    }
    reader.releaseLock();
    await child.stdout.cancel().catch(() => {});
    const { port } = JSON.parse(text.slice(0, text.indexOf("\n")));
    await fn(`http://127.0.0.1:${port}`);
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
    await child.stdin.close().catch(() => {});
    await withTimeout(child.status, 15_000, "s3rver to exit after SIGKILL");
    await Deno.remove(dir, { recursive: true });
  }
}

/** Runs a whole job on MemoryStore with `workers` in-process workers; returns the records seen. */
async function runJob(backend: ObjectBackend, targetSplitBytes: number, workers = 2): Promise<ObjectRecord[]> {
  const store = new MemoryStore();
  const seen: ObjectRecord[] = [];
  try {
    const outcomes = await withTimeout(Promise.all(Array.from({ length: workers }, async (_, i) => {
      const source = objectStoreSource({ backend, sink: (r) => void seen.push(r), targetSplitBytes, commitEveryRecords: 3 });
      const coordinator = await SplitCoordinator.join({
        store,
        job: "objstore-test",
        instance: `w${i}`,
        fingerprint: source.fingerprint(),
        planner: (ctx) => source.plan(ctx),
        leaseMs: 1000,
        opTimeoutMs: 400,
      });
      return await runWorker({ coordinator, source, logger: () => {} });
    })), 60_000, `${workers} in-process workers to finish the object store job`);
    for (const out of outcomes) assert.equal(out.kind, "drained", JSON.stringify(out));
  } finally {
    await store.close();
  }
  return seen;
}

Deno.test({
  name: "object store (s3rver): list a prefix with pagination, run the job, resume with a ranged GET, refuse a changed object",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withS3rver(async (endpoint) => {
      const put = s3Backend({ bucket: "data", endpoint, ...S3_KEYS });
      assert.ok(put.describe.startsWith("s3:"));
      const { AwsClient } = await import("aws4fetch");
      const aws = new AwsClient({ ...S3_KEYS, service: "s3", region: "us-east-1", retries: 0 });
      const texts: Record<string, string> = {};
      for (let f = 0; f < 5; f++) {
        const key = `logs/2024/part-${f}.ndjson`;
        texts[key] = Array.from({ length: 10 + f * 7 }, (_, i) => JSON.stringify({ f, i, pad: "x".repeat(i % 9) })).join("\n") +
          "\n";
        const r = await aws.fetch(`${endpoint}/data/${key}`, { method: "PUT", body: texts[key] });
        assert.equal(r.status, 200, await r.text());
      }
      await (await aws.fetch(`${endpoint}/data/other/skip.ndjson`, { method: "PUT", body: "no\n" })).text();

      const backend = s3Backend({ bucket: "data", endpoint, prefix: "logs/", pageSize: 2, ...S3_KEYS, retries: 0 });
      await backend.probe();
      const listing = await collect(backend.list());
      assert.deepEqual(listing.map((x) => x.key).sort(), Object.keys(texts).sort());
      for (const x of listing) {
        assert.equal(x.size, enc.encode(texts[x.key]).length);
        assert.match(x.etag, /^"[0-9a-f]{32}"$/);
      }
      // Whole job over two in-process workers: every record exactly where it was.
      const seen = await runJob(backend, 600);
      const expected = Object.entries(texts).flatMap(([k, t]) => t.trimEnd().split("\n").map((l) => `${k}|${l}`));
      assert.deepEqual(seen.map((r) => `${r.key}|${r.line}`).sort(), expected.sort());
      // A cut object over S3: two byte ranges split mid-line (ranged GETs from the byte before the range) share no line and miss none.
      const first = listing[0];
      const mid = Math.floor(first.size / 2) + 3;
      const pieces: string[] = [];
      for (const objects of [[{ ...first, to: mid }], [{ ...first, from: mid }]]) {
        const lane = scriptedLane(objects);
        await objectStoreSource({ backend, sink: (r) => void pieces.push(r.line) }).run(lane);
        assert.ok(lane.completed);
      }
      assert.deepEqual(pieces, texts[first.key].trimEnd().split("\n"));
      // Ranged GET from a record boundary.
      const cut = texts[first.key].indexOf("\n") + 1;
      const tail = new TextDecoder().decode(
        (await collect(backend.read(first, cut, new AbortController().signal))).reduce((a, b) => {
          const c = new Uint8Array(a.length + b.length);
          c.set(a);
          c.set(b, a.length);
          return c;
        }, new Uint8Array(0)),
      );
      assert.equal(tail, texts[first.key].slice(cut));
      // Overwrite: the planned ETag no longer matches (If-Match → 412).
      await (await aws.fetch(`${endpoint}/data/${first.key}`, { method: "PUT", body: "changed\n" })).text();
      await assert.rejects(collect(backend.read(first, 0, new AbortController().signal)), ObjectChangedError);
      // …and a replan gives the changed object's split a new id.
      const replanned = await packObjects(await collect(backend.list()), 600);
      const before = await packObjects(listing, 600);
      assert.notEqual(replanned[0].id, before[0].id);
      // Clear errors for bad config.
      assert.throws(() => s3Backend({ bucket: "", endpoint, ...S3_KEYS }), /missing bucket/);
      assert.throws(
        () => s3Backend({ bucket: "data", endpoint, accessKeyId: "", secretAccessKey: "" }),
        /missing accessKeyId \(AWS_ACCESS_KEY_ID\), secretAccessKey/,
      );
      await assert.rejects(
        s3Backend({ bucket: "nope", endpoint, ...S3_KEYS, retries: 0 }).probe(),
        /NoSuchBucket/,
      );
      assert.throws(() => s3Backend({ bucket: "data", endpoint: "not a url", ...S3_KEYS }), /not a URL/);
    }),
});

Deno.test("object store: ListObjectsV2 parsing decodes entities, skips folder markers, follows continuation tokens", () => {
  const page = parseListPage(
    `<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>t&amp;2</NextContinuationToken>` +
      `<Contents><Key>a&amp;b &lt;1&gt;.ndjson</Key><Size>12</Size><ETag>&quot;abc&quot;</ETag></Contents>` +
      `<Contents><Key>dir/</Key><Size>0</Size><ETag>&quot;d&quot;</ETag></Contents></ListBucketResult>`,
  );
  assert.deepEqual(page, { objects: [{ key: "a&b <1>.ndjson", size: 12, etag: '"abc"' }], nextToken: "t&2" });
  assert.throws(() => parseListPage("<IsTruncated>true</IsTruncated>"), /NextContinuationToken/);
});

// --- directory ---------------------------------------------------------------

async function writeDataset(dir: string, files: number, recordsOf: (f: number) => number): Promise<string[]> {
  const ids: string[] = [];
  await Deno.mkdir(`${dir}/nested`, { recursive: true });
  for (let f = 0; f < files; f++) {
    const lines: string[] = [];
    for (let i = 0; i < recordsOf(f); i++) {
      const id = `f${f}-r${i}`;
      ids.push(id);
      lines.push(JSON.stringify({ id, v: "y".repeat((i * 7 + f) % 40) }));
    }
    const path = f % 3 === 0 ? `${dir}/nested/part-${String(f).padStart(3, "0")}.ndjson` : `${dir}/part-${String(f).padStart(3, "0")}.ndjson`;
    await Deno.writeTextFile(path, lines.join("\n") + "\n");
  }
  return ids;
}

Deno.test("object store (directory): recursive listing with prefix, size+mtime ETag, a full job, clear errors", async () => {
  const dir = await Deno.makeTempDir({ prefix: "splitlease-objdir-" });
  try {
    const ids = await writeDataset(dir, 6, (f) => 20 + f * 5);
    const backend = directoryBackend({ dir });
    const listing = await collect(backend.list());
    assert.equal(listing.length, 6);
    assert.ok(listing.some((x) => x.key.startsWith("nested/")));
    for (const x of listing) {
      const st = await Deno.stat(`${dir}/${x.key}`);
      assert.equal(x.etag, fileEtag(st.size, st.mtime!.getTime()));
    }
    assert.deepEqual(
      (await collect(directoryBackend({ dir, prefix: "nested/" }).list())).map((x) => x.key),
      ["nested/part-000.ndjson", "nested/part-003.ndjson"],
    );
    const seen = await runJob(backend, 1500, 3);
    assert.deepEqual(seen.map((r) => JSON.parse(r.line).id).sort(), [...ids].sort());
    // Overwrite → new ETag → the planned read is refused and the replan has a new id.
    const victim = listing[0];
    await new Promise((r) => setTimeout(r, 20));
    await Deno.writeTextFile(`${dir}/${victim.key}`, '{"id":"new"}\n');
    await assert.rejects(collect(backend.read(victim, 0, new AbortController().signal)), ObjectChangedError);
    const after = await collect(backend.list());
    assert.notEqual(after.find((x) => x.key === victim.key)!.etag, victim.etag);
    // Config errors name the problem.
    assert.throws(() => directoryBackend({ dir: "" }), /`dir` is required/);
    await assert.rejects(directoryBackend({ dir: `${dir}/missing` }).probe(), /cannot read directory .*missing/);
    await assert.rejects(directoryBackend({ dir: `${dir}/${victim.key}` }).probe(), /is not a directory/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("object store (directory) cuts: one big object among small ones, 3 workers: idle lanes cut its bytes left; every line exactly once", async () => {
  const started = Date.now();
  const dir = await Deno.makeTempDir({ prefix: "splitlease-objcut-" });
  await using store = new MemoryStore();
  try {
    // One object of 24 000 lines (~1.2 MB) and ten of 600 lines: the big one is its own split.
    const expected = new Map<string, string>(); // key@offset -> line
    const write = async (key: string, lines: number) => {
      const parts: string[] = [];
      let bytes = 0;
      for (let i = 0; i < lines; i++) {
        // ASCII lines, some CRLF, some followed by a blank line.
        const line = JSON.stringify({ key, i, pad: "p".repeat((i * 13) % 40) }) + (i % 5 === 0 ? "\r\n" : "\n") + (i % 7 === 0 ? "\n" : "");
        expected.set(`${key}@${bytes}`, line.trim());
        parts.push(line);
        bytes += line.length;
      }
      await Deno.writeTextFile(`${dir}/${key}`, parts.join(""));
    };
    await write("big.ndjson", 24_000);
    for (let f = 0; f < 10; f++) await write(`small-${f}.ndjson`, 600);
    const backend = directoryBackend({ dir, chunkBytes: 4096 });
    const seen = new Map<string, number>();
    const lines = new Map<string, string>();
    let written = 0;
    const COMMIT = 100;
    const timings = { leaseMs: 2000, opTimeoutMs: 400, drainDeadlineMs: 1000 };
    const workers = await Promise.all(["a", "b", "c"].map(async (instance) => {
      const source = objectStoreSource({
        backend,
        targetSplitBytes: 64 * 1024,
        commitEveryRecords: COMMIT,
        commitEveryMs: 200,
        minCutBytes: 32 * 1024,
        sink: async (r) => {
          const k = `${r.key}@${r.offset}`;
          seen.set(k, (seen.get(k) ?? 0) + 1);
          lines.set(k, r.line);
          // ~1 ms per 25 records: the big object alone takes ~1 s.
          if (++written % 25 === 0) await new Promise((res) => setTimeout(res, 1));
        },
      });
      const coordinator = await SplitCoordinator.join({
        store,
        job: "objstore-cuts",
        instance,
        fingerprint: source.fingerprint(),
        planner: (ctx) => source.plan(ctx),
        splittable: true,
        maxInFlight: 2, // the lanes the leader counts: as many as the worker runs
        ...timings,
      });
      return runWorker({ coordinator, source, logger: () => {}, maxInFlight: 2 });
    }));
    const outcomes = await withTimeout(Promise.all(workers), 20_000, "3 workers to finish the skewed object store job");
    for (const out of outcomes) assert.equal(out.kind, "drained", JSON.stringify(out));
    const ms = Date.now() - started;
    // Every line exactly where it is in its object; none the input does not have.
    const missing = [...expected.keys()].filter((k) => !seen.has(k));
    assert.deepEqual(missing, [], "no line lost");
    assert.equal(seen.size, expected.size, "no record that is not a line of the input");
    for (const [k, line] of expected) assert.equal(lines.get(k), line, k);
    const duplicates = [...seen.values()].reduce((n, c) => n + c - 1, 0);
    // Cuts: residual splits naming their parent, and the workers' counts.
    const records = (await store.list("split.")).map((e) => JSON.parse(e.value) as { parent?: string; status: string; descriptor?: ObjectSplit });
    const residuals = records.filter((r) => r.parent !== undefined);
    const cuts = outcomes.reduce((n, out) => n + out.stats.cuts.performed, 0);
    assert.ok(cuts >= 1 && residuals.length >= 1, `at least one cut (cuts ${cuts}, residual splits ${residuals.length})`);
    assert.ok(records.every((r) => r.status === "completed"), "every split completed");
    assert.ok(residuals.every((r) => r.descriptor?.objects.every((x) => x.key === "big.ndjson")), "only the big object was cut");
    // At-least-once: a record is redone only within one commit batch per cut.
    assert.ok(duplicates <= COMMIT * cuts, `duplicates ${duplicates} within one commit batch per cut (${cuts} cuts)`);
    console.log(
      `  object store cuts: ${expected.size} lines, ${cuts} cuts, ${residuals.length} residual splits, ` +
        `${duplicates} duplicates, ${ms} ms`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// --- fleet: Deno, Bun and Node processes on nats-server, one SIGKILLed ---------------

interface Proc {
  name: string;
  child: Deno.ChildProcess;
  status: Promise<Deno.CommandStatus>;
  lines: Record<string, unknown>[];
  raw: string[];
  output: string;
}

function spawnWorker(rt: "deno" | "bun" | "node", env: Record<string, string>, output: string): Proc {
  const main = "examples/object_store/main.ts";
  const [cmd, args] = rt === "deno"
    ? [bin("deno"), ["run", "-A", main]]
    : rt === "bun"
    ? [bin("bun"), ["run", main]]
    : [bin("node"), [main]];
  const child = new Deno.Command(cmd, {
    args,
    cwd: root,
    env: { ...env, OUTPUT: output, INSTANCE: `w-${rt}`, PORT: String(freePort()), BIND: "127.0.0.1", NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const pump = (s: ReadableStream<Uint8Array>) =>
    eachLine(s, (line) => {
      raw.push(line);
      const parsed = parseLogLine(line);
      if (parsed) lines.push(parsed);
    });
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const status = child.status.then(async (s) => {
    await pumps;
    return s;
  });
  return { name: rt, child, status, lines, raw, output };
}

async function lineCount(path: string): Promise<number> {
  try {
    const t = await Deno.readTextFile(path);
    return t.split("\n").filter((l) => l !== "").length;
  } catch {
    return 0;
  }
}

Deno.test({
  name: "object store fleet: deno, bun and node workers on nats-server, one SIGKILLed mid-run: no record lost, survivors drain with exit 0",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const started = Date.now();
    const tmp = await Deno.makeTempDir({ prefix: "splitlease-objfleet-" });
    const procs: Proc[] = [];
    try {
      await using server = await NatsServer.start();
      const data = `${tmp}/data`;
      const ids = await writeDataset(data, 24, (f) => 60 + (f * 37) % 90);
      const env = {
        OBJSTORE_DIR: data,
        STORE: "nats",
        NATS_URL: server.wsUrl,
        JOB: "objfleet",
        SPLIT_BYTES: "6000",
        COMMIT_RECORDS: "20",
        COMMIT_MS: "200",
        LEASE_MS: "1500",
        DRAIN_DEADLINE_MS: "2000",
        DELAY_MS: "15",
        DELAY_EVERY: "10",
      };
      for (const rt of ["deno", "bun", "node"] as const) procs.push(spawnWorker(rt, env, `${tmp}/out-${rt}.ndjson`));
      // Kill the one that has produced the most once the job is roughly a third done.
      const end = Date.now() + 30_000;
      let victim: Proc | undefined;
      while (!victim && Date.now() < end) {
        const counts = await Promise.all(procs.map((p) => lineCount(p.output)));
        const total = counts.reduce((a, b) => a + b, 0);
        if (total >= ids.length / 3) victim = procs[counts.indexOf(Math.max(...counts))];
        else await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(victim, "the fleet produced a third of the records within 30 s");
      victim.child.kill("SIGKILL");
      const survivors = procs.filter((p) => p !== victim);
      for (const p of survivors) {
        const s = await Promise.race([
          p.status,
          new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`${p.name} did not finish`)), 40_000)),
        ]);
        assert.equal(s.code, 0, `${p.name} exit code\n${p.raw.slice(-12).join("\n")}`);
        assert.ok(p.lines.some((l) => l.event === "finished" && l.reason === "complete"), `${p.name} saw the job complete`);
        assert.ok(p.lines.some((l) => l.event === "exit" && l.exitCode === 0));
      }
      await withTimeout(victim.status, 15_000, `the SIGKILLed ${victim.name} worker to exit`);
      // Every input record is in some worker's output; count duplicates.
      const counts = new Map<string, number>();
      for (const p of procs) {
        for (const line of (await Deno.readTextFile(p.output).catch(() => "")).split("\n")) {
          if (!line) continue;
          let id: string;
          try {
            id = JSON.parse(line).id;
          } catch {
            assert.equal(p, victim, `only the killed worker may leave a torn line: ${line}`);
            continue;
          }
          counts.set(id, (counts.get(id) ?? 0) + 1);
        }
      }
      const missing = ids.filter((id) => !counts.has(id));
      assert.deepEqual(missing, [], "no record lost");
      assert.equal(counts.size, ids.length, "no record that was not in the input");
      const duplicates = [...counts.values()].reduce((s, n) => s + n - 1, 0);
      const takeovers = survivors.flatMap((p) => p.lines.filter((l) => l.event === "gained" && (l.progress !== null)));
      console.log(
        `fleet: ${ids.length} records, killed ${victim.name}, ${duplicates} duplicate(s) replayed, ` +
          `${takeovers.length} resumed split(s), ${((Date.now() - started) / 1000).toFixed(1)} s`,
      );
    } finally {
      for (const p of procs) {
        try {
          p.child.kill("SIGKILL");
        } catch { /* gone */ }
        await withTimeout(p.status.catch(() => {}), 15_000, `the ${p.name} worker to exit after SIGKILL (its output pipes closed)`);
      }
      await Deno.remove(tmp, { recursive: true }).catch(() => {});
    }
  },
});
