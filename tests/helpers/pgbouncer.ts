/**
 * A PgBouncer of a test's own (Debian's `pgbouncer`, which `npm test`
 * installs when missing: scripts/services.mjs), in front of one database of
 * a PostgreSQL server, on a free loopback port, in the pool mode asked for.
 * Runs as the `postgres` user when the test runs as root (PgBouncer refuses
 * root). Everything goes with `[Symbol.asyncDispose]`.
 */
import { freePort } from "./nats_server.ts";

const isRoot = () => Deno.uid?.() === 0;

/** The binary: PGBOUNCER_BIN (set by scripts/test.mjs), else Debian's path; `undefined` when there is none. */
export function pgBouncerBin(): string | undefined {
  for (const p of [Deno.env.get("PGBOUNCER_BIN"), "/usr/sbin/pgbouncer"]) {
    if (!p) continue;
    try {
      if (Deno.statSync(p).isFile) return p;
    } catch { /* not there */ }
  }
  return undefined;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Options of {@linkcode PgBouncer.start}. */
export interface PgBouncerOptions {
  /** The server's port (on 127.0.0.1) and database. */
  serverPort: number;
  database?: string;
  /** `transaction` (default), `session` or `statement`. */
  poolMode?: "transaction" | "session" | "statement";
  /** Server connections per user and database (default 10). */
  poolSize?: number;
  /** More `[pgbouncer]` settings. */
  settings?: Record<string, string>;
}

/** A running PgBouncer; `url` connects as `postgres` (trust) to the database through it. */
export class PgBouncer implements AsyncDisposable {
  readonly port: number;
  readonly url: string;
  readonly #bin: string;
  readonly #dir: string;
  #proc: Deno.ChildProcess | undefined;
  #log = "";

  private constructor(bin: string, dir: string, port: number, database: string) {
    this.#bin = bin;
    this.#dir = dir;
    this.port = port;
    this.url = `postgres://postgres@127.0.0.1:${port}/${database}`;
  }

  static async start(o: PgBouncerOptions): Promise<PgBouncer> {
    const bin = pgBouncerBin();
    if (!bin) throw new Error("PgBouncer is missing (apt-get install -y pgbouncer; npm test installs it as root)");
    const dir = await Deno.makeTempDir({ prefix: "splitlease-pgbouncer-" });
    const db = o.database ?? "test";
    const b = new PgBouncer(bin, dir, freePort(), db);
    try {
      await Deno.writeTextFile(`${dir}/users.txt`, `"postgres" ""\n`);
      const settings: Record<string, string> = {
        listen_addr: "127.0.0.1",
        listen_port: String(b.port),
        unix_socket_dir: "",
        auth_type: "trust",
        auth_file: `${dir}/users.txt`,
        pool_mode: o.poolMode ?? "transaction",
        default_pool_size: String(o.poolSize ?? 10),
        max_client_conn: "500",
        admin_users: "postgres",
        pidfile: `${dir}/pgbouncer.pid`,
        ...o.settings,
      };
      await Deno.writeTextFile(
        `${dir}/pgbouncer.ini`,
        `[databases]\n${db} = host=127.0.0.1 port=${o.serverPort} dbname=${db}\n\n[pgbouncer]\n` +
          Object.entries(settings).map(([k, v]) => `${k} = ${v}`).join("\n") + "\n",
      );
      if (isRoot()) {
        const id = (flag: string) => Number(new TextDecoder().decode(new Deno.Command("id", { args: [flag, "postgres"] }).outputSync().stdout).trim());
        for (const f of ["", "/users.txt", "/pgbouncer.ini"]) await Deno.chown(`${dir}${f}`, id("-u"), id("-g"));
      }
      await b.#spawn();
      return b;
    } catch (e) {
      await b[Symbol.asyncDispose]();
      throw e;
    }
  }

  async #spawn(): Promise<void> {
    const args = [`${this.#dir}/pgbouncer.ini`];
    const [cmd, argv] = isRoot() ? ["setpriv", ["--reuid", "postgres", "--regid", "postgres", "--init-groups", "--", this.#bin, ...args]] : [this.#bin, args];
    const proc = new Deno.Command(cmd, { args: argv, stdout: "piped", stderr: "piped" }).spawn();
    this.#proc = proc;
    const dec = new TextDecoder();
    for (const stream of [proc.stdout, proc.stderr]) {
      void (async () => {
        for await (const chunk of stream) this.#log = (this.#log + dec.decode(chunk)).slice(-4000);
      })().catch(() => {});
    }
    const end = Date.now() + 15_000;
    let exited = false;
    proc.status.then(() => (exited = true));
    while (Date.now() < end && !exited) {
      const up = await Deno.connect({ hostname: "127.0.0.1", port: this.port }).then((c) => (c.close(), true), () => false);
      if (up) return;
      await sleep(50);
    }
    throw new Error(`PgBouncer did not start: ${this.#log.slice(-800)}`);
  }

  /** What PgBouncer logged lately. */
  get log(): string {
    return this.#log;
  }

  /** SIGKILLs PgBouncer: every client connection through it drops at once. */
  async kill(): Promise<void> {
    const proc = this.#proc;
    this.#proc = undefined;
    if (!proc) return;
    try {
      proc.kill("SIGKILL");
    } catch { /* gone */ }
    await proc.status;
  }

  /** Starts it again on the same port and settings. */
  async restart(): Promise<void> {
    await Deno.remove(`${this.#dir}/pgbouncer.pid`).catch(() => {});
    await this.#spawn();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    const proc = this.#proc;
    this.#proc = undefined;
    if (proc) {
      try {
        proc.kill("SIGINT"); // immediate shutdown
      } catch { /* gone */ }
      const done = await Promise.race([proc.status.then(() => true), sleep(5000).then(() => false)]);
      if (!done) {
        try {
          proc.kill("SIGKILL");
        } catch { /* gone */ }
        await proc.status;
      }
    }
    await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
  }
}
