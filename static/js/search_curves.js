// The search page's learning curves (webapp/dashboard/curve_chart.py draws the snapshot's): one trace per
// individual, named "#<number>", grown by its progress events (through the page's batched queue), recoloured
// by how it ended (pruned: red, with the pruner's dashed prediction); an individual that reported no progress on
// the way (one epoch) brings its whole curve with its individual.finished event.
const NasCurves = (function () {
  "use strict";

  // chart(): the chart's element; queue(chart, trace, columns, prototype): the page's batched extendTraces;
  // epochs: the training budget (where a prediction ends).
  function create({chart, queue, epochs}) {
    const prunes = {};  // the pruner's decision of each individual it stopped, until it ends
    const CURVE_STYLES = {running: {color: "rgba(230, 145, 30, 0.9)", width: 2},
                          done: {color: "rgba(60, 110, 180, 0.55)", width: 1.5},
                          pruned: {color: "rgba(194, 59, 50, 0.75)", width: 1.5},
                          failed: {color: "rgba(120, 120, 120, 0.4)", width: 1}};
    const Z90 = 1.6448536269514722;

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

    function end(p, retried) {
      const el = chart();
      if (!el || !el.data) return;
      const index = el.data.findIndex((t) => t.name === "#" + p.number);
      if (index < 0) {  // its last points may still wait in the batch: once more after it is drawn
        if (!retried) setTimeout(() => end(p, true), 250);
        else if (p.curve && p.curve.length) {  // no progress on the way (one epoch): its whole curve now
          const style = CURVE_STYLES[p.status] || CURVE_STYLES.done;
          Plotly.addTraces(el, {type: "scatter", mode: "lines+markers", name: "#" + p.number, showlegend: false,
            x: p.curve.map((c) => c[0]), y: p.curve.map((c) => c[1]), line: style,
            marker: {size: 5, color: style.color},
            hovertemplate: "#" + p.number + " (" + p.status + ")<br>epoch %{x}: %{y:.4f}<extra></extra>"});
          NasLive.reveal(el);
        }
        return;
      }
      const style = CURVE_STYLES[p.status] || CURVE_STYLES.done;
      Plotly.restyle(el, {line: [style], "marker.color": [style.color],
                          hovertemplate: ["#" + p.number + " (" + p.status + ")<br>epoch %{x}: %{y:.4f}<extra></extra>"]},
                     [index]);
      const prune = prunes[p.number];
      if (p.status === "pruned" && prune && prune.predicted !== null && prune.predicted !== undefined) {
        const budget = epochs || prune.last[0];
        Plotly.addTraces(el, {type: "scatter", mode: "lines+markers", name: "#" + p.number + " predicted",
          x: [prune.last[0], budget], y: [prune.last[1], prune.predicted], showlegend: false,
          line: Object.assign({dash: "dash"}, CURVE_STYLES.pruned), marker: {size: 4},
          error_y: (prune.low !== null && prune.low !== undefined && prune.high !== null && prune.high !== undefined)
            ? {type: "data", symmetric: false, array: [0, Math.max(prune.high - prune.predicted, 0)],
               arrayminus: [0, Math.max(prune.predicted - prune.low, 0)], visible: true, color: CURVE_STYLES.pruned.color}
            : {type: "data", array: [0, Z90 * (prune.spread || 0)], visible: true, color: CURVE_STYLES.pruned.color},
          hovertemplate: "#" + p.number + ": " + (prune.reason || "") + "<extra>predicted</extra>"});
      }
      delete prunes[p.number];
    }

    return {grow, end};
  }

  return {create};
})();
