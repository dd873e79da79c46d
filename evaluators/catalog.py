"""The datasets by name, with what a builder needs of them: the input shape ``(C, H, W)`` and the class count,
and what their raw images are. No torch, so architectures can be described without loading data or PyTorch."""
from __future__ import annotations

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


def dataset_shape(name: str) -> tuple[tuple[int, int, int], int]:
    """``(input shape, classes)`` of the dataset ``name``; ``ValueError`` listing the known ones otherwise."""
    if name not in DATASETS:
        raise ValueError(f"Unknown dataset {name!r}; the datasets are {', '.join(DATASETS)}.")
    return DATASETS[name]
