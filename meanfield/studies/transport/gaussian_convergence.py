"""Tokens in R^d against the exact Gaussian mean field: the convergence study's reference
for pure self-attention with general weights (docs/gaussian_mean_field.md).

Pure self-attention moves tokens by ``dx_i/dt = sum_j P_ij V x_j``,
``P_ij ∝ e^{beta <Q x_i, K x_j>}``. Started from ``mu_0 = N(alpha_0, Sigma_0)`` its mean
field stays Gaussian, ``N(alpha_t, Sigma_t)`` (``meanfield.model.gaussian``, solved to
``REFERENCE_RTOL``), and the field it follows is affine,
``v_t(y) = V (alpha_t + Sigma_t A y)`` with ``A = beta K^T Q``. For n tokens drawn
i.i.d. from ``mu_0`` (seed ``seed + replica``), at each save time:

- ``mean_error``: ``|mean_i X_i(t) - alpha_t|``;
- ``covariance_error``: ``||cov(X(t)) - Sigma_t||_F`` (the covariance of the empirical
  measure, divided by n);
- ``coupling``: ``((1/n) sum_i |X_i(t) - Y_i(t)|^p)^{1/p}`` (p = 2 unless the config's
  ``convergence.p`` says 1), the Sznitman coupling: the
  partners ``Y_i`` start at the same samples and follow ``v_t``, so they are n exact
  samples of ``mu_t`` and the coupling is the error the interaction makes;
- ``mean_sampling_floor``, ``covariance_sampling_floor``: the same errors of the ``Y_i``
  (n exact samples);

and for each quantity ``q`` the least-squares slope of ``log q`` against ``log n`` over
all (n, replica) with its 95 % interval (``q_slope``, ``q_slope_low``, ``q_slope_high``;
``meanfield.studies.transport.slopes.fit_slope``). Every error falls like ``n^{-1/2}``.

Time stepping: both ``X`` and ``Y`` by the classical RK4 (order 4) with equal steps of at
most ``dt`` between the save times (``coupling.step_grid``); ``Y``'s stages take
``alpha, Sigma`` at ``t, t + h/2, t + h`` from the reference. The attention average is
the cost: n^2 exponentials per evaluation, evaluated without an n x n array
(``attention_average``: rows in parallel with numba, or rows in blocks with numpy,
torch or CuPy, the latter two on a GPU when there is one).

Two entry points: ``gaussian_convergence(mean, covariance, head, ...)`` (Python, any
engine, serial) and ``gaussian_study(cfg)``, which ``meanfield.convergence`` runs for
``domain.geometry = "euclidean"`` with ``initial.kind = "gaussian"`` and one head of
``[weights]`` (numba; members (n, replica) through the run engine and the executor,
with checkpoint and resume). Both draw replica r's tokens with
``initial.samplers.gaussian_tokens`` from ``initial_rng(seed + r)``, so they give the
same numbers.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np
import xarray as xr

from meanfield.initial.samplers import gaussian_tokens
from meanfield.model.gaussian import gaussian_mean_field
from meanfield.model.tokens import initial_rng
from meanfield.model.weighted_attention import Head, build_heads, check_head
from meanfield.studies.transport.coupling import TIME_ROUND, step_grid, table_times
from meanfield.studies.members import MemberList, run_study
from solvers.particles.direct import call_rows

REFERENCE_RTOL = 1e-10
# Token pairs (exponentials) of a whole study refused above this: numba on 16 cores does
# about 1e9 per second (10.8 s per evaluation at n = 1e5), so 1e14 is a day of them
MAX_PAIRS = 1e14
# Seconds a RK4 step of a member at least: a tenth of the measured 1.3 ms (n = 16, 50;
# 20 ms at n = 200; d = 2, 2 loaded cores); the reference's table: 3 us (measured 2.9)
MEMBER_STEP_S, REFERENCE_STEP_S = 1e-4, 3e-6
BLOCK_BYTES = 2**27  # logits of one block of rows, numpy: 128 MiB
GPU_BLOCK_BYTES = 2**31  # torch / CuPy: 2 GiB (fewer, larger kernels; GPUs hold 16+ GiB)
MEASURES = ("mean_error", "covariance_error", "coupling", "mean_sampling_floor",
            "covariance_sampling_floor")
LONG_NAMES = {
    "mean_error": "|mean_i X_i(t) - alpha_t|: tokens' mean vs the Gaussian mean field",
    "covariance_error": "||cov(X(t)) - Sigma_t||_F: tokens' covariance vs the Gaussian",
    "coupling": "((1/n) sum_i |X_i - Y_i|^p)^(1/p): tokens vs their partners on the exact "
                "field V(alpha_t + Sigma_t A y)",
    "mean_sampling_floor": "|mean_i Y_i(t) - alpha_t|: n exact samples",
    "covariance_sampling_floor": "||cov(Y(t)) - Sigma_t||_F: n exact samples",
}
UNITS = {"mean_error": "1", "covariance_error": "1", "coupling": "1",
         "mean_sampling_floor": "1", "covariance_sampling_floor": "1"}


# ---------------------------------------------------------------------------------------
# The attention average sum_j P_ij w_j, P_ij ∝ e^{<q_i, k_j>}, without an n x n array.

def make_attention_kernel():
    """Compile ``kernel(q, k, w, out)``: ``out_i = sum_j e^{l_ij - m_i} w_j / sum_j
    e^{l_ij - m_i}``, ``l_ij = <q_i, k_j>``, ``m_i = max_j l_ij``; rows in parallel
    (``prange``), each with one length-n buffer of its logits (memory O(threads n))."""

    @numba.njit(parallel=True, cache=True)
    def kernel(q, k, w, out):
        n, d = k.shape
        for i in numba.prange(q.shape[0]):
            logits = np.empty(n)
            top = -np.inf
            for j in range(n):
                s = 0.0
                for c in range(d):
                    s += q[i, c] * k[j, c]
                logits[j] = s
                top = max(top, s)
            z = 0.0
            acc = np.zeros(w.shape[1])
            for j in range(n):
                e = math.exp(logits[j] - top)  # <= 1: no overflow
                z += e
                for c in range(w.shape[1]):
                    acc[c] += e * w[j, c]
            for c in range(w.shape[1]):
                out[i, c] = acc[c] / z

    return kernel


_KERNELS: dict = {}


def _numba_kernel():
    if "attention" not in _KERNELS:
        _KERNELS["attention"] = make_attention_kernel()
    return _KERNELS["attention"]


def engine_backend(engine: str, key: str = "engine"):
    """The array namespace and device of ``engine`` (``array_engines.backend``: torch on
    CUDA when available, CuPy on its device), with errors naming ``key``."""
    from meanfield.errors import ConfigError
    from meanfield.studies.array_engines import ENGINES, backend

    if engine not in ENGINES:
        raise ConfigError(f"{key} = {engine!r}: give one of {', '.join(ENGINES)}", key)
    try:
        return backend(engine)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("phase_diagram.engine", key), key) from None


def block_rows(n: int, block_bytes: int) -> int:
    """Rows per block so that a block's ``rows x n`` logits take ``block_bytes``."""
    return max(1, min(n, block_bytes // (8 * max(n, 1))))


def attention_average(q: np.ndarray, k: np.ndarray, w: np.ndarray,
                      engine: str = "numba", check=None) -> np.ndarray:
    """``sum_j P_ij w_j`` with ``P_ij = e^{<q_i, k_j>} / sum_l e^{<q_i, k_l>}``.

    Each row is shifted by its largest logit before the exponential (no overflow). Memory
    is O(n d) plus one block: numba keeps a length-n buffer per thread; the array engines
    take ``block_rows`` rows at a time (``BLOCK_BYTES`` of logits with numpy,
    ``GPU_BLOCK_BYTES`` with torch or CuPy).

    Args:
        q: ``(m, d)`` queries ``Q x_i`` (times beta).
        k: ``(n, d)`` keys ``K x_j``.
        w: ``(n, e)`` values ``V x_j``.
        engine: "numba" (CPU threads), "numpy", "torch" or "cupy" (GPU if available).
        check: called between the numba engine's compiled calls; may raise.

    Returns:
        ``(m, e)`` numpy array.
    """
    q, k, w = (np.ascontiguousarray(a, dtype=float) for a in (q, k, w))
    if engine == "numba":  # (rows per compiled call: each at most direct.CALL_TERMS
        out = np.empty((q.shape[0], w.shape[1]))  # terms, so Ctrl-C waits ~0.4 s at most)
        rows = call_rows(k.shape[0], k.shape[1] + w.shape[1])
        for s in range(0, q.shape[0], rows):
            _numba_kernel()(q[s:s + rows], k, w, out[s:s + rows])
            if check is not None and s + rows < q.shape[0]:
                check()
        return out
    xp, device = engine_backend(engine)
    qd, kd, wd = (xp.asarray(a, device=device) for a in (q, k, w))
    rows = block_rows(k.shape[0], BLOCK_BYTES if engine == "numpy" else GPU_BLOCK_BYTES)
    parts = []
    for s in range(0, q.shape[0], rows):
        logits = qd[s:s + rows] @ kd.T
        logits = xp.exp(logits - xp.max(logits, axis=1, keepdims=True))
        parts.append((logits @ wd) / xp.sum(logits, axis=1, keepdims=True))
    out = xp.concat(parts, axis=0)
    return np.asarray(out.cpu() if engine == "torch" else
                      (out.get() if engine == "cupy" else out))


def pure_field(head: Head, beta: float = 1.0, engine: str = "numba"
               ) -> Callable[[np.ndarray], np.ndarray]:
    """``x -> sum_j P_ij V x_j``, ``P_ij ∝ e^{beta <Q x_i, K x_j>}`` (one head, no mask):
    ``meanfield.model.weighted_attention.pure_velocity`` by ``attention_average``."""
    query, key, value = head.query, head.key, head.value

    def field(x: np.ndarray) -> np.ndarray:
        return attention_average(beta * (x @ query.T), x @ key.T, x @ value.T, engine)

    return field


# ---------------------------------------------------------------------------------------
# The coupled paths.

@dataclass
class GaussianReference:
    """The Gaussian mean field at every RK4 stage time (``coupling.table_times``)."""

    times: np.ndarray
    mean: np.ndarray
    covariance: np.ndarray
    a: np.ndarray  # beta K^T Q
    value: np.ndarray

    def index(self, t: float) -> int:
        i = int(np.searchsorted(self.times, round(float(t), TIME_ROUND)))
        if i >= self.times.size or abs(self.times[i] - t) > 1e-9 * max(1.0, abs(t)):
            raise ValueError(f"the Gaussian reference has no state at t = {t}")
        return i

    def field(self, t: float) -> Callable[[np.ndarray], np.ndarray]:
        """``y -> V (alpha_t + Sigma_t A y)``, the exact mean-field velocity."""
        i = self.index(t)
        shift = self.value @ self.mean[i]
        gain = self.value @ self.covariance[i] @ self.a
        return lambda y: shift + y @ gain.T


def gaussian_reference(mean, covariance, head: Head, beta: float,
                       save_times: np.ndarray, dt: float) -> GaussianReference:
    """Solve the Gaussian mean field (to ``REFERENCE_RTOL``) at the RK4 stage times of
    ``save_times`` with steps of at most ``dt``."""
    times = table_times(save_times, dt, noisy=False)
    sol = gaussian_mean_field(mean, covariance, times, query=beta * head.query,
                              key=head.key, value=head.value, rtol=REFERENCE_RTOL)
    return GaussianReference(times, sol.mean, sol.covariance,
                             beta * head.key.T @ head.query, np.asarray(head.value))


def rk4_step(f0, f_half, f1, y: np.ndarray, h: float) -> np.ndarray:
    """One classical RK4 step (order 4) of ``y' = f(t, y)``, the fields at ``t, t + h/2,
    t + h`` given."""
    k1 = f0(y)
    k2 = f_half(y + (0.5 * h) * k1)
    k3 = f_half(y + (0.5 * h) * k2)
    k4 = f1(y + h * k3)
    return y + (h / 6.0) * (k1 + 2.0 * (k2 + k3) + k4)


def coupled_paths(field, reference: GaussianReference, x0: np.ndarray,
                  save_times: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Tokens ``X`` (``field``) and partners ``Y`` (the reference's affine field) from
    ``x0``, at ``0`` and ``save_times``: two ``(times, n, d)`` arrays."""
    x = np.array(x0, dtype=float)
    y = x.copy()
    xs, ys = [x.copy()], [y.copy()]
    for start, h, m in step_grid(save_times, dt):
        for j in range(m):
            t = start + j * h
            x = rk4_step(field, field, field, x, h)
            y = rk4_step(reference.field(t), reference.field(t + 0.5 * h),
                         reference.field(t + h), y, h)
        xs.append(x.copy())
        ys.append(y.copy())
    return np.stack(xs), np.stack(ys)


def moment_errors(points: np.ndarray, mean: np.ndarray, covariance: np.ndarray
                  ) -> tuple[float, float]:
    """``|mean(points) - mean|`` and ``||cov(points) - covariance||_F`` (the empirical
    measure's covariance, divided by n)."""
    centre = points.mean(axis=0)
    dev = points - centre
    cov = dev.T @ dev / points.shape[0]
    return (float(np.linalg.norm(centre - mean)),
            float(np.linalg.norm(cov - covariance)))


def member_errors(x0: np.ndarray, head: Head, beta: float, reference: GaussianReference,
                  save_times: np.ndarray, dt: float, engine: str = "numba",
                  p: float = 2.0) -> dict:
    """The measures (module docstring) of the tokens started at ``x0``, each an array
    over ``[0, *save_times]`` (the coupling of order ``p``)."""
    xs, ys = coupled_paths(pure_field(head, beta, engine), reference, x0, save_times, dt)
    times = np.concatenate([[0.0], np.asarray(save_times, dtype=float)])
    out = {name: np.empty(times.size) for name in MEASURES}
    for k, t in enumerate(times):
        i = reference.index(t)
        alpha, sigma = reference.mean[i], reference.covariance[i]
        out["mean_error"][k], out["covariance_error"][k] = moment_errors(xs[k], alpha, sigma)
        (out["mean_sampling_floor"][k],
         out["covariance_sampling_floor"][k]) = moment_errors(ys[k], alpha, sigma)
        gaps = np.linalg.norm(xs[k] - ys[k], axis=1)
        out["coupling"][k] = float(np.mean(gaps ** p) ** (1.0 / p))
    return out


# ---------------------------------------------------------------------------------------
# The study as a Python function, and its dataset.

def gaussian_dataset(ns: list[int], replicas: int, times: np.ndarray, results: dict,
                     attrs: dict) -> xr.Dataset:
    """The dataset (dims ``(n, replica, time)``) of ``results[(n, replica)]`` (member
    dicts; members missing are NaN), with the fitted slopes per quantity and time."""
    from meanfield.studies.transport.slopes import fit_slope

    shape = (len(ns), replicas, len(times))
    arrays = {name: np.full(shape, np.nan) for name in MEASURES}
    for (n, r), value in results.items():
        for name in MEASURES:
            arrays[name][ns.index(n), r] = value[name]
    data = {name: (("n", "replica", "time"), arrays[name],
                   {"units": UNITS[name], "long_name": LONG_NAMES[name]})
            for name in MEASURES}
    n_grid = np.broadcast_to(np.asarray(ns, dtype=float)[:, None], (len(ns), replicas))
    for name in MEASURES:
        fits = np.array([fit_slope(n_grid.ravel(), arrays[name][:, :, k].ravel())
                         for k in range(len(times))])
        what = f"slope of log {name} against log n"
        for j, suffix, tail in ((0, "", ""), (1, "_low", ", 95 % low"),
                                (2, "_high", ", 95 % high")):
            data[f"{name}_slope{suffix}"] = ("time", fits[:, j],
                                             {"units": "1", "long_name": what + tail})
    return xr.Dataset(data, coords={"n": ("n", np.asarray(ns)),
                                    "replica": np.arange(replicas),
                                    "time": ("time", np.asarray(times, dtype=float),
                                             {"units": "1"})},
                      attrs={"reference": "gaussian", **attrs})


def gaussian_convergence(mean, covariance, head: Head, ns, replicas: int, save_times,
                         dt: float, *, beta: float = 1.0, seed: int = 0,
                         engine: str = "numba", p: float = 2.0) -> xr.Dataset:
    """The study without a config: every (n, replica), serially.

    Args:
        mean, covariance: ``alpha_0`` ``(d,)`` and ``Sigma_0`` ``(d, d)``.
        head: the weights ``(Q, K, V)``.
        ns: token counts.
        replicas: samples per n (``initial.samplers.gaussian_tokens`` from
            ``initial_rng(seed + replica)``, as the config's Gaussian tokens).
        save_times: increasing times > 0.
        dt: the largest RK4 step.
        beta: inverse temperature of the logits.
        seed: the first replica's seed.
        engine: of ``attention_average``.
        p: the order of the coupling distance.

    Returns:
        The dataset of ``gaussian_dataset``.
    """
    from meanfield.errors import ConfigError

    number = isinstance(dt, (int, float, np.floating, np.integer)) and not isinstance(dt, bool)
    if not (number and math.isfinite(dt) and dt > 0):  # 0: a division by zero; < 0: backwards
        raise ConfigError(f"dt = {dt!r}: the largest RK4 step must be a finite number > 0",
                          "dt")
    mean = np.asarray(mean, dtype=float)
    head = check_head(head, mean.size)
    save_times = np.asarray(save_times, dtype=float)
    reference = gaussian_reference(mean, covariance, head, beta, save_times, dt)
    results = {}
    for n in ns:
        for r in range(replicas):
            x0 = gaussian_tokens(mean, covariance, n, initial_rng(seed + r))
            results[(n, r)] = member_errors(x0, head, beta, reference, save_times, dt,
                                            engine, p)
    times = np.concatenate([[0.0], save_times])
    return gaussian_dataset(list(ns), replicas, times, results,
                            {"dt": dt, "beta": beta, "seed": seed, "engine": engine,
                             "p": p, "reference_rtol": REFERENCE_RTOL})


# ---------------------------------------------------------------------------------------
# The study of a config: ``meanfield.convergence`` with ``domain.geometry = "euclidean"``
# and ``initial.kind = "gaussian"`` (one head, no mask, no rescaling: the config's task
# check), through the run engine (checkpoint, resume, Ctrl-C, executor).

def gaussian_plan(cfg: dict) -> dict:
    """Checks before any work and the plan: the head, the save times, the step, the
    members and the reference (a covariance that blows up before ``time.t_final`` is
    refused naming that key)."""
    from meanfield import config as cfgmod
    from meanfield.config.studies import check_convergence_task
    from meanfield.errors import ConfigError
    from meanfield.runs import limits, sizes
    from meanfield.runs.schedule import save_times
    from meanfield.studies.transport.coupling import AUTO_DT

    check_convergence_task(cfg, "convergence")  # (also when validated without the task)
    c, d = cfg["convergence"], cfg["domain"]["dim"]
    sizes.check_weight_matrices(cfg)  # d x d matrices: before any is drawn
    head = build_heads(cfg)[0]
    initial = cfg["initial"]
    mean = np.asarray(initial["mean"], dtype=float)
    cov = initial["covariance"]
    cov = float(cov) * np.eye(d) if np.ndim(cov) == 0 else np.asarray(cov, dtype=float)
    members = limits.check_members(len(c["n"]) * c["replicas"], "convergence.replicas",
                                   c["replicas"], "give fewer replicas or convergence.n")
    seed = cfg["particles"]["seed"]
    if seed + c["replicas"] - 1 > cfgmod.MAX_SEED:
        raise ConfigError(f"particles.seed = {seed}: the replicas' seeds seed + r pass "
                          f"{cfgmod.MAX_SEED}", "particles.seed")
    dt = AUTO_DT if cfg["time"]["dt"] == "auto" else float(cfg["time"]["dt"])
    times = save_times(cfg["time"]["t_final"], cfg["time"]["save_every"])
    steps = sum(m for _, _, m in step_grid(times[1:], dt))
    # the reference: the Gaussian's mean and covariance at every RK4 stage time
    sizes.check_time_table(steps, 2, 8.0 * (d + d * d), "time.dt", dt,
                           "the Gaussian reference is tabled at every token step and half "
                           f"step up to time.t_final = {cfg['time']['t_final']:g}")
    sizes.warn_step_time(steps, REFERENCE_STEP_S + MEMBER_STEP_S * members, "time.dt", dt,
                         f"{members} members (and the Gaussian reference) stepping to "
                         f"time.t_final = {cfg['time']['t_final']:g}")
    pairs = 4 * steps * c["replicas"] * sum(float(n) ** 2 for n in c["n"])
    if pairs > MAX_PAIRS:
        raise ConfigError(f"convergence.n up to {max(c['n'])}: {pairs:.2g} token pairs (4 RK4 "
                          f"evaluations of n^2 exponentials in each of {steps} steps, "
                          f"{c['replicas']} replicas), limit {MAX_PAIRS:.0e} (a day of 16 "
                          "cores); use fewer or smaller token counts, fewer replicas or a "
                          "shorter time.t_final", "convergence.n")
    beta = cfg["model"]["beta"]
    try:
        reference = gaussian_reference(mean, cov, head, beta, times[1:], dt)
    except ValueError as exc:  # the Gaussian's finite-time blow-up
        raise ConfigError(f"time.t_final = {cfg['time']['t_final']:g}: {exc}",
                          "time.t_final") from None
    a = reference.a
    tilt = float(np.linalg.norm(np.linalg.cholesky(cov).T @ a, 2))
    return {"head": head, "mean": mean, "covariance": cov, "dt": dt, "times": times,
            "beta": beta, "reference": reference, "tilt": tilt, "dim": d, "pairs": pairs,
            "members": [(n, r) for n in c["n"] for r in range(c["replicas"])]}


def run_member(cfg: dict, plan: dict, params: dict) -> dict:
    """The measures of member ``(n, replica)``: the config's Gaussian tokens drawn from
    ``particles.seed + replica`` (``sample_tokens``), then ``member_errors``."""
    from meanfield.initial.samplers import sample_tokens

    n, r = params["n"], params["replica"]
    x0 = sample_tokens(cfg["initial"], n, plan["dim"], initial_rng(cfg["particles"]["seed"] + r),
                       geometry="euclidean")
    return member_errors(x0, plan["head"], plan["beta"], plan["reference"],
                         plan["times"][1:], plan["dt"], "numba", cfg["convergence"]["p"])


class GaussianConvergenceTask(MemberList):
    """Points: the start, then each (n, replica) member; a checkpoint keeps those done."""

    kind = "convergence"

    def __init__(self, cfg: dict, plan: dict, executor, progress: bool):
        super().__init__(cfg, executor, progress,
                         [{"n": n, "replica": r} for n, r in plan["members"]],
                         functools.partial(run_member, cfg, plan))
        self.plan = plan

    def describe(self, params: dict) -> str:
        return f"member n = {params['n']}, replica {params['replica']}"

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        done = {self.plan["members"][i]: f for i, f in enumerate(frames[1:])
                if isinstance(f, dict)}
        return config_dataset(self.cfg, self.plan, done, info)

    def checkpoint(self, state, frames: list) -> xr.Dataset:
        done = [f for f in self.kept(frames)[1:] if isinstance(f, dict)]
        if not done:
            return xr.Dataset()
        return xr.Dataset({f"member_{k}": (("member", "time"), np.stack([f[k] for f in done]))
                           for k in MEASURES})

    def restore(self, ckpt: xr.Dataset):
        frames: list = [None]
        if "member_mean_error" in ckpt:
            for i in range(ckpt.sizes["member"]):
                frames.append({k: ckpt[f"member_{k}"].values[i] for k in MEASURES})
        return frames[-1], frames


def config_dataset(cfg: dict, plan: dict, done: dict, info: dict) -> xr.Dataset:
    """``gaussian_dataset`` of the members done, with the config's attrs."""
    c = cfg["convergence"]
    ds = gaussian_dataset(list(c["n"]), c["replicas"], plan["times"], done, {})
    ds.attrs.update({
        "title": f"convergence of pure self-attention tokens in R^{plan['dim']} to the "
                 f"Gaussian mean field, tilt |Sigma0^(1/2) A| = {plan['tilt']:.3g}",
        "geometry": "euclidean", "model": "pure", "beta": plan["beta"], "p": c["p"],
        "dt": plan["dt"], "tilt": plan["tilt"], "token_pairs": plan["pairs"],
        "reference_rtol": REFERENCE_RTOL,
        "engine": "numba", **info})
    return ds


def gaussian_study(cfg: dict, *, out=None, overwrite: bool = False, resume: bool = False,
                   progress: bool = False) -> xr.Dataset:
    """The convergence study of a validated config of Gaussian tokens in R^d
    (``meanfield.convergence`` dispatches here).

    Raises:
        ConfigError: bad input, before any work (the reference's blow-up included).
        TaskFailed: a member failed (named); the others are kept in the checkpoint.
    """
    plan = gaussian_plan(cfg)
    return run_study(cfg, lambda executor: GaussianConvergenceTask(cfg, plan, executor, progress),
                     out,
                     overwrite=overwrite, resume=resume, progress=progress)
