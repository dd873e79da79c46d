// What every search page shares beside its charts: the browser's notification when the search ends (asked for by
// the "Notify me" button, never on load), and the notice that every worker of its pool is drained or paused
// (the loop's "search.workers" events). Both follow the events live_socket.js applies ("nas:event").
(function () {
  "use strict";
  const button = document.getElementById("notify-button");
  const idle = document.getElementById("workers-idle");
  const page = document.querySelector("[data-search]");
  if (!page) return;
  const FINAL = new Set(["finished", "stopped", "failed"]);
  const KEY = "nas-notify";  // this browser asked to be told, and allowed it: stays on for the next pages
  const supported = "Notification" in window;
  let on = supported && Notification.permission === "granted" && localStorage.getItem(KEY) === "1";

  function label() {
    if (!button) return;
    if (!supported) { button.textContent = "No notifications in this browser"; button.disabled = true; return; }
    if (Notification.permission === "denied") {
      button.textContent = "Notifications blocked (site settings)"; button.disabled = true; return;
    }
    button.textContent = on ? "Notifying this browser ✓ (turn off)" : "Notify me when it ends";
    button.dataset.on = on ? "1" : "";
  }

  if (button) {
    button.addEventListener("click", async () => {
      if (on) { on = false; localStorage.removeItem(KEY); label(); return; }
      const answer = await Notification.requestPermission();
      on = answer === "granted";
      if (on) localStorage.setItem(KEY, "1");
      label();
    });
  }
  label();

  function title() {
    const h1 = document.querySelector("h1");
    return h1 && h1.firstChild ? h1.firstChild.textContent.trim() : "search #" + page.dataset.search;
  }

  document.addEventListener("nas:event", (e) => {
    const event = e.detail;
    if (event.type === "search.workers" && idle) {
      idle.textContent = event.data.idle || "";
      idle.hidden = !idle.textContent;
    } else if (event.type === "search.status") {
      if (idle && event.data.status !== "running") { idle.textContent = ""; idle.hidden = true; }
      if (on && FINAL.has(event.data.status)) {
        const best = event.data.best_fitness;
        const body = [event.data.reason, best === null || best === undefined ? "" : "best " + Number(best).toFixed(4)]
          .filter(Boolean).join(" · ");
        const tag = "nas-search-" + page.dataset.search;
        const note = new Notification(title() + ": " + event.data.status, {body, tag});
        note.onclick = () => { window.focus(); note.close(); };
      }
    }
  });
})();
