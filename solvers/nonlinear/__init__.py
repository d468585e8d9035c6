"""Generic nonlinear solvers: Newton-Krylov and pseudo-arclength continuation.

- ``newton_krylov``: Newton's method with GMRES inner solves on Jacobian-vector products
  (exact or finite-difference), right preconditioning and a backtracking line search;
  quadratic convergence with an exact ``jvp``.
- ``continue_branch``: pseudo-arclength continuation of ``F(x, lam) = 0`` (tangent
  predictor, Newton-Krylov corrector, adaptive step), locating folds and, from
  user-supplied eigenvalues, bifurcations; ``switch_branch`` starts the branch that
  leaves a bifurcation point along a given direction.

No physics here: the callers pass residuals and their derivatives as callables.
"""
from solvers.nonlinear.branch import Branch, SpecialPoint
from solvers.nonlinear.continuation import continue_branch, switch_branch
from solvers.nonlinear.newton import NewtonResult, finite_difference_jvp, newton_krylov

__all__ = ["Branch", "NewtonResult", "SpecialPoint", "continue_branch",
           "finite_difference_jvp", "newton_krylov", "switch_branch"]
