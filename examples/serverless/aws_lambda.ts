/**
 * An AWS Lambda function that runs splitlease slices (Node.js 22 or 24
 * runtime: both have the global WebSocket NatsStore uses). Trigger it with
 * an EventBridge schedule (`rate(1 minute)`) for a steady trickle of
 * slices, or call its function URL; each invocation works for the time it
 * has left (the function timeout) minus the drain margin, hands unfinished
 * splits back, and returns a summary.
 *
 * Package it as one file (what the test invokes, see
 * tests/serverless/lambda_test.ts):
 *
 *   node_modules/.bin/esbuild examples/serverless/aws_lambda.ts --bundle --platform=node \
 *     --format=esm --target=node22 --outfile=dist/serverless/lambda/index.mjs
 *   (cd dist/serverless/lambda && zip -q ../lambda.zip index.mjs)
 *
 * and create the function with handler `index.handler`, runtime
 * `nodejs22.x`, a timeout of at least 10 s and the environment variables of
 * examples/serverless/config.ts (`NATS_URL` at least).
 *
 * @module
 */
import process from "node:process";
import type { APIGatewayProxyEventV2, Handler, ScheduledEvent } from "aws-lambda";
import { createLambdaHandler } from "../../adapters/lambda.ts";
import { sliceOptions } from "./config.ts";

// Created once per execution environment (warm invocations reuse it); the
// options are validated here, so a bad configuration fails the cold start
// with the rule it breaks.
export const handler: Handler<ScheduledEvent | APIGatewayProxyEventV2> = createLambdaHandler(
  // No budget of its own: each invocation uses what the function timeout leaves.
  { ...sliceOptions(process.env, "aws-lambda"), budgetMs: undefined },
);
