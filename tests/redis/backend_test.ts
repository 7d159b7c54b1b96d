// Every suite of the store kit on Redis (tests/store/backend_suites.ts).
import { backendSuites } from "../store/backend_suites.ts";
import { redisHarness } from "./harness.ts";

backendSuites(redisHarness);
