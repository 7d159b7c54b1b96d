// The store conformance suite on PostgreSQL (a fresh job per test: revisions start at 0), with
// exact-key watches woken by LISTEN (a small job's default) and by the key poll (a large job's).
import { conformance } from "../store/conformance.ts";
import { noPg, pgStore } from "../helpers/pg.ts";

if (!noPg) {
  conformance("PostgresStore", () => pgStore());
  // A fallback poll of a minute: only the key poll can deliver an exact key's changes in time.
  conformance("PostgresStore (exact keys polled)", () => pgStore({ listenExactKeys: false, pollIntervalMs: 60_000 }));
}
