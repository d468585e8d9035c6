"""Figures of the energy landscape (``meanfield.studies.landscape``): ``critical_points``
(the critical points of E_beta, their energies and Hessian indices).

Submodules import each other directly; this package imports nothing."""
