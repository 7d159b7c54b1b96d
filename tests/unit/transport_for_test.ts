// transportFor (adapters/nats_tcp.ts) picks the transport of a server list
// by its scheme, as the CLI and the examples' launcher use it: TCP for
// nats:// and tls:// (a tls://-only list included: a planted bug that
// ignored one survived, issue 40 item 11), WebSocket (undefined) for
// ws:// and wss://. tests/tcp/tls_e2e_test.ts runs a tls:// list end to end.
import assert from "node:assert/strict";
import { transportFor } from "../../adapters/nats_tcp.ts";

Deno.test("transportFor: TCP for tls:// (alone, several, any case), nats:// and a mix of the two; WebSocket for ws:// and wss://", () => {
  for (const list of [["tls://a:4222"], ["tls://a:4222", "tls://b:4222"], " TLS://a:4222", "tls://u:p@a:4222", ["nats://a:4222"], ["nats://a:1", "tls://b:1"]]) {
    assert.equal(transportFor(list)?.name, "TCP", JSON.stringify(list));
    assert.deepEqual(transportFor(list)?.schemes, ["nats", "tls"]);
  }
  for (const list of [["ws://a:8080"], ["wss://a:443", "wss://b:443"], "ws://a:1"]) assert.equal(transportFor(list), undefined, JSON.stringify(list));
});
