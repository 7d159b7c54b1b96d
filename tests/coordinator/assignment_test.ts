import { assignmentScenarios } from "./assignment.ts";
import { memoryBackend } from "./fleet.ts";

assignmentScenarios(memoryBackend);
