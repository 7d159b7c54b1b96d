/**
 * A Store wrapper that writes one line per store operation and watch
 * delivery (monotonic ms, what, key, outcome) to a sink: for reading where
 * a hand-back's milliseconds go across processes (`BENCH_PEERS_TRACE`).
 *
 * @module
 */
import type { DeleteResult, KeyFilter, StoreEntry, Watch, WriteResult } from "../store.ts";
import type { Store } from "../mod.ts";
import { tapWatch } from "./counting_store.ts";

/** Wraps `inner`; `line` receives each trace line. */
export class TracingStore implements Store {
  constructor(readonly inner: Store, readonly now: () => number, readonly line: (s: string) => void) {}
  #op<T>(what: string, key: string, p: Promise<T>, out: (r: T) => string): Promise<T> {
    const t0 = this.now();
    return p.then((r) => {
      this.line(`${t0.toFixed(2)} ${(this.now() - t0).toFixed(2)} ${what} ${key} ${out(r)}`);
      return r;
    });
  }
  create(key: string, value: string): Promise<WriteResult> {
    return this.#op("create", key, this.inner.create(key, value), (r) => (r.ok ? `r${r.revision}` : "conflict"));
  }
  update(key: string, value: string, revision: number): Promise<WriteResult> {
    return this.#op("update", key, this.inner.update(key, value, revision), (r) => (r.ok ? `r${r.revision}` : "conflict"));
  }
  delete(key: string, revision?: number): Promise<DeleteResult> {
    return this.#op("delete", key, this.inner.delete(key, revision), (r) => (r.ok ? "ok" : "conflict"));
  }
  get(key: string): Promise<StoreEntry | undefined> {
    return this.#op("get", key, this.inner.get(key), (r) => (r ? `r${r.revision}` : "absent"));
  }
  list(filter: KeyFilter): Promise<StoreEntry[]> {
    return this.#op("list", filter, this.inner.list(filter), (r) => `${r.length}`);
  }
  watch(filter: KeyFilter): Watch {
    const { line, now } = this;
    const w = tapWatch(this.inner.watch(filter), (ev) => {
      const e = ev as { key?: string; revision?: number };
      line(`${now().toFixed(2)} 0 watch:${filter} ${ev.type} ${e.key ?? ""} ${e.revision ?? ""}`);
    });
    const position = w.position;
    if (position) {
      w.position = () =>
        this.#op("position", filter, position(), (r) => String(r)).catch((e) => {
          line(`${now().toFixed(2)} 0 position ${filter} threw ${String(e).slice(0, 200)}`);
          throw e;
        });
    }
    return w;
  }

  close(): Promise<void> {
    return this.inner.close();
  }
  [Symbol.asyncDispose](): Promise<void> {
    return this.inner.close();
  }
}
