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
    const chart = dayBars(usage, {
      height: 160,
      label: "Share of input tokens read from the prompt cache per day over the last " +
        usage.days + " days",
      top: "100 %",
      bottom: "0 %",
      days: usage.cache.by_day,
      barHeight: (d, plotH) => (d.hit_rate || 0) > 0 ? Math.max(1, d.hit_rate * plotH) : 0,
      attrs: (d) => ({ "data-rate": d.hit_rate || 0 }),
      title: (d) => d.day + ": " + percent(d.hit_rate) + " of " + d.input_tokens +
        " input tokens read from the cache (" + d.requests + " requests)",
    });
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
