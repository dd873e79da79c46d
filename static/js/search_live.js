// The live search page: a snapshot over HTTP, then the search's events over a websocket (live_socket.js),
// applied in sequence order. Points are keyed by individual number, so an event seen twice changes nothing.
(function () {
  "use strict";
  const root = document.getElementById("search-page");
  if (!root) return;
  const searchId = root.dataset.search;
  const CONFIG = {responsive: true, displaylogo: false};
  const FINAL = new Set(["finished", "stopped", "failed"]);
  const state = {plotted: new Set(), best: null, start: null, nodeCounts: {}, status: null, pending: {},
                 flushTimer: null, dropped: 0, running: {}, skew: 0, runningDrawn: 0, nodes: null};
  const live = NasLive.create({searchId, apply, applied: mark, resync: loadSnapshot});
  const curves = NasCurves.create({chart: () => chart("curves"), queue, schedule: () => scheduleFlush(),
                                   epochs: Number(root.dataset.epochs)});
  const setText = NasLive.setText, reveal = NasLive.reveal;

  function chart(name) { return document.getElementById("chart-" + name); }

  function fmt(value, digits) { return value === null || value === undefined ? "—" : Number(value).toFixed(digits); }

  function nodeLabel(p) { return (p.node || "-") + "/" + (p.device || "-"); }

  function hover(p) { return "#" + p.number + " " + (p.description || ""); }

  // --- snapshot --------------------------------------------------------------------------------------------

  async function loadSnapshot() {
    const response = await fetch(root.dataset.snapshot, {headers: {Accept: "application/json"}});
    if (!response.ok) throw new Error("snapshot: HTTP " + response.status);
    const arrived = Date.now();
    const snap = await response.json();
    // The server's clock when it answered: a snapshot served from the cache was built (its "now") earlier.
    const serverTime = Number(response.headers.get("X-Server-Time")) || snap.now;
    for (const [name, figure] of Object.entries(snap.figures)) {
      const el = chart(name);
      if (el) await Plotly.react(el, figure.data, figure.layout, CONFIG);
    }
    live.seq = snap.seq;
    state.plotted = new Set(snap.plotted);
    state.best = snap.best;
    state.start = snap.start;
    state.nodeCounts = snap.node_counts;
    state.running = {};
    for (const p of snap.running || []) state.running[p.number] = p;
    state.skew = serverTime ? serverTime * 1000 - arrived : 0;
    for (const label of Object.keys(snap.node_counts || {})) addNodeOption(label);
    showSearch(snap.search);
    showUnreadable(snap.data_unreadable);
    showSummary(snap.summary);
    const fitness = chart("fitness");
    if (fitness && !fitness.dataset.clicks) {
      fitness.dataset.clicks = "1";
      fitness.on("plotly_click", (e) => {
        const number = e.points && e.points[0] && e.points[0].customdata;
        if (number !== undefined) window.location = root.dataset.individual.replace(/\/0\/$/, "/" + number + "/");
      });
    }
    mark();
  }

  function mark() {
    root.dataset.seq = live.seq;
    root.dataset.points = state.plotted.size;
  }

  // Why the search ended as it did (a failed search: what failed); nothing while it runs.
  function showReason(status, reason) {
    const el = document.getElementById("status-reason");
    if (!el) return;
    el.textContent = status === "running" ? "" : (reason || "");
    el.hidden = !el.textContent;
  }

  // One line per worker that cannot read the search's data set (its evaluations went to the others).
  function showUnreadable(notices) {
    const el = document.getElementById("data-unreadable");
    if (!el || !notices) return;
    el.replaceChildren(...notices.map((text) => {
      const line = document.createElement("p");
      line.className = "bad";
      line.textContent = text;
      return line;
    }));
    el.hidden = !notices.length;
  }

  function showSearch(s) {
    state.status = s.status;
    NasLive.showStatus(s.status);
    showReason(s.status, s.status_reason);
    const progress = document.getElementById("progress");
    if (progress) { progress.max = s.total || 1; progress.value = s.done; }
    setText("progress-text", s.done + "/" + s.total);
    setText("best-fitness", fmt(s.best_fitness, 4));
  }

  // Speedup, its ideal (the slots the search could use) and efficiency as webapp/searches/accounting.py defines
  // them; before they are defined (no result yet) the line says what they wait for.
  function showSummary(summary) {
    if (!summary) return;
    const defined = summary.speedup !== null && summary.speedup !== undefined;
    setText("speedup-value", defined ? fmt(summary.speedup, 2) + " of " + fmt(summary.held, 1)
                                     : "— (waits for " + (summary.waiting || "the first result") + ")");
    setText("efficiency-value", defined && summary.efficiency !== null && summary.efficiency !== undefined
                                ? Math.round(100 * summary.efficiency) + "%" : "—");
    setText("utilisation-value", summary.utilisation != null ? fmt(summary.utilisation, 2) : "—");
  }

  // --- deltas, batched per chart and trace, drawn at most ten times a second --------------------------------
  // Drawing is paced by its own cost: a batch waits at least 100 ms after the last, and at least three times as
  // long as the last one took to reach the screen. Where drawing is slow (a busy machine; a browser without a GPU
  // renders WebGL charts in software) batches grow instead of the page falling behind: its buttons stay
  // responsive and no point is dropped, each is drawn a little later.
  const pace = {cost: 0, MIN_MS: 100, MAX_MS: 5000};

  function scheduleFlush() {
    if (state.flushTimer) return;
    state.flushTimer = setTimeout(flush, Math.min(pace.MAX_MS, Math.max(pace.MIN_MS, 3 * pace.cost)));
  }

  // Runs draw() and records how long it took, up to the next frame (the browser's layout and paint included).
  function timed(draw) {
    const t0 = performance.now();
    try { draw(); } finally { requestAnimationFrame(() => { pace.cost = performance.now() - t0; }); }
  }

  function queue(chartName, traceName, columns, prototype) {
    const byTrace = (state.pending[chartName] = state.pending[chartName] || {});
    const entry = (byTrace[traceName] = byTrace[traceName] || {prototype, columns: {}});
    for (const [key, values] of Object.entries(columns)) {
      entry.columns[key] = (entry.columns[key] || []).concat(values);
    }
    scheduleFlush();
  }

  function flush() {
    state.flushTimer = null;
    timed(drawPending);
  }

  // Each trace's index on a chart, by name (the first of a name, as findIndex).
  function traceIndex(el) {
    const index = new Map();
    el.data.forEach((t, i) => { if (!index.has(t.name)) index.set(t.name, i); });
    return index;
  }

  function drawPending() {
    const pending = state.pending;
    state.pending = {};
    for (const [chartName, traces] of Object.entries(pending)) {
      const el = chart(chartName);
      if (!el || !el.data) continue;
      // New traces in one call, then every trace's new points in one call per set of columns: one redraw each.
      let index = traceIndex(el);
      const fresh = Object.entries(traces).filter(([name]) => !index.has(name)).map(([name, entry]) => {
        const empty = {};
        for (const key of Object.keys(entry.columns)) empty[key] = [];
        return Object.assign({name}, entry.prototype, empty);
      });
      if (fresh.length) {
        Plotly.addTraces(el, fresh);
        index = traceIndex(el);
      }
      const groups = {};
      for (const [traceName, entry] of Object.entries(traces)) {
        const keys = Object.keys(entry.columns).sort().join(",");
        const group = (groups[keys] = groups[keys] || {update: {}, indices: []});
        for (const [key, values] of Object.entries(entry.columns)) {
          (group.update[key] = group.update[key] || []).push(values);
        }
        group.indices.push(index.get(traceName));
      }
      for (const group of Object.values(groups)) Plotly.extendTraces(el, group.update, group.indices);
      reveal(el);
    }
    curves.draw();
    drawBars();
    drawRunning();
  }

  const ROLE_TRACES = {final: "final runs", supernet: "supernet", check: "ranking check (stand-alone)"};

  function addPoint(p) {
    delete state.running[p.number];
    if (state.plotted.has(p.number) || p.finished === null) return;
    state.plotted.add(p.number);
    const t = p.finished * 1000;
    const failed = p.fitness === null;
    const label = nodeLabel(p);
    addNodeOption(label);
    // a final run (`final`), a one-shot search's supernet or ranking check: their own trace, never "best so far"
    const final = Boolean(p.role) && p.role !== "search";
    queue("fitness", failed ? "failed" : (final ? (ROLE_TRACES[p.role] || p.role) : label),
          {x: [t], y: [failed ? 0 : p.fitness], text: [hover(p)], customdata: [p.number]},
          {type: "scattergl", mode: "markers",
           marker: failed ? {symbol: "x", color: "#c23b32"} : (final ? {symbol: "diamond", size: 10} : {size: 7}),
           hovertemplate: "%{text}<br>fitness %{y:.4f}<extra>%{fullData.name}</extra>"});
    curves.end(p);
    if (!failed && !final && p.status !== "pruned") {  // a pruned individual's fitness is partial, never "best"
      state.best = state.best === null ? p.fitness : Math.max(state.best, p.fitness);
      queue("best", "best so far", {x: [t], y: [state.best]}, {type: "scattergl", mode: "lines+markers",
            line: {shape: "hv", width: 3}, marker: {size: 6}});
    }
    if (state.start === null) state.start = p.dispatched || p.started || p.finished;
    const count = (state.nodeCounts[label] = (state.nodeCounts[label] || 0) + 1);
    queue("throughput", label, {x: [t], y: [3600 * count / Math.max(p.finished - state.start, 1e-3)]},
          {type: "scattergl", mode: "lines+markers", marker: {size: 5}});
    const start = (p.started || p.finished - (p.duration || 0)) * 1000;
    const slot = p.slot || label;
    queue("gantt", label, {x: [start, t, null], y: [slot, slot, null], text: [hover(p), hover(p), null]},
          {type: "scattergl", mode: "lines", line: {width: 12}, connectgaps: false,
           hovertemplate: "%{text}<extra>%{fullData.name}</extra>"});
  }

  function showPruning(pruning) {
    if (!pruning) return;
    let text = "pruned " + pruning.pruned + ": " + Math.round(pruning.epochs_trained) + " of " +
      Math.round(pruning.epochs_budget) + " epochs trained (" +
      Math.round(100 * (1 - pruning.epochs_trained / Math.max(pruning.epochs_budget, 1e-9))) + "% saved)";
    const audit = pruning.audit || {};
    if (audit.finished) text += "; false stops " + Math.round(100 * (audit.rate || 0)) + "% of " + audit.finished + " audited";
    const coverage = audit.coverage || {};
    if (coverage.rate !== null && coverage.rate !== undefined) {
      text += "; observed coverage " + Math.round(100 * coverage.rate) + "% of stated " +
        Math.round(100 * coverage.stated) + "% (" + coverage.intervals + " intervals)";
    }
    setText("pruning-saved", text);
  }

  // The table's node filter offers every node seen so far, those that joined after the page loaded included.
  function addNodeOption(label) {
    const select = document.querySelector("#table-filter select[name=node]");
    const node = label.split("/")[0];
    if (!select || node === "-" || Array.from(select.options).some((o) => o.value === node)) return;
    const option = document.createElement("option");
    option.value = option.textContent = node;
    select.appendChild(option);
  }

  // Evaluations under way: one trace on the timeline whose bars end at "now", stretched every second.
  function drawRunning() {
    const el = chart("gantt");
    const running = Object.values(state.running);
    if (!el || !el.data || (running.length === 0 && state.runningDrawn === 0)) return;
    const now = Date.now() + state.skew;
    const x = [], y = [], text = [];
    for (const p of running) {
      const slot = p.slot || nodeLabel(p);
      x.push(p.started * 1000, Math.max(now, p.started * 1000), null);
      y.push(slot, slot, null);
      text.push(hover(p) + " (running)", hover(p) + " (running)", null);
    }
    const index = el.data.findIndex((t) => t.name === "running");
    if (index < 0) return;
    // Plotly.update, not restyle: restyling x would turn the date axis into a plain number axis.
    Plotly.update(el, {x: [x], y: [y], text: [text]}, {"xaxis.type": "date", "yaxis.type": "category"}, [index]);
    state.runningDrawn = running.length;
    reveal(el);
  }

  function progress(event) {
    const data = event.data;
    const progressBar = document.getElementById("progress");
    if (progressBar) { progressBar.max = data.total || 1; progressBar.value = data.done; }
    setText("progress-text", data.done + "/" + data.total);
    setText("best-fitness", fmt(data.best_fitness, 4));
    const stats = data.stats;
    showSummary(stats);
    showPruning(data.pruning);
    if (stats && stats.speedup !== null && stats.speedup !== undefined) {  // the line's own numbers
      queue("speedup", "speedup", {x: [event.time * 1000], y: [stats.speedup]},
            {type: "scatter", mode: "lines+markers"});
      queue("speedup", "ideal", {x: [event.time * 1000], y: [stats.held]}, {type: "scatter", mode: "lines+markers"});
      queue("speedup", "efficiency", {x: [event.time * 1000], y: [stats.efficiency]},
            {type: "scatter", mode: "lines+markers", yaxis: "y2"});
    }
    if (stats && stats.nodes) { state.nodes = stats.nodes; scheduleFlush(); }  // drawn with the next batch
  }

  // The per-node bars, from the latest search.progress's nodes (one redraw per batch, not one per result).
  function drawBars() {
    const bars = chart("nodes");
    const nodes = state.nodes;
    if (!nodes || !bars || !bars.data) return;
    state.nodes = null;
    const names = nodes.map((n) => n.node + "/" + n.device);
    const tenth = (v) => (v === null || v === undefined ? null : Math.round(v * 10) / 10);
    const perHour = nodes.map((n) => tenth(n.throughput_per_hour));
    Plotly.restyle(bars, {x: [names, names], y: [nodes.map((n) => n.count), perHour]}, [0, 1]);
    reveal(bars);
  }

  // Figures that change shape as results come (the Pareto front; the strategy's beliefs, kept with each
  // search.progress): redrawn from the server (the URL in the page's data-<name>), each at most every 3 seconds.
  const redrawTimers = {};
  function redrawSoon(name) {
    const el = chart(name);
    if (!el || redrawTimers[name]) return;
    redrawTimers[name] = setTimeout(async () => {
      redrawTimers[name] = null;
      const response = await fetch(root.dataset[name]);
      if (response.ok) { const figure = await response.json(); Plotly.react(el, figure.data, figure.layout, CONFIG); }
    }, 3000);
  }

  function apply(event) {
    if (event.type === "individual.finished") { addPoint(event.data); redrawSoon("pareto"); }
    else if (event.type === "individual.started") {
      if (!state.plotted.has(event.data.number) && event.data.started) state.running[event.data.number] = event.data;
      scheduleFlush();
    }
    else if (event.type === "individual.lost") {  // its worker died: no longer running, queued again
      delete state.running[event.data.number];
      state.runningDrawn = Math.max(state.runningDrawn, 1);  // redraw the timeline without its bar
      scheduleFlush();
    }
    else if (event.type === "search.progress") { progress(event); redrawSoon("beliefs"); }
    else if (event.type === "search.data_unreadable") showUnreadable(event.data.notices);
    else if (event.type === "individual.progress") { curves.grow(event.data); return; }
    else if (event.type === "search.status") {
      state.status = event.data.status;
      NasLive.showStatus(event.data.status);
      showReason(event.data.status, event.data.reason);
    }
    if (event.type === "search.final" || event.type === "search.status" || (event.data && event.data.role === "final")) {
      refreshFinalSoon();
    }
    if (event.type === "search.oneshot" || event.type === "search.status" || event.type === "individual.progress" ||
        event.type === "individual.finished") {
      refreshOneshotSoon();
    }
    NasTable.refreshSoon();
  }

  // --- the final training's panel (searches with `final`): reloaded from the server as its runs advance -----

  const finalPanel = {timer: null};
  function refreshFinalSoon() {
    const holder = document.getElementById("final-panel");
    if (!holder || !root.dataset.final || finalPanel.timer) return;
    finalPanel.timer = setTimeout(async () => {
      finalPanel.timer = null;
      const response = await fetch(root.dataset.final);
      if (response.ok) holder.innerHTML = await response.text();
    }, 1000);
  }

  // --- a one-shot search's panel: phase, supernet curve, ranking check; reloaded from the server ---------------
  const oneshotPanel = {timer: null};
  function refreshOneshotSoon() {
    const holder = document.getElementById("oneshot-panel");
    if (!holder || !root.dataset.oneshot || oneshotPanel.timer) return;
    oneshotPanel.timer = setTimeout(async () => {
      oneshotPanel.timer = null;
      const response = await fetch(root.dataset.oneshot);
      if (response.ok) holder.innerHTML = await response.text();
    }, 1000);
  }

  // The best-k zip can take seconds (each architecture's first ONNX export): fetch it with the button saying so,
  // then save it; an error is shown, not a blank tab. A plain link still works without JavaScript.
  function slowDownloads() {
    const button = document.getElementById("download-best");
    if (!button) return;
    button.addEventListener("click", async (e) => {
      e.preventDefault();
      if (button.dataset.busy) return;
      const label = button.textContent;
      button.dataset.busy = "1";
      button.textContent = "Preparing zip… (ONNX export)";
      try {
        const response = await fetch(button.href);
        if (!response.ok) throw new Error((await response.text()) || "HTTP " + response.status);
        const match = /filename="?([^";]+)"?/.exec(response.headers.get("Content-Disposition") || "");
        const link = document.createElement("a");
        link.href = URL.createObjectURL(await response.blob());
        link.download = match ? match[1] : "best.zip";
        document.body.appendChild(link);
        link.click();
        setTimeout(() => { URL.revokeObjectURL(link.href); link.remove(); }, 60000);
        button.textContent = label;
      } catch (error) {
        button.textContent = label;
        setText("live-state", "download failed: " + error.message);
      } finally {
        delete button.dataset.busy;
      }
    });
  }

  // For tests and curious users: window.nasLive.drop(ms) closes the socket as a network failure would, and
  // stays offline for ms milliseconds (events published meanwhile are caught up after the reconnect).
  window.nasLive = {
    state,
    live,
    drop(ms) {
      state.dropped += 1;
      live.drop(ms);
    },
    pointCount() {
      const el = chart("fitness");
      return el && el.data ? el.data.reduce((n, t) => n + t.x.length, 0) : 0;
    },
    csrf: NasLive.csrf,
  };

  // The running bars stretch to "now" every second, or as often as their drawing's cost allows (a batch that is
  // due redraws them anyway).
  (function stretchRunning() {
    if (!state.flushTimer) timed(drawRunning);
    setTimeout(stretchRunning, Math.max(1000, 5 * pace.cost));
  })();

  slowDownloads();
  loadSnapshot().then(live.connect).catch((error) => setText("live-state", "could not load: " + error.message));
})();
