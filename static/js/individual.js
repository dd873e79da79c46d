// The individual page: its learning curve, drawn from the figure the server hands over in a JSON script element
// (json_script: data, never code, so the page runs under a policy that forbids inline scripts).
(function () {
  "use strict";
  const source = document.getElementById("curve-figure");
  const chart = document.getElementById("chart-curve");
  if (!source || !chart) return;
  const figure = JSON.parse(source.textContent);
  Plotly.newPlot(chart, figure.data, figure.layout, {responsive: true, displaylogo: false});
})();
