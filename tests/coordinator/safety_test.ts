import { memoryBackend } from "./fleet.ts";
import { safetyScenarios } from "./safety.ts";

safetyScenarios(memoryBackend);
