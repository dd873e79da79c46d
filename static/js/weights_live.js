// A weight search's page: draws the snapshot the server rendered into it, then follows the search's websocket
// (live_socket.js) from the snapshot's sequence number. A `weights.generation` event carries the generation's
// whole row, so it is appended to the charts here, with no request: each trace names the row field it plots
// in its `meta` (webapp/dashboard/weights_charts.py). A `resync` re-fetches the snapshot from the JSON.
(function () {
  "use strict";
  const page = document.getElementById("weights-page");
  if (!page) return;
  const CONFIG = {responsive: true, displaylogo: false};
  const CHARTS = ["chart-weights-fitness", "chart-weights-traffic", "chart-weights-timings", "chart-weights-nodes"];
  const setText = NasLive.setText;
  // The number of the last generation drawn: a row the snapshot already holds may still arrive as an event.
  const state = {last: -1, generations: 0, generationsDrawn: 0};
  const live = NasLive.create({searchId: page.dataset.search, apply, applied: mark, resync: refetch});

  function field(row, path) {
    let value = row;
    for (const key of path.split(".")) value = value == null ? null : value[key];
    return value === undefined ? null : value;
  }

  function load(snapshot) {
    for (const [id, figure] of Object.entries(snapshot.figures)) {
      const holder = document.getElementById(id);
      if (holder) Plotly.react(holder, figure.data, figure.layout, CONFIG);
    }
    const summary = snapshot.summary;
    state.last = summary.last ? summary.last.number : -1;
    state.generations = summary.generations;
    live.seq = snapshot.seq;
    NasLive.showStatus(summary.status);
    setText("status-reason", summary.reason || "");
    progress(summary.generation, summary.validation_accuracy);
    mark();
  }

  function progress(generation, accuracy) {
    const bar = document.getElementById("progress");
    if (bar) { bar.max = state.generations || 1; bar.value = generation; }
    setText("progress-text", generation + "/" + state.generations);
    setText("validation-accuracy", accuracy == null ? "—" : Number(accuracy).toFixed(4));
  }

  function mark() {
    page.dataset.seq = live.seq;
    page.dataset.last = state.last;
  }

  // One generation: a point on each line and bar chart, its offspring added to the per-node bars.
  function addGeneration(row) {
    if (row.number <= state.last) return;
    state.last = row.number;
    for (const id of CHARTS) {
      const el = document.getElementById(id);
      if (!el || !el.data) continue;
      const xs = [], ys = [], indices = [];
      el.data.forEach((trace, index) => {
        const meta = trace.meta || {};
        if (meta.field) { xs.push([row.number]); ys.push([field(row, meta.field)]); indices.push(index); }
        else if (meta.sum) addCounts(el, index, field(row, meta.sum) || {});
      });
      if (indices.length) Plotly.extendTraces(el, {x: xs, y: ys}, indices);
      NasLive.reveal(el);
    }
    progress(row.number + 1, row.validation_accuracy);
  }

  function addCounts(el, index, counts) {
    const trace = el.data[index];
    const totals = {};
    (trace.x || []).forEach((name, i) => { totals[name] = trace.y[i]; });
    for (const [name, count] of Object.entries(counts)) totals[name] = (totals[name] || 0) + count;
    const names = Object.keys(totals).sort();
    Plotly.restyle(el, {x: [names], y: [names.map((name) => totals[name])]}, [index]);
  }

  function apply(event) {
    if (event.type === "weights.generation") addGeneration(event.data);
    else if (event.type === "search.status") {
      NasLive.showStatus(event.data.status);
      setText("status-reason", event.data.reason || "");
    }
  }

  // After a resync (more events missed than one catch-up holds): the whole snapshot again, once.
  async function refetch() {
    const response = await fetch(page.dataset.figures, {credentials: "same-origin"});
    if (!response.ok) throw new Error("weights: HTTP " + response.status);
    load(await response.json());
  }

  // For tests and curious users, as on the architecture page.
  window.nasLive = {state, live, drop: live.drop};

  load(JSON.parse(document.getElementById("weights-snapshot").textContent));
  live.connect();
})();
