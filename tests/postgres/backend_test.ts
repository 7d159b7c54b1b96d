// Every suite of the store kit on PostgreSQL (tests/store/backend_suites.ts), and the conformance
// suite again with exact-key watches woken by the key poll (a large job's) rather than LISTEN.
import { conformance } from "../store/conformance.ts";
import { backendSuites } from "../store/backend_suites.ts";
import { noPg, pgStore } from "../helpers/pg.ts";
import { pgHarness } from "./harness.ts";

backendSuites(pgHarness);
// A fallback poll of a minute: only the key poll can deliver an exact key's changes in time.
const kit = Deno.env.get("KIT_SUITES");
if (!noPg && (!kit || kit.includes("conformance"))) conformance("postgres store (exact keys polled)", () => pgStore({ listenExactKeys: false, pollIntervalMs: 60_000 }));
