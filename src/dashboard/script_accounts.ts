/**
 * The dashboard's accounts panel, a part of its script (see `script.ts`): each account's balance,
 * spend, held funds, budgets and model lists, and a form that sets its budgets and model lists
 * (PATCH /admin/api/accounts/:name). Values go into the page as text only.
 */
export const ACCOUNTS_SCRIPT = String.raw`
  /** The account the limits form edits (null: the form is closed). */
  let limitsOf = null;

  function accountLimitsText(a) {
    const parts = [];
    if (a.budgets.length) parts.push(a.budgets.map((b) => usd(b.usd) + "/" + b.period).join(", "));
    if (a.models) parts.push("models: " + a.models.join(", "));
    if (a.deny_models) parts.push("denied: " + a.deny_models.join(", "));
    return parts.join(" · ") || "none";
  }

  function renderAccounts(list) {
    const rows = list.data.slice(0, MAX_ROWS).map((a) => {
      const edit = el("button", { type: "button", class: "limits", "data-account": a.name }, ["Limits"]);
      edit.addEventListener("click", () => editLimits(a));
      return el("tr", { "data-account": a.name }, [
        cell(a.name),
        cell(usd(a.balance_usd), "num"),
        cell(usd(a.spent_usd), "num"),
        cell(usd(a.held_usd), "num"),
        cell(accountLimitsText(a), "account-limits"),
        cell(when(a.created_at)),
        el("td", {}, [edit]),
      ]);
    });
    $("account-rows").replaceChildren(...rows);
    $("account-note").textContent = list.data.length > MAX_ROWS
      ? "Showing " + MAX_ROWS + " of " + list.data.length + " accounts."
      : "";
    $("account-names").replaceChildren(...list.data.map((a) => el("option", { value: a.name })));
  }

  function editLimits(a) {
    limitsOf = a;
    $("limits-account").textContent = a.name;
    $("limits-budgets").value = budgetsText(a.budgets);
    $("limits-models").value = (a.models || []).join(", ");
    $("limits-deny").value = (a.deny_models || []).join(", ");
    $("limits-error").textContent = "";
    $("account-limits").hidden = false;
    $("limits-budgets").focus();
  }

  function closeLimits() {
    limitsOf = null;
    $("account-limits").reset();
    $("account-limits").hidden = true;
  }

  $("account-limits").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!limitsOf) return;
    $("limits-error").textContent = "";
    const name = limitsOf.name;
    try {
      const models = listOf($("limits-models").value);
      const deny = listOf($("limits-deny").value);
      await api("PATCH", "admin/api/accounts/" + encodeURIComponent(name), {
        budgets: budgetsOf($("limits-budgets").value),
        models: models.length ? models : null,
        deny_models: deny.length ? deny : null,
      });
      closeLimits();
      say("Account " + name + " changed.");
      await loadAll();
    } catch (error) {
      if (error instanceof Unauthorized) fail(error);
      else $("limits-error").textContent = String(error.message || error);
    }
  });

  $("limits-cancel").addEventListener("click", closeLimits);
`;
