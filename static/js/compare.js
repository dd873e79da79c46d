// The compare page: draws the figures handed over in the page (json_script "compare-data"), then, while one of
// the searches runs, asks /api/compare/ again every 5 s and redraws them and the table's figures in place.
// A light poll rather than the searches' websockets: one request serves every search chosen (up to 6), and the
// figures here (best so far, fronts) are small enough to send whole.
(function () {
  "use strict";
  const root = document.getElementById("compare-page");
  if (!root) return;
  const CONFIG = {responsive: true, displaylogo: false};
  const POLL_MS = 5000;

  function fmt(value, digits) { return value === null || value === undefined ? "—" : Number(value).toFixed(digits); }

  function setField(row, field, text) {
    const cell = row.querySelector("[data-field=" + field + "]");
    if (cell) cell.textContent = text;
  }

  function speedupText(r) {
    if (r.speedup === null || r.speedup === undefined) return "— (waits for " + (r.waiting || "the first result") + ")";
    const efficiency = r.efficiency === null || r.efficiency === undefined ? "" : " (" + Math.round(100 * r.efficiency) + "%)";
    return fmt(r.speedup, 2) + " of " + fmt(r.held, 1) + efficiency;
  }

  function showRows(rows) {
    for (const r of rows) {
      const row = document.querySelector("#compare-table tr[data-search='" + r.id + "']");
      if (!row) continue;
      const badge = row.querySelector("[data-field=status] .status");
      if (badge) { badge.textContent = r.status; badge.className = "status status-" + r.status; }
      setField(row, "best", fmt(r.best, 4));
      setField(row, "evaluations", r.done + "/" + r.total);
      setField(row, "failed", String(r.failed));
      setField(row, "device_hours", fmt(r.device_hours, 3));
      setField(row, "speedup", speedupText(r));
      setField(row, "wall", r.wall_text);
    }
  }

  async function draw(payload) {
    const figures = payload.figures;
    await Plotly.react("chart-best-evaluations", figures.best_evaluations.data, figures.best_evaluations.layout, CONFIG);
    await Plotly.react("chart-best-time", figures.best_time.data, figures.best_time.layout, CONFIG);
    const holder = document.getElementById("compare-charts");
    for (let i = 0; i < figures.pareto.length; i++) {
      let el = document.getElementById("chart-pareto-" + i);
      if (!el) {
        el = document.createElement("div");
        el.className = "chart";
        el.id = "chart-pareto-" + i;
        holder.appendChild(el);
      }
      await Plotly.react(el, figures.pareto[i].data, figures.pareto[i].layout, CONFIG);
    }
    showRows(payload.rows);
    root.dataset.drawn = String(Number(root.dataset.drawn || 0) + 1);
  }

  async function poll() {
    try {
      const response = await fetch(root.dataset.api, {headers: {Accept: "application/json"}});
      if (!response.ok) throw new Error("HTTP " + response.status);
      const payload = await response.json();
      await draw(payload);
      document.getElementById("compare-live").textContent =
        payload.live ? "live: redrawn every 5 s while a search runs" : "none of them runs";
      if (payload.live) setTimeout(poll, POLL_MS);
    } catch (error) {
      document.getElementById("compare-live").textContent = "could not refresh (" + error.message + "), trying again";
      setTimeout(poll, 2 * POLL_MS);
    }
  }

  for (const swatch of document.querySelectorAll(".swatch[data-colour]")) swatch.style.background = swatch.dataset.colour;
  const payload = JSON.parse(document.getElementById("compare-data").textContent);
  draw(payload).then(() => { if (payload.live) setTimeout(poll, POLL_MS); });
})();
