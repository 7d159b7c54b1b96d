import { memoryBackend } from "./fleet.ts";
import { lifecycleScenarios } from "./lifecycle.ts";

lifecycleScenarios(memoryBackend);
