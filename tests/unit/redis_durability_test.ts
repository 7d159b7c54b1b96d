// The Redis store's judgement of a server's persistence and replication
// (src/redis/durability.ts): every combination of settings against every
// mode a user can ask for, without a server.
import assert from "node:assert/strict";
import { judgeDurability, type ServerSettings } from "../../src/redis/durability.ts";
import { DURABILITY_LEVELS, type RedisDurability, resolveRedisOptions } from "../../src/redis/options.ts";
import { SplitleaseError } from "../../mod.ts";

const base: ServerSettings = { version: "7.0.15", appendonly: "yes", appendfsync: "always", role: "master", replicas: 0 };
const rank = (d: RedisDurability) => DURABILITY_LEVELS.indexOf(d);

Deno.test("redis durability: a server is accepted exactly when it is at least as durable as asked, and the mode says what it is", () => {
  const servers: [Partial<ServerSettings>, RedisDurability][] = [
    [{ appendonly: "yes", appendfsync: "always" }, "always"],
    [{ appendonly: "yes", appendfsync: "everysec" }, "everysec"],
    [{ appendonly: "yes", appendfsync: "no" }, "none"],
    [{ appendonly: "no", appendfsync: "always" }, "none"],
    [{ appendonly: undefined, appendfsync: undefined }, "none"],
  ];
  for (const [settings, level] of servers) {
    for (const wanted of DURABILITY_LEVELS) {
      const v = judgeDurability({ ...base, ...settings }, wanted, undefined);
      const why = `${JSON.stringify(settings)} asked ${wanted}`;
      assert.equal(v.ok, rank(level) <= rank(wanted), why);
      if (v.ok) {
        assert.equal(v.mode.level, level, why);
        assert.match(v.mode.text, new RegExp(`^durability "${level}"`), why);
      } else {
        // The refusal names the settings, what can be lost, and both fixes.
        assert.match(v.message, /the server runs with /, why);
        assert.match(v.message, /CONFIG SET appendonly yes|set appendonly yes/, why);
        assert.match(v.message, new RegExp(`durability: "${level}"`), why);
      }
    }
  }
});

Deno.test("redis durability: appendonly no is refused by default with the settings, the loss and the fix named", () => {
  const v = judgeDurability({ ...base, appendonly: "no" }, "always", undefined);
  assert.equal(v.ok, false);
  if (!v.ok) {
    assert.equal(
      v.message,
      'the server runs with appendonly no: a restart can lose every write since the last snapshot, and this store accepts only durability "always" ' +
        "(every acknowledged write is on disk before its answer); CONFIG SET appendonly yes, CONFIG SET appendfsync always " +
        '(and CONFIG REWRITE, or the same in redis.conf), or accept the risk by name with durability: "none"',
    );
  }
});

Deno.test("redis durability: a primary with replicas waits for one by default, as many as asked, and none only when asked; a replica is refused", () => {
  const one = judgeDurability({ ...base, replicas: 2 }, "always", undefined);
  assert.ok(one.ok && one.mode.waitReplicas === 1 && /2 replicas, each write waits for 1 \(WAIT\)/.test(one.mode.text));
  const two = judgeDurability({ ...base, replicas: 2 }, "always", 2);
  assert.ok(two.ok && two.mode.waitReplicas === 2);
  const none = judgeDurability({ ...base, replicas: 2 }, "always", 0);
  assert.ok(none.ok && none.mode.waitReplicas === 0 && /a failover can lose acknowledged writes/.test(none.mode.text));
  const alone = judgeDurability(base, "always", undefined);
  assert.ok(alone.ok && alone.mode.waitReplicas === 0 && /no replicas$/.test(alone.mode.text));
  const replica = judgeDurability({ ...base, role: "slave" }, "always", undefined);
  assert.ok(!replica.ok && /the server is a replica \(role slave\): connect to its primary/.test(replica.message));
});

Deno.test("redis options: a mode that is not one of the names, and an unknown option, are refused naming the choices", () => {
  const refused = (o: Record<string, unknown>) => {
    try {
      resolveRedisOptions(o as never);
    } catch (e) {
      assert.ok(e instanceof SplitleaseError && e.code === "INVALID_CONFIG");
      return e.message;
    }
    assert.fail("accepted");
  };
  assert.match(refused({ job: "j", durability: "fsync" }), /durability must be one of "always", "everysec", "none", got "fsync"/);
  assert.match(refused({ job: "j", durabilty: "none" }), /unknown option durabilty; did you mean durability\?/);
  assert.match(refused({ job: "j", waitReplicas: -1 }), /waitReplicas must be an integer from 0 to 16/);
  assert.match(refused({ job: "j", keyPrefix: "a b" }), /keyPrefix must be/);
  assert.equal(resolveRedisOptions({ job: "j" }).durability, "always");
});
