/** Byte helpers shared by the readers of bodies and streams. */

/** Joins chunks into one array (one copy). */
export function concatBytes(parts: Uint8Array[], length?: number): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(length ?? parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
