"""Generic nonlinear solvers: Newton-Krylov and pseudo-arclength continuation.

- ``newton_krylov``: Newton's method with GMRES inner solves on Jacobian-vector products
  (exact or finite-difference), right preconditioning and a backtracking line search;
  quadratic convergence with an exact ``jvp``.

No physics here: the callers pass residuals and their derivatives as callables.
"""
from solvers.nonlinear.newton import NewtonResult, finite_difference_jvp, newton_krylov

__all__ = ["NewtonResult", "finite_difference_jvp", "newton_krylov"]
