import { memoryBackend } from "./fleet.ts";
import { hardeningIIIScenarios } from "./hardening_iii.ts";

hardeningIIIScenarios(memoryBackend);
