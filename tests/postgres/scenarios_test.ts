// The scenarios scenarios again on PostgreSQL (the server the test command started).
import { noPg } from "../helpers/pg.ts";
import { pgBackend } from "./pg_backend.ts";
import { coordinatorScenarios } from "../coordinator/scenarios.ts";

if (!noPg) coordinatorScenarios(pgBackend());
