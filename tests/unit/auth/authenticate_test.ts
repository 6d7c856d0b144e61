/**
 * Authentication on its own (`src/auth/`): how each protocol presents a key, the checks a key
 * passes in order (secret, rotation grace, revoked, disabled, expired, address), the principal it
 * yields, the admin token, key minting and hashing, and the record of last uses — against a real
 * SQLite store in memory, keys made as the CLI makes them.
 */
import assert from "node:assert/strict";
import { authenticate, presentedKey } from "../../../src/auth/authenticate.ts";
import { requireAdmin, requireAdminEnabled } from "../../../src/auth/admin.ts";
import { hashKey, keyIdOf, mintKey, mintKeyFor, timingSafeEqual } from "../../../src/auth/keys.ts";
import { LastUsed } from "../../../src/auth/last_used.ts";
import { createKey, rotateKey, updateKey } from "../../../src/billing/accounts.ts";
import { GatewayError } from "../../../src/http/errors.ts";
import { openSqliteStore } from "../../../src/store/sqlite.ts";
import type { Store } from "../../../src/store/store.ts";

/** Runs `fn` with a fresh in-memory store. */
async function withStore(fn: (store: Store) => Promise<void>): Promise<void> {
  const store = openSqliteStore(":memory:");
  try {
    await fn(store);
  } finally {
    await store.close();
  }
}

/** Asserts `fn` throws a GatewayError of `status` whose message matches `message`. */
async function refused(
  fn: () => unknown,
  status: number,
  message: RegExp,
  code?: string,
): Promise<void> {
  let caught: unknown;
  try {
    await fn();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof GatewayError, `a GatewayError, not ${caught}`);
  assert.equal(caught.status, status);
  assert.match(caught.message, message);
  if (code !== undefined) assert.equal(caught.options.code, code);
}

const request = (headers: Record<string, string>, query = "") => ({
  req: new Request(`http://gateway/v1/x${query}`, { headers }),
  url: new URL(`http://gateway/v1/x${query}`),
});

Deno.test("each scheme takes the key where its protocol sends it, and says where when it is missing", async () => {
  const bearer = request({ authorization: "Bearer sy-abc" });
  assert.equal(presentedKey(bearer.req, bearer.url, "bearer"), "sy-abc");
  assert.equal(presentedKey(bearer.req, bearer.url, "anthropic"), "sy-abc");
  assert.equal(presentedKey(bearer.req, bearer.url, "any"), "sy-abc");
  await refused(() => presentedKey(bearer.req, bearer.url, "goog"), 401, /x-goog-api-key/);
  const lower = request({ authorization: "bearer   sy-lower  " });
  assert.equal(presentedKey(lower.req, lower.url, "bearer"), "sy-lower");
  const anthropic = request({ "x-api-key": " sy-ant ", authorization: "Bearer sy-other" });
  assert.equal(
    presentedKey(anthropic.req, anthropic.url, "anthropic"),
    "sy-ant",
    "x-api-key first",
  );
  assert.equal(presentedKey(anthropic.req, anthropic.url, "bearer"), "sy-other");
  const goog = request({ "x-goog-api-key": "sy-goog", "x-api-key": "sy-ant" });
  assert.equal(presentedKey(goog.req, goog.url, "goog"), "sy-goog");
  assert.equal(presentedKey(goog.req, goog.url, "any"), "sy-goog", "x-goog-api-key first");
  // A key in the query string is refused by name (it would end up in logs), never read.
  const query = request({}, "?key=sy-in-the-url");
  await refused(() => presentedKey(query.req, query.url, "goog"), 401, /`key` query parameter/);
  await refused(() => presentedKey(query.req, query.url, "any"), 401, /`key` query parameter/);
  const none = request({ authorization: "Basic abc" });
  await refused(() => presentedKey(none.req, none.url, "bearer"), 401, /`Bearer <key>`/);
  await refused(() => presentedKey(none.req, none.url, "anthropic"), 401, /x-api-key/);
  await refused(() => presentedKey(none.req, none.url, "any"), 401, /x-goog-api-key/);
});

Deno.test("minted keys: their id in the secret, the hash of the whole, the same id on rotation", () => {
  const key = mintKey();
  assert.match(key.secret, /^sy-[a-z2-9]{12}-[A-Za-z0-9_-]{43}$/);
  assert.equal(keyIdOf(key.secret), key.id);
  assert.equal(key.prefix, key.secret.slice(0, 10));
  assert.ok(timingSafeEqual(key.hash, hashKey(key.secret)));
  assert.ok(!timingSafeEqual(key.hash, hashKey(key.secret + "x")));
  assert.ok(!timingSafeEqual(key.hash, key.hash.subarray(1)), "lengths differ: not equal");
  assert.notEqual(mintKey().id, key.id);
  const rotated = mintKeyFor(key.id)!;
  assert.equal(rotated.id, key.id);
  assert.equal(keyIdOf(rotated.secret), key.id);
  assert.notEqual(rotated.secret, key.secret);
  assert.equal(mintKeyFor("key_UPPERCASE!"), undefined);
  for (const bad of ["sy-short-x", `sy-${"a".repeat(12)}-${"b".repeat(42)}`, "sk-whatever", ""]) {
    assert.equal(keyIdOf(bad), undefined, bad);
  }
});

Deno.test("a key authenticates as its account with its rpm (else the default); unknown and wrong secrets are 401", async () => {
  await withStore(async (store) => {
    const made = await createKey(store, { account: "team", rpm: 7 });
    const principal = await authenticate(store, made.key, 60);
    assert.equal(principal.keyId, made.id);
    assert.equal(principal.accountName, "team");
    assert.equal(principal.rpm, 7);
    assert.equal(principal.limited, false, "no budget, tpm or calls in flight: a plain hold");
    const plain = await createKey(store, { account: "team" });
    assert.equal((await authenticate(store, plain.key, 60)).rpm, 60, "the default rpm");
    // Found in memory the second time: answered at once, not a promise.
    assert.ok(!(authenticate(store, plain.key, 60) instanceof Promise));
    const other = mintKey();
    await refused(() => authenticate(store, other.secret, 60), 401, /^Invalid API key\.$/);
    const forged = made.key.slice(0, -1) + (made.key.endsWith("A") ? "B" : "A");
    await refused(() => authenticate(store, forged, 60), 401, /^Invalid API key\.$/);
    await refused(() => authenticate(store, "not-a-key", 60), 401, /^Invalid API key\.$/);
  });
});

Deno.test("revoked, disabled and expired keys are 401 naming why; an address outside the list is 403", async () => {
  await withStore(async (store) => {
    const now = Date.UTC(2027, 0, 10);
    const revoked = await createKey(store, { account: "a" }, now);
    await store.revokeKey(revoked.id);
    await refused(() => authenticate(store, revoked.key, 0, { now }), 401, /revoked/);
    const disabled = await createKey(store, { account: "a" }, now);
    await updateKey(store, disabled.id, { disabled: true }, now);
    await refused(
      () => authenticate(store, disabled.key, 0, { now }),
      401,
      /disabled/,
      "key_disabled",
    );
    await updateKey(store, disabled.id, { disabled: false }, now);
    assert.equal((await authenticate(store, disabled.key, 0, { now })).keyId, disabled.id);
    const expiring = await createKey(store, { account: "a", expires: "1d" }, now);
    assert.ok(await authenticate(store, expiring.key, 0, { now: now + 86_400_000 - 1 }));
    await refused(
      () => authenticate(store, expiring.key, 0, { now: now + 86_400_000 }),
      401,
      /expired at 2027-01-11T00:00:00\.000Z/,
      "key_expired",
    );
    const fenced = await createKey(store, { account: "a", ips: ["10.0.0.0/8"] }, now);
    assert.ok(await authenticate(store, fenced.key, 0, { now, address: "10.2.3.4" }));
    for (const address of ["192.0.2.1", undefined]) {
      await refused(
        () => authenticate(store, fenced.key, 0, { now, address }),
        403,
        /this address/,
        "address_not_allowed",
      );
    }
    // Limits that need a limited hold mark the principal.
    const budgeted = await createKey(store, {
      account: "a",
      budgets: [{ usd: "5", period: "month" }],
    }, now);
    assert.equal((await authenticate(store, budgeted.key, 0, { now })).limited, true);
  });
});

Deno.test("a rotated key's old secret works during its grace period only", async () => {
  await withStore(async (store) => {
    const now = Date.UTC(2027, 5, 1);
    const made = await createKey(store, { account: "r" }, now);
    const rotated = await rotateKey(store, made.id, 3_600_000, now);
    assert.notEqual(rotated.key, made.key);
    assert.equal((await authenticate(store, rotated.key, 0, { now })).keyId, made.id);
    assert.equal((await authenticate(store, made.key, 0, { now: now + 3_599_999 })).keyId, made.id);
    await refused(() => authenticate(store, made.key, 0, { now: now + 3_600_000 }), 401, /Invalid/);
    // Without a grace period the old secret stops at once.
    const again = await rotateKey(store, made.id, 0, now);
    await refused(() => authenticate(store, rotated.key, 0, { now }), 401, /Invalid/);
    assert.ok(await authenticate(store, again.key, 0, { now }));
  });
});

Deno.test("the admin token: 404 when none is set, 401 without it or with another, through only with it", async () => {
  const token = "the-admin-token-0123456789";
  const req = (authorization?: string) =>
    new Request("http://gateway/admin/api/keys", {
      headers: authorization ? { authorization } : {},
    });
  await refused(() => requireAdminEnabled({ adminToken: null }), 404, /admin\.token/);
  await refused(
    () => requireAdmin(req(`Bearer ${token}`), { adminToken: null }),
    404,
    /Not enabled/,
  );
  for (const header of [undefined, "Bearer wrong-token-0123456789", `Basic ${token}`, token]) {
    await refused(
      () => requireAdmin(req(header), { adminToken: token }),
      401,
      /admin token/,
      "invalid_admin_token",
    );
  }
  requireAdmin(req(`Bearer ${token}`), { adminToken: token });
  requireAdmin(req(`bearer ${token}`), { adminToken: token });
  requireAdminEnabled({ adminToken: token });
});

Deno.test("last uses are written at most once a minute per key, in batches", async () => {
  const touched: Map<string, number>[] = [];
  const store = {
    touchKeys: (used: Map<string, number>) => touched.push(used),
  } as unknown as Store;
  const uses = new LastUsed();
  await uses.flush(store);
  assert.equal(touched.length, 0, "nothing to write");
  uses.note("key_a", 1_000);
  uses.note("key_a", 30_000); // within the minute: not noted again
  uses.note("key_b", 2_000);
  await uses.flush(store);
  assert.deepEqual(touched, [new Map([["key_a", 1_000], ["key_b", 2_000]])]);
  uses.note("key_a", 40_000);
  await uses.flush(store);
  assert.equal(touched.length, 1, "key_a was written less than a minute ago");
  uses.note("key_a", 61_000);
  assert.equal(uses.full, false);
  await uses.flush(store);
  assert.deepEqual(touched[1], new Map([["key_a", 61_000]]));
  for (let i = 0; i < 10_000; i++) uses.note(`key_${i}`, 200_000);
  assert.equal(uses.full, true, "10,000 waiting: written at once");
});
