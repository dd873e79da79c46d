// The search list: Grid.js (static/vendor/gridjs, https://gridjs.io) draws the table and its pager and sorts by
// any column, each page and sort asked of the server (/searches/rows/), so a sort covers every search, not
// one page. The page's own table (links that sort, a pager) stays for a browser without JavaScript.
// Ticked searches are kept across pages and sorts; "Compare" opens /compare/?ids=... with 2 to 6 of them.
(function () {
  "use strict";
  const holder = document.getElementById("search-grid");
  if (!holder || !window.gridjs) return;
  const h = gridjs.h;
  const form = document.getElementById("compare-form");
  const button = document.getElementById("compare-button");
  const hint = document.getElementById("compare-hint");
  const MIN = Number(form.dataset.min), MAX = Number(form.dataset.max);
  const picked = new Set();
  // The server's sort key of each column (null: that column does not sort).
  const KEYS = [null, "name", "owner", "space", "strategy", "status", "progress", "best", "started", "duration"];

  function detail(id) { return holder.dataset.detail.replace(/\/0\/$/, "/" + id + "/"); }

  function showPicked() {
    const n = picked.size;
    button.disabled = n < MIN || n > MAX;
    button.textContent = n ? "Compare " + n : "Compare";
    hint.textContent = n > MAX ? "at most " + MAX + " searches: untick " + (n - MAX)
      : n < MIN ? "tick " + MIN + " to " + MAX + " searches" : Array.from(picked).map((id) => "#" + id).join(", ");
  }

  function pickBox(id) {
    return h("input", {type: "checkbox", checked: picked.has(id), "aria-label": "compare #" + id, "data-search": id,
                       onChange: (e) => { if (e.target.checked) picked.add(id); else picked.delete(id); showPicked(); }});
  }

  const fixed = (value) => (value === null || value === undefined ? "—" : Number(value).toFixed(4));
  const columns = [
    {name: "", sort: false, width: "2.5rem", formatter: (id) => pickBox(id)},
    {name: "Name", formatter: (r) => h("a", {href: detail(r.id), title: r.name}, r.name)},
    "Owner", "Space", "Strategy",
    {name: "State", formatter: (r) => {
      const badge = h("span", {className: "status status-" + r.status, title: r.status_reason || ""}, r.status);
      // a failed search says why (the commonest failure) in the list itself
      return r.status === "failed" && r.status_reason
        ? h("span", {}, badge, " ", h("span", {className: "muted status-reason"}, r.status_reason)) : badge;
    }},
    {name: "Progress", formatter: (r) => h("span", {}, h("progress", {max: 100, value: r.progress}),
                                           " " + r.done + "/" + r.total)},
    {name: "Best fitness", formatter: (value) => fixed(value)},
    {name: "Started", formatter: (m) => (m ? h("time", {dateTime: m.iso, title: m.iso}, m.text) : "—")},
    "Duration",
  ];

  const grid = new gridjs.Grid({
    columns,
    server: {
      url: holder.dataset.rows + "?",
      then: (data) => data.results.map((r) => [r.id, r, r.owner, r.space, r.strategy, r, r, r.best_fitness,
                                                r.started_at, r.duration_text]),
      total: (data) => data.count,
    },
    sort: {
      multiColumn: false,
      server: {
        url: (prev, sorted) => {
          if (!sorted.length || !KEYS[sorted[0].index]) return prev;
          return prev + "&sort=" + (sorted[0].direction === 1 ? "" : "-") + KEYS[sorted[0].index];
        },
      },
    },
    pagination: {limit: 50, server: {url: (prev, page, limit) => prev + "&page=" + (page + 1) + "&per_page=" + limit}},
    className: {table: "grid"},
  });

  document.getElementById("search-list").hidden = true;
  const pager = document.getElementById("list-pager");
  if (pager) pager.hidden = true;
  grid.render(holder);
  grid.on("ready", () => { holder.dataset.ready = String(Number(holder.dataset.ready || 0) + 1); });

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (picked.size < MIN || picked.size > MAX) return;
    window.location = form.action + "?ids=" + Array.from(picked).join(",");
  });
  showPicked();
})();
