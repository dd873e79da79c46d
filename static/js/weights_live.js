// A weight search's page: draws the figures the server built, and while the search runs refreshes them from
// its JSON every few seconds (a generation is one point per chart; no per-event deltas needed).
(function () {
  "use strict";
  const page = document.getElementById("weights-page");
  if (!page) return;
  const REFRESH_MS = 3000;

  function draw(figures) {
    for (const [id, figure] of Object.entries(figures)) {
      const holder = document.getElementById(id);
      if (holder) Plotly.react(holder, figure.data, figure.layout, {responsive: true, displaylogo: false});
    }
  }

  function show(summary) {
    document.getElementById("search-status").textContent = summary.status;
    document.getElementById("progress").value = summary.generation;
    document.getElementById("progress-text").textContent = summary.generation + "/" + summary.generations;
    const accuracy = summary.validation_accuracy;
    document.getElementById("validation-accuracy").textContent = accuracy == null ? "—" : accuracy.toFixed(4);
  }

  async function refresh() {
    try {
      const response = await fetch(page.dataset.figures, {credentials: "same-origin"});
      if (response.ok) {
        const body = await response.json();
        draw(body.figures);
        show(body.summary);
        if (body.summary.status !== "running" && body.summary.status !== "stopping") return;
      }
    } catch (error) {
      console.warn("weights refresh failed", error);
    }
    setTimeout(refresh, REFRESH_MS);
  }

  draw(JSON.parse(document.getElementById("weights-figures").textContent));
  if (page.dataset.status === "running" || page.dataset.status === "stopping") setTimeout(refresh, REFRESH_MS);
})();
