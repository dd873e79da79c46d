"""Counter-based Gaussian noise: the noise of offspring ``i`` in generation ``g`` of a search with seed ``s`` is a
pure function of ``(s, g, i)``, and its element ``k`` a pure function of ``(s, g, i, k)``.

Every element is computed from its own counter (a SplitMix64-style hash of the row key and ``k``, then a
Box-Muller transform of two 53-bit uniforms), never from a stream's position. So any slice ``[a, b)`` of any
row is regenerated bit for bit without producing the elements before it, in blocks of bounded memory, on any
worker, in any order. This is what DarwiNN's chromosome updates need, and what a stream generator cannot give:
a stream written into a strided view (``torch.randn(out=view)``) is not the stream a contiguous buffer gets,
which made DarwiNN's CU update use other noise than its evaluation.

numpy only. A worker evaluating on the CPU uses these values; one evaluating on a GPU generates the same hash
with torch on the device (``evaluators.device_noise``: the same bits, normals equal to float64 rounding), and
every gradient is computed here, on the CPU, so that every copy gets the same estimate bit for bit.
"""
from __future__ import annotations

import numpy as np

#: The default number of elements generated at a time (memory is O(block), whatever the slice's length).
BLOCK = 1 << 16

#: The hash's constants, public so that another implementation (``evaluators.device_noise``, torch on the
#: evaluation device) computes the same bits: the counter step, SplitMix64's two multipliers and its shifts.
GOLDEN = 0x9E3779B97F4A7C15
MULTIPLIERS = (0xBF58476D1CE4E5B9, 0x94D049BB133111EB)
SHIFTS = (30, 27, 31)
#: A uniform keeps the top 53 bits of a hash: ``((bits >> 11) + 0.5) / 2**53``, in (0, 1).
UNIFORM_SHIFT = 11

_MASK = (1 << 64) - 1
_GOLDEN = GOLDEN
_M1 = np.uint64(MULTIPLIERS[0])
_M2 = np.uint64(MULTIPLIERS[1])


def _mix_int(value: int) -> int:
    """SplitMix64's finaliser on a Python int (for the per-row key)."""
    value = (value + _GOLDEN) & _MASK
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK
    return value ^ (value >> 31)


def row_key(seed: int, generation: int, index: int) -> int:
    """The 64-bit key of one noise row: a hash chain of the seed, the generation and the row's index."""
    for part in (seed, generation, index):
        if part < 0:
            raise ValueError(f"noise keys are non-negative integers (got {part})")
    key = _mix_int(seed & _MASK)
    key = _mix_int(key ^ (generation & _MASK))
    return _mix_int(key ^ (index & _MASK))


def _mix(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, element-wise on uint64 (wrapping arithmetic)."""
    values = values ^ (values >> np.uint64(SHIFTS[0]))
    values = values * _M1
    values = values ^ (values >> np.uint64(SHIFTS[1]))
    values = values * _M2
    return values ^ (values >> np.uint64(SHIFTS[2]))


def counter_bits(key: int, counters: np.ndarray) -> np.ndarray:
    """The 64 hashed bits of each counter (uint64) of the row ``key``: what every uniform is made of."""
    return _mix(np.asarray(counters, dtype=np.uint64) * np.uint64(_GOLDEN) + np.uint64(key))


def _uniform(key: int, counters: np.ndarray) -> np.ndarray:
    """Uniforms in (0, 1) with 53 bits, one per counter."""
    bits = counter_bits(key, counters)
    return ((bits >> np.uint64(UNIFORM_SHIFT)).astype(np.float64) + 0.5) * (1.0 / (1 << 53))


def _normal_block(key: int, start: int, stop: int) -> np.ndarray:
    """Standard normals for elements ``[start, stop)`` of the row ``key``: element ``k`` uses counters 2k, 2k+1."""
    counters = np.arange(2 * start, 2 * stop, dtype=np.uint64)
    u1 = _uniform(key, counters[0::2])
    u2 = _uniform(key, counters[1::2])
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def base_noise(seed: int, generation: int, index: int, start: int, stop: int, block: int = BLOCK,
               out: np.ndarray | None = None) -> np.ndarray:
    """Elements ``[start, stop)`` of the noise row ``index`` (float64), generated ``block`` elements at a time
    into ``out`` (allocated when absent; any float64 array of ``stop - start`` elements, strided or not)."""
    if not 0 <= start <= stop:
        raise ValueError(f"a noise slice needs 0 <= start <= stop (got start={start}, stop={stop})")
    if block < 1:
        raise ValueError(f"block must be at least 1 (got {block})")
    if out is None:
        out = np.empty(stop - start, dtype=np.float64)
    key = row_key(seed, generation, index)
    for low in range(start, stop, block):
        high = min(low + block, stop)
        out[low - start:high - start] = _normal_block(key, low, high)
    return out


def offspring_row(index: int, mirrored: bool) -> tuple[int, float]:
    """The noise row and sign of offspring ``index``: with mirrored sampling, offspring ``2m`` and ``2m + 1``
    share row ``m`` with signs + and -."""
    if mirrored:
        return index // 2, (1.0 if index % 2 == 0 else -1.0)
    return index, 1.0


def offspring_noise(seed: int, generation: int, index: int, start: int, stop: int, mirrored: bool = True,
                    block: int = BLOCK) -> np.ndarray:
    """The noise ``eps_i[start:stop]`` of offspring ``index`` (the sign of mirrored sampling applied)."""
    row, sign = offspring_row(index, mirrored)
    noise = base_noise(seed, generation, row, start, stop, block)
    if sign < 0:
        np.negative(noise, out=noise)
    return noise
