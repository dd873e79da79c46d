// The nodes page's states, kept current: reads GET /api/nodes/ every few seconds and updates each node's row
// (state, live and busy slots, who changed it), so a drain shows "drained" once the node's evaluations end.
(function () {
  "use strict";
  var table = document.getElementById("nodes");
  if (!table) { return; }
  var EVERY = 2000;

  function update(rows) {
    rows.forEach(function (row) {
      var tr = table.querySelector('tr[data-node="' + CSS.escape(row.node) + '"]');
      if (!tr) { return; }
      var state = tr.querySelector(".node-state");
      state.textContent = row.state;
      state.className = "node-state " + (row.state === "active" ? "ok" : "bad");
      tr.querySelector(".node-slots").textContent = row.slots;
      tr.querySelector(".node-busy").textContent = row.busy;
      tr.querySelector(".node-by").textContent = row.changed_by;
    });
  }

  function poll() {
    fetch(table.dataset.api, {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (body) { if (body) { update(body.nodes); } })
      .catch(function () { /* the server restarts: try again at the next tick */ })
      .then(function () { setTimeout(poll, EVERY); });
  }
  setTimeout(poll, EVERY);
})();
