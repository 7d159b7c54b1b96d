/**
 * The server-side scripts of the Redis store. Every write is one script, so
 * the check of the key's revision, the next revision from the job's
 * counter, the value and the change-log entry land together or not at all
 * (Redis runs a script atomically: no other command runs in between).
 *
 * A job's keys share one hash tag (`<prefix>{<job>}:…`, one cluster slot):
 * - `kv`   hash: key → value, live keys only;
 * - `rev`  sorted set: key → revision of its last write or delete (a key
 *   deleted stays, as a marker: a compare-and-swap at the marker's
 *   revision succeeds and a create after a delete works, as on NATS), read
 *   in revision order for snapshots and listings;
 * - `head` string: the job's last revision (`INCR`); absent = no such job;
 * - `log`  stream: one entry per change, its id `<revision>-0`, fields
 *   `k` (the key) and `v` (the value; none for a delete), trimmed to about
 *   the change log's size. Watches read it after their revision (`XRANGE`).
 *
 * A write also publishes an empty message on the wake-up channel of every
 * filter that selects its key (`""`, each dotted prefix, the key itself):
 * a wake-up only, never the record, so a message lost with a connection
 * costs the fallback poll, never a change.
 *
 * @module
 */

/** Publishes on `base` and `base .. p` for every dotted prefix `p` of `key` and the key itself. */
const PUBLISH = `
local function wake(base, key)
  redis.call('PUBLISH', base, '')
  local i = 0
  while true do
    local j = string.find(key, '.', i + 1, true)
    if not j then break end
    redis.call('PUBLISH', base .. string.sub(key, 1, j), '')
    i = j
  end
  redis.call('PUBLISH', base .. key, '')
end
`;

/**
 * `create` (ARGV[3] = '') or compare-and-swap at revision ARGV[3]. KEYS: kv,
 * rev, head, log. ARGV: key, value, expected, log size, wake-up channel
 * base. Returns the new revision, -1 for a lost race, -2 when the job does
 * not exist.
 *
 * @example
 * ```ts
 * import { PUT } from "./scripts.ts";
 * console.log(PUT.includes("INCR"));
 * ```
 */
export const PUT = `${PUBLISH}
if redis.call('EXISTS', KEYS[3]) == 0 then return -2 end
local key = ARGV[1]
local cur = redis.call('ZSCORE', KEYS[2], key)
if ARGV[3] == '' then
  if cur and redis.call('HEXISTS', KEYS[1], key) == 1 then return -1 end
elseif not cur or tonumber(cur) ~= tonumber(ARGV[3]) then
  return -1
end
local rev = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], key, ARGV[2])
redis.call('ZADD', KEYS[2], rev, key)
redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[4], rev .. '-0', 'k', key, 'v', ARGV[2])
wake(ARGV[5], key)
return rev
`;

/**
 * Deletes a live key (only at revision ARGV[2] when it is not ''). KEYS:
 * kv, rev, head, log. ARGV: key, expected, log size, channel base. Returns
 * the marker's revision, 0 when the key was absent already, -1 for a lost
 * race, -2 when the job does not exist.
 *
 * @example
 * ```ts
 * import { DEL } from "./scripts.ts";
 * console.log(DEL.includes("HDEL"));
 * ```
 */
export const DEL = `${PUBLISH}
if redis.call('EXISTS', KEYS[3]) == 0 then return -2 end
local key = ARGV[1]
if redis.call('HEXISTS', KEYS[1], key) == 0 then return 0 end
local cur = redis.call('ZSCORE', KEYS[2], key)
if ARGV[2] ~= '' and tonumber(cur) ~= tonumber(ARGV[2]) then return -1 end
local rev = redis.call('INCR', KEYS[3])
redis.call('HDEL', KEYS[1], key)
redis.call('ZADD', KEYS[2], rev, key)
redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[3], rev .. '-0', 'k', key)
wake(ARGV[4], key)
return rev
`;

/** The server's run id (a new one at every start): what a watch compares to tell a restart. */
const RUN_ID = `
local function runId()
  return string.match(redis.call('INFO', 'server'), 'run_id:(%w+)') or ''
end
`;

/**
 * One key's raw state. KEYS: kv, rev, head. ARGV: key, with the run id
 * ('1') or not (''). Returns {head, run id, revision or false, value or
 * false}; head is false when the job does not exist.
 *
 * @example
 * ```ts
 * import { POINT } from "./scripts.ts";
 * console.log(POINT.includes("ZSCORE"));
 * ```
 */
export const POINT = `${RUN_ID}
local head = redis.call('GET', KEYS[3])
if not head then return {false} end
local boot = ''
if ARGV[2] == '1' then boot = runId() end
return {head, boot, redis.call('ZSCORE', KEYS[2], ARGV[1]), redis.call('HGET', KEYS[1], ARGV[1])}
`;

/**
 * A page of changes under a prefix after revision ARGV[1], in revision
 * order: from the live keys (`rev` and `kv`: each key's last change) when
 * ARGV[5] is 'live', else from the log. ARGV: after, at most this many
 * changes, prefix ('' for all), at most this many entries scanned, source,
 * with the run id ('1') or not. KEYS: kv, rev, head, log.
 *
 * Returns {head, run id, floor, through, k1, r1, v1, ...}: head false when
 * the job does not exist; floor the log's oldest revision (false when it is
 * empty; log pages only); through the revision the scan stopped at when it
 * did before the end (false when the page reaches the end), so a caller
 * reads on after it. A value is false for a delete.
 *
 * @example
 * ```ts
 * import { PAGE } from "./scripts.ts";
 * console.log(PAGE.includes("XRANGE"));
 * ```
 */
export const PAGE = `${RUN_ID}
local head = redis.call('GET', KEYS[3])
if not head then return {false} end
local after = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local prefix = ARGV[3]
local scan = tonumber(ARGV[4])
local boot = ''
if ARGV[6] == '1' then boot = runId() end
local out = {head, boot, false, false}
local n = 0
local scanned = 0
local last = false
if ARGV[5] == 'live' then
  local batch = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. after, '+inf', 'WITHSCORES', 'LIMIT', 0, scan)
  for i = 1, #batch, 2 do
    local k = batch[i]
    scanned = scanned + 1
    last = batch[i + 1]
    if prefix == '' or string.sub(k, 1, #prefix) == prefix then
      out[#out + 1] = k
      out[#out + 1] = batch[i + 1]
      out[#out + 1] = redis.call('HGET', KEYS[1], k)
      n = n + 1
      if n >= limit then break end
    end
  end
else
  local first = redis.call('XRANGE', KEYS[4], '-', '+', 'COUNT', 1)[1]
  if first then out[3] = string.match(first[1], '^(%d+)') end
  local batch = redis.call('XRANGE', KEYS[4], (after + 1) .. '-0', '+', 'COUNT', scan)
  for i = 1, #batch do
    local e = batch[i]
    local r = string.match(e[1], '^(%d+)')
    local f = e[2]
    local k = f[2]
    scanned = scanned + 1
    last = r
    if prefix == '' or string.sub(k, 1, #prefix) == prefix then
      out[#out + 1] = k
      out[#out + 1] = r
      out[#out + 1] = f[4] or false
      n = n + 1
      if n >= limit then break end
    end
  end
end
if n < limit and scanned >= scan then out[4] = last end
return out
`;

/**
 * The revision of the last change under a prefix after ARGV[1] (from the
 * live keys: a key's last change is its latest), or false. KEYS: rev.
 * ARGV: after, prefix, at most this many keys looked at (past them the
 * answer is the newest revision looked at: later than the truth, never
 * earlier).
 *
 * @example
 * ```ts
 * import { POSITION } from "./scripts.ts";
 * console.log(POSITION.includes("ZREVRANGEBYSCORE"));
 * ```
 */
export const POSITION = `
local prefix = ARGV[2]
local batch = redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', '(' .. ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
for i = 1, #batch, 2 do
  if prefix == '' or string.sub(batch[i], 1, #prefix) == prefix then return batch[i + 1] end
end
if #batch >= 2 * tonumber(ARGV[3]) then return batch[2] end
return false
`;
