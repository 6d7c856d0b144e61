/**
 * The migrations that have shipped never change, now that parts of them are written once for both
 * dialects (`schema_shared.ts`): each one's text is pinned by its digest, so an edit to a shared
 * part (or to a migration) fails here. A new migration is added after them, and pinned in turn.
 */
import assert from "node:assert/strict";
import { MIGRATIONS as POSTGRES } from "../../../src/store/postgres_schema.ts";
import { MIGRATIONS as SQLITE } from "../../../src/store/sqlite_schema.ts";
import {
  alerts,
  POSTGRES_TYPES,
  SQLITE_TYPES,
  teamKeys,
} from "../../../src/store/schema_shared.ts";

/** The first 16 hex digits of the SHA-256 of each shipped migration, oldest first. */
const SHIPPED = {
  postgres: [
    "c0e7ca273facb74d",
    "6dec69d1b0c524d2",
    "2b63e030c20f7187",
    "e3e8ab319d0315d0",
    "d1f4832a4b6d577c",
    "14e3088e5d14abef",
    "ec0cfb94cd3fdce6",
    "d11c0b8c68cd0b46",
    "35d7af8d4d3121d9",
  ],
  sqlite: [
    "c95db1cc99b29cec",
    "6c0d822724016184",
    "ade6fd4f43372f9b",
    "34040736d8f3ad64",
    "8ae373084ad66189",
    "db493171b95dd783",
    "21479ca08b28e490",
    "5aa2aa1973e67b0d",
    "571d4f14cba48af1",
    "d578ab4567b7ad3e",
    "7296f11f49e81788",
    "536c9735cbbe18fc",
    "b39a507ffa2da0b2",
    "b68a9b27368a6655",
    "279e27da98822dcd",
    "eccaf7aab983e8dd",
    "996d128cbadd824c",
    "5dc5c3b8f920a1fd",
  ],
};

async function digests(migrations: string[]): Promise<string[]> {
  return await Promise.all(migrations.map(async (text) => {
    const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
    return [...new Uint8Array(hash).slice(0, 8)].map((b) => b.toString(16).padStart(2, "0"))
      .join("");
  }));
}

Deno.test("every shipped migration of both stores is as it shipped, to the byte", async () => {
  for (const [name, migrations] of [["postgres", POSTGRES], ["sqlite", SQLITE]] as const) {
    const shipped = SHIPPED[name];
    assert.ok(migrations.length >= shipped.length, `${name}: a shipped migration is gone`);
    assert.deepEqual(await digests(migrations.slice(0, shipped.length)), shipped, name);
  }
});

Deno.test("each shared part begins a migration of each store, in that store's types", () => {
  for (const part of [alerts, teamKeys]) {
    assert.ok(POSTGRES.some((m) => m.startsWith(part(POSTGRES_TYPES))), part.name);
    assert.ok(SQLITE.some((m) => m.startsWith(part(SQLITE_TYPES))), part.name);
  }
});
