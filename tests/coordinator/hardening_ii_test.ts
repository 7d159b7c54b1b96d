import { memoryBackend } from "./fleet.ts";
import { hardeningIIScenarios } from "./hardening_ii.ts";

hardeningIIScenarios(memoryBackend);
