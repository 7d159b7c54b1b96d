// The differential test (differential.ts) on PostgreSQL: a fresh job per run.
import { differential } from "../store/differential.ts";
import { noPg, pgStore } from "../helpers/pg.ts";

if (!noPg) differential("PostgresStore", () => pgStore({ opTimeoutMs: 2000 }));
