/** The dashboard's stylesheet, as text (the page embeds it; its CSP allows it by its hash). */
export const DASHBOARD_STYLE = `
:root {
  color-scheme: light dark;
  --fg: #1d232a; --muted: #5b6672; --bg: #f6f7f9; --card: #ffffff; --line: #d9dee4;
  --accent: #2563eb; --ok: #15803d; --warn: #b45309; --error: #b91c1c;
}
@media (prefers-color-scheme: dark) {
  :root {
    --fg: #e6e9ee; --muted: #9aa5b1; --bg: #14181d; --card: #1c2128; --line: #30363f;
    --accent: #60a5fa; --ok: #4ade80; --warn: #fbbf24; --error: #f87171;
  }
}
[hidden] { display: none !important; }
* { box-sizing: border-box; }
body {
  margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
}
header {
  display: flex; align-items: center; gap: 1rem; padding: 0.75rem 1.25rem;
  background: var(--card); border-bottom: 1px solid var(--line);
}
header h1 { font-size: 1.1rem; margin: 0; }
#status { flex: 1; color: var(--muted); }
nav { display: flex; gap: 0.5rem; }
main { max-width: 1280px; margin: 0 auto; padding: 1rem 1.25rem 3rem; }
section {
  background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 0.75rem 1rem 1rem; margin: 1rem 0;
}
h2 { font-size: 1rem; margin: 0.25rem 0 0.75rem; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 0.35rem 0.5rem; border-bottom: 1px solid var(--line); }
th { color: var(--muted); font-weight: 600; font-size: 0.85rem; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.mono, code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
tr.revoked td, tr.expired td { color: var(--muted); }
h3 { font-size: 0.95rem; margin: 0; grid-column: 1 / -1; }
form.grid {
  display: grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); gap: 0.5rem 0.75rem;
  align-items: end; margin-bottom: 0.75rem; padding: 0.75rem; border: 1px solid var(--line);
  border-radius: 6px;
}
form.grid .buttons { display: flex; gap: 0.5rem; }
form.grid .error { grid-column: 1 / -1; margin: 0; }
label.row { display: inline-flex; flex-direction: row; align-items: center; gap: 0.4rem; }
textarea, select {
  font: inherit; padding: 0.35rem 0.5rem; border: 1px solid var(--line); border-radius: 6px;
  background: var(--bg); color: var(--fg);
}
#key-rows td { vertical-align: top; }
#key-rows .name { font-weight: 600; }
#key-rows .actions div { display: flex; flex-wrap: wrap; gap: 0.3rem; }
#key-rows .times div { white-space: nowrap; }
td.status { font-weight: 600; }
.status-active { color: var(--ok); }
.status-disabled { color: var(--warn); }
.status-expired, .status-revoked { color: var(--error); }
.budget { margin-bottom: 0.4rem; }
.budget .label { font-size: 0.8rem; }
svg.meter { display: block; }
svg.meter .track { fill: var(--line); }
svg.meter .spent { fill: var(--accent); }
svg.meter .held { fill: var(--warn); opacity: 0.7; }
svg.meter.high .spent { fill: var(--warn); }
svg.meter.full .spent { fill: var(--error); }
.ok { color: var(--ok); }
.warn { color: var(--warn); }
.error { color: var(--error); }
.note { color: var(--muted); font-size: 0.85rem; }
form.inline { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: end; margin-bottom: 0.75rem; }
label { display: flex; flex-direction: column; gap: 0.2rem; font-size: 0.85rem; color: var(--muted); }
input {
  font: inherit; padding: 0.35rem 0.5rem; border: 1px solid var(--line); border-radius: 6px;
  background: var(--bg); color: var(--fg);
}
button {
  font: inherit; padding: 0.35rem 0.8rem; border: 1px solid var(--line); border-radius: 6px;
  background: var(--card); color: var(--fg); cursor: pointer;
}
button[type="submit"] { background: var(--accent); border-color: var(--accent); color: #fff; }
button.danger { background: var(--error); border-color: var(--error); color: #fff; }
#signin { max-width: 380px; margin: 3rem auto; display: flex; flex-direction: column; gap: 0.75rem; }
#new-secret {
  border: 1px solid var(--warn); border-radius: 6px; padding: 0.5rem 0.75rem; margin-bottom: 0.75rem;
}
#new-secret code { display: block; margin: 0.4rem 0; word-break: break-all; user-select: all; }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart .axis { stroke: var(--line); stroke-width: 1; }
svg.chart .label { fill: var(--muted); font-size: 11px; }
svg.chart .bar { fill: var(--accent); }
`;
