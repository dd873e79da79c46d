"""The PyTorch side: genome -> ``nn.Module``, datasets, training and validation, exports.

Imports ``nas``, torch and torchvision, never Django. The entry point is
``evaluators.evaluate.evaluate(genome, space, training, dataset, device) -> result``.

- ``budget``: the frozen ``TrainingBudget`` (no torch); ``catalog``: dataset shapes (no torch);
- ``builders``: one builder per space writing the architecture as data; ``summary``: its hand-counted cost
  (no torch); ``blocks``: the modules by name and ``Net``, which builds any spec;
- ``datasets``: tensors on the device, loaded once per process; ``training``: ``train_one_epoch``, ``validate``;
- ``measure``: device, latency, peak memory; ``evaluate``: the entry point, failures as results;
- ``export``: genome JSON, standalone source, weights, ONNX; ``simulated``: evaluation without training.
"""
