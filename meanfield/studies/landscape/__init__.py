"""Energy-landscape studies: the critical points of the interaction energy E_beta of n
tokens. ``critical_points`` (the study: members, checkpoint, entry point),
``critical_points_dataset`` (its dataset), ``critical_search`` (starts, the
Levenberg-Marquardt/Newton search on the gradient, orbits compared modulo rotations,
reflections and permutations) and ``critical_theory`` (the closed-form Hessian spectra of
the symmetric critical points, and their recognition).

Submodules import each other directly; this package imports nothing."""
