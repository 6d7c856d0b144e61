/**
 * Every Responses tool type by who runs it (data, `openai-responses.md` §3; pure): the client —
 * the model's calls come back to it, it runs them and sends the results — or the provider, which
 * runs the tool itself (a hosted tool). A tool the client runs is a function to every other
 * protocol. Functions, free-form (`custom`) tools and `namespace` groups are decoded as such; each
 * other client-run type has a `ClientForm`: the function it is offered as, how its call items and
 * the client's output items read, and how a call is written back as the type's own call item
 * (a `tool_search_call`, not a `function_call`). `tool_search` runs where its `execution` says
 * (the provider by default); `shell` on the client unless given a hosted container. A type not in
 * the table is the provider's. Provider-run tools stay hosted tools: web search is translated,
 * the others refused by the upstream's encoder.
 */
import { isObject, object, string } from "../../http/json.ts";
import type { Json } from "../../translate/ir.ts";
import { parseArguments } from "../../translate/tool_ids.ts";

/** Who runs a tool: the client (a function to other protocols) or the provider (hosted). */
export type Runner = "client" | "provider";

/** A client-run tool type that is not a function, as other protocols see it. */
export interface ClientForm {
  /** The function it is offered as; also the canonical name of its calls and results. */
  name: string;
  /** Its call items' type, and the prefix of their ids where the gateway writes them. */
  call: string;
  prefix: string;
  /** The type of the item the client answers a call with. */
  output: string;
  /** The function's description and parameters, from the tool as the client declared it. */
  declare(tool: Json): { description: string; parameters: Json };
  /** A call item's own members (besides `type`, `id`, `call_id`, `status`) for a call's input. */
  item(input: Json): Json;
  /** The canonical input of a call item the client sends back. */
  input(item: Json, at: string): Json;
  /**
   * What an output item answers: its output as a `function_call_output`'s (a string, or content
   * parts), and whether it reports a failure.
   */
  result(item: Json, at: string): { output: unknown; isError?: boolean };
  /** The tools an output item loads (a tool search's), callable from then on. */
  loads?(item: Json): unknown[];
  /** The id of the call an output item answers, where it is not `call_id` alone. */
  answers?(item: Json): unknown;
}

const STRINGS = { type: "array", items: { type: "string" } };
const INTEGER = { type: "integer" };

/** The members of `value` that are set (not undefined or null). */
function present(value: Json): Json {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null));
}

/** `value` without its `type` member (an action's or operation's). */
function withoutType(value: Json): Json {
  const { type: _, ...rest } = value;
  return rest;
}

const TOOL_SEARCH: ClientForm = {
  name: "tool_search",
  call: "tool_search_call",
  prefix: "tsc",
  output: "tool_search_output",
  declare: (tool) => ({
    description: typeof tool.description === "string" && tool.description
      ? tool.description
      : "Finds tools that are not loaded yet and loads them; the tools it finds can then be called.",
    // The schema OpenAI gives a client-run search declared without one.
    parameters: isObject(tool.parameters) ? tool.parameters : {
      type: "object",
      properties: {
        paths: { ...STRINGS, description: "The names of the tools or namespaces to load." },
      },
      required: ["paths"],
    },
  }),
  item: (input) => ({ execution: "client", arguments: input }),
  input: (item) => parseArguments(item.arguments),
  result: (item) => ({ output: JSON.stringify(Array.isArray(item.tools) ? item.tools : []) }),
  loads: (item) => Array.isArray(item.tools) ? item.tools : [],
};

const LOCAL_SHELL: ClientForm = {
  name: "local_shell",
  call: "local_shell_call",
  prefix: "lsh",
  output: "local_shell_call_output",
  declare: () => ({
    description: "Runs a program on the user's machine and returns what it printed.",
    parameters: {
      type: "object",
      properties: {
        command: { ...STRINGS, description: "The program and its arguments." },
        working_directory: { type: "string" },
        timeout_ms: INTEGER,
      },
      required: ["command"],
    },
  }),
  item: (input) => ({
    action: {
      type: "exec",
      command: Array.isArray(input.command) ? input.command : [],
      env: isObject(input.env) ? input.env : {},
      ...present({
        timeout_ms: input.timeout_ms,
        working_directory: input.working_directory,
        user: input.user,
      }),
    },
  }),
  input: (item, at) => withoutType(object(item.action, `${at}.action`)),
  result: (item, at) => ({ output: string(item.output, `${at}.output`) }),
  // Its output names the call by `id` (the call's id the model gave).
  answers: (item) => item.call_id ?? item.id,
};

const SHELL: ClientForm = {
  name: "shell",
  call: "shell_call",
  prefix: "sh",
  output: "shell_call_output",
  declare: () => ({
    description: "Runs shell commands on the user's machine and returns their output.",
    parameters: {
      type: "object",
      properties: {
        commands: { ...STRINGS, description: "The commands, run one after another." },
        timeout_ms: INTEGER,
        max_output_length: INTEGER,
      },
      required: ["commands"],
    },
  }),
  item: (input) => ({
    action: {
      commands: Array.isArray(input.commands) ? input.commands : [],
      timeout_ms: typeof input.timeout_ms === "number" ? input.timeout_ms : null,
      max_output_length: typeof input.max_output_length === "number"
        ? input.max_output_length
        : null,
    },
    environment: null,
  }),
  input: (item, at) => present(object(item.action, `${at}.action`)),
  result: (item) => ({
    output: typeof item.output === "string" ? item.output : JSON.stringify(item.output ?? []),
  }),
};

const APPLY_PATCH: ClientForm = {
  name: "apply_patch",
  call: "apply_patch_call",
  prefix: "apc",
  output: "apply_patch_call_output",
  declare: () => ({
    description:
      "Creates, updates or deletes one file: `diff` is the new file's content (create_file) or a V4A diff of it (update_file).",
    parameters: {
      type: "object",
      properties: {
        type: { type: "string", enum: ["create_file", "update_file", "delete_file"] },
        path: { type: "string" },
        diff: { type: "string" },
      },
      required: ["type", "path"],
    },
  }),
  item: (input) => ({ operation: input }),
  input: (item, at) => object(item.operation, `${at}.operation`),
  result: (item) => ({
    output: typeof item.output === "string" && item.output ? item.output : String(item.status),
    ...(item.status === "failed" ? { isError: true } : {}),
  }),
};

const COMPUTER: ClientForm = {
  name: "computer",
  call: "computer_call",
  prefix: "cu",
  output: "computer_call_output",
  declare: (tool) => ({
    description: `Operates the user's computer${
      typeof tool.display_width === "number" && typeof tool.display_height === "number"
        ? ` (a ${
          tool.environment ?? "desktop"
        } screen of ${tool.display_width}x${tool.display_height})`
        : ""
    }, one action a call, and returns a screenshot.`,
    parameters: {
      type: "object",
      properties: {
        type: {
          type: "string",
          enum: [
            "click",
            "double_click",
            "drag",
            "keypress",
            "move",
            "screenshot",
            "scroll",
            "type",
            "wait",
          ],
        },
        x: INTEGER,
        y: INTEGER,
        button: { type: "string", enum: ["left", "right", "wheel", "back", "forward"] },
        keys: STRINGS,
        text: { type: "string" },
        path: {
          type: "array",
          items: { type: "object", properties: { x: INTEGER, y: INTEGER }, required: ["x", "y"] },
        },
        scroll_x: INTEGER,
        scroll_y: INTEGER,
      },
      required: ["type"],
    },
  }),
  item: (input) => ({ action: input, pending_safety_checks: [] }),
  input: (item, at) => object(item.action, `${at}.action`),
  // The screenshot, as an image part (a file id is refused as in any other part).
  result: (item, at) => {
    const shot = object(item.output, `${at}.output`);
    return { output: [{ ...shot, type: "input_image" }] };
  },
};

/** Who runs a tool of the type: always the same one, or as the tool declares. */
type Runs = Runner | ((tool: Json) => Runner);

/** A tool type: who runs it; the form of a client-run one that is not a function. */
interface ToolType {
  runs: Runs;
  form?: ClientForm;
  /** A provider-run web search (the one hosted tool other protocols have). */
  webSearch?: true;
}

const WEB: ToolType = { runs: "provider", webSearch: true };
const HOSTED: ToolType = { runs: "provider" };

/** Every Responses tool type, by who runs it (see the module's doc). */
const TOOL_TYPES: Record<string, ToolType> = {
  function: { runs: "client" },
  custom: { runs: "client" },
  namespace: { runs: "client" },
  tool_search: {
    runs: (tool) => tool.execution === "client" ? "client" : "provider",
    form: TOOL_SEARCH,
  },
  local_shell: { runs: "client", form: LOCAL_SHELL },
  shell: {
    runs: (tool) => {
      const environment = tool.environment;
      return environment === undefined || environment === null ||
          (isObject(environment) && environment.type === "local")
        ? "client"
        : "provider";
    },
    form: SHELL,
  },
  apply_patch: { runs: "client", form: APPLY_PATCH },
  computer: { runs: "client", form: COMPUTER },
  computer_use_preview: { runs: "client", form: COMPUTER },
  web_search: WEB,
  web_search_preview: WEB,
  web_search_2025_08_26: WEB,
  web_search_preview_2025_03_11: WEB,
  file_search: HOSTED,
  code_interpreter: HOSTED,
  image_generation: HOSTED,
  mcp: HOSTED,
  programmatic_tool_calling: HOSTED,
};

const own = (type: string): ToolType | undefined =>
  Object.hasOwn(TOOL_TYPES, type) ? TOOL_TYPES[type] : undefined;

/** Who runs `tool` (a type not in the table: the provider). */
export function runnerOf(tool: Json): Runner {
  const runs = own(String(tool.type ?? ""))?.runs ?? "provider";
  return typeof runs === "function" ? runs(tool) : runs;
}

/** The form of `tool` when the client runs it and it is not a function; undefined otherwise. */
export function clientForm(tool: Json): ClientForm | undefined {
  const form = own(String(tool.type ?? ""))?.form;
  return form && runnerOf(tool) === "client" ? form : undefined;
}

/** The form of a client-run tool type, by its type (undefined for any other). */
export function formOf(type: string): ClientForm | undefined {
  return own(type)?.form;
}

/** Whether a tool type is web search, run by the provider. */
export function isWebSearch(type: string): boolean {
  return own(type)?.webSearch === true;
}

/** Client-run forms by the type of their call and output items. */
const BY_ITEM = new Map<string, { form: ClientForm; role: "call" | "output" }>(
  Object.values(TOOL_TYPES).flatMap(({ form }) =>
    form
      ? [[form.call, { form, role: "call" as const }], [form.output, {
        form,
        role: "output" as const,
      }]]
      : []
  ),
);

/** The form an input item of type `type` belongs to: a call of it, or the client's output. */
export function itemForm(type: string): { form: ClientForm; role: "call" | "output" } | undefined {
  return BY_ITEM.get(type);
}
