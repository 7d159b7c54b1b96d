/**
 * A split source that does no work, for tests of what a worker reports
 * (HTTP routes, /metrics) rather than what it processes.
 * @module
 */
import type { SplitSource } from "../../mod.ts";

/** Plans no splits; a lane a test hands the worker (e.g. through a scripted coordinator) runs until revoked or aborted. */
export const idleSource: SplitSource<unknown> = {
  fingerprint: () => "f",
  plan: () => Promise.resolve({ finality: "final", splits: [] }),
  run: (lane) =>
    new Promise<void>((resolve) => {
      lane.revokeSignal.addEventListener("abort", () => resolve());
      lane.signal.addEventListener("abort", () => resolve());
    }),
};
