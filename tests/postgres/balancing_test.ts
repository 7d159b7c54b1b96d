// The balancing scenarios again on PostgreSQL (the server the test command started).
import { noPg } from "../helpers/pg.ts";
import { pgBackend } from "./pg_backend.ts";
import { balancingScenarios } from "../coordinator/balancing.ts";

if (!noPg) balancingScenarios(pgBackend());
