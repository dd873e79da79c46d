"""The datasets by name, with what a builder needs of them: the input shape ``(C, H, W)`` and the class count.
No torch, so architectures can be described without loading data or PyTorch."""
from __future__ import annotations

#: name -> (input shape, classes)
DATASETS: dict[str, tuple[tuple[int, int, int], int]] = {
    "digits": ((1, 8, 8), 10),
    "cifar10": ((3, 32, 32), 10),
    "fashion_mnist": ((1, 28, 28), 10),
    "synthetic": ((3, 16, 16), 10),
}


def dataset_shape(name: str) -> tuple[tuple[int, int, int], int]:
    """``(input shape, classes)`` of the dataset ``name``; ``ValueError`` listing the known ones otherwise."""
    if name not in DATASETS:
        raise ValueError(f"Unknown dataset {name!r}; the datasets are {', '.join(DATASETS)}.")
    return DATASETS[name]
