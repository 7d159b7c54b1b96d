/**
 * Test hosts in network namespaces, for partitions a TCP proxy cannot make
 * (between the servers of a cluster, or a worker and its side of a split).
 *
 * A `TestNet` is one Linux bridge in the root namespace with a /24 of
 * 10.201.x.0 on it (the bridge itself is .1, so the test process and any
 * worker left in the root namespace reach every host); each `host()` is a
 * namespace with a veth into the bridge and one address. A partition is
 * made of `blackhole` routes on both sides: packets between the two groups
 * are dropped silently, established TCP connections stall as they would on
 * a real network, and `heal()` removes the routes. Needs root and iproute2;
 * `TestNet.available()` says whether this machine can do it.
 *
 * Everything is removed by `[Symbol.asyncDispose]` and, as a last resort, on
 * unload. Addresses are in namespaces this process made: no traffic leaves
 * the machine.
 *
 * @module
 */

/** The root namespace: the test process and workers spawned without a host. */
export const ROOT = "root";

/** One namespace with its address on the test bridge. */
export interface NetHost {
  readonly name: string;
  readonly ns: string;
  readonly ip: string;
}

type Side = NetHost | typeof ROOT;

function ipSync(args: string[], ns?: string): { ok: boolean; out: string } {
  const argv = ns ? ["netns", "exec", ns, "ip", ...args] : args;
  const r = new Deno.Command("ip", { args: argv, stdout: "piped", stderr: "piped" }).outputSync();
  const dec = new TextDecoder();
  return { ok: r.success, out: dec.decode(r.stdout) + dec.decode(r.stderr) };
}

function ip(args: string[], ns?: string): void {
  const r = ipSync(args, ns);
  if (!r.ok) throw new Error(`ip ${ns ? `(netns ${ns}) ` : ""}${args.join(" ")} failed: ${r.out.trim()}`);
}

const live = new Set<TestNet>();
globalThis.addEventListener("unload", () => {
  for (const n of live) n.removeSync();
});

/** A bridge and the namespaces on it. */
export class TestNet implements AsyncDisposable {
  readonly id: string;
  readonly subnet: string;
  readonly bridge: string;
  readonly hosts: NetHost[] = [];
  #routes: { ns?: string; dst: string }[] = [];

  private constructor(id: string, subnet: string) {
    this.id = id;
    this.subnet = subnet;
    this.bridge = `sl${id}br`;
  }

  /** Whether namespaces can be made here (root, iproute2); the reason when not. */
  static available(): { ok: true } | { ok: false; why: string } {
    try {
      if (Deno.uid() !== 0) return { ok: false, why: "network namespaces need root" };
      const r = ipSync(["netns", "list"]);
      return r.ok ? { ok: true } : { ok: false, why: `ip netns does not work here: ${r.out.trim()}` };
    } catch (e) {
      return { ok: false, why: `iproute2 is missing (${e instanceof Error ? e.message : e})` };
    }
  }

  /** Makes the bridge on a free 10.201.x.0/24. */
  static create(): TestNet {
    const used = ipSync(["-o", "-4", "addr"]).out;
    let third = 0;
    for (let tries = 0; tries < 50; tries++) {
      const c = 1 + Math.floor(Math.random() * 250);
      if (!used.includes(`10.201.${c}.`)) {
        third = c;
        break;
      }
    }
    if (!third) throw new Error("no free 10.201.x.0/24 for a test network");
    const id = Math.random().toString(36).slice(2, 7);
    const net = new TestNet(id, `10.201.${third}`);
    live.add(net);
    try {
      ip(["link", "add", net.bridge, "type", "bridge"]);
      ip(["addr", "add", `${net.subnet}.1/24`, "dev", net.bridge]);
      ip(["link", "set", net.bridge, "up"]);
    } catch (e) {
      net.removeSync();
      throw e;
    }
    return net;
  }

  /** Address of the root namespace on the bridge. */
  get rootIp(): string {
    return `${this.subnet}.1`;
  }

  /** A new namespace on the bridge. */
  host(name: string): NetHost {
    const i = this.hosts.length;
    const h: NetHost = { name, ns: `sl${this.id}-${name}`, ip: `${this.subnet}.${10 + i}` };
    const outer = `sl${this.id}v${i}`;
    ip(["netns", "add", h.ns]);
    this.hosts.push(h);
    ip(["link", "add", outer, "type", "veth", "peer", "name", "eth0", "netns", h.ns]);
    ip(["link", "set", outer, "master", this.bridge]);
    ip(["link", "set", outer, "up"]);
    ip(["addr", "add", `${h.ip}/24`, "dev", "eth0"], h.ns);
    ip(["link", "set", "eth0", "up"], h.ns);
    ip(["link", "set", "lo", "up"], h.ns);
    return h;
  }

  /** The argv prefix that runs a command inside `host` (`ip netns exec` execs in place: the pid is the command's). */
  exec(host: NetHost, cmd: string, args: string[]): [string, string[]] {
    return ["ip", ["netns", "exec", host.ns, cmd, ...args]];
  }

  #ipOf(s: Side): string {
    return s === ROOT ? this.rootIp : s.ip;
  }

  /** Drops every packet between a host of `a` and a host of `b` (both directions) until `heal()`. */
  partition(a: Side[], b: Side[]): void {
    for (const x of a) {
      for (const y of b) {
        for (const [from, to] of [[x, y], [y, x]] as const) {
          const ns = from === ROOT ? undefined : from.ns;
          const dst = `${this.#ipOf(to)}/32`;
          ip(["route", "add", "blackhole", dst], ns);
          this.#routes.push({ ns, dst });
        }
      }
    }
  }

  /** Cuts `host` off from everyone (every other host and the root namespace). */
  isolate(host: NetHost): void {
    this.partition([host], [ROOT, ...this.hosts.filter((h) => h !== host)]);
  }

  /** Removes every partition. */
  heal(): void {
    for (const r of this.#routes.splice(0)) ipSync(["route", "del", "blackhole", r.dst], r.ns);
  }

  /** Removes the routes, namespaces and the bridge (synchronously, for `unload`). */
  removeSync(): void {
    this.heal();
    for (const h of this.hosts.splice(0)) ipSync(["netns", "del", h.ns]);
    ipSync(["link", "del", this.bridge]);
    live.delete(this);
  }

  /** Removes everything this net made. */
  [Symbol.asyncDispose](): Promise<void> {
    this.removeSync();
    return Promise.resolve();
  }
}
