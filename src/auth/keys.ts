import { sha256 } from "../sha256.ts";

/**
 * API key format, hashing and constant-time comparison. A key looks like
 * `sy-<id>-<secret>`: the id part names the stored row (`key_<id>`), the whole key is hashed with
 * SHA-256 and only the hash is stored.
 */

const ID_ALPHABET = "abcdefghijkmnopqrstuvwxyz23456789";

/** A freshly minted key: the secret is shown once, the rest is stored. */
export interface MintedKey {
  id: string;
  secret: string;
  hash: Uint8Array;
  /** The first characters of the secret, safe to show in listings. */
  prefix: string;
}

/** Creates a new random key. */
export function mintKey(): MintedKey {
  const idBytes = crypto.getRandomValues(new Uint8Array(12));
  const idPart = Array.from(idBytes, (b) => ID_ALPHABET[b % ID_ALPHABET.length]).join("");
  const secretBytes = crypto.getRandomValues(new Uint8Array(32));
  const secret = `sy-${idPart}-${base64url(secretBytes)}`;
  return { id: `key_${idPart}`, secret, hash: hashKey(secret), prefix: secret.slice(0, 10) };
}

/** A new secret for an existing key id (rotation); undefined when `id` is not of our format. */
export function mintKeyFor(id: string): MintedKey | undefined {
  const match = /^key_([a-z2-9]{12})$/.exec(id);
  if (!match) return undefined;
  const secret = `sy-${match[1]}-${base64url(crypto.getRandomValues(new Uint8Array(32)))}`;
  return { id, secret, hash: hashKey(secret), prefix: secret.slice(0, 10) };
}

/** The stored key id a presented secret claims, or undefined when it is not of our format. */
export function keyIdOf(secret: string): string | undefined {
  const match = /^sy-([a-z2-9]{12})-[A-Za-z0-9_-]{43}$/.exec(secret);
  return match ? `key_${match[1]}` : undefined;
}

/**
 * SHA-256 of the key text. Keys carry 256 bits of randomness, so a fast hash is enough; `sha256`
 * is synchronous, and far faster than `crypto.subtle.digest` on the hot path.
 */
export function hashKey(secret: string): Uint8Array {
  return sha256(secret);
}

/**
 * Compares two byte strings in time that depends only on their length: every byte is looked at,
 * the differences OR-ed together, no early exit (node:crypto's, with its Buffer checks, cost about
 * 0.5 µs a request more).
 */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i] ^ b[i];
  return difference === 0;
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(
    /=+$/,
    "",
  );
}
