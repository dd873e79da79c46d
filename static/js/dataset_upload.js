// The data-set list's upload form: a .zip or .tar of class folders sent in chunks through the JSON API
// (/api/datasets/uploads/), with a progress bar. Resumable: the upload id is remembered per file (name, size,
// date) in this browser, so sending the same file again after a broken connection or a reload asks the server
// which chunks it holds and sends only the others; a chunk that failed is sent again (the server keeps a
// chunk sent twice once). When every chunk is there, the server checks, unpacks and scans the archive, and the
// page moves to the new set's page, or shows why it was refused.
(function () {
  "use strict";
  const form = document.getElementById("upload-form");
  if (!form) return;
  const bar = document.getElementById("upload-progress");
  const statusNode = document.getElementById("upload-status");
  const token = form.querySelector("[name=csrfmiddlewaretoken]").value;
  const RETRIES = 3;

  function say(text, failed) {
    statusNode.textContent = text;
    statusNode.classList.toggle("error", Boolean(failed));
  }

  async function call(method, url, body, type) {
    const response = await fetch(url, {method, body, credentials: "same-origin",
      headers: {"X-CSRFToken": token, "Content-Type": type || "application/json"}});
    let data = {};
    try { data = await response.json(); } catch (error) { data = {error: "HTTP " + response.status}; }
    if (!response.ok) throw new Error(data.error || ("HTTP " + response.status));
    return data;
  }

  function key(file, name) { return "nas-upload:" + [name, file.name, file.size, file.lastModified].join("|"); }

  async function begin(file, name) {
    const known = localStorage.getItem(key(file, name));
    if (known) {
      try { return await call("GET", "/api/datasets/uploads/" + known + "/"); } catch (error) { /* gone */ }
    }
    const started = await call("POST", "/api/datasets/uploads/",
      JSON.stringify({name: name, filename: file.name, size: file.size}));
    localStorage.setItem(key(file, name), started.upload);
    return started;
  }

  async function send(file, upload) {
    const have = new Set(upload.received);
    let done = have.size;
    bar.max = upload.chunks;
    bar.value = done;
    for (let index = 0; index < upload.chunks; index++) {
      if (have.has(index)) continue;
      const start = index * upload.chunk_bytes;
      const chunk = file.slice(start, Math.min(file.size, start + upload.chunk_bytes));
      for (let attempt = 1; ; attempt++) {
        try {
          await call("PUT", "/api/datasets/uploads/" + upload.upload + "/chunks/" + index + "/", chunk,
                     "application/octet-stream");
          break;
        } catch (error) {
          if (attempt >= RETRIES) throw error;
        }
      }
      done += 1;
      bar.value = done;
      say("Sent " + Math.round(100 * done / upload.chunks) + "% (" + done + " of " + upload.chunks + " chunks)");
    }
  }

  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    const file = form.querySelector("[name=archive]").files[0];
    const name = form.querySelector("[name=name]").value.trim();
    if (!file || !name) { say("Choose a name and a .zip or .tar file.", true); return; }
    const button = form.querySelector("button");
    button.disabled = true;
    bar.hidden = false;
    let finishing = false;
    try {
      const upload = await begin(file, name);
      await send(file, upload);
      say("Checking, unpacking and scanning the archive...");
      finishing = true;
      const registered = await call("POST", "/api/datasets/uploads/" + upload.upload + "/finish/");
      localStorage.removeItem(key(file, name));
      say("Registered " + registered.name + ": " + registered.images + " images in " + registered.classes.length +
          " classes.");
      window.location.assign("/datasets/" + encodeURIComponent(registered.name) + "/");
    } catch (error) {
      // Refused by the server at the finish: that upload is gone. Otherwise (a broken connection) keep its id.
      if (finishing) localStorage.removeItem(key(file, name));
      say("Not registered: " + error.message + (finishing ? "" : " Send the same file again to resume."), true);
      button.disabled = false;
    }
  });
})();
