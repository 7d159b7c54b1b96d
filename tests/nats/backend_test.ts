// Every suite of the store kit on NATS JetStream KV (tests/store/backend_suites.ts).
import { backendSuites } from "../store/backend_suites.ts";
import { natsHarness } from "./harness.ts";

backendSuites(natsHarness);
