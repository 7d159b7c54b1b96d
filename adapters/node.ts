/**
 * Node adapter (Node >= 22): serves a source with `@hono/node-server`,
 * drains on SIGTERM/SIGINT and exits 0 (drained), 3 (stalled) or 1 (error).
 *
 * @example
 * ```ts
 * import { serve } from "@splitlease/splitlease/node";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * await serve({ store: new MemoryStore(), source, job: "backfill", port: 8080 });
 * ```
 *
 * @module
 */
import { serve as nodeServe } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import process from "node:process";
import type { ServeOptions } from "../src/serve/serve_options.ts";
import { serveWith, type Service } from "../src/serve/serve_core.ts";

export type { ServeOptions } from "../src/serve/serve_options.ts";
export type { ServeResult, Service } from "../src/serve/serve_core.ts";

/**
 * Joins the job, runs the worker and serves the app on Node's HTTP server
 * until the job ends or a signal drains it; then exits (unless `exit: false`).
 *
 * @example
 * ```ts
 * import { serve } from "@splitlease/splitlease/node";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const service = await serve({ store: new MemoryStore(), source, job: "demo", port: 0, exit: false });
 * console.log((await service.done).exitCode);
 * ```
 */
export function serve<D>(options: ServeOptions<D>): Promise<Service> {
  return serveWith(options, {
    runtime: `node ${process.versions.node}`,
    listen(fetch, port, hostname) {
      return new Promise((resolve, reject) => {
        const server = nodeServe({ fetch, port, hostname }, (info: AddressInfo) =>
          resolve({
            port: info.port,
            close: () =>
              new Promise<void>((done) => {
                server.close(() => done());
                (server as { closeAllConnections?: () => void }).closeAllConnections?.();
              }),
          }));
        server.once("error", reject);
      });
    },
    onSignal(signals, handler) {
      const subs = signals.map((s) => {
        const fn = () => handler(s);
        process.on(s, fn);
        return () => process.off(s, fn);
      });
      return () => subs.forEach((u) => u());
    },
    memoryUsage: () => process.memoryUsage(),
    exit: (code) => process.exit(code),
  });
}
