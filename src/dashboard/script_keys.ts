/**
 * The dashboard's keys panel, a part of its script (see `script.ts`, which joins the parts into
 * one function body): each key with its status, settings and its budgets and its account's as
 * bars (spent and held against the limit, with the reset time), and what can be done to it —
 * edit its settings, disable or enable, rotate (the new secret shown once), revoke. Values go into
 * the page as text only (`el`, `textContent`, attributes), never as markup.
 */
export const KEYS_SCRIPT = String.raw`
  /** Keys whose budgets are read one by one (GET …/keys/:id) at once. */
  const DETAIL_BATCH = 4;
  const METER_W = 160, METER_H = 10;
  /** The key the form edits (null: it creates one), as the API last showed it. */
  let editing = null;

  /** A comma- or space-separated list, empty entries left out. */
  function listOf(text) {
    return text.split(/[\s,]+/).map((s) => s.trim()).filter((s) => s);
  }

  /** Budgets from "20/month, 5/day" ("$20/month" too); throws on anything else. */
  function budgetsOf(text) {
    return listOf(text).map((item) => {
      const match = /^\$?(\d+(?:\.\d+)?)\/([a-z0-9]+)$/i.exec(item);
      if (!match) throw new Error("Budget \"" + item + "\": write AMOUNT/PERIOD, such as 20/month or 5/day.");
      return { usd: match[1], period: match[2].toLowerCase() };
    });
  }

  function budgetsText(budgets) {
    return budgets.map((b) => b.usd + "/" + b.period).join(", ");
  }

  /** Metadata from KEY=VALUE lines. */
  function metadataOf(text) {
    const out = {};
    for (const line of text.split("\n").map((l) => l.trim()).filter((l) => l)) {
      const at = line.indexOf("=");
      if (at < 1) throw new Error("Metadata \"" + line + "\": write KEY=VALUE, one per line.");
      out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
    }
    return out;
  }

  function metadataText(metadata) {
    return Object.entries(metadata).map(([k, v]) => k + "=" + v).join("\n");
  }

  /** A whole number from a field; blank is null. */
  function countOf(id, what) {
    const text = $(id).value.trim();
    if (!text) return null;
    if (!/^\d+$/.test(text)) throw new Error(what + " must be a whole number.");
    return Number(text);
  }

  /** One budget as a bar: spent, then held, against the limit; its figures and reset below. */
  function budgetMeter(state) {
    const limit = state.limit_nanousd || 1;
    // Any spend or hold shows, if only as a sliver.
    const share = (nano, room) => nano > 0 ? Math.min(room, Math.max(1, (nano / limit) * METER_W)) : 0;
    const spentW = share(state.spent_nanousd, METER_W);
    const heldW = share(state.held_nanousd, METER_W - spentW);
    const used = (state.spent_nanousd + state.held_nanousd) / limit;
    const meter = svg("svg", {
      class: "meter " + (used >= 1 ? "full" : used >= 0.8 ? "high" : ""),
      viewBox: "0 0 " + METER_W + " " + METER_H,
      width: METER_W,
      height: METER_H,
      role: "img",
      "aria-label": state.owner + " " + state.period + " budget, " + Math.round(used * 100) + "% used",
    });
    meter.append(
      svg("rect", { class: "track", x: 0, y: 0, width: METER_W, height: METER_H, rx: 2 }),
      svg("rect", { class: "spent", x: 0, y: 0, width: spentW.toFixed(2), height: METER_H, rx: 2 }),
      svg("rect", { class: "held", x: spentW.toFixed(2), y: 0, width: heldW.toFixed(2), height: METER_H }),
    );
    return el("div", { class: "budget", "data-owner": state.owner, "data-period": state.period }, [
      el("div", { class: "label" }, [
        state.owner + " " + state.period + ": " + usd(state.spent_usd) + " spent + " +
          usd(state.held_usd) + " held of " + usd(state.limit_usd),
      ]),
      meter,
      el("div", { class: "resets note" }, [
        state.resets_at ? "resets " + when(state.resets_at) + " UTC" : "never resets",
      ]),
    ]);
  }

  /** The budgets cell: bars from the key's detail, else the budgets as set. */
  function budgetsCell(key, detail, account) {
    if (detail) return el("td", { class: "budgets" }, detail.budget_states.map(budgetMeter));
    const set = key.budgets.map((b) => "key " + usd(b.usd) + "/" + b.period)
      .concat(account ? account.budgets.map((b) => "account " + usd(b.usd) + "/" + b.period) : []);
    return el("td", { class: "budgets note" }, [set.join(", ") || "none"]);
  }

  function line(text, className) {
    return el("div", { class: className || "" }, [text]);
  }

  function limitsCell(k) {
    const lines = [];
    if (k.models) lines.push(line("models: " + k.models.join(", ")));
    if (k.deny_models) lines.push(line("denied: " + k.deny_models.join(", ")));
    lines.push(line("RPM " + (k.rpm === null ? "default" : k.rpm === 0 ? "unlimited" : k.rpm)));
    if (k.tpm !== null) lines.push(line("TPM " + k.tpm));
    if (k.max_concurrent !== null) lines.push(line("in flight " + k.max_concurrent));
    if (k.ips) lines.push(line("IPs: " + k.ips.join(", ")));
    if (k.strict) lines.push(line("strict: no adaptations"));
    return el("td", { class: "limits" }, lines);
  }

  function timesCell(k) {
    const lines = [line("created " + when(k.created_at))];
    lines.push(line(k.expires_at ? "expires " + when(k.expires_at) : "no expiry", "expires"));
    lines.push(line(k.last_used_at ? "last used " + when(k.last_used_at) : "never used", "last-used"));
    if (k.previous_valid_until) lines.push(line("old secret until " + when(k.previous_valid_until)));
    if (k.revoked_at) lines.push(line("revoked " + when(k.revoked_at)));
    return el("td", { class: "times note" }, lines);
  }

  function keyCell(k) {
    const meta = Object.entries(k.metadata).map(([name, value]) => line(name + "=" + value, "meta note"));
    return el("td", {}, [
      line(k.name === null ? "(no name)" : k.name, "name"),
      line(k.id, "mono id"),
      line(k.prefix + "…", "mono note"),
      ...meta,
    ]);
  }

  /** A button whose action runs on a second click within 5 s (the first arms it). */
  function confirmButton(label, confirmLabel, className, key, action) {
    const button = el("button", { type: "button", class: className, "data-key": key.id }, [label]);
    let armed = null;
    button.addEventListener("click", async () => {
      if (!armed) {
        button.textContent = confirmLabel;
        button.classList.add("danger");
        armed = setTimeout(() => {
          armed = null;
          button.textContent = label;
          button.classList.remove("danger");
        }, 5000);
        return;
      }
      clearTimeout(armed);
      button.disabled = true;
      try {
        await action();
      } catch (error) {
        button.disabled = false;
        fail(error);
      }
    });
    return button;
  }

  function keyPath(key) {
    return "admin/api/keys/" + encodeURIComponent(key.id);
  }

  function actionsCell(k) {
    if (k.status === "revoked") return el("td", {}, []);
    const edit = el("button", { type: "button", class: "edit", "data-key": k.id }, ["Edit"]);
    edit.addEventListener("click", () => editKey(k));
    const disabled = k.disabled_at !== null;
    const toggle = el("button", { type: "button", class: "toggle", "data-key": k.id }, [
      disabled ? "Enable" : "Disable",
    ]);
    toggle.addEventListener("click", async () => {
      toggle.disabled = true;
      try {
        await api("PATCH", keyPath(k), { disabled: !disabled });
        say("Key " + k.id + (disabled ? " enabled." : " disabled."));
        await loadAll();
      } catch (error) {
        toggle.disabled = false;
        fail(error);
      }
    });
    const rotate = confirmButton("Rotate", "Confirm rotate", "rotate", k, async () => {
      const grace = Number($("rotate-grace").value);
      const rotated = await api("POST", keyPath(k) + "/rotate", { grace_seconds: grace });
      showSecret(
        "New secret for " + k.id + (k.name === null ? "" : " (" + k.name + ")"),
        rotated.key,
        rotated.previous_valid_until
          ? "The old secret works until " + when(rotated.previous_valid_until) + " UTC."
          : "The old secret no longer works.",
      );
      say("Key " + k.id + " rotated.");
      await loadAll();
    });
    const revoke = confirmButton("Revoke", "Confirm revoke", "revoke", k, async () => {
      await api("DELETE", keyPath(k));
      say("Key " + k.id + " revoked.");
      await loadAll();
    });
    return el("td", { class: "actions" }, [el("div", {}, [edit, toggle, rotate, revoke])]);
  }

  function renderKeys(keys, details, accounts, total) {
    const byName = new Map(accounts.data.map((a) => [a.name, a]));
    const rows = keys.map((k) =>
      el("tr", { "data-key": k.id, class: k.status }, [
        keyCell(k),
        cell(k.account),
        cell(k.status, "status status-" + k.status),
        budgetsCell(k, details.get(k.id), byName.get(k.account)),
        limitsCell(k),
        timesCell(k),
        actionsCell(k),
      ])
    );
    $("key-rows").replaceChildren(...rows);
    $("key-note").textContent = total > keys.length
      ? "Showing the newest " + keys.length + " of " + total + " keys."
      : "";
  }

  /** Runs work on each item, size items at a time. */
  async function inBatches(items, size, work) {
    for (let i = 0; i < items.length; i += size) {
      await Promise.all(items.slice(i, i + size).map(work));
    }
  }

  /** The keys, with the budgets of those that have any (theirs or their account's). */
  async function loadKeys(accounts) {
    const list = await api("GET", "admin/api/keys");
    const budgeted = new Set(accounts.data.filter((a) => a.budgets.length).map((a) => a.name));
    const keys = list.data.slice().reverse().slice(0, MAX_ROWS);
    const details = new Map();
    const wanted = keys.filter((k) =>
      k.status !== "revoked" && (k.budgets.length || budgeted.has(k.account))
    );
    await inBatches(wanted, DETAIL_BATCH, async (k) => {
      try {
        details.set(k.id, await api("GET", keyPath(k)));
      } catch (error) {
        if (error instanceof Unauthorized) throw error;
        // Revoked meanwhile: shown without its bars.
      }
    });
    renderKeys(keys, details, accounts, list.data.length);
  }

  function showSecret(title, secret, note) {
    $("new-secret-title").textContent = title;
    $("new-secret-value").textContent = secret;
    $("new-secret-note").textContent = note;
    $("new-secret").hidden = false;
  }

  /** The form's fields as a body: for a new key only what is filled in, for a change all. */
  function keyBody(change) {
    const text = (id) => $(id).value.trim();
    const body = {};
    const put = (name, value, empty) => {
      if (!empty) body[name] = value;
      else if (change) body[name] = null;
    };
    put("name", text("key-name"), !text("key-name"));
    const budgets = budgetsOf(text("key-budgets"));
    if (budgets.length || change) body.budgets = budgets;
    put("models", listOf(text("key-models")), !listOf(text("key-models")).length);
    put("deny_models", listOf(text("key-deny")), !listOf(text("key-deny")).length);
    put("expires_at", text("key-expires"), !text("key-expires"));
    for (const [name, id, what] of [["rpm", "key-rpm", "RPM"], ["tpm", "key-tpm", "TPM"], ["max_concurrent", "key-concurrent", "Calls in flight"]]) {
      const n = countOf(id, what);
      put(name, n, n === null);
    }
    put("ips", listOf(text("key-ips")), !listOf(text("key-ips")).length);
    const metadata = metadataOf($("key-meta").value);
    if (Object.keys(metadata).length || change) body.metadata = metadata;
    return body;
  }

  function resetKeyForm() {
    editing = null;
    $("new-key").reset();
    $("key-form-title").textContent = "New key";
    $("key-account").disabled = false;
    $("key-credit-label").hidden = false;
    $("key-submit").textContent = "Create key";
    $("key-cancel").hidden = true;
    $("new-key-error").textContent = "";
  }

  /** Fills the form with a key's settings to change them. */
  function editKey(k) {
    editing = k;
    $("key-form-title").textContent = "Edit key " + k.id + (k.name === null ? "" : " (" + k.name + ")");
    $("key-account").value = k.account;
    $("key-account").disabled = true;
    $("key-credit-label").hidden = true;
    $("key-credit").value = "";
    $("key-name").value = k.name === null ? "" : k.name;
    $("key-budgets").value = budgetsText(k.budgets);
    $("key-models").value = (k.models || []).join(", ");
    $("key-deny").value = (k.deny_models || []).join(", ");
    $("key-expires").value = k.expires_at || "";
    $("key-rpm").value = k.rpm === null ? "" : String(k.rpm);
    $("key-tpm").value = k.tpm === null ? "" : String(k.tpm);
    $("key-concurrent").value = k.max_concurrent === null ? "" : String(k.max_concurrent);
    $("key-ips").value = (k.ips || []).join(", ");
    $("key-meta").value = metadataText(k.metadata);
    $("key-submit").textContent = "Save key";
    $("key-cancel").hidden = false;
    $("new-key-error").textContent = "";
    $("new-key").scrollIntoView({ block: "start" });
    $("key-name").focus();
  }

  $("new-key").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("new-key-error").textContent = "";
    try {
      if (editing) {
        const id = editing.id;
        await api("PATCH", keyPath(editing), keyBody(true));
        resetKeyForm();
        say("Key " + id + " changed.");
      } else {
        const body = keyBody(false);
        body.account = $("key-account").value.trim();
        const credit = $("key-credit").value.trim();
        if (credit) body.credit_usd = credit;
        const made = await api("POST", "admin/api/keys", body);
        resetKeyForm();
        showSecret("New key " + made.id + " for " + made.account, made.key, "");
        say("Key " + made.id + " created.");
      }
      await loadAll();
    } catch (error) {
      if (error instanceof Unauthorized) fail(error);
      else $("new-key-error").textContent = String(error.message || error);
    }
  });

  $("key-cancel").addEventListener("click", resetKeyForm);

  $("new-secret-dismiss").addEventListener("click", () => {
    $("new-secret-value").textContent = "";
    $("new-secret-title").textContent = "";
    $("new-secret-note").textContent = "";
    $("new-secret").hidden = true;
  });
`;
