/**
 * Headless Chromium driven through the Chrome DevTools Protocol over its WebSocket (Deno's own
 * WebSocket client, no package): start the browser, open a page, evaluate script in it, click and
 * type as a user does (input events at the element's place), and collect what the page's console
 * and the browser's log report (script errors, CSP violations).
 */

/** Where Debian's `chromium` package puts the browser. */
export const CHROMIUM = "/usr/bin/chromium";

/** Whether the browser is installed (the tests that need it are skipped otherwise). */
export function hasChromium(): boolean {
  try {
    return Deno.statSync(CHROMIUM).isFile;
  } catch {
    return false;
  }
}

type Json = Record<string, unknown>;

interface Pending {
  resolve(result: Json): void;
  reject(error: Error): void;
  method: string;
}

/** One DevTools connection: commands by id, events to listeners. */
class Connection {
  #next = 0;
  readonly #pending = new Map<number, Pending>();
  readonly #listeners = new Set<(method: string, params: Json, sessionId?: string) => void>();

  constructor(readonly socket: WebSocket) {
    socket.onmessage = (event) => {
      const message = JSON.parse(String(event.data));
      if (message.id !== undefined) {
        const pending = this.#pending.get(message.id);
        this.#pending.delete(message.id);
        if (!pending) return;
        if (message.error) {
          pending.reject(new Error(`${pending.method}: ${message.error.message}`));
        } else pending.resolve(message.result);
        return;
      }
      for (const listener of this.#listeners) {
        listener(message.method, message.params ?? {}, message.sessionId);
      }
    };
    socket.onclose = () => {
      for (const pending of this.#pending.values()) {
        pending.reject(new Error(`${pending.method}: the DevTools connection closed`));
      }
      this.#pending.clear();
    };
  }

  send(method: string, params: Json = {}, sessionId?: string): Promise<Json> {
    const id = ++this.#next;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, method });
      this.socket.send(JSON.stringify({ id, method, params, sessionId }));
    });
  }

  on(listener: (method: string, params: Json, sessionId?: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

/** What a page reported: console errors, uncaught exceptions, browser log entries (CSP…). */
export interface PageProblem {
  kind: "exception" | "console" | "log";
  text: string;
}

/** One tab. */
export class Page {
  /** Problems reported since the page was opened. */
  readonly problems: PageProblem[] = [];

  constructor(readonly connection: Connection, readonly sessionId: string) {
    connection.on((method, params, sessionId) => {
      if (sessionId !== this.sessionId) return;
      if (method === "Runtime.exceptionThrown") {
        const details = params.exceptionDetails as Json;
        const exception = details.exception as Json | undefined;
        this.problems.push({
          kind: "exception",
          text: String(exception?.description ?? details.text),
        });
      } else if (method === "Runtime.consoleAPICalled" && params.type === "error") {
        const args = params.args as Json[];
        this.problems.push({
          kind: "console",
          text: args.map((a) => String(a.value ?? a.description)).join(" "),
        });
      } else if (method === "Log.entryAdded") {
        const entry = params.entry as Json;
        if (entry.level === "error" || entry.level === "warning") {
          this.problems.push({ kind: "log", text: `${entry.source}: ${entry.text}` });
        }
      }
    });
  }

  send(method: string, params: Json = {}): Promise<Json> {
    return this.connection.send(method, params, this.sessionId);
  }

  /** Waits for an event of this page that `match` accepts (any when absent). */
  event(method: string, match?: (params: Json) => boolean, ms = 10_000): Promise<Json> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new Error(`no ${method} within ${ms} ms`));
      }, ms);
      const off = this.connection.on((name, params, sessionId) => {
        if (sessionId !== this.sessionId || name !== method || (match && !match(params))) return;
        clearTimeout(timer);
        off();
        resolve(params);
      });
    });
  }

  /** Loads `url` and waits for its load event; returns the main document's HTTP response. */
  async goto(url: string): Promise<{ status: number; headers: Record<string, string> }> {
    const response = this.event(
      "Network.responseReceived",
      (p) => p.type === "Document" && (p.response as Json).url === url,
    );
    const loaded = this.event("Page.loadEventFired");
    const navigation = await this.send("Page.navigate", { url });
    if (navigation.errorText) throw new Error(`navigation failed: ${navigation.errorText}`);
    const { response: r } = await response as { response: Json };
    await loaded;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(r.headers as Json)) {
      headers[name.toLowerCase()] = String(value);
    }
    return { status: Number(r.status), headers };
  }

  /** Evaluates an expression in the page (promises awaited) and returns its value as JSON. */
  async evaluate<T = unknown>(expression: string): Promise<T> {
    const result = await this.send("Runtime.evaluate", {
      expression,
      awaitPromise: true,
      returnByValue: true,
    });
    const details = result.exceptionDetails as Json | undefined;
    if (details) {
      const exception = details.exception as Json | undefined;
      throw new Error(`in the page: ${exception?.description ?? details.text}`);
    }
    return (result.result as Json).value as T;
  }

  /** Polls `expression` until it is truthy; returns its value. */
  async waitFor<T = unknown>(expression: string, what = expression, ms = 10_000): Promise<T> {
    const until = Date.now() + ms;
    while (true) {
      const value = await this.evaluate<T>(expression);
      if (value) return value;
      if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** The centre of the element `selector` names, scrolled into view (throws when none or hidden). */
  async #centre(selector: string): Promise<{ x: number; y: number }> {
    const box = await this.evaluate<{ x: number; y: number; w: number; h: number } | null>(`(() => {
      const node = document.querySelector(${JSON.stringify(selector)});
      if (!node) return null;
      node.scrollIntoView({ block: "center" });
      const r = node.getBoundingClientRect();
      return { x: r.x, y: r.y, w: r.width, h: r.height };
    })()`);
    if (!box) throw new Error(`no element ${selector}`);
    if (!box.w || !box.h) throw new Error(`element ${selector} is not visible`);
    return { x: box.x + box.w / 2, y: box.y + box.h / 2 };
  }

  /** Clicks the element as a mouse does (pressed and released at its centre). */
  async click(selector: string): Promise<void> {
    const { x, y } = await this.#centre(selector);
    for (const type of ["mouseMoved", "mousePressed", "mouseReleased"]) {
      await this.send("Input.dispatchMouseEvent", {
        type,
        x,
        y,
        button: type === "mouseMoved" ? "none" : "left",
        clickCount: type === "mouseMoved" ? 0 : 1,
      });
    }
  }

  /** Focuses the field by clicking it and types `text` into it as keyboard input. */
  async type(selector: string, text: string): Promise<void> {
    await this.click(selector);
    await this.send("Input.insertText", { text });
  }

  /** Presses Enter in the focused element (submits its form). */
  async pressEnter(): Promise<void> {
    for (const type of ["keyDown", "keyUp"]) {
      await this.send("Input.dispatchKeyEvent", {
        type,
        key: "Enter",
        code: "Enter",
        windowsVirtualKeyCode: 13,
        ...(type === "keyDown" ? { text: "\r" } : {}),
      });
    }
  }
}

/** A running browser. */
export interface Browser {
  /** Opens a blank tab with the runtime, log, network and page domains on. */
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

/** Starts headless Chromium with a fresh profile and connects to it. */
export async function launchChromium(): Promise<Browser> {
  const profile = await Deno.makeTempDir({ prefix: "switchyard-chromium-" });
  const args = [
    "--headless",
    "--remote-debugging-port=0",
    `--user-data-dir=${profile}`,
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--metrics-recording-only",
    "--password-store=basic",
    "--use-mock-keychain",
    // Chromium's sandbox refuses to run as root (containers, CI).
    ...(Deno.uid() === 0 ? ["--no-sandbox"] : []),
    "about:blank",
  ];
  const child = new Deno.Command(CHROMIUM, {
    args,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  // Its stderr is read to the end (a full pipe would stall it), kept until the endpoint shows.
  let stderr = "";
  let listening = false;
  const endpoint = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Chromium did not start:\n${stderr}`)), 30_000);
    (async () => {
      for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
        if (listening) continue;
        stderr += chunk;
        const match = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
        if (match) {
          listening = true;
          clearTimeout(timer);
          resolve(match[1]);
        }
      }
      clearTimeout(timer);
      if (!listening) reject(new Error(`Chromium exited before listening:\n${stderr}`));
    })().catch(reject);
  });
  const socket = new WebSocket(endpoint);
  await new Promise<void>((resolve, reject) => {
    socket.onopen = () => resolve();
    socket.onerror = (event) => reject(new Error(`DevTools connection failed: ${event.type}`));
  });
  const connection = new Connection(socket);
  return {
    async newPage() {
      const { targetId } = await connection.send("Target.createTarget", { url: "about:blank" });
      const { sessionId } = await connection.send("Target.attachToTarget", {
        targetId,
        flatten: true,
      });
      const page = new Page(connection, String(sessionId));
      for (const domain of ["Page", "Runtime", "Log", "Network"]) {
        await page.send(`${domain}.enable`);
      }
      return page;
    },
    async close() {
      try {
        await connection.send("Browser.close");
      } catch { /* already closing */ }
      socket.close();
      const exited = await Promise.race([
        child.status.then(() => true),
        new Promise<false>((r) => setTimeout(() => r(false), 5000)),
      ]);
      if (!exited) {
        try {
          child.kill("SIGKILL");
        } catch { /* gone */ }
        await child.status;
      }
      await Deno.remove(profile, { recursive: true }).catch(() => {});
    },
  };
}
