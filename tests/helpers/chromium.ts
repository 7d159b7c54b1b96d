/**
 * Headless Chromium for browser tests: Debian's `chromium`, started by hand
 * (a fresh profile, loopback-only DevTools on a random port) so the test
 * owns the process. Disposing closes it: SIGTERM, SIGKILL after 3 s, then
 * any process still carrying this run's unique profile directory (renderers,
 * the zygote) is killed by its pid, and the profile removed. On unload
 * whatever is left is killed the same way.
 *
 * @module
 */
import { withTimeout } from "./deadline.ts";

/** Where Debian installs it (the wrapper script first). */
const CANDIDATES = ["/usr/bin/chromium", "/usr/lib/chromium/chromium", "/usr/bin/chromium-browser"];

/** The Chromium binary, or `undefined` when none is installed. */
export function findChromium(): string | undefined {
  const env = Deno.env.get("CHROMIUM");
  for (const p of env ? [env, ...CANDIDATES] : CANDIDATES) {
    try {
      if (Deno.statSync(p).isFile) return p;
    } catch { /* not there */ }
  }
  return undefined;
}

/**
 * Where a browser test saves its screenshots: $FLEET_PAGE_SCREENSHOTS when
 * set (created if need be), else a fresh temp dir named by `prefix`.
 */
export async function screenshotDir(prefix: string): Promise<string> {
  const dir = Deno.env.get("FLEET_PAGE_SCREENSHOTS") ?? await Deno.makeTempDir({ prefix });
  await Deno.mkdir(dir, { recursive: true });
  return dir;
}

const live = new Set<Chromium>();
globalThis.addEventListener("unload", () => {
  for (const c of live) c.killNow();
});

/** Pids of processes whose command line mentions `marker` (our unique profile dir). */
function pidsWith(marker: string): number[] {
  const pids: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const cmd = Deno.readTextFileSync(`/proc/${e.name}/cmdline`);
      if (cmd.includes(marker)) pids.push(Number(e.name));
    } catch { /* gone */ }
  }
  return pids;
}

/** A running headless Chromium. */
export class Chromium implements AsyncDisposable {
  readonly profile: string;
  readonly wsEndpoint: string;
  readonly #proc: Deno.ChildProcess;
  readonly stderr: string[];

  private constructor(profile: string, proc: Deno.ChildProcess, wsEndpoint: string, stderr: string[]) {
    this.profile = profile;
    this.#proc = proc;
    this.wsEndpoint = wsEndpoint;
    this.stderr = stderr;
  }

  /** Starts Chromium; resolves with its DevTools WebSocket endpoint (fails after `timeoutMs`). */
  static async start(executable: string, timeoutMs = 20_000): Promise<Chromium> {
    const profile = await Deno.makeTempDir({ prefix: "splitlease-chromium-" });
    const proc = new Deno.Command(executable, {
      args: [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--window-size=1280,1200", `--user-data-dir=${profile}`,
        "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "about:blank",
      ],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const stderr: string[] = [];
    let found!: (ws: string) => void;
    const endpoint = new Promise<string>((r) => (found = r));
    (async () => {
      const decoder = new TextDecoder();
      let buf = "";
      for await (const chunk of proc.stderr) {
        buf += decoder.decode(chunk, { stream: true });
        let i;
        while ((i = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (stderr.length < 200) stderr.push(line);
          const m = /DevTools listening on (ws:\/\/\S+)/.exec(line);
          if (m) found(m[1]);
        }
      }
    })().catch(() => {});
    let timer: ReturnType<typeof setTimeout> | undefined;
    const c = { proc, profile };
    try {
      const ws = await Promise.race([
        endpoint,
        proc.status.then((s) => {
          throw new Error(`chromium exited (code ${s.code}) before DevTools listened:\n${stderr.join("\n")}`);
        }),
        new Promise<never>((_, rej) => {
          timer = setTimeout(() => rej(new Error(`timed out after ${timeoutMs} ms waiting for chromium's DevTools endpoint:\n${stderr.join("\n")}`)), timeoutMs);
        }),
      ]);
      const chromium = new Chromium(profile, proc, ws, stderr);
      live.add(chromium);
      return chromium;
    } catch (e) {
      try {
        c.proc.kill("SIGKILL");
      } catch { /* gone */ }
      await withTimeout(c.proc.status, 15_000, "chromium to exit after SIGKILL (it failed to start)");
      for (const pid of pidsWith(profile)) {
        try {
          Deno.kill(pid, "SIGKILL");
        } catch { /* gone */ }
      }
      await Deno.remove(profile, { recursive: true }).catch(() => {});
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Kills the browser and every process of this profile at once (synchronous: for unload). */
  killNow(): void {
    try {
      this.#proc.kill("SIGKILL");
    } catch { /* gone */ }
    for (const pid of pidsWith(this.profile)) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* gone */ }
    }
  }

  /** Stops the browser (TERM, then KILL after 3 s), kills leftovers of this profile, removes the profile. */
  async [Symbol.asyncDispose](): Promise<void> {
    live.delete(this);
    try {
      this.#proc.kill("SIGTERM");
    } catch { /* gone */ }
    const timer = setTimeout(() => this.killNow(), 3000);
    try {
      await withTimeout(this.#proc.status, 15_000, "chromium to exit after SIGTERM (SIGKILL after 3 s)");
    } finally {
      clearTimeout(timer);
    }
    for (let i = 0; i < 20 && pidsWith(this.profile).length > 0; i++) {
      if (i === 5) this.killNow();
      await new Promise((r) => setTimeout(r, 100));
    }
    await Deno.remove(this.profile, { recursive: true }).catch(() => {});
  }
}
