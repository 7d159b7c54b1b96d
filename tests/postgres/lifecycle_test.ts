// The job lifecycle scenarios (issue 41) again on PostgreSQL (the server the test command started).
import { noPg } from "../helpers/pg.ts";
import { pgBackend } from "./pg_backend.ts";
import { lifecycleScenarios } from "../coordinator/lifecycle.ts";

if (!noPg) lifecycleScenarios(pgBackend());
