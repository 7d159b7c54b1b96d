import { memoryBackend } from "./fleet.ts";
import { coordinatorScenarios } from "./scenarios.ts";

coordinatorScenarios(memoryBackend);
