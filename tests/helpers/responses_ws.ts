/**
 * Clients of the Responses API over WebSocket: the official `openai` SDK's socket (its
 * `ResponsesWSBase` — the connection, the events, the errors are the SDK's — over Deno's own
 * WebSocket, as the SDK's browser transport does: its Node transport needs the `ws` package,
 * which the tests do not install), a raw socket that reads a turn's events, a raw upgrade
 * request, to read the handshake's answer when the gateway refuses it, and a WebSocket spoken by
 * hand over TCP, which reads only when asked to (a client that stops reading).
 */
import { type OpenAI, ResponsesWSBase } from "../deps.ts";
import type { Json } from "./http.ts";

// deno-lint-ignore no-explicit-any
type Listener = (...args: any[]) => void;

/** Deno's WebSocket with the listener API the SDK's sockets take (as its browser adapter). */
class DenoSocket {
  readonly #wrapped = new Map<Listener, EventListener>();

  constructor(private readonly ws: WebSocket) {
    ws.binaryType = "arraybuffer";
  }

  get readyState(): number {
    return this.ws.readyState;
  }

  send(data: string | ArrayBufferLike | ArrayBufferView): void {
    this.ws.send(data as string);
  }

  close(code?: number, reason?: string): void {
    this.ws.close(code, reason);
  }

  on(event: string, listener: Listener): void {
    const wrapped: EventListener = (e) => {
      if (event === "message") {
        const data = (e as MessageEvent).data;
        listener(data, typeof data !== "string");
      } else if (event === "close") listener((e as CloseEvent).code, (e as CloseEvent).reason);
      else if (event === "error") {
        listener(new Error((e as ErrorEvent).message || "WebSocket error"));
      } else listener();
    };
    this.#wrapped.set(listener, wrapped);
    this.ws.addEventListener(event, wrapped);
  }

  off(event: string, listener: Listener): void {
    const wrapped = this.#wrapped.get(listener);
    if (wrapped) this.ws.removeEventListener(event, wrapped);
    this.#wrapped.delete(listener);
  }

  once(event: string, listener: Listener): void {
    const once: Listener = (...args) => {
      this.off(event, once);
      listener(...args);
    };
    this.on(event, once);
  }
}

/** The SDK's Responses socket to the client's base URL (`/responses`, authenticated as it is). */
export class ResponsesSocket extends ResponsesWSBase<DenoSocket> {
  constructor(client: OpenAI) {
    super(client);
    this._connectInitial();
  }

  protected _createSocket(url: URL, authHeaders: Record<string, string>): DenoSocket {
    return new DenoSocket(new WebSocket(url, { headers: authHeaders }));
  }
}

/** The events that end a turn. */
const TERMINAL = new Set(["response.completed", "response.failed", "response.incomplete", "error"]);

/** The gateway's WebSocket URL of `/v1/responses`. */
export function socketUrl(gatewayUrl: string): string {
  return `${gatewayUrl.replace(/^http/, "ws")}/v1/responses`;
}

/** A socket driven by hand: events sent as JSON, messages read as they come. */
export class RawSocket {
  readonly #messages: Json[] = [];
  #waiting: (() => void) | undefined;
  readonly closed: Promise<CloseEvent>;

  private constructor(readonly ws: WebSocket) {
    const closed = Promise.withResolvers<CloseEvent>();
    this.closed = closed.promise;
    ws.onmessage = (event) => {
      this.#messages.push(JSON.parse(event.data));
      this.#waiting?.();
    };
    ws.onclose = (event) => {
      closed.resolve(event);
      this.#waiting?.();
    };
  }

  /** Opens a socket to `url` with `headers` (rejects when the handshake is refused). */
  static open(url: string, headers: Record<string, string>): Promise<RawSocket> {
    const ws = new WebSocket(url, { headers });
    const socket = new RawSocket(ws);
    return new Promise((resolve, reject) => {
      ws.onopen = () => resolve(socket);
      socket.closed.then((event) => reject(new Error(`closed before opening (${event.code})`)));
    });
  }

  send(event: Json | string): void {
    this.ws.send(typeof event === "string" ? event : JSON.stringify(event));
  }

  /** The next message (rejects when the socket closes first). */
  async next(): Promise<Json> {
    for (;;) {
      const message = this.#messages.shift();
      if (message) return message;
      if (this.ws.readyState >= WebSocket.CLOSING) throw new Error("the socket closed");
      await new Promise<void>((resolve) => this.#waiting = resolve);
    }
  }

  /** The messages up to and including the next terminal event. */
  async turn(): Promise<Json[]> {
    const events: Json[] = [];
    for (;;) {
      const event = await this.next();
      events.push(event);
      if (TERMINAL.has(event.type)) return events;
    }
  }

  /** Sends `event` and reads its turn. */
  async create(event: Json): Promise<Json[]> {
    this.send({ type: "response.create", ...event });
    return await this.turn();
  }

  close(): void {
    this.ws.close(1000);
  }
}

/** The text a turn's `response.output_text.delta` events carry. */
export function deltas(events: Json[]): string {
  return events.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta).join("");
}

/** A handshake answered with HTTP (a refusal): its status, headers and body. */
export interface Handshake {
  status: number;
  headers: Headers;
  body: string;
}

/**
 * Sends a WebSocket upgrade request over a plain TCP connection and reads the HTTP answer's head
 * (and body, when it is not the upgrade).
 */
export async function rawUpgrade(url: string, headers: Record<string, string>): Promise<Handshake> {
  const conn = await upgradeOver(url, headers);
  try {
    let text = "";
    const decoder = new TextDecoder();
    const buffer = new Uint8Array(16384);
    for (;;) {
      const end = text.indexOf("\r\n\r\n");
      if (end >= 0) {
        const [status, ...fields] = text.slice(0, end).split("\r\n");
        const parsed = new Headers(fields.map((f) => {
          const colon = f.indexOf(":");
          return [f.slice(0, colon).trim(), f.slice(colon + 1).trim()] as [string, string];
        }));
        const code = Number(status.split(" ")[1]);
        const length = Number(parsed.get("content-length") ?? 0);
        if (code === 101 || text.length - end - 4 >= length) {
          return { status: code, headers: parsed, body: text.slice(end + 4, end + 4 + length) };
        }
      }
      const n = await conn.read(buffer);
      if (n === null) throw new Error(`the connection closed after: ${text}`);
      text += decoder.decode(buffer.subarray(0, n), { stream: true });
    }
  } finally {
    conn.close();
  }
}

/** What a `TcpSocket` read: up to the server's close frame, or a message it was told to stop at. */
export interface TcpRead {
  /** The messages' payload bytes, all told. */
  bytes: number;
  /** The text messages. */
  messages: number;
  /** With `until`: the last text message read (the one it stopped at, when it did). */
  last?: string;
  /** The close frame's code and reason, when the read ended there. */
  close?: { code: number; reason: string };
}

/**
 * A WebSocket spoken by hand over a TCP connection: the upgrade, masked text frames out, and
 * nothing read until `read` is called — so the server's messages wait in the kernel's buffers and
 * the server's queue, as they do for a client that stops reading.
 */
export class TcpSocket {
  private constructor(
    private readonly conn: Deno.TcpConn,
    /** Bytes read past the handshake's head. */
    private buffered: Uint8Array,
  ) {}

  /** Upgrades a TCP connection to `url` with `headers` (rejects when the answer is not 101). */
  static async open(url: string, headers: Record<string, string>): Promise<TcpSocket> {
    const conn = await upgradeOver(url, headers);
    let head: Uint8Array = new Uint8Array(0);
    for (;;) {
      const end = indexOfHeadEnd(head);
      if (end >= 0) {
        const status = new TextDecoder().decode(head.subarray(0, end)).split(" ")[1];
        if (status !== "101") {
          conn.close();
          throw new Error(`the upgrade was answered ${status}`);
        }
        return new TcpSocket(conn, head.slice(end + 4));
      }
      const chunk = await readSome(conn);
      if (!chunk) throw new Error("the connection closed during the handshake");
      head = concat(head, chunk);
    }
  }

  /** Sends `event` as one masked text frame. */
  async send(event: Json): Promise<void> {
    const payload = new TextEncoder().encode(JSON.stringify(event));
    const length = payload.length;
    const header = length < 126
      ? [0x81, 0x80 | length]
      : length < 65536
      ? [0x81, 0x80 | 126, length >> 8, length & 0xff]
      : [0x81, 0x80 | 127, 0, 0, 0, 0, ...[24, 16, 8, 0].map((s) => (length >>> s) & 0xff)];
    const mask = crypto.getRandomValues(new Uint8Array(4));
    const masked = payload.map((byte, i) => byte ^ mask[i % 4]);
    await writeAll(this.conn, concat(new Uint8Array([...header, ...mask]), masked));
  }

  /**
   * Reads frames up to the server's close frame, or up to the first text message `until` is true
   * of (rejects when the connection ends first).
   */
  async read(until?: (text: string) => boolean): Promise<TcpRead> {
    const read: TcpRead = { bytes: 0, messages: 0 };
    const decoder = new TextDecoder();
    for (;;) {
      const frame = await this.#frame();
      const opcode = frame.first & 0x0f;
      if (opcode === 0x8) {
        const code = frame.payload.length >= 2 ? (frame.payload[0] << 8) | frame.payload[1] : 1005;
        return { ...read, close: { code, reason: decoder.decode(frame.payload.subarray(2)) } };
      }
      read.bytes += frame.payload.length;
      if (opcode !== 0x1) continue;
      read.messages++;
      if (!until) continue;
      read.last = decoder.decode(frame.payload);
      if (until(read.last)) return read;
    }
  }

  close(): void {
    try {
      this.conn.close();
    } catch { /* already closed */ }
  }

  /** The next frame (the server's are not masked). */
  async #frame(): Promise<{ first: number; payload: Uint8Array }> {
    await this.#fill(2);
    const first = this.buffered[0];
    let length = this.buffered[1] & 0x7f;
    let at = 2;
    if (length === 126) {
      await this.#fill(4);
      length = (this.buffered[2] << 8) | this.buffered[3];
      at = 4;
    } else if (length === 127) {
      await this.#fill(10);
      length = Number(new DataView(this.buffered.buffer, this.buffered.byteOffset).getBigUint64(2));
      at = 10;
    }
    await this.#fill(at + length);
    const payload = this.buffered.subarray(at, at + length);
    this.buffered = this.buffered.subarray(at + length);
    return { first, payload };
  }

  /** Reads until `n` bytes are buffered. */
  async #fill(n: number): Promise<void> {
    while (this.buffered.length < n) {
      const chunk = await readSome(this.conn);
      if (!chunk) throw new Error("the connection closed before the server's close frame");
      this.buffered = concat(this.buffered, chunk);
    }
  }
}

/** Where an HTTP head's blank line begins in `bytes`, or -1. */
function indexOfHeadEnd(bytes: Uint8Array): number {
  for (let i = 0; i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      return i;
    }
  }
  return -1;
}

async function readSome(conn: Deno.TcpConn): Promise<Uint8Array | null> {
  const buffer = new Uint8Array(65536);
  const n = await conn.read(buffer);
  return n === null ? null : buffer.subarray(0, n);
}

/** A TCP connection to `url` on which a WebSocket upgrade request with `headers` was sent. */
async function upgradeOver(url: string, headers: Record<string, string>): Promise<Deno.TcpConn> {
  const { hostname, port, pathname } = new URL(url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  const lines = [
    `GET ${pathname} HTTP/1.1`,
    `host: ${hostname}:${port}`,
    "upgrade: websocket",
    "connection: Upgrade",
    "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==",
    "sec-websocket-version: 13",
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  await writeAll(conn, new TextEncoder().encode(`${lines.join("\r\n")}\r\n\r\n`));
  return conn;
}

async function writeAll(conn: Deno.TcpConn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
