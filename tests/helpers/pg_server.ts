/**
 * A PostgreSQL server of a test's own, on a free loopback port, to kill,
 * freeze and restart: the shared server of the test command runs with
 * `synchronous_commit = off`, which may lose acknowledged commits when the
 * server is killed, and a store must never lose one. This one commits
 * synchronously (`fsync = off` is harmless here: a killed process leaves
 * what it wrote to the operating system, which is not killed). Runs as the
 * `postgres` user when the test runs as root. Everything (process and data
 * directory) goes with `[Symbol.asyncDispose]`, also on failure.
 */
import { freePort } from "./nats_server.ts";

const isRoot = () => Deno.uid?.() === 0;

function binDir(): string {
  const base = "/usr/lib/postgresql";
  const versions = [...Deno.readDirSync(base)].map((e) => e.name).filter((v) => {
    try {
      return Deno.statSync(`${base}/${v}/bin/postgres`).isFile;
    } catch {
      return false;
    }
  }).sort((a, b) => Number(b) - Number(a));
  if (!versions.length) throw new Error("PostgreSQL is missing (apt-get install -y postgresql)");
  return `${base}/${versions[0]}/bin`;
}

function asUser(cmd: string, args: string[]): [string, string[]] {
  return isRoot() ? ["setpriv", ["--reuid", "postgres", "--regid", "postgres", "--init-groups", "--", cmd, ...args]] : [cmd, args];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A throwaway PostgreSQL server with synchronous commits and a database `test`. */
export class PgServer implements AsyncDisposable {
  readonly port: number;
  readonly url: string;
  #bin: string;
  #dir: string;
  #proc: Deno.ChildProcess | undefined;
  #log = "";

  private constructor(bin: string, dir: string, port: number) {
    this.#bin = bin;
    this.#dir = dir;
    this.port = port;
    this.url = `postgres://postgres@127.0.0.1:${port}/test`;
  }

  /**
   * Initialises a data directory, starts the server and creates database
   * `test`. `hba` replaces pg_hba.conf (initdb's trusts every local client).
   */
  static async start(settings: Record<string, string> = {}, options: { hba?: string } = {}): Promise<PgServer> {
    const bin = binDir();
    const dir = await Deno.makeTempDir({ prefix: "splitlease-pgfault-" });
    if (isRoot()) {
      const id = (flag: string) => Number(new TextDecoder().decode(new Deno.Command("id", { args: [flag, "postgres"] }).outputSync().stdout).trim());
      await Deno.chown(dir, id("-u"), id("-g"));
    }
    const s = new PgServer(bin, dir, freePort());
    try {
      const [cmd, args] = asUser(`${bin}/initdb`, ["-D", `${dir}/data`, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
      const init = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
      if (!init.success) throw new Error(`initdb failed: ${new TextDecoder().decode(init.stderr).slice(-500)}`);
      await Deno.writeTextFile(
        `${dir}/data/postgresql.auto.conf`,
        Object.entries({
          listen_addresses: "'127.0.0.1'",
          port: String(s.port),
          unix_socket_directories: `'${dir}'`,
          fsync: "off",
          synchronous_commit: "on",
          full_page_writes: "off",
          max_connections: "200",
          ...settings,
        }).map(([k, v]) => `${k} = ${v}`).join("\n") + "\n",
      );
      if (options.hba !== undefined) await Deno.writeTextFile(`${dir}/data/pg_hba.conf`, options.hba);
      s.#spawn();
      await s.#ready();
      await s.psql("postgres", "create database test");
      return s;
    } catch (e) {
      await s[Symbol.asyncDispose]();
      throw e;
    }
  }

  /** The postmaster's pid. */
  get pid(): number {
    if (!this.#proc) throw new Error("the server is not running");
    return this.#proc.pid;
  }

  #spawn(): void {
    const [cmd, args] = asUser(`${this.#bin}/postgres`, ["-D", `${this.#dir}/data`]);
    const proc = new Deno.Command(cmd, { args, stdout: "null", stderr: "piped" }).spawn();
    this.#proc = proc;
    void (async () => {
      const dec = new TextDecoder();
      for await (const chunk of proc.stderr) this.#log = (this.#log + dec.decode(chunk)).slice(-4000);
    })().catch(() => {});
  }

  async #ready(ms = 30_000): Promise<void> {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const r = await new Deno.Command(`${this.#bin}/pg_isready`, { args: ["-h", "127.0.0.1", "-p", String(this.port), "-q"] }).output();
      if (r.success) return;
      await sleep(50);
    }
    throw new Error(`PostgreSQL did not get ready: ${this.#log.slice(-500)}`);
  }

  /** Runs one SQL command with psql on database `db`; throws with its output when it fails. */
  async psql(db: string, sql: string): Promise<string> {
    const r = await new Deno.Command(`${this.#bin}/psql`, {
      args: ["-h", "127.0.0.1", "-p", String(this.port), "-U", "postgres", "-d", db, "-v", "ON_ERROR_STOP=1", "-tAc", sql],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!r.success) throw new Error(`psql failed: ${new TextDecoder().decode(r.stderr)}`);
    return new TextDecoder().decode(r.stdout).trim();
  }

  /** SIGKILLs the postmaster and every backend (a crash of the server's host, as far as clients see). */
  async kill(): Promise<void> {
    const proc = this.#proc!;
    this.#proc = undefined;
    // The backends are its children: kill the group's members it started, then it.
    await new Deno.Command("pkill", { args: ["-KILL", "-P", String(proc.pid)] }).output();
    proc.kill("SIGKILL");
    await proc.status;
    // Orphaned backends of a killed postmaster exit on their own; wait until none holds the port.
    for (let i = 0; i < 100; i++) {
      const r = await new Deno.Command(`${this.#bin}/pg_isready`, { args: ["-h", "127.0.0.1", "-p", String(this.port), "-q"] }).output();
      if (!r.success) break;
      await sleep(50);
    }
  }

  /** Starts the server again on the same data and port (crash recovery replays its WAL). */
  async restart(): Promise<void> {
    try {
      await Deno.remove(`${this.#dir}/data/postmaster.pid`);
    } catch { /* gone */ }
    this.#spawn();
    await this.#ready();
  }

  /** SIGSTOPs the postmaster and every backend: the server is there but answers nothing. */
  async pause(): Promise<void> {
    await new Deno.Command("pkill", { args: ["-STOP", "-P", String(this.pid)] }).output();
    Deno.kill(this.pid, "SIGSTOP");
  }

  /** SIGCONTs what `pause` stopped. */
  async resume(): Promise<void> {
    Deno.kill(this.pid, "SIGCONT");
    await new Deno.Command("pkill", { args: ["-CONT", "-P", String(this.pid)] }).output();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    const proc = this.#proc;
    if (proc) {
      try {
        Deno.kill(proc.pid, "SIGCONT");
        await new Deno.Command("pkill", { args: ["-CONT", "-P", String(proc.pid)] }).output();
        proc.kill("SIGINT"); // fast shutdown
      } catch { /* gone */ }
      const done = await Promise.race([proc.status.then(() => true), sleep(5000).then(() => false)]);
      if (!done) {
        await new Deno.Command("pkill", { args: ["-KILL", "-P", String(proc.pid)] }).output();
        try {
          proc.kill("SIGKILL");
        } catch { /* gone */ }
        await proc.status;
      }
    }
    await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
  }
}
