"""The PyTorch side: genome -> ``nn.Module``, datasets, training and validation, exports.

Imports ``nas``, torch and torchvision, never Django. The entry point is
``evaluators.evaluate.evaluate(genome, space, training, dataset, device) -> result`` (``device``: one device, or a
list of this host's devices for a data-parallel gang).

- ``budget``: the frozen ``TrainingBudget`` (no torch); ``catalog``: dataset shapes (no torch);
- ``builders``: one builder per space writing the architecture as data; ``summary``: its hand-counted cost
  (no torch); ``blocks``: the modules by name and ``Net``, which builds any spec; ``networks``: ``build_model``;
- ``datasets``: tensors on the device, loaded once per process; ``training``: ``fit``, the one training loop for
  any number of devices (``ranks``: what a gang's rank does differently), ``train_one_epoch``, ``validate``;
- ``measure``: device, latency, peak memory; ``evaluate``: the entry point, failures as results;
  ``data_parallel`` + ``gang_rank``: a gang's ranks started and watched; ``lifetime``: children die with parents;
- ``model_source``: the standalone ``model.py`` (no torch); ``model_files``: weights and ONNX;
  ``simulated``: evaluation without training;
- one-shot search: ``supernet`` (the cell space's supernet, ``forward(x, path)``), ``supernet_training``
  (Single Path One-Shot on ``fit``, checkpointed), ``path_scoring`` (BN recalibrated per path, by weights
  digest), ``ranking_check`` (Kendall tau of supernet scores against stand-alone accuracies).
"""
