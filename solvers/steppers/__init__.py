"""Time steppers for ``du/dt = L u + N(u)`` and a driver that lands on save times.

- ``ETDRK4``: the exponential time-differencing Runge-Kutta scheme of Cox & Matthews
  (2002), order 4, for a *diagonal* linear part ``L`` (a Fourier or spherical-harmonic
  Laplacian), with the phi-function coefficients evaluated by the contour integrals of
  Kassam & Trefethen [KT05] so that small ``h L`` loses no digits. The diffusion is
  integrated exactly; ``L = 0`` reduces it to the classical RK4.
- ``StepDoubling``: error control for any one-step method of order p: a step of h against
  two of h/2, error estimate ``|u_h/2 - u_h| / (2^p - 1)``, standard step-size update.
- ``BatchRK4``, ``integrate_batch``, ``integrate_sde_batch``: RK4 with retraction (fixed
  steps or step doubling per system) and geodesic Euler-Maruyama for a batch of
  independent systems stored as one array ``(B, n, m)`` (``solvers.steppers.batch``;
  the sphere maps act along the last axis, so ``GeodesicEulerMaruyama`` steps a batch).
- ``SSPRK3``: the three-stage, third-order strong-stability-preserving Runge-Kutta scheme
  of Shu & Osher (a convex combination of forward-Euler steps: keeps positivity of a
  positivity-preserving Euler step under the same step bound).

A stepper exposes ``attempt(u, h) -> (h_taken, u_new, h_next)``: ``h_taken`` is 0 for a
rejected step, and may be smaller than ``h`` when a stability bound cuts it. ``integrate``
drives a stepper to a list of save times, landing on each exactly. A non-autonomous field
``f(x, t)``: ``RetractedRK4(..., time_dependent=True)`` (alone or in ``StepDoubling``),
whose ``attempt(u, h, t)`` takes the time; ``integrate`` passes it.
"""
from solvers.steppers.batch import BatchRK4, integrate_batch, integrate_sde_batch
from solvers.steppers.driver import IntegrationResult, integrate
from solvers.steppers.etdrk4 import ETDRK4, phi_coefficients
from solvers.steppers.runge_kutta import SSPRK3, StepDoubling
from solvers.steppers.sphere import GeodesicEulerMaruyama, RetractedRK4, integrate_sde

__all__ = [
    "ETDRK4",
    "SSPRK3",
    "BatchRK4",
    "GeodesicEulerMaruyama",
    "IntegrationResult",
    "RetractedRK4",
    "StepDoubling",
    "integrate",
    "integrate_batch",
    "integrate_sde",
    "integrate_sde_batch",
    "phi_coefficients",
]
