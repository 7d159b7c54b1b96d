// The hardening scenarios again on PostgreSQL (the server the test command started).
import { noPg } from "../helpers/pg.ts";
import { pgBackend } from "./pg_backend.ts";
import { hardeningScenarios } from "../coordinator/hardening.ts";

if (!noPg) hardeningScenarios(pgBackend());
