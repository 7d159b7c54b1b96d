/**
 * A redis-server of a test's own, on a free loopback port, to kill, freeze,
 * strip of its clients and restart from its append-only file (AOF on with
 * `appendfsync always` unless a test asks otherwise: the store refuses less
 * by default). Everything (process and data directory) goes with
 * `[Symbol.asyncDispose]`, also on failure. `REDIS_URL` is the server the
 * test command started for the suites that only need one.
 */
import { freePort } from "./nats_server.ts";

export const REDIS_URL: string = Deno.env.get("REDIS_URL") ?? "";
/** True when there is no Redis to test against (the tests that need one are ignored, saying so). */
export const noRedis: boolean = REDIS_URL === "";

const BIN = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].find((p) => {
  try {
    return Deno.statSync(p).isFile;
  } catch {
    return false;
  }
});
const CLI = BIN?.replace(/redis-server$/, "redis-cli");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A throwaway redis-server. */
export class RedisServer implements AsyncDisposable {
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  #args: string[];
  #proc: Deno.ChildProcess | undefined;
  #paused = false;
  #log = "";

  private constructor(dir: string, port: number, args: string[]) {
    this.dir = dir;
    this.port = port;
    this.url = `redis://127.0.0.1:${port}`;
    this.#args = args;
  }

  /** Starts a server; `config` adds or overrides settings (`{ appendfsync: "everysec" }`, `{ appendonly: "no" }`). */
  static async start(config: Record<string, string> = {}): Promise<RedisServer> {
    if (!BIN) throw new Error("redis-server is missing (apt-get install -y redis-server)");
    const dir = await Deno.makeTempDir({ prefix: "splitlease-redis-" });
    const port = freePort();
    const settings = { appendonly: "yes", appendfsync: "always", save: "", ...config };
    const args = ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, ...Object.entries(settings).flatMap(([k, v]) => [`--${k}`, v])];
    const s = new RedisServer(dir, port, args);
    try {
      await s.#launch();
      return s;
    } catch (e) {
      await s[Symbol.asyncDispose]();
      throw e;
    }
  }

  /** The server's pid. */
  get pid(): number {
    if (!this.#proc) throw new Error("the server is not running");
    return this.#proc.pid;
  }

  async #launch(): Promise<void> {
    const proc = new Deno.Command(BIN!, { args: this.#args, stdout: "piped", stderr: "piped" }).spawn();
    this.#proc = proc;
    const dec = new TextDecoder();
    for (const stream of [proc.stdout, proc.stderr]) {
      void (async () => {
        for await (const chunk of stream) this.#log = (this.#log + dec.decode(chunk)).slice(-4000);
      })().catch(() => {});
    }
    const end = Date.now() + 20_000;
    while (Date.now() < end) {
      // Ready once it answers, and done loading its AOF (a LOADING answer is not PONG).
      if ((await this.cli("PING").catch(() => "")) === "PONG") return;
      await sleep(25);
    }
    throw new Error(`redis-server did not get ready: ${this.#log.slice(-500)}`);
  }

  /** Runs one command with redis-cli; its output, trimmed. */
  async cli(...args: string[]): Promise<string> {
    const r = await new Deno.Command(CLI!, { args: ["-h", "127.0.0.1", "-p", String(this.port), ...args], stdout: "piped", stderr: "piped" }).output();
    if (!r.success) throw new Error(`redis-cli ${args.join(" ")} failed: ${new TextDecoder().decode(r.stderr)}`);
    return new TextDecoder().decode(r.stdout).trim();
  }

  async #reap(signal: Deno.Signal): Promise<void> {
    const proc = this.#proc;
    if (!proc) return;
    this.#proc = undefined;
    try {
      if (this.#paused) proc.kill("SIGCONT");
      proc.kill(signal);
    } catch { /* gone */ }
    this.#paused = false;
    await proc.status;
  }

  /** Crashes the server (SIGKILL): what its AOF holds survives for `restart()`. */
  kill(): Promise<void> {
    return this.#reap("SIGKILL");
  }

  /** Stops the server (SIGTERM: it flushes its AOF and exits). */
  stop(): Promise<void> {
    return this.#reap("SIGTERM");
  }

  /** Starts it again on the same port and directory: it loads its AOF. */
  async restart(): Promise<void> {
    await this.#reap("SIGTERM");
    await this.#launch();
  }

  /** Freezes the server (SIGSTOP): connections stay open, nothing answers. */
  pause(): Promise<void> {
    this.#proc?.kill("SIGSTOP");
    this.#paused = true;
    return Promise.resolve();
  }

  /** Resumes a paused server. */
  resume(): Promise<void> {
    this.#proc?.kill("SIGCONT");
    this.#paused = false;
    return Promise.resolve();
  }

  /** Ends every client connection (commands and subscriptions) but redis-cli's own. */
  async killClients(): Promise<number> {
    let n = 0;
    for (const type of ["normal", "pubsub"]) n += Number(await this.cli("CLIENT", "KILL", "TYPE", type));
    return n;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.#reap("SIGKILL");
    await Deno.remove(this.dir, { recursive: true }).catch(() => {});
  }
}
