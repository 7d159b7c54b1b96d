import { balancingScenarios } from "./balancing.ts";
import { memoryBackend } from "./fleet.ts";

balancingScenarios(memoryBackend);
