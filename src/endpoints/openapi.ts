/**
 * `GET /admin/api/openapi.json`: the admin API as an OpenAPI 3.1 document. Request bodies are
 * the JSON Schema of the valibot schemas `admin.ts` validates with (`admin_bodies.ts`, converted
 * by `http/schema_doc.ts`), answers the shapes of `openapi_shapes.ts`. `tests/openapi_test.ts`
 * holds it to the routing table (every admin route, nothing else) and to real answers.
 *
 * The document holds no data, so it is served without the admin token (tools can fetch it); like
 * every admin route it is 404 when no admin token is configured.
 */
import type * as v from "valibot";
import type { Handler } from "../context.ts";
import { requireAdminEnabled } from "../auth/admin.ts";
import { type JsonSchema, jsonSchemaOf } from "../http/schema_doc.ts";
import {
  ACCOUNT_NAME_PATTERN,
  AccountChange,
  Credit,
  DEFAULT_DAYS,
  DEFAULT_PAGE,
  KEY_ID_PATTERN,
  KeyChange,
  MAX_DAYS,
  MAX_PAGE,
  NewAccount,
  NewKey,
  Rotation,
} from "./admin_bodies.ts";
import { SCHEMAS } from "./openapi_shapes.ts";

/** Where the document is served. */
export const OPENAPI_PATH = "/admin/api/openapi.json";

type Method = "get" | "post" | "patch" | "delete";

/** One operation of the admin API, as the document tells it. */
interface Operation {
  method: Method;
  /** The path in OpenAPI's template form (`{id}`). */
  path: string;
  id: string;
  tag: string;
  summary: string;
  description?: string;
  query?: string[];
  body?: v.GenericSchema;
  /** Status and schema name of the answers that succeed. */
  ok: [number, string, string][];
  /** The secret is in the answer: it carries `cache-control: no-store`. */
  secret?: boolean;
  /** 404 for a key or account the path names that does not exist. */
  named?: boolean;
  /** Needs no token (the document itself). */
  open?: boolean;
}

const OPERATIONS: Operation[] = [
  {
    method: "get",
    path: "/admin/api/keys",
    id: "listKeys",
    tag: "keys",
    summary: "List keys (never a secret)",
    query: ["account"],
    ok: [[200, "KeyList", "Every key, oldest first."]],
  },
  {
    method: "post",
    path: "/admin/api/keys",
    id: "createKey",
    tag: "keys",
    summary: "Create a key with its settings (the account too, when new)",
    description: "The secret is in this answer and nowhere else.",
    body: NewKey,
    secret: true,
    ok: [[201, "CreatedKey", "The new key, with its secret."]],
  },
  {
    method: "get",
    path: "/admin/api/keys/{id}",
    id: "getKey",
    tag: "keys",
    summary: "One key, with where its budgets and its account's stand",
    named: true,
    ok: [[200, "KeyDetail", "The key."]],
  },
  {
    method: "patch",
    path: "/admin/api/keys/{id}",
    id: "updateKey",
    tag: "keys",
    summary: "Change a key's settings; disable or enable it",
    description: "What the body leaves out stays; null (or an empty list) clears a setting.",
    body: KeyChange,
    named: true,
    ok: [[200, "KeyDetail", "The key as changed."]],
  },
  {
    method: "delete",
    path: "/admin/api/keys/{id}",
    id: "revokeKey",
    tag: "keys",
    summary: "Revoke a key (refused from its next request on)",
    named: true,
    ok: [[200, "RevokedKey", "The key is revoked."]],
  },
  {
    method: "post",
    path: "/admin/api/keys/{id}/rotate",
    id: "rotateKey",
    tag: "keys",
    summary: "A new secret for the same key",
    description: "The old secret keeps working for `grace_seconds`; the new one is shown once.",
    body: Rotation,
    secret: true,
    named: true,
    ok: [[200, "RotatedKey", "The new secret."]],
  },
  {
    method: "get",
    path: "/admin/api/accounts",
    id: "listAccounts",
    tag: "accounts",
    summary: "List accounts with balance, spend and held funds",
    ok: [[200, "AccountList", "Every account."]],
  },
  {
    method: "post",
    path: "/admin/api/accounts",
    id: "createAccount",
    tag: "accounts",
    summary: "Create an account",
    body: NewAccount,
    ok: [
      [201, "Account", "The account, created."],
      [200, "Account", "The account, which existed already."],
    ],
  },
  {
    method: "patch",
    path: "/admin/api/accounts/{name}",
    id: "updateAccount",
    tag: "accounts",
    summary: "Set an account's budgets and model lists",
    description: "What the body leaves out stays; null (or an empty list) clears a setting.",
    body: AccountChange,
    named: true,
    ok: [[200, "AccountDetail", "The account as changed."]],
  },
  {
    method: "post",
    path: "/admin/api/accounts/{name}/credit",
    id: "creditAccount",
    tag: "accounts",
    summary: "Add (negative: remove) balance, with a ledger entry",
    body: Credit,
    named: true,
    ok: [[200, "Account", "The account after the credit."]],
  },
  {
    method: "get",
    path: "/admin/api/accounts/{name}/usage",
    id: "getAccountUsage",
    tag: "usage",
    summary:
      "An account's spend by UTC day, by unit and by model; its prompt cache's figures by model, day and key",
    query: ["days"],
    named: true,
    ok: [[200, "AccountUsage", "The account's usage."]],
  },
  {
    method: "get",
    path: "/admin/api/ledger",
    id: "listLedger",
    tag: "ledger",
    summary: "Ledger entries, newest first, a page at a time",
    query: ["account", "limit", "before"],
    named: true,
    ok: [[200, "LedgerPage", "A page of entries."]],
  },
  {
    method: "get",
    path: "/admin/api/alerts",
    id: "listAlerts",
    tag: "alerts",
    summary: "Alerts (budgets, low balances, expiring keys), newest first, a page at a time",
    query: ["account", "limit", "alertBefore"],
    named: true,
    ok: [[200, "AlertPage", "A page of alerts, each with its delivery state."]],
  },
  {
    method: "get",
    path: "/admin/api/usage",
    id: "getUsage",
    tag: "usage",
    summary:
      "Every account's settled spend by UTC day (days without spend left out); the prompt cache's figures by model and day",
    query: ["days"],
    ok: [[200, "TotalUsage", "The window's spend."]],
  },
  {
    method: "get",
    path: OPENAPI_PATH,
    id: "getOpenApi",
    tag: "meta",
    summary: "This document (no token needed: it holds no data)",
    open: true,
    ok: [[200, "OpenApiDocument", "The OpenAPI 3.1 document of the admin API."]],
  },
];

const PATH_PARAMETERS: Record<string, object> = {
  id: {
    name: "id",
    in: "path",
    required: true,
    description: "The key's id.",
    schema: { type: "string", pattern: KEY_ID_PATTERN.source },
  },
  name: {
    name: "name",
    in: "path",
    required: true,
    description: "The account's name.",
    schema: { type: "string", pattern: ACCOUNT_NAME_PATTERN.source },
  },
};

const QUERY_PARAMETERS: Record<string, object> = {
  account: {
    name: "account",
    in: "query",
    description: "Only this account's (404 on the ledger when there is none).",
    schema: { type: "string", pattern: ACCOUNT_NAME_PATTERN.source },
  },
  limit: {
    name: "limit",
    in: "query",
    description: "Entries per page.",
    schema: { type: "integer", minimum: 1, maximum: MAX_PAGE, default: DEFAULT_PAGE },
  },
  before: {
    name: "before",
    in: "query",
    description: "Entries before this id: the previous page's `next`.",
    schema: { type: "integer", minimum: 1 },
  },
  alertBefore: {
    name: "before",
    in: "query",
    description: "Alerts before this one: the previous page's `next`.",
    schema: { type: "string", pattern: "^(alert_)?\\d{1,15}$" },
  },
  days: {
    name: "days",
    in: "query",
    description: "UTC days, today included.",
    schema: { type: "integer", minimum: 1, maximum: MAX_DAYS, default: DEFAULT_DAYS },
  },
};

const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
});

const RESPONSES = {
  BadRequest: errorResponse("The request is invalid; `error.param` names the field at fault."),
  Unauthorized: errorResponse("The admin token is missing or wrong."),
  NotFound: errorResponse(
    "No such key or account — or the admin API is off (no admin token configured).",
  ),
  Disabled: errorResponse("The admin API is off: no admin token is configured."),
  TooLarge: errorResponse("The body is larger than server.maxBodyBytes."),
  UnsupportedMediaType: errorResponse("The body is not sent as application/json."),
};

const responseRef = (name: keyof typeof RESPONSES) => ({
  $ref: `#/components/responses/${name}`,
});

/** The operation's entry in its path item. */
function operationObject(op: Operation): Record<string, unknown> {
  const parameters = [
    ...[...op.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => PATH_PARAMETERS[name]),
    ...(op.query ?? []).map((name) => QUERY_PARAMETERS[name]),
  ];
  const responses: Record<string, unknown> = {};
  for (const [status, schema, description] of op.ok) {
    responses[String(status)] = {
      description,
      ...(op.secret
        ? {
          headers: {
            "cache-control": {
              description: "no-store: the secret is not kept by caches.",
              schema: { type: "string" },
            },
          },
        }
        : {}),
      content: { "application/json": { schema: { $ref: `#/components/schemas/${schema}` } } },
    };
  }
  if (op.body || op.query?.length) responses["400"] = responseRef("BadRequest");
  if (!op.open) responses["401"] = responseRef("Unauthorized");
  responses["404"] = responseRef(op.named ? "NotFound" : "Disabled");
  if (op.body) {
    responses["413"] = responseRef("TooLarge");
    responses["415"] = responseRef("UnsupportedMediaType");
  }
  return {
    operationId: op.id,
    tags: [op.tag],
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(op.body
      ? {
        requestBody: {
          required: true,
          content: { "application/json": { schema: jsonSchemaOf(op.body) } },
        },
      }
      : {}),
    responses,
    ...(op.open ? { security: [] } : {}),
  };
}

/** The document (an OpenAPI 3.1 object). */
export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) {
    (paths[op.path] ??= {})[op.method] = operationObject(op);
  }
  return {
    openapi: "3.1.1",
    info: {
      title: "Switchyard admin API",
      version: "1",
      description: "Keys, accounts, budgets, usage and the ledger of a Switchyard gateway. " +
        "Amounts are exact decimal USD strings beside integer nanoUSD (1 USD = 10^9 nanoUSD).",
    },
    jsonSchemaDialect: "https://spec.openapis.org/oas/3.1/dialect/base",
    // Relative to this document (…/admin/api/openapi.json): the gateway's root, behind any prefix.
    servers: [{ url: "../..", description: "The gateway serving this document." }],
    security: [{ adminToken: [] }],
    tags: [
      { name: "keys", description: "API keys and their limits." },
      { name: "accounts", description: "Accounts: balance, budgets, model lists." },
      {
        name: "usage",
        description:
          "Spend by day, unit and model; what the prompt cache read, wrote, saved and lost.",
      },
      { name: "ledger", description: "Every charge and credit." },
      { name: "alerts", description: "Budget, balance and expiry alerts and their delivery." },
      { name: "meta", description: "This document." },
    ],
    paths,
    components: {
      securitySchemes: {
        adminToken: {
          type: "http",
          scheme: "bearer",
          description: "The admin token (admin.token or SWITCHYARD_ADMIN_TOKEN).",
        },
      },
      schemas: SCHEMAS as Record<string, JsonSchema>,
      responses: RESPONSES,
    },
  };
}

let text: string | undefined;

/** `GET /admin/api/openapi.json`: the document, without a token (404 when the admin API is off). */
export const getOpenApi: Handler = (ctx) => {
  requireAdminEnabled(ctx.services.config);
  text ??= JSON.stringify(openApiDocument());
  return new Response(text, { headers: { "content-type": "application/json" } });
};
