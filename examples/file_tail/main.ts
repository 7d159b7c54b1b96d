/**
 * Runnable worker of the file_tail example on Deno, Bun or Node 24:
 *
 *   deno run -A examples/file_tail/main.ts
 *   bun run examples/file_tail/main.ts
 *   node examples/file_tail/main.ts
 *
 * Coordination settings come from the environment (see `../serve.ts`: JOB,
 * NATS_URL, INSTANCE, PORT, LEASE_MS, REPLAN_INTERVAL_MS, ...). The tail is
 * configured by FILE_TAIL_CONFIG, a JSON object validated by
 * `FileTailConfigSchema` (e.g. `{"dir":"/var/log/app","pollMs":250}`), and
 * lines go to SINK_DIR/<instance>-<pid>.jsonl as `{"file","offset","line"}`
 * records. The job is open: the worker runs until SIGTERM/SIGINT (or
 * `POST /drain`), then hands its files over at a line boundary and exits 0.
 *
 * @module
 */
import { mkdir, open } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { coordinationFromEnv, runToExit, serveHere } from "../serve.ts";
import { fileTailSource, type LineBatch } from "./source.ts";

function configFromEnv(): unknown {
  const raw = process.env.FILE_TAIL_CONFIG;
  if (!raw) throw new Error("FILE_TAIL_CONFIG (a JSON object, see examples/file_tail/README.md) must be set");
  try {
    return JSON.parse(raw);
  } catch (e) {
    throw new Error(`FILE_TAIL_CONFIG is not valid JSON: ${e instanceof Error ? e.message : e}`);
  }
}

const sinkDir = process.env.SINK_DIR;
if (!sinkDir) throw new Error("SINK_DIR (where the JSONL output goes) must be set");
await mkdir(sinkDir, { recursive: true });
const out = await open(join(sinkDir, `${process.env.INSTANCE ?? "worker"}-${process.pid}.jsonl`), "a");
let chain: Promise<unknown> = Promise.resolve();

/** Appends one batch as one write (lanes write concurrently; writes are serialized). */
function sink(batch: LineBatch): Promise<void> {
  const text = batch.lines.map((l) => JSON.stringify({ file: batch.file, offset: l.offset, line: l.text })).join("\n") +
    "\n";
  const write = chain.then(async () => {
    await out.write(text);
    await out.datasync();
  });
  chain = write.catch(() => {});
  return write;
}

const source = fileTailSource(configFromEnv() as never, sink);
const service = await serveHere({ ...coordinationFromEnv(), source, exit: false });
await runToExit(service, async () => {
  await chain;
  await out.close();
});
