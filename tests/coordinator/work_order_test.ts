import { memoryBackend } from "./fleet.ts";
import { workOrderScenarios } from "./work_order.ts";

workOrderScenarios(memoryBackend);
