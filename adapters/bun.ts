/**
 * Bun adapter: serves a source with `Bun.serve`, drains on SIGTERM/SIGINT
 * and exits 0 (drained), 3 (stalled) or 1 (error).
 *
 * @example
 * ```ts
 * import { serve } from "@splitlease/splitlease/bun";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * await serve({ store: new MemoryStore(), source, job: "backfill", port: 8080 });
 * ```
 *
 * @module
 */
import process from "node:process";
import { type ServeOptions, serveWith, type Service } from "../src/runtime/serve_core.ts";

export type { ServeOptions, ServeResult, Service } from "../src/runtime/serve_core.ts";

/** The part of Bun's API this adapter uses (Bun's types are not a dependency). */
interface BunServer {
  port: number;
  stop(closeActiveConnections?: boolean): Promise<void> | void;
}
declare const Bun: {
  version: string;
  serve(options: {
    port: number;
    hostname: string;
    fetch: (request: Request) => Response | Promise<Response>;
  }): BunServer;
};

/**
 * Joins the job, runs the worker and serves the app on `Bun.serve` until
 * the job ends or a signal drains it; then exits (unless `exit: false`).
 *
 * @example
 * ```ts
 * import { serve } from "@splitlease/splitlease/bun";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const service = await serve({ store: new MemoryStore(), source, job: "demo", port: 0, exit: false });
 * console.log((await service.done).exitCode);
 * ```
 */
export function serve<D>(options: ServeOptions<D>): Promise<Service> {
  return serveWith(options, {
    runtime: `bun ${Bun.version}`,
    listen(fetch, port, hostname) {
      const server = Bun.serve({ port, hostname, fetch });
      return Promise.resolve({ port: server.port, close: async () => await server.stop(true) });
    },
    onSignal(signals, handler) {
      const subs = signals.map((s) => {
        const fn = () => handler(s);
        process.on(s, fn);
        return () => process.off(s, fn);
      });
      return () => subs.forEach((u) => u());
    },
    exit: (code) => process.exit(code),
  });
}
