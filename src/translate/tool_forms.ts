/**
 * How the client declared its tools, as an answer's encoder needs it to write their calls back
 * (pure; see `AnswerInfo`): its free-form tools, its namespaced functions under their own two
 * names, and the tools it runs that are not functions under their own types.
 */
import type { AnswerInfo } from "./codec.ts";
import type { FunctionTool } from "./ir.ts";

/** What an answer's encoder knows of the client's tools (see the module's doc). */
export type ToolForms = Pick<AnswerInfo, "customTools" | "namespaced" | "clientTools">;

/** The forms of `tools`, as the client declared them. */
export function toolForms(tools: FunctionTool[]): Required<ToolForms> {
  return {
    customTools: new Set(tools.filter((t) => t.kind === "custom").map((t) => t.name)),
    namespaced: new Map(
      tools.flatMap((t) =>
        t.namespace
          ? [[t.name, { namespace: t.namespace, name: t.name.slice(t.namespace.length + 2) }]]
          : []
      ),
    ),
    clientTools: new Map(tools.flatMap((t) => t.clientType ? [[t.name, t.clientType]] : [])),
  };
}
