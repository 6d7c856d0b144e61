/**
 * GenAI traces through Deno's built-in OpenTelemetry (`OTEL_DENO=true`; the exporter is set with
 * the standard `OTEL_EXPORTER_OTLP_*` variables). No npm package: `Deno.telemetry`'s tracer
 * provider and context manager are used directly. Per model call, one span `{operation} {model}`
 * (a child of Deno's own server span) carries the GenAI semantic-convention attributes and ends
 * when the call is settled — a stream's end included, which Deno's server span (ended with the
 * response's headers) cannot wait for; the upstream `fetch` (Deno's client span) runs inside it.
 * With tracing off every function here is a no-op.
 */

/** The OpenTelemetry JS API's context key of the active span. */
const SPAN_KEY = Symbol.for("OpenTelemetry Context Key SPAN");

type Attribute = string | number | string[];

interface OtelSpan {
  setAttribute(key: string, value: Attribute): unknown;
  updateName?(name: string): unknown;
  end(): void;
}
interface OtelContext {
  getValue(key: symbol): unknown;
  setValue(key: symbol, value: unknown): OtelContext;
}
interface Telemetry {
  tracerProvider: {
    getTracer(name: string): {
      startSpan(name: string, options?: { kind?: number }, context?: OtelContext): OtelSpan;
    };
  };
  contextManager: {
    active(): OtelContext;
    with<T>(context: OtelContext, fn: () => T): T;
  };
}

/** The span kind CLIENT (a call to a remote service), as OpenTelemetry numbers it. */
const CLIENT = 2;

function telemetry(): Telemetry | null {
  let on = false;
  try {
    on = Deno.env.get("OTEL_DENO") === "true";
  } catch { /* no env access: off */ }
  const t = (Deno as unknown as { telemetry?: Telemetry }).telemetry;
  return on && t?.tracerProvider && t.contextManager ? t : null;
}

const otel = telemetry();
const tracer = otel?.tracerProvider.getTracer("switchyard");

/** A model call's span (see the module's note). */
export interface CallSpan {
  set(attributes: Record<string, Attribute | undefined>): void;
  /** Names the span `{operation} {model}` once the model is known. */
  named(model: string): void;
  /** The call goes on after the handler returned (a stream): it ends at `end()`. */
  defer(): void;
  readonly deferred: boolean;
  /** Ends the span (once). */
  end(): void;
}

/** The GenAI operation of a route, or null when the route is not a model call. */
export function operationOf(path: string): string | null {
  if (/generateContent/.test(path)) return "generate_content";
  if (/embed/i.test(path)) return "embeddings";
  if (/^\/v1\/(responses|messages|chat\/completions)$/.test(path)) return "chat";
  if (/^\/v1\/images\//.test(path)) return "image_generation";
  return null;
}

/** GenAI's names for the provider families (`gen_ai.provider.name`). */
const PROVIDER_NAMES: Record<string, string> = {
  openai: "openai",
  anthropic: "anthropic",
  gemini: "gcp.gemini",
  xai: "x_ai",
  "openai-compatible": "openai",
};

/** `gen_ai.provider.name` of a provider type. */
export function providerName(type: string): string {
  return PROVIDER_NAMES[type] ?? type;
}

/**
 * Hides a Gemini client's `?key=` (its Switchyard key) in the attributes Deno's server span
 * recorded from the URL: a key is never exported.
 */
export function redactServerSpan(url: URL): void {
  if (!otel || !url.searchParams.has("key")) return;
  const span = otel.contextManager.active().getValue(SPAN_KEY) as OtelSpan | undefined;
  if (!span) return;
  const query = new URLSearchParams(url.searchParams);
  query.set("key", "REDACTED");
  span.setAttribute("url.query", query.toString());
  span.setAttribute("url.full", `${url.origin}${url.pathname}?${query}`);
}

/**
 * Starts the span of a model call on `path` and runs `work` with it active (so the upstream
 * `fetch` is its child). Null span (and `work` run as it is) when tracing is off or the route is
 * not a model call.
 */
export function startCallSpan<T>(path: string, work: (span: CallSpan | null) => T): T {
  if (!otel || !tracer) return work(null);
  const operation = operationOf(path);
  if (!operation) return work(null);
  const parent = otel.contextManager.active();
  const raw = tracer.startSpan(operation, { kind: CLIENT }, parent);
  raw.setAttribute("gen_ai.operation.name", operation);
  let deferred = false;
  let ended = false;
  const span: CallSpan = {
    set(attributes) {
      if (ended) return;
      for (const [key, value] of Object.entries(attributes)) {
        if (value !== undefined) raw.setAttribute(key, value);
      }
    },
    named(model) {
      if (!ended) raw.updateName?.(`${operation} ${model}`);
    },
    defer() {
      deferred = true;
    },
    get deferred() {
      return deferred;
    },
    end() {
      if (ended) return;
      ended = true;
      raw.end();
    },
  };
  return otel.contextManager.with(parent.setValue(SPAN_KEY, raw), () => work(span));
}
