"""Training-time augmentation of a batch already on its device (no DataLoader): a random crop of the image
zero-padded by an eighth of its side (at least one pixel), and a horizontal flip of half the images, both drawn
from the training's generator, so a run is reproducible. Used when a registered set's ``augment`` is on."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def augment_batch(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """``x`` ``(B, C, H, W)`` with each image shifted by a random crop of its padded self and flipped at random."""
    batch, _, height, width = x.shape
    pad = max(1, min(height, width) // 8)
    padded = F.pad(x, (pad, pad, pad, pad))
    dy = torch.randint(0, 2 * pad + 1, (batch,), generator=generator).to(x.device)
    dx = torch.randint(0, 2 * pad + 1, (batch,), generator=generator).to(x.device)
    flip = (torch.rand(batch, generator=generator) < 0.5).to(x.device)
    rows = (dy[:, None] + torch.arange(height, device=x.device))[:, None, :, None]  # (B, 1, H, 1)
    cols = (dx[:, None] + torch.arange(width, device=x.device))
    cols = torch.where(flip[:, None], cols.flip(1), cols)[:, None, None, :]  # (B, 1, 1, W)
    index = torch.arange(batch, device=x.device)[:, None, None, None]
    channel = torch.arange(x.shape[1], device=x.device)[None, :, None, None]
    return padded[index, channel, rows, cols]
