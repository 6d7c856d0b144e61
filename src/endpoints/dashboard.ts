/**
 * `GET /admin`: the admin dashboard (see `dashboard/page.ts`). The page holds no data and loads
 * without a token; what it shows comes from the admin API, which needs one. Like the admin API it
 * is 404 when no admin token is configured.
 */
import type { Handler } from "../context.ts";
import { requireAdminEnabled } from "../auth/admin.ts";

/**
 * The page, with its security headers. Its module (the page's text, its script and stylesheet,
 * and their hashes, taken when it loads) is loaded on the first view, not at every start.
 */
export const getDashboard: Handler = async (ctx) => {
  requireAdminEnabled(ctx.services.config);
  const { DASHBOARD_HEADERS, DASHBOARD_HTML } = await import("../dashboard/page.ts");
  return new Response(DASHBOARD_HTML, { headers: { ...DASHBOARD_HEADERS } });
};
