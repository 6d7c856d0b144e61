/**
 * `GET /admin`: the admin dashboard (see `dashboard/page.ts`). The page holds no data and loads
 * without a token; what it shows comes from the admin API, which needs one. Like the admin API it
 * is 404 when no admin token is configured.
 */
import type { Handler } from "../context.ts";
import { DASHBOARD_HEADERS, DASHBOARD_HTML } from "../dashboard/page.ts";
import { requireAdminEnabled } from "../auth/admin.ts";

/** The page, with its security headers. */
export const getDashboard: Handler = (ctx) => {
  requireAdminEnabled(ctx.services.config);
  return new Response(DASHBOARD_HTML, { headers: { ...DASHBOARD_HEADERS } });
};
