// The create form: show only the parameters of the chosen strategy, the simulated duration only for simulated
// evaluations and the weights kept only for trained ones (hidden fields are still submitted; the server ignores
// those that do not apply).
(function () {
  "use strict";
  const form = document.getElementById("search-form");
  if (!form) return;
  const strategy = form.querySelector("[name=strategy]");
  const evaluation = form.querySelector("[name=evaluation]");

  function update() {
    for (const input of form.querySelectorAll("[data-strategies]")) {
      const applies = input.dataset.strategies.split(" ").includes(strategy.value);
      input.closest(".field").hidden = !applies;
    }
    const duration = document.getElementById("row-sim_duration");
    if (duration) duration.hidden = evaluation.value !== "simulated";
    const weights = document.getElementById("row-keep_weights");
    if (weights) weights.hidden = evaluation.value !== "train";
  }

  strategy.addEventListener("change", update);
  evaluation.addEventListener("change", update);
  update();
})();
