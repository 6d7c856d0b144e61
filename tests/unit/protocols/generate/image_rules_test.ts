import assert from "node:assert/strict";
import { buildConfig } from "../../../../src/config/load.ts";
import { checkImageRules } from "../../../../src/protocols/generate/image_rules.ts";

const catalog = buildConfig({}, (name) => name === "GEMINI_API_KEY" ? "g" : undefined).catalog;
function rules(model: string) {
  const r = catalog.resolve(model);
  assert.ok(r.ok && r.model.image, model);
  return r.model.image;
}
const body = (generationConfig: unknown, images = 0) => ({
  contents: [{
    role: "user",
    parts: [
      { text: "edit" },
      ...Array.from(
        { length: images },
        () => ({ inlineData: { mimeType: "image/png", data: "x" } }),
      ),
    ],
  }],
  generationConfig,
});

Deno.test("image sizes per model follow spec §4.5, from the catalog", () => {
  const size = (model: string, imageSize: string) =>
    checkImageRules(body({ imageConfig: { imageSize } }), rules(model))?.message ?? "ok";
  assert.equal(size("gemini-2.5-flash-image", "1K"), "is not supported by this model");
  for (const s of ["1K", "2K", "4K"]) assert.equal(size("gemini-3-pro-image-preview", s), "ok");
  assert.match(size("gemini-3-pro-image-preview", "0.5K"), /must be one of 1K, 2K, 4K/);
  for (const s of ["0.5K", "1K", "2K", "4K"]) {
    assert.equal(size("gemini-3.1-flash-image-preview", s), "ok");
  }
  assert.equal(size("gemini-3.1-flash-lite-image", "1K"), "ok");
  assert.match(size("gemini-3.1-flash-lite-image", "2K"), /must be one of 1K/);
});

Deno.test("modalities, aspect ratios and the reference-image limit", () => {
  const r = rules("gemini-3-pro-image-preview");
  assert.equal(checkImageRules(body({ responseModalities: ["TEXT", "IMAGE"] }), r), null);
  assert.equal(checkImageRules(body({ responseModalities: ["IMAGE"] }), r), null);
  assert.equal(checkImageRules(body({ responseModalities: ["IMAGE", "TEXT"] }), r), null);
  assert.deepEqual(checkImageRules(body({ responseModalities: ["TEXT"] }), r), {
    field: "generationConfig.responseModalities",
    message: 'must be ["TEXT","IMAGE"] or ["IMAGE"] for an image model',
  });
  for (const ratio of ["1:1", "3:2", "2:3", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9"]) {
    assert.equal(checkImageRules(body({ imageConfig: { aspectRatio: ratio } }), r), null);
  }
  assert.equal(
    checkImageRules(body({ imageConfig: { aspectRatio: "9:19.5" } }), r)?.field,
    "generationConfig.imageConfig.aspectRatio",
  );
  assert.equal(checkImageRules(body({}, 14), r), null);
  assert.deepEqual(checkImageRules(body({}, 15), r), {
    field: "contents",
    message: "carries 15 reference images; at most 14 are allowed per request",
  });
});
