"""What a Best zip adds for a search on a registered data set: ``classes.json`` (the class names, label *i*
the *i*-th) and ``predict.py``, which reads a folder of images as the training read them (Pillow, converted to
the set's channels, fitted to the input size, values 0..1) and prints each one's predicted class name; when the
images lie in class folders named as the classes, it prints the accuracy too. Text only: no torch here."""
from __future__ import annotations

import json
from typing import Any

SCRIPT = '''"""Predict the class of every image under a folder with this architecture and its trained weights.

    python predict.py FOLDER

prints one line per image: its path and predicted class name (classes.json). Images are read as the search
read its data set {name!r}: converted to {mode}, fitted to {size}x{size} (resized so the shorter side is {size},
bilinear, then centre cropped), values 0..1; model.py normalises them itself. When FOLDER holds class folders
named as the classes, the accuracy over them is printed last. Needs torch, numpy and Pillow.
"""
import json
import sys
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageOps

from model import build

HERE = Path(__file__).resolve().parent
SIZE, MODE = {size}, {mode!r}
CLASSES = json.loads((HERE / "classes.json").read_text())
SUFFIXES = (".png", ".jpg", ".jpeg")


def load(path):
    with Image.open(path) as image:
        image = ImageOps.fit(image.convert(MODE), (SIZE, SIZE), method=Image.Resampling.BILINEAR)
    array = np.asarray(image, dtype=np.float32) / 255.0
    return torch.from_numpy(array[None] if array.ndim == 2 else array.transpose(2, 0, 1).copy())


def main(folder):
    folder = Path(folder)
    net = build().eval()
    net.load_state_dict(torch.load(HERE / "weights.pt", weights_only=True))
    right = scored = 0
    with torch.no_grad():
        for file in sorted(p for p in folder.rglob("*") if p.suffix.lower() in SUFFIXES and p.is_file()):
            relative = file.relative_to(folder)
            try:
                x = load(file)
            except OSError as error:
                print(f"{{relative}}\\tunreadable: {{error}}")
                continue
            name = CLASSES[int(net(x[None]).argmax(1))]
            print(f"{{relative}}\\t{{name}}")
            if len(relative.parts) > 1 and relative.parts[0] in CLASSES:
                scored += 1
                right += name == relative.parts[0]
    if scored:
        print(f"accuracy {{right / scored:.4f}} on {{scored}} images in class folders")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python predict.py FOLDER")
    main(sys.argv[1])
'''


def prediction_files(config: dict[str, Any]) -> dict[str, bytes]:
    """``classes.json`` and ``predict.py`` for a search on a registered set; nothing for a built-in one."""
    registered = config.get("registered")
    if not registered:
        return {}
    mode = "L" if registered["channels"] == 1 else "RGB"
    script = SCRIPT.format(name=registered["name"], mode=mode, size=int(config["data"]["input_size"]))
    return {"classes.json": json.dumps(registered["classes"], indent=1).encode(), "predict.py": script.encode()}
