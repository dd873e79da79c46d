// The live search page's table of individuals: one page of rows at a time, sorted and filtered on the server
// (/searches/<id>/table/, an HTML fragment). Loaded before plotly.js, so the first page is asked for and shown
// while the 3.5 MB chart library still loads and before the snapshot's charts are drawn: a search of 10,000
// individuals shows its table first (benchmarks/big_pages.py). search_live.js refreshes it as events come.
window.NasTable = (function () {
  "use strict";
  const root = document.getElementById("search-page");
  const holder = document.getElementById("table-holder");
  const form = document.getElementById("table-filter");
  const table = {sort: "number", page: 1, timer: null, last: 0};
  if (!root || !holder || !form) return {load() {}, refreshSoon() {}};

  async function load() {
    const params = new URLSearchParams(new FormData(form));
    params.set("sort", table.sort);
    params.set("page", table.page);
    const response = await fetch(root.dataset.table + "?" + params.toString());
    if (response.ok) {
      holder.innerHTML = await response.text();
    } else {  // the message may quote the query: text, never markup
      const error = document.createElement("p");
      error.className = "bad";
      error.textContent = await response.text();
      holder.replaceChildren(error);
    }
    table.last = Date.now();
  }

  // At most every 2 seconds, however many results come.
  function refreshSoon() {
    if (table.timer) return;
    table.timer = setTimeout(() => { table.timer = null; load(); }, Math.max(0, 2000 - (Date.now() - table.last)));
  }

  holder.addEventListener("click", (e) => {
    const link = e.target.closest("a.sort, a.page");
    if (!link) return;
    e.preventDefault();
    if (link.classList.contains("sort")) {
      const key = link.dataset.sort;
      table.sort = table.sort === key ? "-" + key : key;
      table.page = 1;
    } else {
      table.page = Number(link.dataset.page);
    }
    load();
  });
  form.addEventListener("input", () => { table.page = 1; load(); });
  form.addEventListener("submit", (e) => { e.preventDefault(); load(); });

  load();
  return {load, refreshSoon};
})();
