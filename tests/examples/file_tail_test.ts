/**
 * file_tail example: line framing across partial writes, the discovery
 * planner's cursor, and a fleet of Deno, Bun and Node workers over a real
 * nats-server tailing files that appear and grow during the run, with one
 * worker SIGKILLed mid-run and the rest stopped by SIGTERM at the end.
 */
import assert from "node:assert/strict";
import { NatsStore } from "../../nats.ts";
import { SplitRecordSchema } from "../../src/records.ts";
import { NatsServer } from "../helpers/nats_server.ts";
import {
  discover,
  fileSplitId,
  fileTailSource,
  type FramedLine,
  LineFramer,
  LineTooLongError,
  parseFileTailConfig,
} from "../../examples/file_tail/source.ts";
import { finished, kill, type Proc, reap, spawnWorker, tail, waitFor, withTimeout } from "./fleet.ts";

const enc = new TextEncoder();

Deno.test("file_tail LineFramer: complete lines only, exact offsets, across any chunking", () => {
  const text = "abc\ndéf🙂\r\n\nlast";
  const bytes = enc.encode(text);
  const expected: FramedLine[] = [
    { offset: 0, text: "abc" },
    { offset: 4, text: "déf🙂" },
    { offset: 4 + enc.encode("déf🙂\r\n").length, text: "" },
  ];
  const lastOffset = expected[2].offset + 1;
  // Every split of the bytes into three chunks (multi-byte chars and \r\n straddle chunk ends).
  for (let i = 0; i <= bytes.length; i++) {
    for (let j = i; j <= bytes.length; j++) {
      const f = new LineFramer(0);
      const got = [
        ...f.push(bytes.subarray(0, i)),
        ...f.push(bytes.subarray(i, j)),
        ...f.push(bytes.subarray(j)),
      ];
      assert.deepEqual(got, expected, `chunks at ${i}/${j}`);
      assert.equal(f.committed, lastOffset);
      assert.equal(f.pending, 4);
      assert.equal(f.position, bytes.length);
      assert.deepEqual(f.flush(), { offset: lastOffset, text: "last" });
      assert.equal(f.committed, bytes.length);
      assert.equal(f.flush(), undefined);
    }
  }
  // Resuming at a committed offset reports file offsets.
  const r = new LineFramer(100);
  assert.deepEqual(r.push(enc.encode("x\ny")), [{ offset: 100, text: "x" }]);
  assert.equal(r.committed, 102);
  // A line without a newline beyond the limit is refused.
  const small = new LineFramer(0, 8);
  assert.deepEqual(small.push(enc.encode("12345678\n")), [{ offset: 0, text: "12345678" }]);
  assert.throws(() => small.push(enc.encode("123456789")), LineTooLongError);
});

Deno.test("file_tail discover: the cursor holds the names seen; only new files become splits", async () => {
  const dir = await Deno.makeTempDir({ prefix: "splitlease-tail-unit-" });
  try {
    const config = parseFileTailConfig({ dir, include: "\\.log$" });
    for (const n of ["a.log", "b.log", "a.log.done", ".hidden.log", "skip.txt"]) await Deno.writeTextFile(`${dir}/${n}`, "");
    await Deno.mkdir(`${dir}/sub.log`);
    const first = await discover(config, undefined);
    assert.deepEqual(first.splits.map((s) => (s.descriptor as { name: string }).name), ["a.log", "b.log"]);
    assert.deepEqual(first.cursor, { v: 1, seen: ["a.log", "b.log"] });
    assert.equal(first.splits[0].id, await fileSplitId(dir, "a.log"));
    // Nothing new: no splits, same cursor.
    const again = await discover(config, first.cursor);
    assert.deepEqual(again.splits, []);
    assert.deepEqual(again.cursor, first.cursor);
    // A new file appears, one disappears: the cursor follows the directory.
    await Deno.writeTextFile(`${dir}/c.log`, "x\n");
    await Deno.remove(`${dir}/a.log`);
    const third = await discover(config, again.cursor);
    assert.deepEqual(third.splits.map((s) => (s.descriptor as { name: string }).name), ["c.log"]);
    assert.deepEqual(third.cursor, { v: 1, seen: ["b.log", "c.log"] });
    // Through the source: an open plan carrying the cursor.
    const source = fileTailSource({ dir }, () => Promise.resolve());
    const plan = await source.plan({ term: 1, signal: new AbortController().signal, cursor: third.cursor });
    assert.equal(plan.finality, "open");
    // Without `include`, skip.txt is new; markers, hidden files and directories never are.
    const names = [...(plan.splits as Iterable<{ descriptor: { name: string } }>)].map((s) => s.descriptor.name);
    assert.deepEqual(names, ["skip.txt"]);
    await assert.rejects(discover(config, { nope: 1 }), /unreadable planner cursor/);
    assert.throws(() => parseFileTailConfig({ dir: "", include: "(", pollMs: 0 }), (e: Error) =>
      /dir: /.test(e.message) && /include: must be a valid regular expression/.test(e.message) && /pollMs: /.test(e.message));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

interface Expected {
  file: string;
  offset: number;
  text: string;
}

/** Builds the content of one file: LINES lines (the first file ends without a newline). */
function content(file: string, lines: number, trailingNewline: boolean): { bytes: Uint8Array; lines: Expected[] } {
  const out: Expected[] = [];
  let text = "";
  let offset = 0;
  for (let j = 0; j < lines; j++) {
    const line = `${file} line ${j} é🙂 ${"x".repeat(j % 23)}`;
    out.push({ file, offset, text: line });
    const withNl = j === lines - 1 && !trailingNewline ? line : line + "\n";
    text += withNl;
    offset += enc.encode(withNl).length;
  }
  return { bytes: enc.encode(text), lines: out };
}

function readSink(dir: string): { records: Expected[]; torn: number } {
  const records: Expected[] = [];
  let torn = 0;
  for (const e of Deno.readDirSync(dir)) {
    const lines = Deno.readTextFileSync(`${dir}/${e.name}`).split("\n");
    lines.forEach((l, i) => {
      if (l === "") return;
      try {
        const r = JSON.parse(l);
        records.push({ file: r.file, offset: r.offset, text: r.line });
      } catch (err) {
        if (i < lines.length - 1) throw new Error(`${e.name}: corrupt line ${i}: ${err}`);
        torn++; // a write cut by SIGKILL
      }
    });
  }
  return { records, torn };
}

Deno.test({
  name: "file_tail fleet: deno, bun and node workers tail growing files over nats-server; one SIGKILLed; no line lost",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const started = Date.now();
    const work = await Deno.makeTempDir({ prefix: "splitlease-tail-" });
    const dir = `${work}/in`;
    const sinkDir = `${work}/out`;
    await Deno.mkdir(dir);
    await Deno.mkdir(sinkDir);
    const procs: Proc[] = [];
    try {
      await using server = await NatsServer.start();
      const job = `tail-${crypto.randomUUID().slice(0, 8)}`;
      const env = {
        JOB: job,
        NATS_URL: server.wsUrl,
        LEASE_MS: "1000",
        OP_TIMEOUT_MS: "400",
        REPLAN_INTERVAL_MS: "1000",
        DRAIN_DEADLINE_MS: "2000",
        SHUTDOWN_MARGIN_MS: "2000",
        MAX_IN_FLIGHT: "4",
        SINK_DIR: sinkDir,
        FILE_TAIL_CONFIG: JSON.stringify({ dir, pollMs: 40, maxBatchLines: 50, readChunkBytes: 4096 }),
      };
      const script = "examples/file_tail/main.ts";
      procs.push(
        spawnWorker("deno", "t-deno", script, env),
        spawnWorker("bun", "t-bun", script, env),
        spawnWorker("node", "t-node", script, env),
      );
      const FILES = 6;
      const LINES = 300;
      const files = Array.from({ length: FILES }, (_, i) => {
        const name = `f${i}.log`;
        return { name, ...content(name, LINES, i !== 0), written: 0, startAt: 0 };
      });
      const expected = new Map(files.flatMap((f) => f.lines).map((l) => [`${l.file}:${l.offset}`, l.text]));
      // Wait for the fleet: every worker joined and a leader planned (an empty plan).
      await waitFor("workers serving", () => procs.every((p) => p.lines.some((l) => l.event === "serving")) || undefined);
      // Writer: files appear 300 ms apart and grow by small, line-splitting writes.
      const writerStart = Date.now();
      files.forEach((f, i) => (f.startAt = writerStart + i * 300));
      // The victim: the bun worker if it is tailing something by then, else
      // another one that is (bun's piped stdout can lag behind its work).
      let victim: Proc | undefined;
      let killedAt = -1;
      const handles = new Map<string, Deno.FsFile>();
      let seed = 42;
      const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
      while (files.some((f) => f.written < f.bytes.length)) {
        const now = Date.now();
        for (const f of files) {
          if (now < f.startAt || f.written >= f.bytes.length) continue;
          let h = handles.get(f.name);
          if (!h) {
            h = await Deno.open(`${dir}/${f.name}`, { create: true, append: true });
            handles.set(f.name, h);
          }
          const n = Math.min(f.bytes.length - f.written, 1 + rand(160));
          await h.write(f.bytes.subarray(f.written, f.written + n));
          f.written += n;
          if (f.written === f.bytes.length) {
            h.close();
            handles.delete(f.name);
            await Deno.writeTextFile(`${dir}/${f.name}.done`, "");
          }
        }
        // Kill a worker mid-run, once it tails something.
        if (killedAt < 0 && now - writerStart > 1500) {
          victim = [procs[1], procs[0], procs[2]].find((p) => p.lines.some((l) => l.event === "gained"));
          if (victim) {
            kill(victim);
            killedAt = now - writerStart;
          }
        }
        await new Promise((r) => setTimeout(r, 15));
      }
      assert.ok(killedAt > 0 && victim, `a worker was killed mid-run\n${procs.map(tail).join("\n")}`);
      const writtenAt = Date.now() - writerStart;
      // Every line reaches the sink, and every split completes (sealed and read).
      await waitFor("every line in the sink", () => {
        const seen = new Set(readSink(sinkDir).records.map((r) => `${r.file}:${r.offset}`));
        return [...expected.keys()].every((k) => seen.has(k)) || undefined;
      }, 30_000);
      const store = await NatsStore.connect({ servers: server.wsUrl, job });
      try {
        await waitFor("every file split completed", async () => {
          const splits = await store.list("split.");
          return splits.length === FILES &&
              splits.every((e) => SplitRecordSchema.parse(JSON.parse(e.value)).status === "completed") || undefined;
        }, 15_000);
      } finally {
        await store.close();
      }
      // The job is open: the survivors run until SIGTERM, then drain and exit 0.
      const survivors = procs.filter((p) => p !== victim);
      for (const p of survivors) kill(p, "SIGTERM");
      const statuses = await withTimeout(Promise.all(survivors.map((p) => p.status)), 20_000, "survivors exit");
      statuses.forEach((s, i) => assert.equal(s.code, 0, `exit 0\n${tail(survivors[i])}`));
      for (const p of survivors) {
        const f = finished(p);
        assert.equal(f?.outcome, "drained", tail(p));
        assert.equal(f?.reason, "shutdown", tail(p));
      }
      // Nothing lost, nothing invented; duplicates (replays after the takeover) counted.
      const { records, torn } = readSink(sinkDir);
      for (const r of records) {
        assert.equal(expected.get(`${r.file}:${r.offset}`), r.text, `sink line ${r.file}:${r.offset} is one written`);
      }
      const unique = new Set(records.map((r) => `${r.file}:${r.offset}`)).size;
      assert.equal(unique, expected.size);
      const takeovers = survivors.flatMap((p) => p.lines.filter((l) => l.msg === "Gained split" && l.kind === "takeover"));
      // A takeover replays at most the one batch (maxBatchLines) emitted but not committed per lane.
      assert.ok(records.length - unique <= 50 * 4, `duplicates bounded (got ${records.length - unique})`);
      console.log(
        `file_tail fleet: ${FILES} files, ${expected.size} lines, ${records.length - unique} duplicates, ` +
          `${torn} torn sink writes, ${takeovers.length} takeovers, killed at ${killedAt} ms, ` +
          `writes done at ${writtenAt} ms, ${((Date.now() - started) / 1000).toFixed(1)} s`,
      );
    } catch (e) {
      for (const p of procs) console.error(tail(p, 25));
      throw e;
    } finally {
      await reap(procs);
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  },
});
