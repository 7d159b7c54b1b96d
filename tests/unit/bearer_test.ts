// One bearer check guards POST /drain and the operator actions, the slice
// fetch handler and the Lambda handler's HTTP events (issue 29, item 4): the
// same request gets the same answer from each, every method on every slice
// route is checked (issue 40, item 11: a planted bug let all but POST
// through), and a token no Bearer header can carry is refused when a
// handler is created.
import assert from "node:assert/strict";
import { MemoryStore, SplitleaseError, type SplitSource } from "../../mod.ts";
import { createApp } from "../../host.ts";
import { createLambdaHandler } from "../../adapters/lambda.ts";
import { createSliceHandler } from "../../src/http/slice_handler.ts";
import { checkBearer } from "../../src/util/bearer.ts";
import { ScriptedCoordinator } from "../helpers/scripted_coordinator.ts";

const source: SplitSource<null> = {
  fingerprint: () => "f",
  plan: () => Promise.resolve({ splits: [], finality: "final" as const }),
  run: () => Promise.resolve(),
};

/** Requests every guarded surface refuses, with the status, message and challenge each must answer. */
const refused: [Record<string, string>, number, string, string][] = [
  [{}, 401, "missing bearer token", 'Bearer realm="splitlease"'],
  [{ authorization: "Bearer nope" }, 401, "invalid bearer token", 'Bearer realm="splitlease", error="invalid_token"'],
  [{ authorization: "Bearer s3cret-and-more" }, 401, "invalid bearer token", 'Bearer realm="splitlease", error="invalid_token"'],
  [{ authorization: "Basic s3cret" }, 400, "malformed Authorization header: expected Bearer <token>", 'Bearer realm="splitlease", error="invalid_request"'],
  [{ authorization: "Bearer s3 cret" }, 400, "malformed Authorization header: expected Bearer <token>", 'Bearer realm="splitlease", error="invalid_request"'],
];

Deno.test("bearer: the check names what is wrong (missing, malformed, another token) and accepts the token", () => {
  for (const [headers, status, error, challenge] of refused) {
    assert.deepEqual(checkBearer(headers.authorization, "s3cret"), { ok: false, status, error, challenge }, JSON.stringify(headers));
  }
  assert.deepEqual(checkBearer("bearer s3cret", "s3cret"), { ok: true });
  assert.deepEqual(checkBearer("  Bearer   s3cret  ", "s3cret"), { ok: true }, "a Lambda event's header is not trimmed");
});

Deno.test("bearer: POST /drain, the slice handler and a Lambda HTTP event answer a bad token alike", async () => {
  const app = createApp({ coordinator: new ScriptedCoordinator(), drainToken: "s3cret" });
  const slice = createSliceHandler({ store: new MemoryStore(), source, job: "j", token: "s3cret", logger: () => {} });
  const lambda = createLambdaHandler({ store: new MemoryStore(), source, job: "j", token: "s3cret", logger: () => {} });
  const context = { getRemainingTimeInMillis: () => 60_000 };
  for (const [headers, status, error, challenge] of refused) {
    const what = JSON.stringify(headers);
    for (const res of [await app.request("/drain", { method: "POST", headers }), await slice(new Request("http://x/", { method: "POST", headers }))]) {
      assert.equal(res.status, status, what);
      assert.equal(res.headers.get("www-authenticate"), challenge, what);
      assert.equal((await res.json()).error, error, what);
    }
    const event = { requestContext: { http: { method: "POST" } }, headers };
    const r = await lambda(event, context);
    assert.ok("statusCode" in r, what);
    assert.equal(r.statusCode, status, what);
    assert.equal(r.headers["www-authenticate"], challenge, what);
    assert.equal(JSON.parse(r.body).error, error, what);
  }
});

Deno.test("bearer: every method on every slice route checks the token first (fetch handler, Lambda function URL and API Gateway events)", async () => {
  // A source that fails the test if a slice ever runs: no request here may get past the bearer check.
  const ran: string[] = [];
  const guarded: SplitSource<null> = { ...source, plan: (ctx) => (ran.push("plan"), source.plan(ctx)) };
  const options = { store: new MemoryStore(), source: guarded, job: "j", token: "s3cret", logger: () => {} };
  const slice = createSliceHandler(options);
  const lambda = createLambdaHandler(options);
  const context = { getRemainingTimeInMillis: () => 60_000 };
  const methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];
  const paths = ["/", "/slice", "/run?budgetMs=5000"];
  for (const method of methods) {
    for (const path of paths) {
      for (const [headers, status, error, challenge] of refused) {
        const what = `${method} ${path} ${JSON.stringify(headers)}`;
        const res = await slice(new Request(`http://x${path}`, { method, headers }));
        assert.equal(res.status, status, `fetch handler: ${what}`);
        assert.equal(res.headers.get("www-authenticate"), challenge, `fetch handler: ${what}`);
        assert.equal((await res.json()).error, error, `fetch handler: ${what}`);
        const events = [
          { requestContext: { http: { method, path } }, rawPath: path, headers }, // function URL, HTTP API (v2)
          { httpMethod: method, path, requestContext: { stage: "prod" }, headers }, // REST API (v1)
          { requestContext: { http: { method: method.toLowerCase(), path } }, headers },
        ];
        for (const event of events) {
          const r = await lambda(event, context);
          assert.ok("statusCode" in r, `lambda: ${what}`);
          assert.equal(r.statusCode, status, `lambda: ${what}`);
          assert.equal(r.headers["www-authenticate"], challenge, `lambda: ${what}`);
          assert.equal(JSON.parse(r.body).error, error, `lambda: ${what}`);
        }
      }
    }
  }
  // With the token, a method that runs no slice is answered 405 by both, and still no slice ran.
  const auth = { authorization: "Bearer s3cret" };
  for (const method of ["PUT", "DELETE", "PATCH", "OPTIONS"]) {
    const res = await slice(new Request("http://x/", { method, headers: auth }));
    assert.deepEqual([res.status, res.headers.get("allow")], [405, "GET, POST"], method);
    const r = await lambda({ requestContext: { http: { method } }, headers: auth }, context);
    assert.ok("statusCode" in r);
    assert.deepEqual([r.statusCode, r.headers["allow"]], [405, "GET, POST"], `lambda ${method}`);
  }
  assert.deepEqual(ran, [], "no slice ran");
});

Deno.test("bearer: a slice token no Bearer header can carry is refused when the handler is created", () => {
  for (const create of [createSliceHandler, createLambdaHandler]) {
    assert.throws(
      () => create({ store: new MemoryStore(), source, job: "j", token: "not a token!" }),
      (e) => e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && /token must be a bearer token .* got a string of 12 characters/.test(e.message),
    );
  }
});
