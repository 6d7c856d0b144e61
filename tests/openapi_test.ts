/**
 * The admin API's OpenAPI document (`GET /admin/api/openapi.json`) held to the gateway: it names
 * exactly the admin routes of the routing table, with their methods and paths; it is OpenAPI 3.1
 * in structure with every `$ref` resolving; the real answers of a running gateway (keys created
 * with settings, changed, rotated, read; an account changed; the ledger; errors) validate against
 * the schemas it documents for their status, property by property both ways; and every body it
 * says is invalid is answered 400 naming the field, with nothing changed.
 */
import assert from "node:assert/strict";
import { eventually, startStack } from "./helpers/setup.ts";
import { resolvePointer, unknownKeywords, validateJson } from "./helpers/json_schema.ts";
import { routes } from "../src/routes.ts";
import { getOpenApi } from "../src/endpoints/openapi.ts";
import { GatewayError } from "../src/http/errors.ts";
import type { RequestContext } from "../src/context.ts";

const ADMIN = "openapi-admin-token-0123456789abcdef";
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
// Alerts without a webhook (raised, listed, not sent): a key expiring within a year, a balance
// below 1000 USD, a budget reaching 1 % or refusing a call.
const stack = await startStack({
  admin: { token: ADMIN },
  alerts: {
    budgetThresholds: [1, 100],
    balanceBelowUsd: "1000",
    expiringWithinHours: 8760,
    checkIntervalMs: 50,
  },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

// deno-lint-ignore no-explicit-any
type Json = any;

/** The document, fetched as a tool does: without a token. */
const served = await fetch(`${gateway.url}/admin/api/openapi.json`);
const doc: Json = await served.json();

interface Answer {
  status: number;
  json: Json;
  headers: Headers;
}

async function call(
  method: string,
  path: string,
  body?: unknown,
  token: string | null = ADMIN,
  contentType = "application/json",
): Promise<Answer> {
  const res = await fetch(`${gateway.url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { "content-type": contentType }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null, headers: res.headers };
}

/** The document's operation for `method` on the path template `template`. */
function operation(method: string, template: string): Json {
  const op = doc.paths[template]?.[method.toLowerCase()];
  assert.ok(op, `${method} ${template} is in the document`);
  return op;
}

/** `ref`'s target when `node` is a reference, else `node`. */
function deref(node: Json): Json {
  return node?.$ref ? resolvePointer(doc, node.$ref) : node;
}

/** The document's request body schema of an operation. */
function requestSchema(method: string, template: string): Json {
  return operation(method, template).requestBody.content["application/json"].schema;
}

/** Asserts the answer's status is documented for the operation and its body fits the schema. */
function conforms(method: string, template: string, answer: Answer): void {
  const documented = operation(method, template).responses[String(answer.status)];
  assert.ok(documented, `${method} ${template}: status ${answer.status} is documented`);
  const response = deref(documented);
  const schema = response.content["application/json"].schema;
  const problems = validateJson(doc, schema, answer.json, { closed: true });
  assert.deepEqual(problems, [], `${method} ${template} ${answer.status}`);
  for (const header of Object.keys(response.headers ?? {})) {
    assert.ok(answer.headers.has(header), `${method} ${template}: the ${header} header`);
  }
}

/** Asserts `body` fits the operation's documented request body. */
function validBody(method: string, template: string, body: unknown): void {
  assert.deepEqual(validateJson(doc, requestSchema(method, template), body), [], "a valid body");
}

Deno.test("served without a token as JSON; 404 when the admin API is off", () => {
  assert.equal(served.status, 200);
  assert.match(served.headers.get("content-type")!, /^application\/json/);
  const off = { services: { config: { adminToken: null } } } as unknown as RequestContext;
  assert.throws(() => getOpenApi(off), (e) => e instanceof GatewayError && e.status === 404);
});

Deno.test("every admin route of the routing table is in the document, with its method, and nothing else", () => {
  const fromRoutes = routes
    .filter((r) => r.path.startsWith("/admin/api/"))
    .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")}`)
    .sort();
  const fromDocument = Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) => {
    for (const key of Object.keys(item)) {
      assert.ok(
        METHODS.includes(key) || ["summary", "description", "parameters"].includes(key),
        `${path}: ${key}`,
      );
    }
    return Object.keys(item).filter((k) => METHODS.includes(k)).map((m) =>
      `${m.toUpperCase()} ${path}`
    );
  }).sort();
  assert.deepEqual(fromDocument, fromRoutes);
  assert.ok(fromRoutes.length >= 14);
});

Deno.test("the document is OpenAPI 3.1 in structure, and every $ref resolves", () => {
  assert.match(doc.openapi, /^3\.1\.\d+$/);
  assert.equal(typeof doc.info.title, "string");
  assert.equal(typeof doc.info.version, "string");
  assert.equal(typeof doc.paths, "object");
  const schemes = doc.components.securitySchemes;
  const requirements = (list: Json[]) => {
    for (const requirement of list) {
      for (const name of Object.keys(requirement)) assert.ok(schemes[name], `scheme ${name}`);
    }
  };
  requirements(doc.security);
  assert.deepEqual(schemes.adminToken, { ...schemes.adminToken, type: "http", scheme: "bearer" });

  const ids = new Set<string>();
  const schemas: [string, Json][] = Object.entries(doc.components.schemas);
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    assert.ok(path.startsWith("/"), path);
    const templated = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    for (const method of METHODS.filter((m) => item[m])) {
      const op = item[method];
      const where = `${method} ${path}`;
      assert.ok(!ids.has(op.operationId), `${where}: operationId unique`);
      ids.add(op.operationId);
      const parameters: Json[] = (op.parameters ?? []).map(deref);
      for (const p of parameters) {
        assert.ok(["path", "query", "header", "cookie"].includes(p.in), `${where}: ${p.name}`);
        assert.equal(typeof p.name, "string");
        assert.ok(p.schema, `${where}: ${p.name} has a schema`);
        schemas.push([`${where} ${p.name}`, p.schema]);
      }
      assert.deepEqual(
        parameters.filter((p) => p.in === "path").map((p) => p.name).sort(),
        templated.toSorted(),
        `${where}: a path parameter for each template variable`,
      );
      assert.ok(parameters.filter((p) => p.in === "path").every((p) => p.required === true));
      if (op.requestBody) {
        const body = deref(op.requestBody);
        assert.ok(body.content["application/json"].schema, `${where}: body schema`);
        schemas.push([`${where} body`, body.content["application/json"].schema]);
      }
      const statuses = Object.keys(op.responses ?? {});
      assert.ok(statuses.length > 0, `${where}: has responses`);
      for (const status of statuses) {
        assert.match(status, /^([1-5]\d\d|[1-5]XX|default)$/, `${where}: ${status}`);
        const response = deref(op.responses[status]);
        assert.equal(typeof response.description, "string", `${where} ${status}: description`);
        for (const media of Object.values(response.content ?? {}) as Json[]) {
          schemas.push([`${where} ${status}`, media.schema]);
        }
      }
      requirements(op.security ?? []);
    }
  }
  assert.ok(ids.has("getOpenApi"));
  // Every schema uses only what the validator reads, so validating below means something.
  for (const [where, schema] of schemas) assert.deepEqual(unknownKeywords(schema), [], where);

  let refs = 0;
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (node === null || typeof node !== "object") return;
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref") {
        resolvePointer(doc, value as string);
        refs++;
      } else walk(value);
    }
  };
  walk(doc);
  assert.ok(refs > 50, `${refs} references, all resolved`);
});

function respond(key: string) {
  return fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-test", input: "openapi test", max_output_tokens: 32 }),
  });
}

Deno.test("real answers fit the documented schemas for their status", async () => {
  const created = {
    account: "oa-team",
    credit_usd: "5",
    name: "ci <runner>",
    metadata: { team: "platform", ticket: "OPS-1" },
    budgets: [{ usd: "20", period: "month" }, { usd: "2.5", period: "day" }],
    models: ["gpt-test", "claude-*"],
    deny_models: ["claude-opus-*"],
    expires_in: "30d",
    tpm: 100_000,
    max_concurrent: 4,
    ips: ["127.0.0.1/32", "::1"],
    rpm: 100,
    strict: true,
  };
  validBody("POST", "/admin/api/keys", created);
  const made = await call("POST", "/admin/api/keys", created);
  assert.equal(made.status, 201);
  conforms("POST", "/admin/api/keys", made);
  const id = made.json.id;
  const res = await respond(made.json.key);
  assert.equal(res.status, 200);
  await res.text();

  const key = `/admin/api/keys/${id}`;
  const read = await call("GET", key);
  conforms("GET", "/admin/api/keys/{id}", read);
  assert.equal(read.json.strict, true);
  assert.equal(read.json.budget_states.length, 2);
  assert.ok(read.json.budget_states[0].spent_nanousd > 0, "the call is in the key's budget");

  const change = {
    disabled: true,
    name: null,
    budgets: [{ usd: "10", period: "week" }],
    tpm: 0,
    strict: false,
  };
  validBody("PATCH", "/admin/api/keys/{id}", change);
  const patched = await call("PATCH", key, change);
  assert.equal(patched.status, 200);
  conforms("PATCH", "/admin/api/keys/{id}", patched);
  assert.equal(patched.json.status, "disabled");
  assert.equal(patched.json.tpm, null);
  assert.equal(patched.json.strict, false);

  validBody("POST", "/admin/api/keys/{id}/rotate", { grace_seconds: 60 });
  const rotated = await call("POST", `${key}/rotate`, { grace_seconds: 60 });
  assert.equal(rotated.status, 200);
  conforms("POST", "/admin/api/keys/{id}/rotate", rotated);
  assert.notEqual(rotated.json.previous_valid_until, null);
  conforms("GET", "/admin/api/keys/{id}", await call("GET", key));

  const limits = {
    budgets: [{ usd: "50", period: "month" }],
    models: ["gpt-*"],
    deny_models: null,
  };
  validBody("PATCH", "/admin/api/accounts/{name}", limits);
  const account = await call("PATCH", "/admin/api/accounts/oa-team", limits);
  assert.equal(account.status, 200);
  conforms("PATCH", "/admin/api/accounts/{name}", account);
  assert.equal(account.json.budget_states[0].owner, "account");

  const page = await call("GET", "/admin/api/ledger?account=oa-team&limit=1");
  conforms("GET", "/admin/api/ledger", page);
  assert.equal(page.json.data[0].kind, "charge");
  const last = await call("GET", `/admin/api/ledger?account=oa-team&before=${page.json.next}`);
  conforms("GET", "/admin/api/ledger", last);
  assert.equal(last.json.data[0].kind, "credit");

  conforms("GET", "/admin/api/keys", await call("GET", "/admin/api/keys"));
  conforms("GET", "/admin/api/accounts", await call("GET", "/admin/api/accounts"));
  const fresh = await call("POST", "/admin/api/accounts", { name: "oa-other" });
  assert.equal(fresh.status, 201);
  conforms("POST", "/admin/api/accounts", fresh);
  conforms("POST", "/admin/api/accounts", await call("POST", "/admin/api/accounts", fresh.json));
  const credited = await call("POST", "/admin/api/accounts/oa-other/credit", { usd: "1.25" });
  conforms("POST", "/admin/api/accounts/{name}/credit", credited);
  const usage = await call("GET", "/admin/api/accounts/oa-team/usage?days=7");
  conforms("GET", "/admin/api/accounts/{name}/usage", usage);
  assert.ok(Object.keys(usage.json.by_unit).length > 0 && usage.json.by_day.length === 1);
  assert.ok(usage.json.cache.by_key[id].requests > 0, "the prompt cache's figures, by key");
  conforms("GET", "/admin/api/usage", await call("GET", "/admin/api/usage?days=2"));
  const revoked = await call("DELETE", key);
  conforms("DELETE", "/admin/api/keys/{id}", revoked);
  conforms("GET", "/admin/api/keys/{id}", await call("GET", key));
  conforms(
    "GET",
    "/admin/api/openapi.json",
    await call("GET", "/admin/api/openapi.json", undefined, null),
  );

  // Alerts of each type: a budget a call no longer fits in, the low balance, the expiring key.
  const tight = await call("POST", "/admin/api/keys", {
    account: "oa-team",
    budgets: [{ usd: "0.000001", period: "month" }],
    expires_in: "30d",
  });
  const refused = await respond(tight.json.key);
  assert.equal(refused.status, 429);
  await refused.text();
  let alerts: Answer = await call("GET", "/admin/api/alerts");
  await eventually(async () => {
    alerts = await call("GET", "/admin/api/alerts?account=oa-team");
    const types = new Set(alerts.json.data.map((a: Json) => a.type));
    return types.has("budget.threshold") && types.has("balance.low") &&
      types.has("key.expiring");
  });
  conforms("GET", "/admin/api/alerts", alerts);
  assert.ok(alerts.json.data.every((a: Json) => a.status === "unsent"));
  const first = await call("GET", "/admin/api/alerts?limit=1");
  conforms("GET", "/admin/api/alerts", first);
  assert.match(first.json.next, /^alert_\d+$/);
  conforms(
    "GET",
    "/admin/api/alerts",
    await call("GET", `/admin/api/alerts?before=${first.json.next}`),
  );
  conforms("GET", "/admin/api/alerts", await call("GET", "/admin/api/alerts?before=x"));
  conforms("GET", "/admin/api/alerts", await call("GET", "/admin/api/alerts?account=nobody-oa"));

  // Errors, in the documented envelope.
  conforms("GET", "/admin/api/keys/{id}", await call("GET", "/admin/api/keys/key_aaaaaaaaaaaa"));
  conforms("GET", "/admin/api/keys", await call("GET", "/admin/api/keys", undefined, null));
  conforms("GET", "/admin/api/ledger", await call("GET", "/admin/api/ledger?limit=0"));
  conforms("GET", "/admin/api/ledger", await call("GET", "/admin/api/ledger?account=nobody-oa"));
  conforms(
    "POST",
    "/admin/api/keys",
    await call("POST", "/admin/api/keys", {}, ADMIN, "text/plain"),
  );
  conforms(
    "POST",
    "/admin/api/keys",
    await call("POST", "/admin/api/keys", {
      account: "oa-x",
      budgets: [{ usd: "1", period: "x" }],
    }),
  );
});

/** Values of every JSON type, some of which each property's schema refuses. */
const WRONG: unknown[] = [true, 12.5, -3, "text", [], {}, [1], { a: 1 }, [{ usd: 1 }]];

Deno.test("every body the document says is invalid is answered 400 naming the field, and changes nothing", async () => {
  const made = await call("POST", "/admin/api/keys", { account: "oa-bodies", name: "kept" });
  const id = made.json.id;
  const bases: [string, string, string, Record<string, unknown>][] = [
    ["POST", "/admin/api/keys", "/admin/api/keys", { account: "oa-refused" }],
    ["PATCH", "/admin/api/keys/{id}", `/admin/api/keys/${id}`, {}],
    ["POST", "/admin/api/keys/{id}/rotate", `/admin/api/keys/${id}/rotate`, {}],
    ["POST", "/admin/api/accounts", "/admin/api/accounts", { name: "oa-refused" }],
    ["PATCH", "/admin/api/accounts/{name}", "/admin/api/accounts/oa-bodies", {}],
    ["POST", "/admin/api/accounts/{name}/credit", "/admin/api/accounts/oa-bodies/credit", {
      usd: "1",
    }],
  ];
  let tried = 0;
  for (const [method, template, path, base] of bases) {
    const schema = requestSchema(method, template);
    validBody(method, template, base);
    const bodies: [Record<string, unknown>, string][] = [[
      { ...base, not_a_field: 1 },
      "not_a_field",
    ]];
    for (const name of schema.required ?? []) {
      const { [name]: _, ...without } = base;
      bodies.push([without, name]);
    }
    for (const name of Object.keys(schema.properties)) {
      for (const value of WRONG) bodies.push([{ ...base, [name]: value }, name]);
    }
    for (const [body, field] of bodies) {
      if (validateJson(doc, schema, body).length === 0) continue; // the document allows it
      const answer = await call(method, path, body);
      const where = `${method} ${path} ${JSON.stringify(body)}`;
      assert.equal(answer.status, 400, where);
      assert.ok(
        String(answer.json.error.param).startsWith(field),
        `${where}: ${answer.json.error.param}`,
      );
      conforms(method, template, answer);
      tried++;
    }
  }
  assert.ok(tried > 100, `${tried} invalid bodies`);
  // Nothing was made or changed by them.
  assert.deepEqual((await call("GET", "/admin/api/keys?account=oa-refused")).json.data, []);
  const accounts = (await call("GET", "/admin/api/accounts")).json.data as { name: string }[];
  assert.ok(!accounts.some((a) => a.name === "oa-refused"));
  const key = await call("GET", `/admin/api/keys/${id}`);
  assert.equal(key.json.name, "kept");
  assert.equal(key.json.prefix, made.json.key.slice(0, 10), "not rotated");
  assert.equal(key.json.status, "active");
});
