// Re-exports shared by the coordinator's modules (one import site).
export type { Clock, Logger, PlannedSplit, Planner } from "./types.ts";
export type { Owner } from "../records.ts";
