/**
 * The throw-away PostgreSQL server the store's PostgreSQL tests run against (see
 * `helpers/postgres.ts`): it starts (as an unprivileged user under root), answers the driver the
 * PostgreSQL store uses (`npm:postgres`, pure JavaScript), keeps what is written, and leaves no
 * process or directory behind.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { HAS_POSTGRES, POSTGRES_MISSING, startPostgres } from "./helpers/postgres.ts";
import { skippedWithout } from "./helpers/requires.ts";

if (!HAS_POSTGRES) skippedWithout(`skipping the PostgreSQL server test: ${POSTGRES_MISSING}`);

Deno.test({
  name: "a throw-away PostgreSQL server answers the store's driver, and is gone after stop",
  ignore: !HAS_POSTGRES,
  async fn() {
    const pg = await startPostgres();
    let stopped = false;
    try {
      const sql = postgres(pg.url, { max: 2, onnotice: () => {} });
      try {
        const [{ version }] = await sql`SELECT current_setting('server_version_num') AS version`;
        assert.ok(Number(version) >= 130000, `server ${version}`);
        await sql`CREATE TABLE t (id bigint PRIMARY KEY, amount bigint NOT NULL)`;
        await sql`INSERT INTO t ${sql([{ id: 1, amount: 5 }, { id: 2, amount: 7 }])}`;
        const [{ total }] = await sql`SELECT sum(amount)::bigint AS total FROM t`;
        assert.equal(Number(total), 12);
        const [{ user }] = await sql`SELECT current_user AS user`;
        assert.equal(user, "switchyard");
      } finally {
        await sql.end();
      }
      await pg.stop();
      stopped = true;
      await assert.rejects(Deno.connect({ hostname: "127.0.0.1", port: pg.port }));
    } finally {
      if (!stopped) await pg.stop();
    }
  },
});
