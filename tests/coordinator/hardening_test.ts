import { memoryBackend } from "./fleet.ts";
import { hardeningScenarios } from "./hardening.ts";

hardeningScenarios(memoryBackend);
