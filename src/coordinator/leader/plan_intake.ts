/**
 * A planner's result taken in (one leader term's planning run): every split
 * checked (a valid id, a positive finite weight, a descriptor the store can
 * hold), this shard's splits kept, duplicates refused naming them, and each
 * split read straight into the entry its page will hold, sorted heaviest
 * first. Pure: no store, no view (the leader's `Planning` then writes and deals
 * them).
 *
 * @module
 */
import { SplitleaseError, ValueTooLargeError } from "../../errors.ts";
import { INLINE_DESCRIPTOR_BYTES, type Json, type PageEntry } from "../../records.ts";
import { assertValidId, keys } from "../../store/keys.ts";
import { MAX_VALUE_BYTES } from "../../store/store.ts";
import type { PlannedSplit } from "../types.ts";
import { shardOf } from "../shard.ts";
import { utf8Length } from "../../util/utf8_length.ts";

/** A planner's splits as a run seeds them. */
export interface TakenPlan {
  /** This shard's splits as page entries, heaviest first (equal weights in the planner's order). */
  planned: PageEntry[];
  /** Descriptors too large to live inline on a page (written to `spec.<id>` first), by split id. */
  large: Map<string, Json>;
  /** Every id of this shard the planner returned. */
  ids: Set<string>;
}

/**
 * Takes in a planner's `splits` for shard `shard` (every split when
 * `shard.count` is 1), until `signal` aborts. Throws `INVALID_ARGUMENT` on a
 * bad id or weight or on duplicate ids (naming up to 20), and a
 * {@linkcode ValueTooLargeError} naming the split whose descriptor is too
 * large.
 *
 * @example
 * ```ts
 * import { takePlan } from "./plan_intake.ts";
 * const { planned } = await takePlan([{ id: "a", descriptor: 1 }, { id: "b", descriptor: 2, weight: 3 }], { index: 0, count: 1 }, new AbortController().signal);
 * planned.map((e) => e.id); // ["b", "a"]
 * ```
 */
export async function takePlan(
  splits: Iterable<PlannedSplit> | AsyncIterable<PlannedSplit>,
  shard: { readonly index: number; readonly count: number },
  signal: AbortSignal,
): Promise<TakenPlan> {
  const ids = new Set<string>();
  const duplicates: string[] = [];
  // The whole result first: a plan is dealt heaviest first from its first
  // offer, so nothing is dealt before every weight is known. Equal weights
  // keep the planner's order. Each split is read straight into the entry
  // its page will hold (one object per split, measured once): a leader
  // holds every one of them until its page is written, and copies of a
  // million splits are what its memory's high-water mark is made of.
  const planned: PageEntry[] = [];
  // Descriptors too large to live inline (written to `spec.<id>` first), by split id.
  const large = new Map<string, Json>();
  for await (const s of splits) {
    if (signal.aborted) break;
    assertValidId(s.id, "split id");
    // A sharded job: this shard plans the splits routed to it; the other shards' leaders plan theirs.
    if (shard.count > 1 && shardOf(s.id, shard.count) !== shard.index) continue;
    if (ids.has(s.id)) {
      if (duplicates.length < 20) duplicates.push(s.id);
      continue;
    }
    ids.add(s.id);
    const weight = s.weight ?? 1;
    if (!(typeof weight === "number" && weight > 0 && Number.isFinite(weight))) {
      throw new SplitleaseError("INVALID_ARGUMENT", `Split "${s.id}" has an invalid weight: ${weight}`);
    }
    const descriptor = s.descriptor === undefined ? null : s.descriptor;
    const size = utf8Length(JSON.stringify(descriptor));
    if (size > MAX_VALUE_BYTES - 1024) throw descriptorTooLarge(s.id, size, MAX_VALUE_BYTES - 1024);
    if (duplicates.length > 0) continue;
    const e: PageEntry = { id: s.id };
    if (weight !== 1) e.weight = weight;
    if (size <= INLINE_DESCRIPTOR_BYTES) e.descriptor = descriptor;
    else (e.spec = true), large.set(s.id, descriptor);
    planned.push(e);
  }
  if (duplicates.length > 0) {
    throw new SplitleaseError(
      "INVALID_ARGUMENT",
      `The planner returned duplicate split ids: ${duplicates.map((d) => JSON.stringify(d)).join(", ")}${
        duplicates.length >= 20 ? " (and more)" : ""
      }; the plan was not published`,
    );
  }
  planned.sort((a, b) => (b.weight ?? 1) - (a.weight ?? 1)); // stable: equal weights in the planner's order
  return { planned, large, ids };
}

/**
 * A planned descriptor too large for the store, named by its split with
 * what to do: a descriptor says where the work is, not the work itself.
 */
function descriptorTooLarge(id: string, size: number, limit: number): ValueTooLargeError {
  const kib = (n: number) => `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KiB`;
  return new ValueTooLargeError(
    keys.spec(id),
    size,
    limit,
    `The descriptor of split "${id}" is ${kib(size)} of JSON (${size} bytes); a descriptor may be at most ${kib(limit)}. ` +
      "Keep the data out of the plan: store it elsewhere (an object store, a table, a file) and put a reference in the " +
      "descriptor (its object key, URL or row range), which the split's run() reads",
  );
}
