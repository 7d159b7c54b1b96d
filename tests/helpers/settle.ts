/**
 * Lets pending promise callbacks run: several real macrotask turns.
 * @module
 */

/** Yields `turns` zero-delay timer turns (default 5). */
export async function settle(turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setTimeout(r, 0));
}
