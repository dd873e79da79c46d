// A search's websocket, shared by the live pages (the architecture page, search_live.js, and the weight-search
// page, weights_live.js). The protocol is documented at the top of webapp/dashboard/consumers.py: on each
// (re)connect the page sends {"type": "resume", "after": SEQ}, the server answers with the logged events after
// SEQ and then relays new ones; {"type": "resync"} means too many were missed and the page reloads its snapshot.
// Events are applied once each and in sequence order; a gap in the numbers asks for what is missing.
window.NasLive = (function () {
  "use strict";

  // Reconnecting: exponential back-off with jitter (half to all of the current delay, so that a thousand pages
  // dropped at once by a server or Redis restart do not all come back in the same instant), from 0.5 s up
  // to 30 s. The delay is reset only when the server has answered on the socket: a handshake it accepts
  // and closes at once (4013, "try again later", while its Redis is away) keeps backing off.
  const RETRY_FIRST = 500, RETRY_MAX = 30000, TRY_AGAIN_LATER = 4013;
  // The channel layer may shed the last messages of a burst, and no later event would reveal the gap: ask
  // now and then anyway (an empty answer costs one small query).
  const ASK_EVERY_MS = 10000;

  function setText(id, text) { const el = document.getElementById(id); if (el) el.textContent = text; }

  function csrf() {
    const match = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  // A chart drawn before its first result hides its axes behind a note (an empty date axis spans the year
  // 2000; webapp/dashboard/charts.py names the hidden axes in layout.meta.empty): the first point shows them.
  const TIME_PAD_MS = 30000;  // charts.TIME_PAD_MS
  function reveal(el) {
    const empty = el && el.layout && el.layout.meta && el.layout.meta.empty;
    if (!empty || !el.data.some((t) => t.x && t.x.some((x) => x !== null))) return;
    const update = {annotations: [], meta: null};
    for (const axis of empty) update[axis + ".visible"] = true;
    if (el.layout.xaxis && el.layout.xaxis.type === "date") {  // a first point alone spans a minute, not 1 ms
      const xs = [].concat(...el.data.map((t) => Array.from(t.x || []))).filter((x) => x !== null).map(Number);
      update["xaxis.autorangeoptions.include"] = [Math.min(...xs) - TIME_PAD_MS, Math.max(...xs) + TIME_PAD_MS];
    }
    Plotly.relayout(el, update);
  }

  // A search's state on its page: the badge, and which of its buttons apply (the ids both pages share).
  function showStatus(status) {
    const badge = document.getElementById("search-status");
    if (badge) { badge.textContent = status; badge.className = "status status-" + status; }
    const enable = {"launch-button": status === "draft", "stop-button": status === "running",
                    "resume-button": status === "stopped" || status === "failed"};
    for (const [id, on] of Object.entries(enable)) {
      const el = document.getElementById(id);
      if (el) el.disabled = !on;
    }
    const edit = document.getElementById("edit-button");  // only a draft can be edited (a style: .button shows)
    if (edit) edit.style.display = status === "draft" ? "" : "none";
  }

  // The socket of search `options.searchId`. `options.apply(event)` applies one event; `options.applied()`
  // (optional) runs after each batch; `options.resync()` reloads the page's snapshot and returns a promise
  // (the page sets `live.seq` to the snapshot's number). The connection state is written into the element
  // `options.stateId` ("live-state" unless given). Call `live.connect()` once the snapshot is drawn.
  function create(options) {
    const stateId = options.stateId || "live-state";
    const live = {seq: 0, socket: null, retry: RETRY_FIRST, holdUntil: 0, lastResume: 0};
    let deferred = null;

    // Ask for the events after the last applied one. At most once a second; a request that comes sooner is
    // deferred, never dropped (it may be the last gap of a finished search).
    function resume(force) {
      const now = Date.now();
      if (!force && now - live.lastResume < 1000) {
        if (!deferred) deferred = setTimeout(() => { deferred = null; resume(true); }, 1000 - (now - live.lastResume));
        return;
      }
      live.lastResume = now;
      if (live.socket && live.socket.readyState === WebSocket.OPEN) {
        live.socket.send(JSON.stringify({type: "resume", after: live.seq}));
      }
    }

    function receive(events) {
      events.sort((a, b) => a.seq - b.seq);
      for (const event of events) {
        if (event.seq <= live.seq) continue;               // seen already (catch-up and relay overlap)
        if (event.seq > live.seq + 1) { resume(); break; }  // a gap: ask for what is missing
        options.apply(event);
        live.seq = event.seq;
        // For the parts every search page shares (search_notify.js): the browser's notification, the workers' notice.
        document.dispatchEvent(new CustomEvent("nas:event", {detail: event}));
      }
      if (options.applied) options.applied();
    }

    function connect() {
      const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
      const socket = new WebSocket(scheme + window.location.host + "/ws/searches/" + options.searchId + "/");
      live.socket = socket;
      socket.onopen = () => { setText(stateId, "live"); resume(true); };
      socket.onmessage = (message) => {
        live.retry = RETRY_FIRST;
        const data = JSON.parse(message.data);
        if (data.type === "events") receive(data.events);
        else if (data.type === "resync") options.resync().then(() => resume(true));
      };
      socket.onclose = (event) => {
        if (live.socket !== socket) return;
        const delay = Math.max(live.retry * (0.5 + Math.random() / 2), live.holdUntil - Date.now());
        const why = event.code === TRY_AGAIN_LATER ? "server busy, " : "";
        setText(stateId, why + "reconnecting in " + Math.ceil(delay / 1000) + " s…");
        setTimeout(connect, delay);
        live.retry = Math.min(live.retry * 2, RETRY_MAX);
      };
    }

    live.resume = resume;
    live.connect = function () {
      connect();
      setInterval(() => resume(true), ASK_EVERY_MS);
    };
    // Closes the socket as a network failure would, and stays offline for ms milliseconds (events published
    // meanwhile are caught up after the reconnect).
    live.drop = function (ms) {
      live.holdUntil = Date.now() + (ms || 0);
      setText(stateId, "offline");
      if (live.socket) live.socket.close();
    };
    return live;
  }

  return {create, csrf, reveal, setText, showStatus};
})();
