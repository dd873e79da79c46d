"""The datasets, with what a builder needs of them: the input shape ``(C, H, W)`` and the class count,
what their raw images are, and where their files lie. No torch, so architectures can be described, and a
dataset's presence checked (:func:`unavailable`, by the web server before it accepts a search), without loading
data or PyTorch.

A dataset is named one of two ways, and every function here takes either:

- a built-in's name (``digits``, ``cifar10``, ``fashion_mnist``, ``synthetic``: :data:`DATASETS`);
- a registered set's description, a JSON object (:data:`REGISTERED_FIELDS`) that the web server puts in a
  search's configuration from its record (``webapp.datasets``) and that travels to the workers in each
  evaluation's message, since workers never read the database: ``name``, ``kind`` (``folder`` or ``npz``),
  ``path``, ``digest``, ``classes`` (names), ``channels``, and the search's ``input_size``,
  ``validation_share`` and ``augment``. Its input shape is ``(channels, input_size, input_size)``.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: The folder the datasets' files are read from (and downloaded to), where ``NAS_DATA_DIR`` names none.
DEFAULT_DATA_DIR = Path(__file__).resolve().parent.parent / "data"
#: The variable that lets a worker download a missing dataset (torchvision's download) when set to ``1``.
DOWNLOAD_VARIABLE = "NAS_DATA_DOWNLOAD"

#: name -> (input shape, classes)
DATASETS: dict[str, tuple[tuple[int, int, int], int]] = {
    "digits": ((1, 8, 8), 10),
    "cifar10": ((3, 32, 32), 10),
    "fashion_mnist": ((1, 28, 28), 10),
    "synthetic": ((3, 16, 16), 10),
}

#: name -> (scale, what a user loads): the raw images an exported network takes are the dataset's images as
#: its usual loader gives them, which are ``scale`` times the [0, 1] images the trainer reads.
RAW_IMAGES: dict[str, tuple[float, str]] = {
    "digits": (16.0, "scikit-learn's load_digits().images[:, None] (pixel values 0..16)"),
    "cifar10": (1.0, "torchvision.datasets.CIFAR10(..., transform=transforms.ToTensor()) (values 0..1)"),
    "fashion_mnist": (1.0, "torchvision.datasets.FashionMNIST(..., transform=transforms.ToTensor()) (values 0..1)"),
    "synthetic": (1.0, "evaluators.datasets.load_synthetic_arrays() (this project's generated images)"),
}

#: The share of each dataset's training images held out for validation (by the training seed).
VALIDATION_FRACTION = {"digits": 0.2, "cifar10": 0.1, "fashion_mnist": 0.1, "synthetic": 0.2}


#: The fields of a registered set's description (see the module's docstring).
REGISTERED_FIELDS = ("name", "kind", "path", "digest", "classes", "channels", "input_size", "validation_share",
                     "augment")


def is_registered(dataset: Any) -> bool:
    """Whether ``dataset`` is a registered set's description (not a built-in's name)."""
    return isinstance(dataset, Mapping)


def label(dataset: str | Mapping[str, Any]) -> str:
    """The dataset's name, for titles and messages."""
    return str(dataset["name"]) if is_registered(dataset) else str(dataset)


def dataset_shape(name: str | Mapping[str, Any]) -> tuple[tuple[int, int, int], int]:
    """``(input shape, classes)`` of the dataset ``name``; ``ValueError`` listing the known ones otherwise."""
    if is_registered(name):
        missing = [field for field in REGISTERED_FIELDS if field not in name]
        if missing:
            raise ValueError(f"The registered data set's description lacks {', '.join(missing)}.")
        size = int(name["input_size"])
        return (int(name["channels"]), size, size), len(name["classes"])
    if not isinstance(name, str) or name not in DATASETS:
        raise ValueError(f"Unknown dataset {name!r}; the datasets are {', '.join(DATASETS)}.")
    return DATASETS[name]


#: name -> the training files a dataset reads under the data folder, each a tuple of accepted names (torchvision's
#: on-disk formats); a dataset not listed is built in (``digits`` ships with scikit-learn, ``synthetic`` is made).
FILES: dict[str, list[tuple[str, ...]]] = {
    "cifar10": [(f"cifar-10-batches-py/data_batch_{i}",) for i in range(1, 6)],
    "fashion_mnist": [(f"FashionMNIST/raw/{name}", f"FashionMNIST/raw/{name}.gz")
                      for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte")],
}


def data_dir(folder: str | os.PathLike | None = None) -> Path:
    """``folder``, else ``NAS_DATA_DIR``, else ``data/`` in the repository."""
    return Path(folder or os.environ.get("NAS_DATA_DIR") or DEFAULT_DATA_DIR).expanduser()


def download_allowed(download: bool | None = None) -> bool:
    """``download`` if given, else whether :data:`DOWNLOAD_VARIABLE` is ``1``."""
    return download if download is not None else os.environ.get(DOWNLOAD_VARIABLE) == "1"


def found_files(name: str, folder: Path) -> list[Path] | None:
    """The files of ``name`` under ``folder`` in :data:`FILES` order (the first accepted name present of each),
    or ``None`` when one is missing."""
    found = [next((folder / n for n in names if (folder / n).exists()), None) for names in FILES.get(name, [])]
    return None if None in found else found  # type: ignore[return-value]


def missing_message(name: str, folder: Path) -> str:
    """What to do about a dataset whose files are not in ``folder``, naming the variables that fix it."""
    absent = ", ".join(str(folder / names[0]) for names in FILES[name]
                       if not any((folder / n).exists() for n in names))
    return (f"The {name} dataset is not installed: {folder} lacks {absent}. Put torchvision's files there, or set "
            f"NAS_DATA_DIR to the folder that holds them, or set {DOWNLOAD_VARIABLE}=1 to let the workers download "
            f"it (on a machine that is online).")


def validation_share(dataset: str | Mapping[str, Any]) -> float:
    """The share of the training images held out for validation (by the training seed)."""
    return float(dataset["validation_share"]) if is_registered(dataset) else VALIDATION_FRACTION[dataset]


def raw_images(dataset: str | Mapping[str, Any]) -> tuple[float, str]:
    """``(scale, what a user loads)``: :data:`RAW_IMAGES` for a built-in; a registered set's images are read as
    the training read them, values 0..1."""
    if not is_registered(dataset):
        return RAW_IMAGES[dataset]
    size = dataset["input_size"]
    mode = "L" if dataset["channels"] == 1 else "RGB"
    return 1.0, (f"images of the data set {dataset['name']!r} opened with Pillow, converted to {mode}, fitted to "
                 f"{size}x{size} (PIL.ImageOps.fit: resized so the shorter side is {size}, centre cropped) and "
                 f"divided by 255 (values 0..1), channels first")


def unavailable(name: str | Mapping[str, Any], folder: str | os.PathLike | None = None,
                download: bool | None = None) -> str | None:
    """Why ``name`` cannot be loaded here (its files missing and no download allowed), or ``None`` when it can:
    a file-presence check, without reading the data or importing torch."""
    dataset_shape(name)
    if is_registered(name):
        path = Path(name["path"])
        return None if path.exists() else (f"The data set {name['name']!r} is not readable here: {path} does not "
                                           f"exist (moved or deleted since it was registered?).")
    if name not in FILES or download_allowed(download):
        return None
    where = data_dir(folder)
    return None if found_files(name, where) is not None else missing_message(name, where)
