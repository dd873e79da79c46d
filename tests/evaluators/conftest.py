"""The evaluators' tests run on the CPU with one thread: the machine's cores are shared."""
from __future__ import annotations

import pytest
import torch

#: Small genomes, one per space (digits-sized work: a fraction of a second per epoch).
TINY = {
    "chain": ({"layers": [{"kernel": 3, "filters": 16}, {"kernel": 3, "filters": 32}]},
              {"name": "chain", "max_layers": 4, "modules": 2}),
    "cell": ({"edges": {"1<-0": "conv_3x3", "2<-0": "skip_connect", "2<-1": "avg_pool_3x3", "3<-0": "none",
                        "3<-1": "conv_1x1", "3<-2": "skip_connect"}},
             {"name": "cell", "cells_per_stage": 1, "stages": 2, "channels": 8}),
    "pelee": ({"stages": [[2, 1, 8], [1, 2, 8]]}, {"name": "pelee", "stages": 2, "layers": [1, 3], "growth": [8, 16]}),
}


@pytest.fixture(autouse=True, scope="session")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
