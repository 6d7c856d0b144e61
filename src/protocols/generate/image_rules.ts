/**
 * Spec §4.5's image-output rules, checked against the model's rules from the catalog (data, not
 * code per model). Pure: returns the first violation as a field path and message, or null.
 */
import type { ImageRules } from "../../catalog/catalog.ts";
import { textOf } from "../../http/json.ts";

type Json = Record<string, unknown>;

/** A rule of an image model a request breaks: the field at fault and why. */
export interface Violation {
  field: string;
  message: string;
}

const MODALITY_SETS = [["IMAGE", "TEXT"], ["IMAGE"]];

/** Checks a generateContent body against an image model's rules. */
export function checkImageRules(body: Json, rules: ImageRules): Violation | null {
  const config = (body.generationConfig ?? {}) as Json;
  const modalities = config.responseModalities;
  if (modalities !== undefined) {
    const sorted = Array.isArray(modalities) ? [...modalities].map(textOf).sort() : null;
    if (!sorted || !MODALITY_SETS.some((set) => set.join() === sorted.join())) {
      return {
        field: "generationConfig.responseModalities",
        message: 'must be ["TEXT","IMAGE"] or ["IMAGE"] for an image model',
      };
    }
  }
  const imageConfig = (config.imageConfig ?? {}) as Json;
  if (
    imageConfig.aspectRatio !== undefined &&
    !rules.aspectRatios.includes(textOf(imageConfig.aspectRatio))
  ) {
    return {
      field: "generationConfig.imageConfig.aspectRatio",
      message: `must be one of ${rules.aspectRatios.join(", ")}`,
    };
  }
  if (imageConfig.imageSize !== undefined) {
    if (!rules.sizes.length) {
      return {
        field: "generationConfig.imageConfig.imageSize",
        message: "is not supported by this model",
      };
    }
    if (!rules.sizes.includes(textOf(imageConfig.imageSize))) {
      return {
        field: "generationConfig.imageConfig.imageSize",
        message: `must be one of ${rules.sizes.join(", ")} for this model`,
      };
    }
  }
  const contents = Array.isArray(body.contents) ? body.contents as Json[] : [];
  let images = 0;
  for (const content of contents) {
    for (const part of (Array.isArray(content.parts) ? content.parts : []) as Json[]) {
      const mime = (part.inlineData as Json | undefined)?.mimeType;
      if (typeof mime === "string" && mime.startsWith("image/")) images++;
    }
  }
  if (images > rules.maxReferenceImages) {
    return {
      field: "contents",
      message:
        `carries ${images} reference images; at most ${rules.maxReferenceImages} are allowed per request`,
    };
  }
  return null;
}
