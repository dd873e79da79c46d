"""Space-independent genetic operators: small functions over plain values that draw from a numpy ``Generator``.

- :mod:`nas.operators.mutation`: pick, resample and replace genes.
- :mod:`nas.operators.crossover`: one-point and uniform recombination of two equal-length gene sequences.
- :mod:`nas.operators.selection`: choosing parents by fitness (roulette, tournament, aging).

Import the functions from their modules; this package imports nothing, so each module stays independent.
"""
