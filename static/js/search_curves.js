// The search page's learning curves (webapp/dashboard/curve_chart.py draws the snapshot's): one trace per
// individual, named "#<number>", grown by its progress events (through the page's batched queue), recoloured
// by how it ended (pruned: red, with the pruner's dashed prediction); an individual that reported no progress on
// the way (one epoch) brings its whole curve with its individual.finished event.
const NasCurves = (function () {
  "use strict";

  // chart(): the chart's element; queue(chart, trace, columns, prototype): the page's batched extendTraces;
  // schedule(): asks for the page's next batch; epochs: the training budget (where a prediction ends).
  function create({chart, queue, schedule, epochs}) {
    const prunes = {};  // the pruner's decision of each individual it stopped, until it ends
    const CURVE_STYLES = {running: {color: "rgba(230, 145, 30, 0.9)", width: 2},
                          done: {color: "rgba(60, 110, 180, 0.55)", width: 1.5},
                          pruned: {color: "rgba(194, 59, 50, 0.75)", width: 1.5},
                          failed: {color: "rgba(120, 120, 120, 0.4)", width: 1}};
    const Z90 = 1.6448536269514722;
    const SHOWN = 200;  // curve_chart.SHOWN

    function grow(data) {
      const point = data.point || {};
      if (point.val_accuracy === undefined || point.val_accuracy === null) return;
      queue("curves", "#" + data.number, {x: [point.epoch], y: [point.val_accuracy]},
            {type: "scatter", mode: "lines+markers", showlegend: false, line: CURVE_STYLES.running,
             marker: {size: 5, color: CURVE_STYLES.running.color},
             hovertemplate: "#" + data.number + " (running)<br>epoch %{x}: %{y:.4f}<extra></extra>"});
      if (data.prune && data.prune.stop) {
        prunes[data.number] = Object.assign({}, data.prune, {last: [point.epoch, point.val_accuracy]});
      }
    }

    // An individual that ended: restyled by how it ended (or drawn whole), with the next batch (draw()), so a
    // search finishing several a second costs one redraw per batch, not one per individual.
    const ended = [];
    function end(p) {
      ended.push(p);
      schedule();
    }

    function hover(p, status) { return "#" + p.number + " (" + status + ")<br>epoch %{x}: %{y:.4f}<extra></extra>"; }

    function predictionTrace(p, prune) {
      const budget = epochs || prune.last[0];
      const bounded = prune.low !== null && prune.low !== undefined && prune.high !== null && prune.high !== undefined;
      return {type: "scatter", mode: "lines+markers", name: "#" + p.number + " predicted",
        x: [prune.last[0], budget], y: [prune.last[1], prune.predicted], showlegend: false,
        line: Object.assign({dash: "dash"}, CURVE_STYLES.pruned), marker: {size: 4},
        error_y: bounded
          ? {type: "data", symmetric: false, array: [0, Math.max(prune.high - prune.predicted, 0)],
             arrayminus: [0, Math.max(prune.predicted - prune.low, 0)], visible: true, color: CURVE_STYLES.pruned.color}
          : {type: "data", array: [0, Z90 * (prune.spread || 0)], visible: true, color: CURVE_STYLES.pruned.color},
        hovertemplate: "#" + p.number + ": " + (prune.reason || "") + "<extra>predicted</extra>"};
    }

    // Called by the page after each batch's points are drawn (so a curve's last points are on the chart).
    function draw() {
      const el = chart();
      if (!el) { ended.length = 0; return; }  // a page without the curves chart keeps nothing
      if (!ended.length || !el.data) return;  // not drawn yet: after the snapshot's next batch
      const index = new Map(el.data.map((t, i) => [t.name, i]));
      const restyle = {indices: [], line: [], color: [], hover: []};
      const added = [];
      for (const p of ended.splice(0)) {
        const style = CURVE_STYLES[p.status] || CURVE_STYLES.done;
        const at = index.get("#" + p.number);
        if (at !== undefined) {
          restyle.indices.push(at);
          restyle.line.push(style);
          restyle.color.push(style.color);
          restyle.hover.push(hover(p, p.status));
        } else if (p.curve && p.curve.length) {  // no progress on the way (one epoch): its whole curve now
          added.push({type: "scatter", mode: "lines+markers", name: "#" + p.number, showlegend: false,
                      x: p.curve.map((c) => c[0]), y: p.curve.map((c) => c[1]), line: style,
                      marker: {size: 5, color: style.color}, hovertemplate: hover(p, p.status)});
        }
        const prune = prunes[p.number];
        if (p.status === "pruned" && prune && prune.predicted !== null && prune.predicted !== undefined) {
          added.push(predictionTrace(p, prune));
        }
        delete prunes[p.number];
      }
      if (restyle.indices.length) {
        Plotly.restyle(el, {line: restyle.line, "marker.color": restyle.color, hovertemplate: restyle.hover},
                       restyle.indices);
      }
      if (added.length) Plotly.addTraces(el, added);
      trim(el);
      NasLive.reveal(el);
    }

    // As the snapshot (webapp/dashboard/curve_chart.py): the latest SHOWN ended individuals' curves, plus the
    // running ones; older curves leave the chart, so a long search's page stays light.
    function trim(el) {
      const finished = [];
      for (const t of el.data) {
        if (/^#\d+$/.test(t.name || "") && !String(t.hovertemplate || "").includes("(running)")) {
          finished.push(Number(t.name.slice(1)));
        }
      }
      if (finished.length <= SHOWN) return;
      finished.sort((a, b) => a - b);
      const drop = new Set(finished.slice(0, finished.length - SHOWN).map((n) => "#" + n));
      const indices = [];
      el.data.forEach((t, i) => { if (drop.has(String(t.name || "").replace(/ predicted$/, ""))) indices.push(i); });
      Plotly.deleteTraces(el, indices);
    }

    return {grow, end, draw};
  }

  return {create};
})();
