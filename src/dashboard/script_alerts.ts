/**
 * The dashboard's alerts panel, a part of its script (see `script.ts`): the alerts of
 * `GET /admin/api/alerts` (budget thresholds, low balances, keys about to expire) with their
 * delivery state. A gateway without that route answers 404, and the panel stays hidden; any other
 * failure is said in the panel without stopping the rest of the page.
 */
export const ALERTS_SCRIPT = String.raw`
  /** What an alert is about, in words, from the fields its type has. */
  function alertDetail(a) {
    const parts = [];
    if (a.period) parts.push(a.period + " budget");
    if (a.threshold_percent !== undefined && a.threshold_percent !== null) {
      parts.push("at " + a.threshold_percent + " %");
    }
    if (a.expires_at) parts.push("expires " + when(a.expires_at));
    if (a.message) parts.push(String(a.message));
    return parts.join(" ");
  }

  const ALERT_CLASS = { delivered: "ok", pending: "warn", failed: "error" };

  function renderAlerts(list) {
    const rows = list.data.slice(0, MAX_ROWS).map((a) =>
      el("tr", { "data-alert": a.id }, [
        cell(when(a.created_at)),
        cell(a.type),
        cell(a.account),
        cell(a.key_id || "", "mono"),
        cell(alertDetail(a)),
        cell(a.status, ALERT_CLASS[a.status] || ""),
        cell(a.attempts, "num"),
      ])
    );
    $("alert-rows").replaceChildren(...rows);
    $("alert-note").textContent = list.data.length ? "" : "No alerts.";
  }

  /** The alerts, when this gateway has them (the panel is hidden on a 404). */
  async function loadAlerts() {
    try {
      const list = await api("GET", "admin/api/alerts", undefined, true);
      $("alerts").hidden = list === null;
      if (list) renderAlerts(list);
    } catch (error) {
      if (error instanceof Unauthorized) throw error;
      $("alerts").hidden = false;
      $("alert-rows").replaceChildren();
      $("alert-note").textContent = "Alerts could not be read: " + String(error.message || error);
    }
  }
`;
