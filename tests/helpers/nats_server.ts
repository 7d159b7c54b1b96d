/**
 * Test launcher for real nats-server processes: a single JetStream server on
 * free loopback ports, a 3-node cluster, and a TCP proxy that can blackhole a
 * connection. Everything is cleaned up by `[Symbol.asyncDispose]` (use
 * `await using`), and on process unload as a last resort.
 *
 * @module
 */
import { withTimeout } from "./deadline.ts";
import type { NetHost, TestNet } from "./netns.ts";

/**
 * The nats-server binary: what `npm test` chose (`NATS_SERVER`), else
 * `NATS_SERVER_BIN`, else the cached build of the pinned release, else
 * Debian's. `npm test` prints which one and why (scripts/nats_server_bin.mjs).
 */
export const NATS_SERVER: string = (() => {
  const home = Deno.env.get("XDG_CACHE_HOME") ?? `${Deno.env.get("HOME") ?? "/root"}/.cache`;
  const candidates = [
    Deno.env.get("NATS_SERVER"),
    Deno.env.get("NATS_SERVER_BIN"),
    `${home}/splitlease/nats-server/v2.15.2/nats-server`,
    "/usr/sbin/nats-server",
  ];
  return candidates.find((p) => {
    try {
      return p !== undefined && Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  }) ?? "/usr/sbin/nats-server";
})();

/** Every live child, killed on unload if a test forgot (or failed) to. */
const live = new Set<Deno.ChildProcess>();
globalThis.addEventListener("unload", () => {
  for (const p of live) {
    try {
      p.kill("SIGKILL");
    } catch { /* already gone */ }
  }
});

interface Ports {
  nats: string[];
  monitoring: string[];
  websocket: string[];
}

/** Options of {@linkcode NatsServer.start}. */
export interface NatsServerOptions {
  /** Unique server name (needed in a cluster). */
  name?: string;
  /** Cluster block: name, fixed listen port, routes to the other nodes. */
  cluster?: { name: string; port: number; routes: number[]; routeUrls?: string[] };
  /** Server ping interval (e.g. "500ms") so it notices dead clients fast. */
  pingInterval?: string;
  /** Extra raw config lines. */
  extra?: string;
  /** The nats-server binary (default {@linkcode NATS_SERVER}; e.g. {@linkcode COMPAT_NATS_SERVER}). */
  bin?: string;
  /** Runs the server inside this network namespace, listening on its address (see netns.ts). */
  host?: NetHost;
  /** The test network `host` belongs to (for `ip netns exec`). */
  net?: TestNet;
  /** Listen on these ports (picked beforehand, e.g. with {@linkcode freePort}) instead of free ones the server picks. */
  ports?: { client: number; http: number; ws: number };
}

/** Debian's 2.9.10 when `npm test` runs the compatibility subset beside a newer server (`NATS_SERVER_COMPAT`). */
export const COMPAT_NATS_SERVER: string | undefined = Deno.env.get("NATS_SERVER_COMPAT") || undefined;

/** The kernel's range of ephemeral ports (those it gives to outgoing connections and to `port: 0`). */
function ephemeralRange(): [number, number] {
  try {
    const [lo, hi] = Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range").trim().split(/\s+/).map(Number);
    if (Number.isInteger(lo) && Number.isInteger(hi) && lo <= hi) return [lo, hi];
  } catch { /* not Linux: the usual range */ }
  return [32768, 60999];
}

const EPHEMERAL = ephemeralRange();
const issued = new Set<number>();

/**
 * A free TCP port on 127.0.0.1 (bound then released), chosen below the
 * ephemeral range when there is room there. A port from `port: 0` is an
 * ephemeral one: a process that binds it only seconds later (a worker binds
 * its HTTP port once it has joined) can find it taken by any outgoing
 * connection of the machine meanwhile (a full run failed on exactly that:
 * a worker's EADDRINUSE after its own connection attempts to a late NATS).
 * The kernel never picks ports below the range by itself, and this process
 * never hands the same one out twice.
 */
export function freePort(): number {
  const lo = 10_000, hi = EPHEMERAL[0] - 1;
  for (let i = 0; hi - lo > 1000 && i < 100; i++) {
    const port = lo + Math.floor(Math.random() * (hi - lo + 1));
    if (issued.has(port)) continue;
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
    } catch {
      continue; // in use
    }
    issued.add(port);
    return port;
  }
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

/** One nats-server process with JetStream and a plain-text WebSocket listener. */
export class NatsServer implements AsyncDisposable {
  readonly dir: string;
  readonly name: string;
  #opts: NatsServerOptions;
  #proc?: Deno.ChildProcess;
  #ports?: Ports;
  #fixed?: { client: number; http: number; ws: number };
  #paused = false;
  #version = "";

  private constructor(dir: string, opts: NatsServerOptions) {
    this.dir = dir;
    this.#opts = opts;
    this.name = opts.name ?? "s1";
    this.#fixed = opts.ports;
  }

  /** Starts a server on free ports; resolves once JetStream is healthy. */
  static async start(opts: NatsServerOptions = {}): Promise<NatsServer> {
    const dir = await Deno.makeTempDir({ prefix: "splitlease-nats-" });
    const s = new NatsServer(dir, opts);
    try {
      await s.#launch();
    } catch (e) {
      await s[Symbol.asyncDispose]();
      throw e;
    }
    return s;
  }

  /** `nats://` URL of the client listener. */
  get clientUrl(): string {
    return this.#ports!.nats[0];
  }
  /** `ws://` URL of the WebSocket listener. */
  get wsUrl(): string {
    return this.#ports!.websocket[0];
  }
  /** `http://` URL of the monitoring listener. */
  get monitorUrl(): string {
    return this.#ports!.monitoring[0];
  }
  /** The client (NATS protocol) port. */
  get clientPort(): number {
    return portOf(this.clientUrl);
  }
  /** The monitoring (HTTP) port. */
  get monitorPort(): number {
    return portOf(this.monitorUrl);
  }
  /** The WebSocket port. */
  get wsPort(): number {
    return portOf(this.wsUrl);
  }
  /** The server's version as its monitoring endpoint reports it (e.g. "2.15.2"). */
  get version(): string {
    return this.#version;
  }
  /** The process id while running (for signals and /proc). */
  get pid(): number | undefined {
    return this.#proc?.pid;
  }
  /** Whether the process is running (paused counts as running). */
  get running(): boolean {
    return this.#proc !== undefined;
  }

  #config(): string {
    const f = this.#fixed;
    const o = this.#opts;
    const host = o.host?.ip ?? "127.0.0.1";
    const lines = [
      `listen: "${host}:${f ? f.client : -1}"`,
      `http: "${host}:${f ? f.http : -1}"`,
      `server_name: "${this.name}"`,
      `ports_file_dir: "${this.dir}"`,
      `jetstream { store_dir: "${this.dir}/js" }`,
      `websocket { listen: "${host}:${f ? f.ws : -1}", no_tls: true }`,
    ];
    if (o.pingInterval) lines.push(`ping_interval: "${o.pingInterval}"`, `ping_max: 2`);
    if (o.cluster) {
      const routes = (o.cluster.routeUrls ?? o.cluster.routes.map((p) => `127.0.0.1:${p}`))
        .map((hp) => `"nats-route://${hp}"`).join(", ");
      lines.push(
        `cluster { name: "${o.cluster.name}", listen: "${host}:${o.cluster.port}", routes: [${routes}] }`,
      );
    }
    if (o.extra) lines.push(o.extra);
    return lines.join("\n") + "\n";
  }

  async #launch(): Promise<void> {
    const conf = `${this.dir}/server.conf`;
    await Deno.writeTextFile(conf, this.#config());
    for (const e of Deno.readDirSync(this.dir)) {
      if (e.name.endsWith(".ports")) Deno.removeSync(`${this.dir}/${e.name}`);
    }
    const log = await Deno.open(`${this.dir}/server.log`, { append: true, create: true, write: true });
    const [cmd, args] = this.#opts.host && this.#opts.net
      ? this.#opts.net.exec(this.#opts.host, this.#opts.bin ?? NATS_SERVER, ["-c", conf])
      : [this.#opts.bin ?? NATS_SERVER, ["-c", conf]];
    const proc = new Deno.Command(cmd, {
      args,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    proc.stderr.pipeTo(log.writable).catch(() => {});
    this.#proc = proc;
    live.add(proc);
    this.#paused = false;
    let exited = false;
    proc.status.then(() => (exited = true));
    const portsFile = `${this.dir}/nats-server_${proc.pid}.ports`;
    const deadline = Date.now() + 15_000;
    while (true) {
      const p = this.#readPorts(portsFile);
      if (p) {
        this.#ports = p;
        this.#fixed ??= {
          client: portOf(p.nats[0]),
          http: portOf(p.monitoring[0]),
          ws: portOf(p.websocket[0]),
        };
        break;
      }
      if (exited || Date.now() > deadline) {
        throw new Error(`nats-server ${this.name} did not start: ${this.#logTail()}`);
      }
      await delay(10);
    }
    while (true) {
      try {
        // In a cluster, also wait for the meta leader (full health check).
        const query = this.#opts.cluster ? "" : "?js-enabled-only=true";
        const r = await fetch(`${this.monitorUrl}/healthz${query}`, { signal: AbortSignal.timeout(2000) });
        await r.body?.cancel();
        if (r.status === 200) {
          const varz = await fetch(`${this.monitorUrl}/varz`, { signal: AbortSignal.timeout(2000) });
          this.#version = ((await varz.json()) as { version?: string }).version ?? "";
          return;
        }
      } catch { /* not up yet */ }
      if (exited || Date.now() > deadline) {
        throw new Error(`nats-server ${this.name} did not become healthy: ${this.#logTail()}`);
      }
      await delay(20);
    }
  }

  #logTail(): string {
    try {
      return Deno.readTextFileSync(`${this.dir}/server.log`).split("\n").slice(-5).join("\n");
    } catch {
      return "(no log)";
    }
  }

  #readPorts(path: string): Ports | undefined {
    try {
      const p = JSON.parse(Deno.readTextFileSync(path)) as Ports;
      return p.nats && p.websocket && p.monitoring ? p : undefined;
    } catch {
      return undefined;
    }
  }

  async #reap(signal: Deno.Signal): Promise<void> {
    const proc = this.#proc;
    if (!proc) return;
    this.#proc = undefined;
    try {
      if (this.#paused) proc.kill("SIGCONT");
      proc.kill(signal);
    } catch { /* already exited */ }
    await withTimeout(proc.status, 20_000, `nats-server ${this.name} to exit after ${signal}`);
    live.delete(proc);
    this.#paused = false;
  }

  /** Stops the server gracefully (SIGTERM); data survives for `restart()`. */
  stop(): Promise<void> {
    return this.#reap("SIGTERM");
  }
  /** Crashes the server (SIGKILL); data survives for `restart()`. */
  kill(): Promise<void> {
    return this.#reap("SIGKILL");
  }
  /** Starts the server again on the same ports and store dir. */
  async restart(): Promise<void> {
    await this.#reap("SIGTERM");
    await this.#launch();
  }
  /** Freezes the process (SIGSTOP): connections stay open, nothing answers. */
  async pause(): Promise<void> {
    const proc = this.#proc;
    proc?.kill("SIGSTOP");
    this.#paused = true;
    if (!proc) return;
    // SIGSTOP stops each thread as it next enters the kernel: on a busy
    // machine a thread of the server can still answer a request sent right
    // after kill() returned. Wait until every thread reads as stopped.
    const deadline = Date.now() + 2000;
    for (;;) {
      const states: string[] = [];
      try {
        for await (const t of Deno.readDir(`/proc/${proc.pid}/task`)) {
          const stat = await Deno.readTextFile(`/proc/${proc.pid}/task/${t.name}/stat`).catch(() => "");
          states.push(stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3));
        }
      } catch {
        return; // no /proc here: best effort
      }
      if (states.every((st) => st === "T" || st === "t" || st === "")) return;
      if (Date.now() > deadline) throw new Error(`nats-server did not stop within 2 s of SIGSTOP (thread states ${states.join("")})`);
      await delay(5);
    }
  }
  /** Resumes a paused process (SIGCONT). */
  resume(): void {
    this.#proc?.kill("SIGCONT");
    this.#paused = false;
  }

  /** Kills the process and removes the temp dir. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.#reap("SIGKILL");
    await Deno.remove(this.dir, { recursive: true }).catch(() => {});
  }

  /** Kills the process and removes the temp dir without waiting (for an `unload` handler). */
  disposeSync(): void {
    const proc = this.#proc;
    this.#proc = undefined;
    if (proc) {
      try {
        if (this.#paused) proc.kill("SIGCONT");
        proc.kill("SIGKILL");
      } catch { /* already exited */ }
      live.delete(proc);
    }
    try {
      Deno.removeSync(this.dir, { recursive: true });
    } catch { /* already gone */ }
  }

  /**
   * A server for every test of one test file, torn down when the file's
   * module unloads: teardown is not a test (a "stop the server" test would
   * count as a pass that cannot fail).
   */
  static async startForModule(opts: NatsServerOptions = {}): Promise<NatsServer> {
    const s = await NatsServer.start(opts);
    globalThis.addEventListener("unload", () => s.disposeSync());
    return s;
  }
}

/** Options of {@linkcode NatsCluster.start}. */
export interface ClusterOptions {
  /** Server ping interval (e.g. "500ms") so nodes notice dead clients fast. */
  pingInterval?: string;
  /** The nats-server binary for every node. */
  bin?: string;
  /** Puts each node in a namespace of its own on this network. */
  net?: TestNet;
  /** Extra raw config lines for every node. */
  extra?: string;
}

/** A cluster whose ports are picked before it starts ({@linkcode NatsCluster.plan}). */
export interface PlannedCluster {
  /** `ws://` URLs of every planned node. */
  wsUrls: string[];
  /** `nats://` URLs of every planned node. */
  clientUrls: string[];
  /** Starts node `i` (0-based; named `n<i+1>`); resolves once it is healthy. */
  startNode(i: number): Promise<NatsServer>;
  /** The cluster of the nodes started so far (dispose it to stop them). */
  cluster(): NatsCluster;
  /** Starts every node; resolves once all are healthy. */
  start(): Promise<NatsCluster>;
}

/** A 3-node (or n-node) JetStream cluster on loopback. */
export class NatsCluster implements AsyncDisposable {
  readonly nodes: NatsServer[];
  private constructor(nodes: NatsServer[]) {
    this.nodes = nodes;
  }

  /**
   * Starts `size` nodes in parallel; resolves when all are healthy. With
   * `net`, each node runs in a namespace of its own on that test network
   * (for partitions); otherwise all listen on 127.0.0.1.
   */
  static async start(size = 3, opts: ClusterOptions = {}): Promise<NatsCluster> {
    // Route ports are picked free and released before the servers bind them:
    // another process can take one meanwhile. Retry with fresh ports then.
    for (let attempt = 1;; attempt++) {
      try {
        return await NatsCluster.#startOnce(size, opts);
      } catch (e) {
        if (attempt >= 3 || !String(e).includes("address already in use")) throw e;
      }
    }
  }

  /**
   * A cluster of `size` on loopback whose URLs are known before it starts:
   * ports are picked now; `startNode(i)` launches one node on its ports (it
   * is healthy once a majority of the planned nodes is up), `start()` all
   * of them, and `cluster()` is the cluster of the nodes started so far. For
   * tests that start their clients together with the cluster (a fleet and
   * its servers deployed at once), which connect before any node answers.
   */
  static plan(size = 3, opts: Omit<ClusterOptions, "net"> = {}): PlannedCluster {
    const ports = Array.from({ length: size }, () => ({ client: freePort(), http: freePort(), ws: freePort(), route: freePort() }));
    const route = (i: number) => `127.0.0.1:${ports[i].route}`;
    const started: NatsServer[] = [];
    const startNode = async (i: number) => {
      const p = ports[i];
      const n = await NatsServer.start({
        name: `n${i + 1}`,
        pingInterval: opts.pingInterval,
        bin: opts.bin,
        extra: opts.extra,
        ports: { client: p.client, http: p.http, ws: p.ws },
        cluster: { name: "splitlease", port: p.route, routes: [], routeUrls: ports.map((_, j) => j).filter((j) => j !== i).map(route) },
      });
      started.push(n);
      return n;
    };
    const cluster = () => new NatsCluster([...started].sort((a, b) => a.name.localeCompare(b.name)));
    return {
      wsUrls: ports.map((p) => `ws://127.0.0.1:${p.ws}`),
      clientUrls: ports.map((p) => `nats://127.0.0.1:${p.client}`),
      startNode,
      cluster,
      start: async () => {
        const results = await Promise.allSettled(ports.map((_, i) => startNode(i)));
        const failed = results.find((r) => r.status === "rejected") as PromiseRejectedResult | undefined;
        if (failed) {
          await cluster()[Symbol.asyncDispose]();
          throw failed.reason;
        }
        return cluster();
      },
    };
  }

  static async #startOnce(size: number, opts: ClusterOptions): Promise<NatsCluster> {
    const net = opts.net;
    // In namespaces every node has a port space of its own: one fixed route port.
    const hosts = net ? Array.from({ length: size }, (_, i) => net.host(`n${i + 1}`)) : [];
    const ports = net ? Array(size).fill(6222) : Array.from({ length: size }, () => freePort());
    const addr = (i: number) => (net ? `${hosts[i].ip}:6222` : `127.0.0.1:${ports[i]}`);
    const results = await Promise.allSettled(ports.map((port, i) =>
      NatsServer.start({
        name: `n${i + 1}`,
        pingInterval: opts.pingInterval,
        bin: opts.bin,
        host: hosts[i],
        net,
        extra: opts.extra,
        cluster: {
          name: "splitlease",
          port,
          routes: [],
          routeUrls: ports.map((_, j) => j).filter((j) => j !== i).map(addr),
        },
      })
    ));
    const nodes = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    const failed = results.find((r) => r.status === "rejected") as PromiseRejectedResult | undefined;
    if (failed) {
      for (const n of nodes) await n[Symbol.asyncDispose]();
      throw failed.reason;
    }
    return new NatsCluster(nodes);
  }

  /** WebSocket URLs of every node. */
  get wsUrls(): string[] {
    return this.nodes.map((n) => n.wsUrl);
  }

  /** Server name of the current leader of `stream` (e.g. `KV_splitlease_<job>`), from any node that answers. */
  async streamLeader(stream: string): Promise<string | undefined> {
    for (const n of this.nodes.filter((x) => x.running)) {
      try {
        const r = await fetch(`${n.monitorUrl}/jsz?streams=true&raft=true`, { signal: AbortSignal.timeout(1000) });
        const j = await r.json() as {
          account_details?: { stream_detail?: { name: string; cluster?: { leader?: string } }[] }[];
        };
        for (const a of j.account_details ?? []) {
          for (const sd of a.stream_detail ?? []) if (sd.name === stream && sd.cluster?.leader) return sd.cluster.leader;
        }
      } catch { /* paused or down: ask another */ }
    }
    return undefined;
  }

  /** Server name of the JetStream meta leader, from any node that answers. */
  async metaLeader(): Promise<string | undefined> {
    for (const n of this.nodes.filter((x) => x.running)) {
      try {
        const r = await fetch(`${n.monitorUrl}/jsz`, { signal: AbortSignal.timeout(1000) });
        const j = await r.json() as { meta_cluster?: { leader?: string } };
        if (j.meta_cluster?.leader) return j.meta_cluster.leader;
      } catch { /* ask another */ }
    }
    return undefined;
  }

  /** Restarts every node in turn (SIGTERM, start on the same ports and store), waiting for each to be healthy again. */
  async rollingRestart(pauseMs = 0): Promise<void> {
    for (const n of this.nodes) {
      await n.restart();
      if (pauseMs) await delay(pauseMs);
    }
  }
  /** The node with server name `name`. */
  node(name: string): NatsServer {
    const n = this.nodes.find((x) => x.name === name);
    if (!n) throw new Error(`no node ${name}`);
    return n;
  }

  /** Kills every node and removes their temp dirs. */
  async [Symbol.asyncDispose](): Promise<void> {
    await Promise.all(this.nodes.map((n) => n[Symbol.asyncDispose]()));
  }
}

/**
 * A TCP proxy on a free loopback port forwarding to `targetPort`.
 * `blackhole()` silently drops all traffic (connections stay open, as in a
 * network partition); `restore()` forwards again.
 */
export class TcpProxy implements AsyncDisposable {
  readonly port: number;
  #host: string;
  #listener: Deno.Listener;
  #conns = new Set<Deno.Conn>();
  #blackholed = false;
  #closed = false;

  /** Listens on `hostname` (default 127.0.0.1; a test network's bridge address lets its namespaces in). */
  constructor(targetPort: number, hostname = "127.0.0.1") {
    this.#listener = Deno.listen({ hostname, port: 0 });
    this.#host = hostname;
    this.port = (this.#listener.addr as Deno.NetAddr).port;
    this.#accept(targetPort);
  }

  /** `ws://` URL through the proxy. */
  get wsUrl(): string {
    return `ws://${this.#host}:${this.port}`;
  }

  /** `nats://` URL through the proxy (when it fronts a client port). */
  get natsUrl(): string {
    return `nats://${this.#host}:${this.port}`;
  }

  async #accept(targetPort: number): Promise<void> {
    try {
      for await (const client of this.#listener) {
        this.#conns.add(client);
        if (this.#blackholed) {
          this.#pump(client, undefined);
          continue;
        }
        Deno.connect({ hostname: "127.0.0.1", port: targetPort }).then((upstream) => {
          this.#conns.add(upstream);
          this.#pump(client, upstream);
          this.#pump(upstream, client);
        }).catch(() => this.#drop(client));
      }
    } catch { /* listener closed */ }
  }

  async #pump(from: Deno.Conn, to: Deno.Conn | undefined): Promise<void> {
    const buf = new Uint8Array(64 * 1024);
    try {
      while (true) {
        const n = await from.read(buf);
        if (n === null) break;
        if (this.#blackholed || !to) continue; // dropped on the floor
        let off = 0;
        while (off < n) off += await to.write(buf.subarray(off, n));
      }
    } catch { /* closed */ }
    if (!this.#blackholed || this.#closed) {
      this.#drop(from);
      if (to) this.#drop(to);
    }
  }

  #drop(c: Deno.Conn): void {
    if (!this.#conns.delete(c)) return;
    try {
      c.close();
    } catch { /* already closed */ }
  }

  /** Closes every connection through the proxy (to the client, a reset by the server); new ones are forwarded. */
  dropAll(): void {
    for (const c of [...this.#conns]) this.#drop(c);
  }

  /** Stops forwarding in both directions without closing anything. */
  blackhole(): void {
    this.#blackholed = true;
  }
  /** Forwards again (connections opened meanwhile stay dead). */
  restore(): void {
    this.#blackholed = false;
  }

  /** Closes the listener and every connection. */
  [Symbol.asyncDispose](): Promise<void> {
    this.#closed = true;
    try {
      this.#listener.close();
    } catch { /* closed */ }
    for (const c of [...this.#conns]) this.#drop(c);
    return Promise.resolve();
  }
}

/** Resolves after `ms` milliseconds. */
export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
