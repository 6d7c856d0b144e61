/** The routing table's matcher: the same matches and parameters as `URLPattern` for every path. */
import assert from "node:assert/strict";
import { compilePath, Router } from "../../src/router.ts";
import { routes } from "../../src/routes.ts";

const SAMPLES = [
  "/v1beta/models/gemini-2.5-flash:generateContent",
  "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
  "/v1/models/claude-sonnet-4-5:countTokens",
  "/v1beta/models/a:b:generateContent",
  "/v1beta/models/:generateContent",
  "/v1beta/models/x%2Fy:embedContent",
  "/v1beta/models/x/y:embedContent",
  "/v1beta/models/m%C3%A4:batchEmbedContents",
  "/v1beta/models/gemini-2.5-flash",
  "/v1beta/models/gemini-2.5-flash/",
  "/v1beta/models/",
  "/v1/models/gpt-5.4",
  "/v1/models/gpt-5.4:generateContent",
  "/v1/videos/video_123",
  "/v1/videos/video_123/content",
  "/v1/videos/",
  "/v1/responses",
  "/v1beta/models/gemini:GENERATECONTENT",
];

Deno.test("route patterns match exactly what URLPattern matches, with the same parameters", () => {
  let compared = 0;
  for (const { path } of routes) {
    const compiled = compilePath(path);
    if (!compiled) continue;
    const reference = new URLPattern({ pathname: path });
    for (const sample of SAMPLES) {
      const expected = reference.exec({ pathname: sample })?.pathname.groups ?? null;
      const got: Record<string, string> | undefined = compiled.exec(sample)?.groups;
      assert.deepEqual(got ? { ...got } : null, expected, `${path} on ${sample}`);
      compared++;
    }
  }
  assert.ok(compared > 100);
});

Deno.test("route paths: static ones stay strings, unsupported syntax is refused", () => {
  assert.equal(compilePath("/v1/messages/count_tokens"), null);
  assert.equal(compilePath("/a\\:b"), null);
  assert.throws(() => compilePath("/v1/videos/:id(\\d+)"), /not supported/);
  assert.throws(() => compilePath("/v1/*"), /not supported/);
  assert.throws(() => compilePath("/v1/:"), /parameter name/);
});

Deno.test("router: 404 without a path, 405 with the allowed methods, HEAD as GET", () => {
  const router = new Router(routes);
  const gemini = router.match("POST", "/v1beta/models/g:streamGenerateContent");
  assert.equal(gemini.route?.path, "/v1beta/models/:model\\:streamGenerateContent");
  assert.deepEqual(gemini.route && gemini.params, { model: "g" });
  assert.deepEqual(router.match("GET", "/nowhere"), { route: undefined, allow: [] });
  const wrong = router.match("DELETE", "/v1/models/x");
  assert.deepEqual(wrong.route, undefined);
  assert.deepEqual(!wrong.route && wrong.allow, ["GET"]);
  assert.equal(router.match("HEAD", "/v1/models/x").route?.method, "GET");
  assert.equal(
    router.match("POST", "/v1/messages/count_tokens").route?.path,
    "/v1/messages/count_tokens",
  );
});
