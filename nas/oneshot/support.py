"""Which search spaces a supernet can hold, and, for the others, why not (a message a user reads)."""
from __future__ import annotations

from nas.spaces.base import SearchSpace

#: The spaces whose every genome is a path through one supernet.
SUPERNET_SPACES = ("cell",)

_REASONS = {
    "chain": (
        "A supernet cannot hold the 'chain' space: its genomes differ in the number of layers and in each "
        "layer's width (16 to 128 filters), so the shape of every layer's input depends on the layers chosen "
        "before it. Holding every candidate once would need weights sliced by channel (as once-for-all networks "
        "do), which this engine does not have; search 'chain' with an evolutionary search instead, or use the "
        "'cell' space, whose candidates all share one shape."
    ),
    "pelee": (
        "A supernet cannot hold the 'pelee' space: its genomes differ in the number of dense layers per stage, "
        "their ways and their growth rate, and every dense layer concatenates its output to its input, so each "
        "layer's input width depends on every choice before it. Holding every candidate once would need weights "
        "sliced by channel, which this engine does not have; search 'pelee' with an evolutionary search instead, "
        "or use the 'cell' space, whose candidates all share one shape."
    ),
}


def supernet_support(space: SearchSpace | str) -> str | None:
    """``None`` when a supernet can hold every genome of ``space`` (a space or its registry name), else the
    reason it cannot, in words for the user."""
    name = space if isinstance(space, str) else space.name
    if name in SUPERNET_SPACES:
        return None
    return _REASONS.get(name, f"A supernet cannot hold the {name!r} space: only {', '.join(SUPERNET_SPACES)} "
                              f"{'is' if len(SUPERNET_SPACES) == 1 else 'are'} supported.")


def check_supernet_space(space: SearchSpace | str) -> None:
    """``ValueError`` with :func:`supernet_support`'s reason when a supernet cannot hold ``space``."""
    reason = supernet_support(space)
    if reason is not None:
        raise ValueError(reason)
