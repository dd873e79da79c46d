"""Neuroevolution of weights (seed 001, DarwiNN): counter-based noise, OpenAI-ES and SNES as pure functions of
fitness values and seeds, and the CU / SU / scalars decompositions of their estimate over workers."""
from nas.neuroevolution.distribution import METHODS, distributed_gradient, share, traffic
from nas.neuroevolution.es import ALGORITHMS, ESConfig, centred_ranks, gradient_slice, reference_gradient
from nas.neuroevolution.noise import base_noise, offspring_noise

__all__ = ["ALGORITHMS", "METHODS", "ESConfig", "base_noise", "centred_ranks", "distributed_gradient",
           "gradient_slice", "offspring_noise", "reference_gradient", "share", "traffic"]
