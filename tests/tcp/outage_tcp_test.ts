/**
 * The outage suite (tests/store/outage.ts) over the TCP transport: a paused
 * server, a stopped and restarted one behind a proxy that blackholes the
 * store's connection, and ops held across a reconnect.
 */
import { tcpTransport } from "../../adapters/nats_tcp.ts";
import { outageSuite } from "../store/outage.ts";

outageSuite({ label: " over TCP", listener: "nats", options: { transport: tcpTransport() } });
