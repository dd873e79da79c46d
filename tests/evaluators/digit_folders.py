"""Small data sets of the user's kind for tests: scikit-learn's 8x8 digits written as PNG class folders with
Pillow (some images resized, optionally one corrupt file), or as a ``.npz``."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def digit_images(classes: tuple[int, ...] = tuple(range(10)), per_class: int | None = None, skip: int = 0):
    from sklearn.datasets import load_digits

    digits = load_digits()
    pixels = (digits.images * (255 / 16)).astype(np.uint8)
    for label in classes:
        members = np.flatnonzero(digits.target == label)[skip:][:per_class]
        yield label, pixels[members]


def write_digit_folders(root: Path, classes: tuple[int, ...] = tuple(range(10)), per_class: int | None = None,
                        corrupt: bool = True, rgb_class: int | None = None, skip: int = 0) -> Path:
    """``root/digit_<k>/<i>.png``: every third image resized to 12x12, one text file named ``.png`` when
    ``corrupt``; ``rgb_class``'s images saved in colour (a mixed set); the first ``skip`` of each class left out
    (kept for a held-out folder)."""
    root.mkdir(parents=True, exist_ok=True)
    for label, images in digit_images(classes, per_class, skip):
        folder = root / f"digit_{label}"
        folder.mkdir(exist_ok=True)
        for i, pixels in enumerate(images):
            image = Image.fromarray(pixels, mode="L")
            if i % 3 == 0:
                image = image.resize((12, 12))
            if label == rgb_class:
                image = image.convert("RGB")
            image.save(folder / f"{i:04d}.png")
    if corrupt:
        (root / f"digit_{classes[0]}" / "broken.png").write_text("not an image")
    return root


def write_digit_npz(path: Path, per_class: int | None = None) -> Path:
    x, y = [], []
    for label, images in digit_images(per_class=per_class):
        x.append(images)
        y.extend([label] * len(images))
    np.savez(path, x=np.concatenate(x), y=np.asarray(y))
    return path


def truncate_one(root: Path) -> Path:
    """Cut the first image of the first class folder short: a real PNG that no longer decodes (corrupt, listed and
    skipped; a text file named .png is refused in an archive)."""
    first = sorted(sorted(p for p in root.iterdir() if p.is_dir())[0].glob("*.png"))[0]
    first.write_bytes(first.read_bytes()[:40])
    return first


def archive_folder(root: Path, target: Path, top: str | None = None) -> Path:
    """``root``'s files in a ``.zip`` or ``.tar`` (by ``target``'s suffix), under a ``top`` folder if given."""
    import tarfile
    import zipfile

    files = sorted(p for p in root.rglob("*") if p.is_file())
    names = [(f, "/".join(filter(None, [top, f.relative_to(root).as_posix()]))) for f in files]
    if target.suffix == ".zip":
        with zipfile.ZipFile(target, "w") as archive:
            for file, name in names:
                archive.write(file, name)
    else:
        with tarfile.open(target, "w") as archive:
            for file, name in names:
                archive.add(file, name)
    return target


def folder_search_config(dataset: str, evaluations: int, population: int = 4, max_layers: int = 2,
                         **evaluation) -> dict:
    """A small regularized chain search on a registered digit-folder set: 8x8 inputs, one epoch per candidate."""
    return {
        "space": {"name": "chain", "max_layers": max_layers},
        "strategy": {"name": "regularized", "seed": 5,
                     "params": {"population": population, "sample_size": 2, "max_evaluations": evaluations}},
        "dataset": dataset,
        "data": {"input_size": 8, "validation_share": 0.2},
        "training": {"epochs": 1, "batch_size": 32, "learning_rate": 0.003},
        "evaluation": {"mode": "train", **evaluation},
    }
