/**
 * Media types by file extension, both ways (pure): what an `input_file`'s name or URL suggests, and
 * the name a file sent inline must have (Responses requires one).
 */

/** Media types by file extension. */
const EXTENSIONS: Record<string, string> = {
  pdf: "application/pdf",
  txt: "text/plain",
  md: "text/markdown",
  csv: "text/csv",
  json: "application/json",
  html: "text/html",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
};

/** The media type a file name or URL suggests, else `fallback`. */
export function mediaTypeOf(name: unknown, fallback: string): string {
  if (typeof name !== "string") return fallback;
  const ext = /\.([a-z0-9]+)(?:[?#].*)?$/i.exec(name)?.[1]?.toLowerCase();
  return (ext && EXTENSIONS[ext]) || fallback;
}

/** A file name for inline file data of `mediaType`. */
export function defaultFilename(mediaType: string): string {
  const ext = Object.keys(EXTENSIONS).find((e) => EXTENSIONS[e] === mediaType);
  return ext ? `file.${ext}` : "file";
}
