/**
 * The bound on a request's headers (`server.maxHeaderBytes`): past it the request is a 431 in the
 * route's protocol. Deno's HTTP server refuses a request head over 64 KiB (or with more than 128
 * fields) itself, with a bare 400, before the gateway sees it; this bound is the gateway's own,
 * below that.
 */
import { GatewayError } from "./errors.ts";

/**
 * The bytes of `headers` as a client sent them, about: `name: value\r\n` per field (header values
 * are byte strings, so a character is a byte; repeated fields arrive joined, counted once).
 */
export function headerBytes(headers: Headers): number {
  let total = 0;
  // `forEach` walks the same fields as `for…of` without an iterator and an array per field (about
  // 2 µs less a request).
  headers.forEach((value, name) => {
    total += name.length + value.length + 4;
  });
  return total;
}

/** Throws a 431 when `headers` total more than `max` bytes. */
export function checkHeaderBytes(headers: Headers, max: number): void {
  const total = headerBytes(headers);
  if (total > max) {
    throw new GatewayError(
      431,
      `The request's headers total ${total} bytes; at most ${max} are accepted.`,
    );
  }
}
