"""The batched fields and the run of a block of systems for the phase diagram.

Two states, both stepped by ``solvers.steppers.dormand_prince.integrate_batch_dopri``
with a ``beta`` per system (row ``k`` of a batch is system ``index[k]``):

- d >= n: the Gram matrices ``G`` (B, n, n) of the span reduction (``meanfield.model.
  ensemble``): ``G' = AG + (AG)^T - DG - GD``, ``D = diag(AG)``, with SA ``A =
  softmax(beta G)`` row-wise, USA ``A = e^{beta G}/n``. One batched product per
  evaluation (the coefficient form needs two: ``C C^T`` and ``A C``). The exponent is
  shifted by ``beta`` (``G_ij <= G_ii = 1``) instead of by the row maximum. ``G`` stays
  exactly symmetric (``AG + (AG)^T`` and ``(D_i + D_j) G_ij`` are), and the unit
  diagonal is invariant (``G_ii' = 2 D_i (1 - G_ii)``, attracting where ``D_i = <x_i,
  a_i> > 0``, as when the self term leads ``a_i``): it is kept to the tolerance by the
  step control, without a projection.
- d < n: the tokens ``X`` (B, n, d): ``v_i = a_i - <x_i, a_i> x_i``, ``a = A X``; the
  sphere is invariant likewise (``|x_i|^2' = 2 <x_i, a_i> (1 - |x_i|^2)``).

The initial states: ``uniform_span`` (Bartlett, no d-dimensional tokens; ``G0 = C0
C0^T``) or ``uniform_ensemble``, system ``s`` from ``system_rng(seed, s, "initial")``
whatever the block: the numbers of a system do not depend on the batch it is run in
(up to the round-off of the batch's vectorised arithmetic).

The study runs the compiled engine (``phase_numba``, float64, or with ``[phase_diagram]
precision = "single"`` the Gram field's inner work in float32); this numpy engine is the
batched reference it is tested against (float64, the same "single", or the whole state in
float32: a cosine is then held to ~1e-7, inside the threshold's margin ``1 - 0.999 =
1e-3``).
"""
from __future__ import annotations

from typing import Any

import array_api_compat
import numpy as np

from meanfield.model.ensemble import uniform_ensemble, uniform_span
from meanfield.studies.array_engines import backend
from solvers.errors import StepSizeError
from solvers.steppers.dormand_prince import integrate_batch_dopri, to_host

H0 = 0.05  # first step (then adapted per system)

def _beta_on(beta: np.ndarray, index: np.ndarray, like: Any, xp: Any) -> Any:
    """``beta[index]`` as a (B', 1, 1) array of ``like``'s dtype and device."""
    b = beta[index].reshape(-1, 1, 1)
    return xp.asarray(b, dtype=like.dtype, device=array_api_compat.device(like))


def gram_field(beta: np.ndarray, normalized: bool, single: bool = False):
    """``f(G, index)`` of the Gram flow, ``beta[index]`` per system (``G`` an array of
    any library of the array API: numpy, torch, CuPy; ``index`` a numpy array).
    ``single``: the exponentials, the row sums and the product in float32 (the argument
    ``beta (G - 1)`` formed in ``G``'s dtype first), the product centred as the compiled
    ``phase_gram_single``'s (``AG = A (G - 1) + sum_j A_ij``: its rounding scales with
    ``|G - 1|``), ``AG + (AG)^T - (d_i + d_k) G`` in ``G``'s dtype with its ``G``
    (``[phase_diagram] precision = "single"``)."""
    beta = np.asarray(beta, dtype=float)

    def f(g: Any, index: np.ndarray) -> Any:
        xp = array_api_compat.array_namespace(g)
        b = _beta_on(beta, index, g, xp)
        arg = (g - 1) * b
        low = (lambda v: xp.astype(v, xp.float32)) if single else (lambda v: v)
        a = xp.exp(low(arg))
        if normalized:
            a = a / xp.sum(a, axis=-1, keepdims=True)
        else:
            a = a * low(xp.exp(b) / g.shape[-1])
        if single:
            ag = (xp.astype(a @ low(g - 1), g.dtype)
                  + xp.astype(xp.sum(a, axis=-1, keepdims=True), g.dtype))
        else:
            ag = a @ g
        dg = xp.linalg.diagonal(ag)
        out = ag + xp.matrix_transpose(ag)
        out = out - (dg[:, :, None] + dg[:, None, :]) * g
        return out
    return f


def token_field(beta: np.ndarray, normalized: bool):
    """``f(X, index)`` of the tokens (SA or USA), ``beta[index]`` per system (``X`` of
    any library of the array API with ``einsum``)."""
    beta = np.asarray(beta, dtype=float)

    def f(x: Any, index: np.ndarray) -> Any:
        xp = array_api_compat.array_namespace(x)
        b = _beta_on(beta, index, x, xp)
        a = xp.exp((x @ xp.matrix_transpose(x) - 1) * b)
        if normalized:
            a = a / xp.sum(a, axis=-1, keepdims=True)
        else:
            a = a * (xp.exp(b) / x.shape[1])
        v = a @ x
        return v - xp.einsum("bij,bij->bi", x, v)[..., None] * x
    return f


def initial_states(n: int, d: int, systems: np.ndarray, seed: int) -> np.ndarray:
    """Gram matrices ``C0 C0^T`` of ``uniform_span`` (d >= n) or the tokens of
    ``uniform_ensemble`` (d < n), float64, of the systems ``systems`` (each from its own
    stream: the same whatever the other systems)."""
    out = np.empty((systems.size, n, min(n, d)))
    for k, s in enumerate(systems):
        if d >= n:
            c = uniform_span(1, n, d, seed, first=int(s))[0]
            g = c @ c.T
            out[k] = (g + g.T) / 2  # (exactly symmetric, whatever the BLAS kernel)
            np.fill_diagonal(out[k], 1.0)
        else:
            out[k] = uniform_ensemble(1, n, d, seed, first=int(s))[0]
    return out


def _weighted_field(beta, weights, where, like):
    from meanfield.studies.tokens.phase_weights import batch_field

    return batch_field("post-ln", beta, weights, where, like)


def _start(n: int, d: int, systems: np.ndarray, seed: int, weights_of,
           where: np.ndarray) -> tuple:
    """``(initial states of the rows, SystemWeights of the distinct systems or None)``
    (row k: system ``systems[where[k]]``): with
    ``weights_of`` (``phase_weights``) every system runs its full tokens with its own
    weights on the batched array engine ("numba" runs it on numpy), and is frozen only
    where V = I; without, ``initial_states``."""
    if weights_of is None:
        return initial_states(n, d, systems, seed)[where], None
    from meanfield.studies.tokens.phase_weights import initial_tokens

    return initial_tokens(n, d, systems, seed)[where], weights_of(systems)


def _compiled(gram: bool, precision: str, x0: np.ndarray, beta: np.ndarray,
              systems: np.ndarray, times: np.ndarray, threshold: float, normalized: bool,
              freeze: bool, tolerance: float, h_max: float) -> dict:
    """``pair_fractions`` on the compiled engine (``phase_numba.run_systems``)."""
    from meanfield.studies.tokens import phase_numba as pn

    c = max(threshold, 0.0)
    mode = (pn.GRAM_SINGLE if precision == "single" else pn.GRAM) if gram else pn.TOKENS
    frac, steps, _, evals, left, failed = pn.run_systems(
        mode, x0, beta, bool(normalized), times, float(threshold), c + (1 - c) / 2,
        bool(freeze), float(tolerance), H0, h_max)
    if failed.any():
        s = int(systems[np.argmax(failed)])
        raise StepSizeError(f"the time step of system {s} (beta = "
                            f"{beta[np.argmax(failed)]:g}) fell below 1e-14: loosen "
                            "phase_diagram.tolerance")
    return {"fractions": frac, "steps": steps, "left": left,
            "evaluations": float(evals.mean())}


def pair_fractions(*, n: int, d: int, beta: np.ndarray, systems: np.ndarray,
                   times: np.ndarray, threshold: float, normalized: bool, seed: int,
                   tolerance: float, engine: str = "numba", freeze: bool = True,
                   precision: str = "double", weights_of=None) -> dict:
    """Per system (a beta each), the fraction of pairs ``i < j`` with ``<x_i, x_j> >=
    threshold`` at each of ``times``.

    ``engine`` "numba": ``meanfield.studies.tokens.phase_numba`` (float64, a system at a time
    in cache, the systems over the thread policy's threads, in short compiled calls
    that Ctrl-C can stop); "numpy", "torch", "cupy": the batched
    ``integrate_batch_dopri``, the same scheme. ``precision`` "double"; "single"
    (``[phase_diagram] precision``): the Gram field's inner work in float32, the state and
    the step control float64 (``phase_gram_single``; the tokens, d < n, and weighted
    systems run in double); "float32" (array engines only, a reference): the whole state
    in float32.
    ``weights_of(systems) -> SystemWeights``: each system's own weights (``_start``).

    Returns:
        ``{"fractions": (B, T), "steps": (B,), "left": (B,) time a system froze (inf if
        not), "evaluations": field evaluations per system}``.
    """
    beta = np.asarray(beta, dtype=float)
    times = np.asarray(times, dtype=float)
    # the same initial state for the same system at every beta: drawn once per system
    uniq, where = np.unique(systems, return_inverse=True)
    x0, weights = _start(n, d, uniq, seed, weights_of, where)
    if weights is not None:  # (the batched array engine; freezing needs V = I)
        engine, freeze = ("numpy" if engine == "numba" else engine), freeze and weights.freezes
    gram = d >= n and weights is None
    c = max(threshold, 0.0)
    h_max = max(1.0, float(times[-1]) / 8)
    if engine == "numba":
        return _compiled(gram, precision, x0, beta, systems, times, threshold, normalized,
                         freeze, tolerance, h_max)
    xp, dev = backend(engine)
    dtype = xp.float32 if precision == "float32" else xp.float64
    x0 = xp.asarray(x0.astype(np.float32 if precision == "float32" else np.float64),
                    device=dev)
    field = (_weighted_field(beta, weights, where, x0) if weights is not None
             else gram_field(beta, normalized, precision == "single") if gram
             else token_field(beta, normalized))
    iu, ju = np.triu_indices(n, 1)
    pairs = xp.asarray(iu * n + ju, device=dev)  # i < j in the flattened (n, n)
    fractions = np.full((beta.size, np.asarray(times).size), np.nan)
    thr = xp.asarray(threshold, dtype=dtype, device=dev)

    def cosines(x: Any) -> Any:
        g = x if gram else x @ xp.matrix_transpose(x)
        return xp.take(xp.reshape(g, (g.shape[0], n * n)), pairs, axis=1)

    def observe(k: int, index: np.ndarray, x: Any) -> None:
        hit = xp.astype(cosines(x) >= thr, xp.float64)
        fractions[index, k] = to_host(xp.mean(hit, axis=1))

    level = xp.asarray(c + (1 - c) / 2, dtype=dtype, device=dev)

    def leave(x: Any, index: np.ndarray) -> Any:
        return xp.min(cosines(x), axis=1) >= level

    # (a trial step too long for USA's speeds e^beta overflows: it is rejected, err = inf)
    with np.errstate(over="ignore", invalid="ignore"):
        res = integrate_batch_dopri(field, x0, times, tolerance=tolerance,
                                    observe=observe, leave=leave if freeze else None,
                                    h0=H0, h_max=h_max)
    frozen = np.isfinite(res["left"])
    rows = np.nonzero(frozen)[0]
    later = np.asarray(times)[None, :] > res["left"][rows, None]
    fr = fractions[rows]
    fr[later & np.isnan(fr)] = 1.0  # every pair stays past the threshold (module doc)
    fractions[rows] = fr
    if np.isnan(fractions).any():  # pragma: no cover - the integrator saves every time
        raise RuntimeError("a save was missed")
    return {"fractions": fractions, "steps": res["steps"], "left": res["left"],
            "evaluations": res["evaluations"]}


__all__ = ["gram_field", "initial_states", "pair_fractions", "token_field"]
