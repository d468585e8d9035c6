"""Bifurcation studies of the noisy model: its stationary states and their linear
stability (``spectral_state``, ``stationary``, ``stationary_linear``, and the exact states
at beta = 0 in ``noisy_kuramoto``), the branches in kappa or beta from the uniform state's
pitchforks (``branches``, ``shed_branch``, ``fold_curve``), and the task
``bifurcation(config)`` (``study``, its plan in ``plan`` and its dataset in
``branch_dataset``) with its modes "continuation" (``study``), "scan" (``scan``, with
``scan_plan``, ``scan_member`` and ``steady_state``: time integration to steady state) and
"map" (``parameter_map``: the first bifurcation over (beta, kappa)); on the zonal
geometry a study across dimensions (``across_dims``: ``domain.dim`` a list).

Submodules import each other directly; this package imports nothing, so that importing one
of them does not load the others."""
