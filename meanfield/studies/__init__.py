"""Studies built from many runs, by family: ``bifurcation`` (stationary states, their
stability, branches, scan, map, fold curve), ``transport`` (compare, convergence,
coupling, contraction) and ``tokens`` (phase diagram, metastability, normalization, long
context); ``members`` is the member machinery they share (the engine or the executor
running the members of a study). This package imports nothing."""
