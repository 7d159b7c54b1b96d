import { memoryBackend } from "./fleet.ts";
import { hardeningIIIScenarios, leaderCostScenarios } from "./hardening_iii.ts";

hardeningIIIScenarios(memoryBackend);
leaderCostScenarios(memoryBackend);
