/**
 * Switchyard command line:
 *   serve [--config FILE] [--host H] [--port N] [--workers N] [--emulate]
 *   keys create --account NAME [--credit USD] [settings] [--json] · keys update ID [settings]
 *   keys rotate ID [--grace D] · keys list [--json] · keys revoke ID
 *   accounts list [--json] · accounts credit NAME USD · accounts update NAME [settings]
 *   config check [--config FILE] · reload [--config FILE]
 *   store copy --from sqlite:PATH --to postgres://…
 *   emulate [--host H] [--port N] [--key K[:fault]]...
 * The commands are `src/cli/main.ts`.
 */
// First: it loads what it needs from libc and gives up the permission to load native code before
// any other module runs.
import "./src/serve/memory_trim.ts";
import { startEarlyThread } from "./src/serve/early_thread.ts";

// `serve` with serving threads: the first starts loading the server now, on another core, while
// this thread loads the rest of the program and reads the config (see `early_thread.ts`).
startEarlyThread(Deno.args);
const { run } = await import("./src/cli/main.ts");
await run(Deno.args);
