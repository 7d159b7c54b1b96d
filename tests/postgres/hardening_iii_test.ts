// The third round of hardening scenarios, and the leader's cost per commit, again on PostgreSQL
// (the server the test command started).
import { noPg } from "../helpers/pg.ts";
import { pgBackend } from "./pg_backend.ts";
import { hardeningIIIScenarios, leaderCostScenarios } from "../coordinator/hardening_iii.ts";

if (!noPg) {
  hardeningIIIScenarios(pgBackend());
  leaderCostScenarios(pgBackend());
}
