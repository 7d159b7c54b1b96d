// The store conformance suite on PostgreSQL (a fresh job per test: revisions start at 0).
import { conformance } from "../store/conformance.ts";
import { noPg, pgStore } from "../helpers/pg.ts";

if (!noPg) conformance("PostgresStore", () => pgStore());
