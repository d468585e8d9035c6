"""Transport studies: how far apart measures are and how fast they come together.
``compare`` (a PDE solution against particles), ``convergence`` (the mean-field limit:
W_p of the empirical measure against n, Dobrushin's bound; ``gaussian_convergence`` its
exact Gaussian case for general weights), ``coupling`` (the synchronous coupling of a
particle system with its nonlinear process), ``contraction`` (W_2 rates, with
``contraction_rates``, ``contraction_reference`` and ``contraction_dataset``).

Submodules import each other directly; this package imports nothing."""
