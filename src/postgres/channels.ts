/**
 * `NOTIFY` channels of a job: one per key filter, so a watch is woken only
 * by writes it selects (a member's `assign.<me>` watch is not woken by every
 * split write), and key filters of any length fit the 63-byte identifier.
 *
 * A write notifies the channel of every filter that selects its key: `""`,
 * each dotted prefix (`split.`), and the key itself. A notification carries
 * nothing: the watch reads what changed from the tables, so a missed or
 * folded notification costs latency (the poll fallback), never a change.
 *
 * @module
 */

/** FNV-1a over the UTF-16 code units of `s` (keys are ASCII), as 8 hex digits. */
function fnv1a(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, "0");
}

/**
 * The channel of `filter` in job `jobId`: `sl<job>_<hash>` (a lower-case
 * identifier; a collision only wakes a watch for nothing).
 *
 * @example
 * ```ts ignore
 * channelOf(7, "split."); // "sl7_…"
 * ```
 */
export function channelOf(jobId: number, filter: string): string {
  return `sl${jobId}_${fnv1a(filter)}${fnv1a("\u0001" + filter)}`;
}

/**
 * Every channel a write to `key` notifies, comma-separated (the write
 * functions split them): the filters `""`, each prefix ending in a dot,
 * and `key`.
 *
 * @example
 * ```ts ignore
 * channelsOfKey(7, "split.a"); // channels of "", "split." and "split.a"
 * ```
 */
export function channelsOfKey(jobId: number, key: string): string {
  const out = [channelOf(jobId, ""), channelOf(jobId, key)];
  for (let i = key.indexOf("."); i >= 0; i = key.indexOf(".", i + 1)) out.push(channelOf(jobId, key.slice(0, i + 1)));
  return out.join(",");
}
