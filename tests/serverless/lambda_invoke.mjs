// Invokes a Lambda handler the way the Node.js runtime does, in one
// execution environment (this process): imports the deployment's ESM module,
// then calls `handler(event, context)` once per invocation, one at a time
// (warm invocations reuse the module), with a context whose
// getRemainingTimeInMillis() counts down to the function timeout, and stops
// an invocation that overruns it as Lambda would ("Task timed out").
//
//   node lambda_invoke.mjs <index.mjs> <timeoutMs> <maxInvocations>
//
// Invocations alternate an EventBridge scheduled event and a function URL
// request (API Gateway HTTP API v2 format) and stop after the first slice
// whose outcome is `complete`. One JSON line per invocation on stdout:
// { n, kind, ok, result | error, durationMs, remainingMs }.
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";

const [file, timeoutArg, maxArg] = process.argv.slice(2);
const timeoutMs = Number(timeoutArg);
const max = Number(maxArg);
const functionName = "splitlease-numbers";
const region = "eu-west-1";
const account = "123456789012";

function scheduledEvent() {
  return {
    version: "0",
    id: randomUUID(),
    "detail-type": "Scheduled Event",
    source: "aws.events",
    account,
    time: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    region,
    resources: [`arn:aws:events:${region}:${account}:rule/splitlease-every-minute`],
    detail: {},
  };
}

function functionUrlEvent() {
  const now = new Date();
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: "/",
    rawQueryString: "",
    headers: {
      "content-length": "0",
      host: `abcdefghijklmnopqrstuvwxyz012345.lambda-url.${region}.on.aws`,
      "user-agent": "curl/8.5.0",
      "x-amzn-trace-id": `Root=1-${Math.floor(now.getTime() / 1000).toString(16)}-${randomUUID().replace(/-/g, "").slice(0, 24)}`,
      "x-forwarded-proto": "https",
      accept: "*/*",
    },
    requestContext: {
      accountId: "anonymous",
      apiId: "abcdefghijklmnopqrstuvwxyz012345",
      domainName: `abcdefghijklmnopqrstuvwxyz012345.lambda-url.${region}.on.aws`,
      domainPrefix: "abcdefghijklmnopqrstuvwxyz012345",
      http: { method: "POST", path: "/", protocol: "HTTP/1.1", sourceIp: "203.0.113.7", userAgent: "curl/8.5.0" },
      requestId: randomUUID(),
      routeKey: "$default",
      stage: "$default",
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    isBase64Encoded: false,
  };
}

function context(deadline) {
  const awsRequestId = randomUUID();
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: `arn:aws:lambda:${region}:${account}:function:${functionName}`,
    memoryLimitInMB: "512",
    awsRequestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `2026/01/01/[$LATEST]${randomUUID().replace(/-/g, "")}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done() {},
    fail() {},
    succeed() {},
  };
}

const { handler } = await import(pathToFileURL(file).href);
if (typeof handler !== "function") throw new Error(`${file} exports no handler function`);
for (let n = 1; n <= max; n++) {
  const kind = n % 2 === 1 ? "scheduled" : "functionUrl";
  const started = Date.now();
  const deadline = started + timeoutMs;
  const ctx = context(deadline);
  let timer;
  const timedOut = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`)), timeoutMs);
  });
  let line;
  try {
    const result = await Promise.race([handler(kind === "scheduled" ? scheduledEvent() : functionUrlEvent(), ctx), timedOut]);
    line = { n, kind, ok: true, result };
  } catch (e) {
    line = { n, kind, ok: false, error: e instanceof Error ? e.message : String(e) };
  } finally {
    clearTimeout(timer);
  }
  line.durationMs = Date.now() - started;
  line.remainingMs = ctx.getRemainingTimeInMillis();
  process.stdout.write(JSON.stringify(line) + "\n");
  const slice = line.ok ? (line.result.body ? JSON.parse(line.result.body) : line.result) : undefined;
  if (!line.ok || slice.outcome === "complete") break;
}
// No process.exit(): a slice that left a socket or a timer behind keeps this
// process alive, and the test's time limit says so.
