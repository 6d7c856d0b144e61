/** An unexpected exception becomes a 500 in the route's protocol, with no stack or message leak. */
import assert from "node:assert/strict";
import { createHandler } from "../../src/server.ts";
import { buildConfig } from "../../src/config/load.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { createKey } from "../../src/billing/accounts.ts";
import type { Route } from "../../src/routes.ts";

Deno.test("a handler that throws gets 500 in OpenAI, Anthropic and Google shape", async () => {
  const config = { ...buildConfig({}, () => undefined), accessLog: false };
  const store = openSqliteStore(":memory:");
  const { key } = await createKey(store, { account: "a" });
  const boom = () => {
    throw new Error("secret detail at /srv/app.ts:12");
  };
  const routes: Route[] = [
    { method: "POST", path: "/v1/boom", auth: "bearer", errors: "openai", handle: boom },
    {
      method: "POST",
      path: "/v1/messages/boom",
      auth: "anthropic",
      errors: "anthropic",
      handle: boom,
    },
    { method: "POST", path: "/v1beta/boom", auth: "goog", errors: "google", handle: boom },
  ];
  const handle = createHandler({ config, store }, routes);
  const call = (path: string, headers: Record<string, string>) =>
    handle(new Request(`http://gw${path}`, { method: "POST", headers }));

  try {
    const openai = await call("/v1/boom", { authorization: `Bearer ${key}` });
    assert.equal(openai.status, 500);
    assert.equal(openai.headers.get("content-type"), "application/json");
    const o = await openai.json();
    assert.equal(o.error.type, "server_error");
    const anthropic = await (await call("/v1/messages/boom", { "x-api-key": key })).json();
    assert.equal(anthropic.error.type, "api_error");
    const google = await (await call("/v1beta/boom", { "x-goog-api-key": key })).json();
    assert.deepEqual(Object.keys(google.error), ["code", "message", "status"]);
    assert.equal(google.error.status, "INTERNAL");
    for (const body of [o, anthropic, google]) {
      assert.ok(!JSON.stringify(body).includes("secret detail"), "no internal detail leaks");
    }
  } finally {
    store.close();
  }
});
