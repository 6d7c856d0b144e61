/**
 * The dashboard's prompt-cache panel, a part of its script (see `script.ts`): from the `cache` of
 * `GET /admin/api/usage` (see `billing/cache_report.ts`), the share of input tokens read from the
 * cache per UTC day as bars on the 30-day axis (0 to 100 %), the window's totals — hit rate,
 * writes by lifetime, what reads saved, what misses the gateway caused lost — and the same by
 * model.
 */
export const CACHE_SCRIPT = String.raw`
  /** A share as the page writes it ("37.5 %"; "—" when there is none). */
  function percent(rate) {
    return rate === null || rate === undefined ? "—" : (rate * 100).toFixed(1) + " %";
  }

  /** The hit rate per UTC day as bars, one per day with input tokens, on a 30-day axis. */
  function renderCacheChart(usage) {
    const width = 720, height = 160, left = 64, right = 8, top = 12, bottom = 28;
    const plotW = width - left - right, plotH = height - top - bottom;
    const start = Date.parse(usage.since + "T00:00:00Z");
    const slot = plotW / usage.days;
    const chart = svg("svg", {
      viewBox: "0 0 " + width + " " + height,
      role: "img",
      "aria-label": "Share of input tokens read from the prompt cache per day over the last " +
        usage.days + " days",
      class: "chart",
    });
    chart.append(
      svg("line", { x1: left, y1: top, x2: left, y2: top + plotH, class: "axis" }),
      svg("line", { x1: left, y1: top + plotH, x2: left + plotW, y2: top + plotH, class: "axis" }),
      svg("text", { x: left - 6, y: top + 10, "text-anchor": "end", class: "label" }, "100 %"),
      svg("text", { x: left - 6, y: top + plotH, "text-anchor": "end", class: "label" }, "0 %"),
      svg("text", { x: left, y: height - 8, class: "label" }, usage.since),
      svg("text", { x: left + plotW, y: height - 8, "text-anchor": "end", class: "label" }, new Date(start + (usage.days - 1) * DAY_MS).toISOString().slice(0, 10)),
    );
    for (const d of usage.cache.by_day) {
      const index = Math.round((Date.parse(d.day + "T00:00:00Z") - start) / DAY_MS);
      if (index < 0 || index >= usage.days) continue;
      const rate = d.hit_rate || 0;
      const h = rate > 0 ? Math.max(1, rate * plotH) : 0;
      const bar = svg("rect", {
        class: "bar",
        "data-day": d.day,
        "data-rate": rate,
        x: (left + index * slot + slot * 0.15).toFixed(2),
        y: (top + plotH - h).toFixed(2),
        width: (slot * 0.7).toFixed(2),
        height: h.toFixed(2),
      });
      bar.append(svg("title", {}, d.day + ": " + percent(d.hit_rate) + " of " + d.input_tokens +
        " input tokens read from the cache (" + d.requests + " requests)"));
      chart.append(bar);
    }
    $("cache-chart").replaceChildren(chart);
  }

  function renderCache(usage) {
    const c = usage.cache;
    renderCacheChart(usage);
    $("cache-total").textContent = percent(c.hit_rate) + " of " + c.input_tokens +
      " input tokens read from the cache since " + usage.since + " · written: " +
      c.cache_write_tokens + " (5 min), " + c.cache_write_1h_tokens + " (1 h) · saved " +
      usd(c.saved_usd) + " · lost to misses the gateway caused: " + usd(c.lost_usd) +
      " (estimated)";
    const rows = Object.entries(c.by_model).slice(0, MAX_ROWS).map(([model, m]) =>
      el("tr", { "data-model": model }, [
        cell(model),
        cell(m.input_tokens, "num"),
        cell(percent(m.hit_rate), "num rate"),
        cell(m.cache_write_tokens, "num"),
        cell(m.cache_write_1h_tokens, "num"),
        cell(usd(m.saved_usd), "num saved"),
        cell(usd(m.lost_usd), "num lost"),
      ])
    );
    $("cache-rows").replaceChildren(...rows);
  }
`;
