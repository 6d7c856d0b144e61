/** A stream's bytes split at its events (after each blank line), as upstreams send them. */
export function perEvent(bytes: Uint8Array): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  let start = 0;
  for (let i = 1; i < bytes.length; i++) {
    if (bytes[i] === 10 && bytes[i - 1] === 10) {
      chunks.push(bytes.subarray(start, i + 1));
      start = i + 1;
    }
  }
  if (start < bytes.length) chunks.push(bytes.subarray(start));
  return chunks;
}
