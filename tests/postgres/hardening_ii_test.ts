// The hardening ii scenarios again on PostgreSQL (the server the test command started).
import { noPg } from "../helpers/pg.ts";
import { pgBackend } from "./pg_backend.ts";
import { hardeningIIScenarios } from "../coordinator/hardening_ii.ts";

if (!noPg) hardeningIIScenarios(pgBackend());
