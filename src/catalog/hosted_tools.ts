/**
 * The hosted tools the gateway can meter, each priced per call in the catalog (a leaf: the config
 * schema names them, the catalog prices them, billing counts them).
 */
export const HOSTED_TOOLS = [
  "web_search",
  "file_search",
  "code_interpreter",
  "code_execution",
  "image_generation",
  "x_search",
  "grounded_prompt",
  "google_maps",
] as const;

/** One of `HOSTED_TOOLS`. */
export type HostedTool = typeof HOSTED_TOOLS[number];
