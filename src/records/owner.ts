/**
 * The owner of a split (an instance id and its session nonce) and its schema.
 *
 * @module
 */
import * as z from "zod";
import { id } from "./layout.ts";

/**
 * The owner of a split: an instance id and its process session nonce.
 *
 * @example
 * ```ts
 * import type { Owner } from "@splitlease/splitlease/admin";
 * const owner: Owner = { instance: "pod-1", session: "k3j2h1g0" };
 * ```
 */
export interface Owner {
  /** Instance id. */
  instance: string;
  /** Process session nonce. */
  session: string;
}

/** Schema of an owner reference. */
export const OwnerSchema: z.ZodType<Owner> = z.object({ instance: id, session: z.string().min(1) });
