import assert from "node:assert/strict";
import { errorBody, formatForPath } from "../../../src/http/errors.ts";

Deno.test("error bodies follow each protocol's envelope", () => {
  assert.deepEqual(errorBody("openai", 400, "bad", { param: "input" }), {
    error: { message: "bad", type: "invalid_request_error", param: "input", code: null },
  });
  assert.deepEqual(errorBody("openai", 402, "poor"), {
    error: {
      message: "poor",
      type: "insufficient_quota",
      param: null,
      code: "insufficient_balance",
    },
  });
  assert.deepEqual(errorBody("anthropic", 429, "slow down", {}, "req_1"), {
    type: "error",
    error: { type: "rate_limit_error", message: "slow down" },
    request_id: "req_1",
  });
  assert.deepEqual(errorBody("anthropic", 413, "big"), {
    type: "error",
    error: { type: "request_too_large", message: "big" },
  });
  assert.deepEqual(errorBody("google", 401, "who"), {
    error: { code: 401, message: "who", status: "UNAUTHENTICATED" },
  });
  assert.deepEqual(errorBody("google", 500, "oops"), {
    error: { code: 500, message: "oops", status: "INTERNAL" },
  });
});

Deno.test("unmatched paths pick the error format of their protocol family", () => {
  assert.equal(formatForPath("/v1beta/models/x:foo"), "google");
  assert.equal(formatForPath("/v1/messages"), "anthropic");
  assert.equal(formatForPath("/v1/messages/batches"), "anthropic");
  assert.equal(formatForPath("/v1/messagesx"), "openai");
  assert.equal(formatForPath("/"), "openai");
});
