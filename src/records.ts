/**
 * Records of a job's bucket, record layout 2 (docs/DESIGN.md, "Keys"). Every
 * record carries `v: 2`; every read is validated, and a value that is not
 * JSON or does not match is an `InvalidRecordError` naming the key. The hot
 * records (split, member, assignment) are checked by hand first — a record is
 * decoded on every watch event, and zod costs several times more — and zod
 * only explains a value the fast check refused.
 *
 * @module
 */
export { type Json, RECORD_LAYOUT } from "./records/layout.ts";
export {
  type JobCounts,
  type JobOutcome,
  type JobPause,
  type JobRate,
  JOB_RUN_HISTORY,
  type JobRun,
  type JobRecord,
  JobRecordSchema,
  type JobWeights,
  type LeaderRecord,
  LeaderRecordSchema,
  type PlanRecord,
  PlanRecordSchema,
  QUARANTINED_IDS_PUBLISHED,
} from "./records/job.ts";
export { type MemberRecord, MemberRecordSchema } from "./records/member.ts";
export { type Owner, OwnerSchema } from "./records/owner.ts";
export { MAX_RESIDUALS, type Residual } from "./records/residual.ts";
export { INLINE_DESCRIPTOR_BYTES, type SpecRecord, SpecRecordSchema } from "./records/spec.ts";
export { type SplitRecord, SplitRecordSchema } from "./records/split.ts";
export {
  FAILURE_HISTORY,
  FAILURE_MESSAGE_CHARS,
  FAILURE_STACK_CHARS,
  FAILURE_STACK_LINES,
  type SplitFailure,
} from "./records/split_failure.ts";
export { estimateProblem, ProgressSchema, type SplitEstimate, type SplitProgress } from "./records/split_progress.ts";
export { SPLIT_RUN_HISTORY, type SplitRun } from "./records/split_run.ts";
export type { SplitStatus } from "./records/split_status.ts";
export { type SplitTenancy, TENANCY_HISTORY, type TenancyEnd } from "./records/split_tenancy.ts";
export { liveSplitRecord, type ProgRecord, ProgRecordSchema } from "./records/prog.ts";
export { PAGE_BYTES, PAGE_SPLITS, type PageEntry, pagedRecord, type PageRecord, PageRecordSchema } from "./records/page.ts";
export { type AssignEntry, type AssignRecord, AssignRecordSchema } from "./records/assign.ts";
export { isPageRecord, isProgRecord, isSplitRecord } from "./records/fast_checks.ts";
export { decodeRecord, encodeRecord, safeDecodeRecord, schemaForKey } from "./records/codec.ts";
