/**
 * Functions grouped in a Responses `namespace` tool (Codex), pure: every other protocol takes one
 * flat list of functions, so a namespaced function is named `<namespace>__<name>` there, a name
 * every protocol accepts; a call comes back to the client with its own `namespace` and `name`.
 */

/** The namespaced function's canonical name (see `FunctionTool.namespace`). */
export function flatName(name: string, namespace: unknown): string {
  return typeof namespace === "string" && namespace ? `${namespace}__${name}` : name;
}
