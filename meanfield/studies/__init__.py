"""Studies built from many runs, by family: ``bifurcation`` (stationary states, their
stability, branches, scan, map, fold curve), ``transport`` (compare, convergence,
coupling, contraction) and ``tokens`` (phase diagram, metastability, normalization, long
context). What the families share stays here: ``members`` (the engine or the executor
running the members of a study), ``dataset`` (how a study assembles its dataset) and
``array_engines`` (the array library and device of the batched token runs). This package
imports nothing."""
