// What the benches' worker processes share: the simulated processing of a
// range of records, and the loop that runs the commands the bench sends on
// stdin (one JSON object per line, {"cmd": "..."}).
import process from "node:process";
import { createInterface } from "node:readline";

/**
 * Processes records `from` to `to` in batches of `batch`, taking
 * `msPerRecord` per record, and reports each batch done to `onBatch`.
 */
export async function runRange(
  from: number,
  to: number,
  batch: number,
  msPerRecord: number,
  sleep: (ms: number) => Promise<void>,
  onBatch: (from: number, to: number) => void,
): Promise<void> {
  for (let at = from; at < to;) {
    const end = Math.min(at + batch, to);
    await sleep((end - at) * msPerRecord);
    onBatch(at, end);
    at = end;
  }
}

/**
 * Runs each command line of stdin with its handler (unknown commands and
 * lines that are not JSON are ignored); a handler that fails is reported as
 * an `error` line. `onClose` runs when stdin ends (the bench went away).
 */
export function serveCommands(
  handlers: Record<string, () => Promise<void> | void>,
  emit: (o: Record<string, unknown>) => void,
  onClose: () => void,
): void {
  createInterface({ input: process.stdin })
    .on("line", (line) => {
      let cmd = "";
      try {
        cmd = JSON.parse(line).cmd;
      } catch { /* not a command */ }
      Promise.resolve(handlers[cmd]?.()).catch((e) => emit({ ev: "error", cmd, error: String(e?.stack ?? e) }));
    })
    .on("close", onClose);
}
