"""The PyTorch side of a weight search: the network as one flat parameter vector, the fitness of offspring on a
training batch, the ES estimate on any parameter slice, and a PyTorch optimizer's step on the flat vector.

What runs where. The master weights (``theta``, float32), SNES's ``sigma`` and the optimizer's state live on the
CPU in every copy, whatever the evaluation device: every copy (the loop's, each slot's) applies the same CPU
arithmetic to the same gathered estimate, so their weights, and their digests, stay identical bit for bit, and
a GPU slot does not re-fetch the whole state because its CUDA optimizer step rounded a last bit differently.
The evaluation device holds a copy of ``theta`` (and of SNES's ``sigma``), refreshed once per generation after
the update, never per offspring. The estimate (:meth:`WeightEvolution.gradient_slice`) is numpy on the CPU.

Noise. The offspring's noise is the counter-based noise of :mod:`nas.neuroevolution.noise`, never ``torch.randn``
(which differs between CPU and CUDA and, written into strided views, between slices and the whole: DarwiNN's
CU bug). On the CPU it is numpy's (``noise="numpy"``); on a GPU the same hash runs on the device from the seed
(``noise="torch"``, :mod:`evaluators.device_noise`) instead of being generated on the host and copied over
(``4 M`` bytes per noise row). Mirrored offspring ``2m`` and ``2m + 1`` share row ``m``, generated once.

A mixed CPU + GPU pool: the device's normals equal numpy's to float64 rounding (a last bit of ``log`` or
``cos``), so an offspring's float32 weights, and its fitness, may differ between a CPU and a GPU slot by float
rounding. Centred ranks only change if two offspring's fitness values are that close (a rare tie may then rank
the other way); whatever the ranks, every copy applies the same gathered fitness values and estimate, so the
weights every copy holds stay identical.

Each offspring is evaluated alone, so its fitness does not depend on which worker or batch of offspring it
was evaluated with: a generation's result is the same whoever evaluated what.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import time
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from evaluators import device_noise
from evaluators.datasets import DatasetSplit, load_dataset
from evaluators.measure import resolve_device
from evaluators.weights_network import check_network
from nas.neuroevolution import ESConfig, base_noise, centred_ranks, gradient_slice
from nas.neuroevolution.es import default_snes_sigma_rate, snes_sigma_step
from nas.neuroevolution.noise import offspring_row

OPTIMIZERS = ("adam", "sgd")
FITNESS = ("loss", "accuracy")
#: Where the evaluation's noise is generated: ``auto`` is numpy on a CPU device and torch on any other.
NOISE = ("auto", "numpy", "torch")


@dataclasses.dataclass(frozen=True)
class WeightRun:
    """Everything that fixes a weight search's numbers (no device: the same on every worker)."""

    network: dict[str, Any]
    dataset: str = "digits"
    es: ESConfig = ESConfig()
    optimizer: str = "adam"
    learning_rate: float = 0.03
    fitness: str = "loss"
    batch_size: int = 256
    sigma_rate: float | None = None  # SNES only; None: SNES's default for the network's size

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> WeightRun:
        """From a checked weight-search configuration (``webapp.searches.weights_config``): its ``network``,
        ``dataset`` and ``weights`` sections."""
        weights = config["weights"]
        es = ESConfig(weights["algorithm"], weights["population"], weights["sigma"], weights["mirrored"],
                      weights["seed"])
        return cls(config["network"], config["dataset"], es, weights["optimizer"], weights["learning_rate"],
                   weights["fitness"], weights["batch_size"], weights.get("sigma_rate"))


def build_network(network: dict[str, Any], dataset: str, seed: int) -> nn.Module:
    """The module of ``network`` for ``dataset``, initialised from ``seed`` on the CPU (the same on every host)."""
    checked, _ = check_network(network, dataset)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if checked["kind"] == "mlp":
            layers: list[nn.Module] = [nn.Flatten()]
            sizes = checked["layers"]
            for index, (a, b) in enumerate(zip(sizes, sizes[1:])):
                layers.append(nn.Linear(a, b))
                if index < len(sizes) - 2:
                    layers.append(nn.ReLU())
            module = nn.Sequential(*layers)
        else:
            from evaluators.networks import build_model

            module = build_model(checked["genome"], checked["space"], dataset)
    return module.eval()  # no batch statistics: every offspring is scored by the same function


def batch_indices(seed: int, generation: int, count: int, batch_size: int) -> np.ndarray:
    """The training batch of a generation: the same for every offspring and every worker."""
    if batch_size >= count:
        return np.arange(count)
    return np.sort(np.random.default_rng([seed, generation]).choice(count, batch_size, replace=False))


def noise_source(noise: str, device: torch.device) -> str:
    """``numpy`` or ``torch``: the generator of the evaluation's noise for ``noise`` (one of :data:`NOISE`)."""
    if noise not in NOISE:
        raise ValueError(f"The `noise` must be one of {', '.join(NOISE)} (noise={noise!r}).")
    if noise == "auto":
        return "numpy" if device.type == "cpu" else "torch"
    return noise


def weights_digest(theta: torch.Tensor) -> str:
    """A short digest of the weights' bytes: workers compare it with the loop's before evaluating."""
    return hashlib.sha256(theta.detach().cpu().numpy().tobytes()).hexdigest()[:16]


class WeightEvolution:
    """One process's copy of a weight search: the master weights (and SNES's sigma) and the optimizer on the CPU,
    the network, the data and a copy of the weights on the evaluation ``device``. ``noise`` picks the generator
    of the evaluation's noise (:data:`NOISE`; ``torch`` can be forced on the CPU, as the tests do)."""

    def __init__(self, run: WeightRun, device: str = "cpu", noise: str = "auto") -> None:
        self.run = run
        self.device = resolve_device(device)
        self.noise = noise_source(noise, self.device)
        module = build_network(run.network, run.dataset, run.es.seed)
        self.names = [name for name, _ in module.named_parameters()]
        self.shapes = [p.shape for _, p in module.named_parameters()]
        for parameter in module.parameters():
            parameter.requires_grad_(False)
        self.theta = nn.Parameter(torch.cat([p.detach().reshape(-1) for p in module.parameters()]))
        self.module = module.to(self.device)
        self.size = self.theta.numel()
        self._on_device: tuple[torch.Tensor, torch.Tensor | None] | None = None
        self.sigma = np.full(self.size, run.es.sigma) if run.es.algorithm == "snes" else None
        self.sigma_rate = run.sigma_rate or default_snes_sigma_rate(self.size)
        self.optimizer = make_optimizer(run.optimizer, [self.theta], run.learning_rate)
        self.data: DatasetSplit = load_dataset(run.dataset, str(self.device), run.es.seed)
        self.generation = 0

    # --- evaluation ---------------------------------------------------------------------------------------
    def _params(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        out, offset = {}, 0
        for name, shape in zip(self.names, self.shapes):
            count = int(np.prod(shape)) if len(shape) else 1
            out[name] = flat[offset:offset + count].view(shape)
            offset += count
        return out

    def _score(self, flat: torch.Tensor, x: torch.Tensor, y: torch.Tensor, fitness: str) -> float:
        logits = torch.func.functional_call(self.module, self._params(flat), (x,))
        if fitness == "accuracy":
            return float((logits.argmax(1) == y).float().mean())
        loss = float(F.cross_entropy(logits.float(), y))
        return -loss if np.isfinite(loss) else float("nan")

    def device_weights(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The evaluation device's copy of ``theta`` and, for SNES with device noise, of ``sigma`` (float64):
        copied once after each change of the master weights, shared by all the generation's offspring."""
        if self._on_device is None:
            theta = self.theta.detach()
            theta = theta if self.device.type == "cpu" else theta.to(self.device, copy=True)
            sigma = None
            if self.sigma is not None and self.noise == "torch":
                sigma = torch.from_numpy(np.asarray(self.sigma, dtype=np.float64)).to(self.device, copy=True)
            self._on_device = (theta, sigma)
        return self._on_device

    def _offspring(self, generation: int, indices: Iterable[int]) -> Iterator[torch.Tensor]:
        """``theta + sigma * eps_i`` on the device for each offspring ``i`` of ``indices``, in order; a noise
        row shared by consecutive mirrored offspring is generated once."""
        theta, device_sigma = self.device_weights()
        es, last_row, noise = self.run.es, None, None
        for index in indices:
            row, sign = offspring_row(index, es.mirrored)
            if row != last_row:
                noise = (device_noise.base_noise(es.seed, generation, row, 0, self.size, self.device)
                         if self.noise == "torch" else base_noise(es.seed, generation, row, 0, self.size))
                last_row = row
            if self.noise == "torch":
                scale = es.sigma if device_sigma is None else device_sigma
                yield theta + (noise * (sign * scale)).to(torch.float32)
            else:  # nas.neuroevolution.es.perturbation's arithmetic, then one copy to the device
                scale = es.sigma if self.sigma is None else np.asarray(self.sigma, dtype=np.float64)
                yield theta + torch.from_numpy(noise * (sign * scale)).to(self.device, torch.float32)

    def offspring_weights(self, generation: int, index: int) -> torch.Tensor:
        """``theta + sigma * eps_i`` on the device."""
        return next(self._offspring(generation, [index]))

    @torch.no_grad()
    def evaluate(self, generation: int, indices: range | list[int]) -> list[float]:
        """The fitness of offspring ``indices`` of ``generation`` (higher is better) on its training batch."""
        rows = torch.from_numpy(batch_indices(self.run.es.seed, generation, len(self.data.train_y),
                                              self.run.batch_size)).to(self.device)
        x, y = self.data.train_x[rows], self.data.train_y[rows]
        return [self._score(weights, x, y, self.run.fitness) for weights in self._offspring(generation, indices)]

    @torch.no_grad()
    def validate(self) -> float:
        """The accuracy of the current weights on the validation split."""
        theta, _ = self.device_weights()
        logits = torch.func.functional_call(self.module, self._params(theta), (self.data.val_x,))
        return float((logits.argmax(1) == self.data.val_y).float().mean())

    # --- estimate and update ------------------------------------------------------------------------------
    def gradient_slice(self, generation: int, fitness: list[float] | np.ndarray, start: int, stop: int,
                       offspring: range | None = None) -> dict[str, np.ndarray]:
        """The ES ascent estimate on parameters ``[start, stop)`` (see ``nas.neuroevolution.es``)."""
        sigma = None if self.sigma is None else self.sigma[start:stop]
        return gradient_slice(self.run.es, generation, centred_ranks(fitness), start, stop, offspring, sigma)

    def apply(self, gradient: dict[str, np.ndarray]) -> None:
        """One optimizer step along the full ascent estimate (the optimizer minimises, so it gets the negated
        estimate), then SNES's sigma step; advances the generation counter. On the CPU, whatever the evaluation
        device: the same arithmetic in every copy."""
        ascent = gradient["theta"] if "theta" in gradient else gradient["mu"]
        self.theta.grad = torch.from_numpy(-ascent).to(torch.float32)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.sigma is not None:
            self.sigma = snes_sigma_step(self.sigma, gradient["sigma"], self.sigma_rate)
        self._on_device = None
        self.generation += 1

    def step(self) -> dict[str, Any]:
        """One generation in this process alone (the reference the distributed methods must reproduce)."""
        generation = self.generation
        started = time.perf_counter()
        fitness = self.evaluate(generation, range(self.run.es.population))
        evaluated = time.perf_counter()
        gradient = self.gradient_slice(generation, fitness, 0, self.size)
        estimated = time.perf_counter()
        self.apply(gradient)
        updated = time.perf_counter()
        finite = [f for f in fitness if np.isfinite(f)]
        return {"generation": generation, "best": max(finite, default=None), "mean": float(np.mean(finite)) if
                finite else None, "worst": min(finite, default=None), "evaluate_s": evaluated - started,
                "gradient_s": estimated - evaluated, "update_s": updated - estimated}

    # --- state --------------------------------------------------------------------------------------------
    def digest(self) -> str:
        return weights_digest(self.theta)

    def start_from(self, trained: dict[str, torch.Tensor]) -> None:
        """Begin from trained weights instead of the seeded initialisation: ``trained`` is this network's
        ``state_dict`` (a kept ``weights.pt``), its parameters and its buffers (batch norm's running statistics,
        which every offspring is scored with). Names and shapes must match (``load_state_dict`` is strict)."""
        self.module.load_state_dict(trained)
        with torch.no_grad():
            self.theta.copy_(torch.cat([p.detach().cpu().reshape(-1) for p in self.module.parameters()]))
        self._on_device = None

    def state_bytes(self) -> bytes:
        """Weights, the module's buffers, sigma, optimizer state and generation counter, for resume and for a
        late worker (the buffers differ from the seeded ones when the search started from trained weights)."""
        buffer = io.BytesIO()
        buffers = {name: value.detach().cpu() for name, value in self.module.named_buffers()}
        torch.save({"theta": self.theta.detach().cpu(), "sigma": self.sigma, "generation": self.generation,
                    "optimizer": self.optimizer.state_dict(), "buffers": buffers}, buffer)
        return buffer.getvalue()

    def load_state(self, data: bytes) -> None:
        """The state of :meth:`state_bytes`, onto the CPU (a state saved on a GPU included)."""
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)
        with torch.no_grad():
            self.theta.copy_(state["theta"])
            for name, value in self.module.named_buffers():  # states saved before buffers travelled have none
                if name in state.get("buffers", {}):
                    value.copy_(state["buffers"][name])
        self.sigma = state["sigma"]
        self.generation = int(state["generation"])
        self.optimizer.load_state_dict(state["optimizer"])
        self._on_device = None

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The module's ``state_dict`` with the current weights (for ``weights.pt``)."""
        params = self._params(self.theta.detach())
        state = {k: v.detach().cpu().clone() for k, v in self.module.state_dict().items()}
        state.update({name: value.clone() for name, value in params.items()})
        return state


def make_optimizer(name: str, params: list[nn.Parameter], learning_rate: float) -> torch.optim.Optimizer:
    """A PyTorch optimizer by name over the flat weights."""
    if name == "adam":
        return torch.optim.Adam(params, lr=learning_rate)
    if name == "sgd":
        return torch.optim.SGD(params, lr=learning_rate, momentum=0.9)
    raise ValueError(f"The `optimizer` must be one of {', '.join(OPTIMIZERS)} (optimizer={name!r}).")


MLP_SOURCE = '''"""{title}

Standalone: imports only torch. ``build()`` returns the network; load ``weights.pt`` into it with
``model.load_state_dict(torch.load("weights.pt", weights_only=True))``. Input: {raw}, shape (N, {shape});
the network normalises them itself. Output: {classes} class scores.
"""
import torch
from torch import nn

LAYERS = {layers!r}
MEAN = {mean!r}
STD = {std!r}


class Net(nn.Sequential):
    """Flatten, then fully connected layers with ReLU between them."""

    def __init__(self) -> None:
        layers = [nn.Flatten()]
        for index, (a, b) in enumerate(zip(LAYERS, LAYERS[1:])):
            layers.append(nn.Linear(a, b))
            if index < len(LAYERS) - 2:
                layers.append(nn.ReLU())
        super().__init__(*layers)
        self.register_buffer("mean", torch.tensor(MEAN).view(1, -1, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(STD).view(1, -1, 1, 1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward((x - self.mean) / self.std)


def build() -> Net:
    return Net()
'''


def export_files(evolution: WeightEvolution, title: str) -> dict[str, bytes]:
    """``weights.pt`` (the network's state_dict with the current weights, tensors only) and ``model.py`` (its
    standalone source, taking the dataset's raw images), as for a trained architecture."""
    from evaluators.catalog import RAW_IMAGES
    from evaluators.model_source import standalone_source

    network, dataset = evolution.run.network, evolution.run.dataset
    normalization = evolution.data.normalization
    if network.get("kind", "mlp") == "mlp":
        shape = ", ".join(map(str, evolution.data.shape))
        source = MLP_SOURCE.format(title=title.replace('"', "'"), raw=RAW_IMAGES[dataset][1], shape=shape,
                                   classes=network["layers"][-1], layers=network["layers"],
                                   mean=normalization["mean"], std=normalization["std"])
    else:
        source = standalone_source(network["genome"], network["space"], dataset, normalization)
    buffer = io.BytesIO()
    torch.save(evolution.state_dict(), buffer)
    return {"weights.pt": buffer.getvalue(), "model.py": source.encode()}
