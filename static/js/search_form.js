// The search form: show only the parameters of the chosen strategy, the simulated duration only for simulated
// evaluations and the weights kept only for trained ones (hidden fields are still submitted; the server ignores
// those that do not apply); and say how long the chosen budget will take on the live slots, from the seconds
// per epoch this installation measured (the page hands them over in the "measured" JSON).
(function () {
  "use strict";
  const form = document.getElementById("search-form");
  if (!form) return;
  const strategy = form.querySelector("[name=strategy]");
  const evaluation = form.querySelector("[name=evaluation]");
  const measuredNode = document.getElementById("measured");
  const measured = measuredNode ? JSON.parse(measuredNode.textContent) : {per_epoch: {}, slots: {}};
  const estimateNode = document.getElementById("estimate");

  function field(name) { return form.querySelector("[name=" + name + "]"); }

  function number(name) {
    const input = field(name);
    if (!input || input.value === "" || input.closest(".field").hidden) return null;
    const value = Number(input.value);
    return Number.isFinite(value) && value > 0 ? value : null;
  }

  function planned() {
    const budget = number("max_evaluations");
    const generations = number("generations"), population = number("population");
    const options = [budget, generations && population ? generations * population : null].filter(Boolean);
    return options.length ? Math.min.apply(null, options) : null;
  }

  function span(seconds) {
    if (seconds < 90) return Math.max(1, Math.round(seconds)) + " s";
    if (seconds < 5400) return Math.round(seconds / 60) + " min";
    return (seconds / 3600).toFixed(1) + " h";
  }

  // The shown number fields whose value the browser finds invalid (out of the field's min/max, not a number):
  // no estimate is computed from them.
  function invalidFields() {
    return Array.from(form.querySelectorAll("input[type=number]")).filter((input) => {
      const row = input.closest(".field");
      return !(row && row.hidden) && !input.closest("[hidden]") && !input.validity.valid;
    }).map((input) => input.name);
  }

  function estimate() {
    if (!estimateNode) return;
    const invalid = invalidFields();
    if (invalid.length) {
      estimateNode.textContent = "No estimate until these fields are fixed: " + invalid.join(", ") + ".";
      return;
    }
    const evaluations = planned();
    const pool = field("pool").value, slots = measured.slots[pool] || 0;
    if (!evaluations) { estimateNode.textContent = ""; return; }
    let perEvaluation, basis;
    if (evaluation.value === "simulated") {
      perEvaluation = number("sim_duration") || 1;
      basis = evaluations + " simulated evaluations of " + span(perEvaluation);
    } else {
      const space = field("space").value, dataset = field("dataset").value, epochs = number("epochs") || 1;
      const known = measured.per_epoch[space + "/" + dataset];
      if (!known) {
        estimateNode.textContent = "Up to " + evaluations + " evaluations of " + epochs + " epoch(s). No " + space +
          " network has been trained on " + dataset + " here yet: the first results will tell how long it takes.";
        return;
      }
      perEvaluation = epochs * known.seconds;
      basis = evaluations + " evaluations × " + epochs + " epoch(s) at " + known.seconds.toFixed(1) +
        " s per epoch (the median of " + known.count + " measured here)";
    }
    if (!slots) {
      estimateNode.textContent = "About " + span(evaluations * perEvaluation) + " on one slot (" + basis +
        "). No evaluation slot of the pool " + pool + " is live now: the search waits for one.";
      return;
    }
    const parallel = Math.min(slots, evaluations);
    estimateNode.textContent = "About " + span(Math.ceil(evaluations / parallel) * perEvaluation) + " on the " +
      slots + " live slot(s) of " + pool + " (" + basis + ").";
  }

  function update() {
    for (const input of form.querySelectorAll("[data-strategies]")) {
      const applies = input.dataset.strategies.split(" ").includes(strategy.value);
      input.closest(".field").hidden = !applies;
    }
    const pruner = field("pruner");
    for (const input of form.querySelectorAll("[data-pruners]")) {
      input.closest(".field").hidden = !pruner || !input.dataset.pruners.split(" ").includes(pruner.value);
    }
    const duration = document.getElementById("row-sim_duration");
    if (duration) duration.hidden = evaluation.value !== "simulated";
    const weights = document.getElementById("row-keep_weights");
    if (weights) weights.hidden = evaluation.value !== "train";
    estimate();
  }

  strategy.addEventListener("change", update);
  evaluation.addEventListener("change", update);
  if (field("pruner")) field("pruner").addEventListener("change", update);
  form.addEventListener("input", estimate);
  form.addEventListener("change", estimate);
  update();
})();
