/**
 * Address allowlists (pure): IPv4 and IPv6 addresses and CIDR ranges (`10.0.0.0/8`,
 * `2001:db8::/32`, `192.0.2.7`). An IPv4 address written as IPv6 (`::ffff:192.0.2.7`, as a
 * dual-stack socket reports it) matches its IPv4 entries.
 */

/** An address as 16 bytes (IPv4 mapped into IPv6), or null when it is not one. */
export function addressBytes(text: string): Uint8Array | null {
  const v4 = parseV4(text);
  if (v4) return mapped(v4);
  return parseV6(text);
}

function parseV4(text: string): Uint8Array | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    if (!/^\d{1,3}$/.test(parts[i])) return null;
    const n = Number(parts[i]);
    if (n > 255) return null;
    out[i] = n;
  }
  return out;
}

function mapped(v4: Uint8Array): Uint8Array {
  const out = new Uint8Array(16);
  out[10] = 0xff;
  out[11] = 0xff;
  out.set(v4, 12);
  return out;
}

function parseV6(text: string): Uint8Array | null {
  let body = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const zone = body.indexOf("%");
  if (zone >= 0) body = body.slice(0, zone);
  if (!body.includes(":")) return null;
  // A trailing dotted IPv4 part (`::ffff:1.2.3.4`) stands for the last two groups.
  let tail: Uint8Array | null = null;
  const lastColon = body.lastIndexOf(":");
  if (body.slice(lastColon + 1).includes(".")) {
    tail = parseV4(body.slice(lastColon + 1));
    if (!tail) return null;
    body = body.slice(0, lastColon + 1) + "0:0";
  }
  const halves = body.split("::");
  if (halves.length > 2) return null;
  const groups = (part: string) => part === "" ? [] : part.split(":");
  const head = groups(halves[0]);
  const rest = halves.length === 2 ? groups(halves[1]) : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? head.length !== 8 : missing < 1) return null;
  const all = [...head, ...Array(halves.length === 2 ? missing : 0).fill("0"), ...rest];
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(all[i])) return null;
    const n = parseInt(all[i], 16);
    out[2 * i] = n >> 8;
    out[2 * i + 1] = n & 0xff;
  }
  if (tail) out.set(tail, 12);
  return out;
}

/** A parsed entry: its network bytes and prefix length (of 128). */
interface Range {
  bytes: Uint8Array;
  bits: number;
}

/** An allowlist entry parsed, or null when it is not an address or a CIDR range. */
export function parseRange(entry: string): Range | null {
  const slash = entry.indexOf("/");
  const address = slash < 0 ? entry : entry.slice(0, slash);
  const v4 = parseV4(address);
  const bytes = v4 ? mapped(v4) : parseV6(address);
  if (!bytes) return null;
  const max = v4 ? 32 : 128;
  let bits = max;
  if (slash >= 0) {
    const text = entry.slice(slash + 1);
    if (!/^\d{1,3}$/.test(text) || Number(text) > max) return null;
    bits = Number(text);
  }
  return { bytes, bits: v4 ? bits + 96 : bits };
}

function inRange(address: Uint8Array, range: Range): boolean {
  const whole = range.bits >> 3;
  for (let i = 0; i < whole; i++) if (address[i] !== range.bytes[i]) return false;
  const rest = range.bits & 7;
  if (!rest) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (address[whole] & mask) === (range.bytes[whole] & mask);
}

const parsed = new Map<string, Range | null>();

/** Whether `address` is in one of `entries` (an entry that cannot be read matches nothing). */
export function addressAllowed(entries: readonly string[], address: string | undefined): boolean {
  const bytes = address ? addressBytes(address) : null;
  if (!bytes) return false;
  for (const entry of entries) {
    let range = parsed.get(entry);
    if (range === undefined) {
      range = parseRange(entry);
      if (parsed.size >= 4096) parsed.clear();
      parsed.set(entry, range);
    }
    if (range && inRange(bytes, range)) return true;
  }
  return false;
}
