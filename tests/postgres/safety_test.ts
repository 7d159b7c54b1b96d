// The safety scenarios again on PostgreSQL (the server the test command started).
import { noPg } from "../helpers/pg.ts";
import { pgBackend } from "./pg_backend.ts";
import { safetyScenarios } from "../coordinator/safety.ts";

if (!noPg) safetyScenarios(pgBackend());
