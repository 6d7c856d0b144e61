/** File parts as data URLs and back (pure): the inline form several protocols give files in. */
import type { FilePart } from "./ir.ts";

/** A data URL split into its media type and base64 payload, or null. */
export function splitDataUrl(url: string): { mediaType: string; base64: string } | null {
  const match = /^data:([^;,]+)?(?:;[^,]*)?;base64,(.*)$/s.exec(url);
  return match ? { mediaType: match[1] ?? "application/octet-stream", base64: match[2] } : null;
}

/** A file part as a URL: its own, or a data URL of its base64 payload (`splitDataUrl`'s inverse). */
export function dataUrl(part: FilePart): string {
  return "base64" in part.data
    ? `data:${part.mediaType};base64,${part.data.base64}`
    : part.data.url;
}
