// The assignment scenarios again on PostgreSQL (the server the test command started).
import { noPg } from "../helpers/pg.ts";
import { pgBackend } from "./pg_backend.ts";
import { assignmentScenarios } from "../coordinator/assignment.ts";

if (!noPg) assignmentScenarios(pgBackend());
