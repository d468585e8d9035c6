"""``convergence(config)``: how fast n tokens converge to the PDE ([Dob79], [Szn91]).

Tokens in R^d (``domain.geometry = "euclidean"``, ``initial.kind = "gaussian"``, general
``[weights]``) are measured against the exact Gaussian mean field instead:
``meanfield.studies.transport.gaussian_convergence`` (the errors of the mean and covariance and the
coupling, dims (n, replica, time)).

For each token count n of ``[convergence] n`` and each replica r (i.i.d. samples of the
initial density with ``particles.seed + r``; on the circle ``points = "quantile"`` takes the
deterministic quantiles ``(i - 1/2)/n`` instead, one replica), the tokens ``X`` and their
nonlinear partners ``Y`` run from the same start (``meanfield.studies.transport.coupling``), and at
each save time of ``[time]``:

- ``distance``: ``W_p(mu^n_t, mu_t)``, the tokens against the PDE density;
- ``coupling``: ``((1/n) sum_i d(X_i, Y_i)^p)^{1/p}``, the interaction's error (it bounds
  ``W_p(mu^n_t, nu^n_t)``);
- ``sampling_floor``: ``W_p(nu^n_t, mu_t)``, the error of the n exact samples ``Y_i(t)``;
- ``dobrushin_bound``: ``(pi/2) exp(int_0^t L) W1(mu^n_0, mu_0)``
  (``meanfield.model.lipschitz``; without noise only, NaN with noise). With the reference
  atoms on the sphere, W1(mu^n_0, mu_0) is replaced by the larger W2 against the atoms
  (W1 <= W2 always, and the atoms raise W2^2 by about 0.6/(k n), on the safe side): an
  exact W1 against the grid would need an n x grid dense problem (10 GiB at n = 1e5);
- ``slope`` (time): the least-squares slope of ``log distance`` against ``log n`` over all
  (n, replica), with its 95 % interval ``slope_low``, ``slope_high`` (Student t); also for
  the coupling and the sampling floor (``coupling_slope``, ``sampling_floor_slope``).

Distances are geodesic (radians), by ``meanfield.metrics.wasserstein``: exact on the
circle (the density in its own representation). On the sphere with p = 2 and
``[convergence] reference = k >= 1`` (default 2), the density at time t is quantised into
k n equal-mass atoms (``sphere_assignment.quantize_density``: the Knothe-Rosenblatt image
of the spherical Fibonacci lattice, from the band-limited density exactly) and W2 of the
n tokens against them is solved exactly as an assignment (``assignment_w2``: a certified
sparse auction, W2^2 within 2e-9 rad^2 of the optimum; 0.5-2 s at n = 1e4, no dense n x M
array). Its error is the reference's own: measured, W2(atoms_M, atoms_4M) = 1.46/sqrt(M)
(uniform and von Mises 1, M = 200..2e4), but the effect on W2(tokens, atoms) is much
smaller, about additive in W2^2: over 6 replicas of i.i.d. tokens (n = 1e3, 3e3; uniform
and von Mises 1), W2^2(tokens, atoms_kn) - W2^2(tokens, atoms_2kn) fits 0.6/(2 k n) rad^2,
i.e. W2^2 exceeds W2^2(tokens, density) by about 0.6/(k n): 3 % of W2^2 (1.5 % of W2) at
k = 2, n = 1e3, a share falling like 1/log n, so the fitted slope in n is biased by about
-0.003. Otherwise (p != 2, or ``reference = 0``) the network simplex against the density's
grid atoms (an O(h) error, h ~ pi/L: 0.03 at L = 33, as large as the sampling error of
1e4 tokens, so the slope flattens; the memory check of n x grid atoms applies).
The rate on S^2 is W2 ~ (log n / n)^{1/2}; fit ``log W2 - (1/2) log log n`` against
``log n`` for -1/2.

The law's constant on S^2: for n i.i.d. samples of a density bounded away from zero and
Hoelder on a compact 2-D Riemannian manifold M, n E W2^2(mu^n, mu) / log n -> |M|/(4 pi),
whatever the density (Ambrosio-Stra-Trevisan, PTRF 173 (2019), the unit square;
Ambrosio-Glaudo, J. Ec. polytech. Math. 6 (2019), uniform on manifolds; Ambrosio-Goldman-
Trevisan, EJP (2022), such densities): on the unit sphere n E W2^2 ~ log n, so n W2^2
against log n has slope 1, the reference's 0.6/k adding a constant. The acceptance test
(``test_acceptance_sphere_rates``) asserts that slope's 95 % interval holds 1 and
excludes 0; with 8 replicas and n = 1e2..1e4 it is only +-0.25 wide (measured 0.86
[0.61, 1.12] for the samples at t = 0), while the log-corrected log-log slope is pinned
to +-0.015 and sits 0.02-0.04 below -1/2 from the constant term of n W2^2 = log n + c.

Zonal densities on S^{d-1} (``domain.geometry = "zonal"``, any d): tokens on S^{d-1} from
exact samples of the zonal density (``meanfield.initial.zonal_samplers``), their partners
driven by the zonal PDE's exact field; ``distance`` and ``sampling_floor`` are the W_p
between the marginals of the polar angle theta = angle(x, e) (geodesic, radians; exact on
the line, ``meanfield.metrics.zonal_marginal``). That is the W_p on S^{d-1} between the PDE
and the tokens' zonal average (their measure averaged over the rotations that fix e: for
two zonal measures the monotone rearrangement of theta along the meridians is optimal),
and a lower bound of W_p(mu^n_t, mu_t) itself, which no method here computes in d > 3. The
coupling is the full geodesic distance on S^{d-1}, so ``distance <= coupling +
sampling_floor`` still holds. In one variable i.i.d. samples are W_p ~ n^{-1/2} apart
whatever d (the sphere's rate n^{-1/d} is the full W_p's). ``dobrushin_bound`` is NaN: it
needs W_1(mu^n_0, mu_0) on S^{d-1}, which the polar-angle distance only bounds from below.

The runs go through the run engine (``ConvergenceTask``: the PDE, then each (n, replica)
member; a checkpoint keeps those done, ``resume`` goes on without recomputing them) and
the members through the executor (``[parallel]``; the same numbers serially and on a
cluster). The PDE needs its velocity off the grid: ``discretization.method =
"spectral"``. ``time.dt`` is the tokens' step (``"auto"``: 0.05, or less to land on the
save times; with noise it must be given).
"""
from __future__ import annotations

import functools
import hashlib
import math
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from meanfield import config as cfgmod
from meanfield.discretizations.base import Discretization
from meanfield.config.studies import check_convergence_task
from meanfield.errors import ConfigError
from meanfield.initial.samplers import sample_tokens
from meanfield.initial.zonal_samplers import zonal_tokens
from meanfield.metrics import zonal_marginal as zm
from meanfield.model.lipschitz import dobrushin_bound
from meanfield.model.tokens import initial_rng
from meanfield.runs import budget, limits, sizes
from meanfield.runs.executor import Executor
from meanfield.runs.particles import build_model, check_config
from meanfield.runs.schedule import save_times
from meanfield.studies.transport import coupling as cp
from meanfield.studies.transport.coupling import AUTO_DT
from meanfield.studies.transport.slopes import fit_slope
from meanfield.studies.dataset import assemble, model_name
from meanfield.studies.members import MemberStudy, run_study

MEASURES = ("distance", "coupling", "sampling_floor")


def check_convergence_config(cfg: dict) -> dict:
    """Checks before any work; the plan (token step, dimension, members)."""
    check_convergence_task(cfg, "convergence")  # (also when validated without the task)
    cfgmod.check_pde_dim(cfg)
    if cfg["particles"]["architecture"] != "post-ln":
        raise ConfigError("the PDE is the mean-field limit of the post-ln model; "
                          "convergence needs particles.architecture = \"post-ln\"",
                          "particles.architecture")
    if cfg["discretization"]["method"] != "spectral":
        raise ConfigError("convergence drives the nonlinear process with the PDE's velocity "
                          "off the grid, exact for discretization.method = \"spectral\" only; "
                          f"got {cfg['discretization']['method']!r}", "discretization.method")
    c = cfg["convergence"]
    plan = check_config({**cfg, "particles": {**cfg["particles"], "n": max(c["n"])}})
    noisy = not math.isinf(cfg["model"]["kappa"])
    dt = cfg["time"]["dt"]
    if dt == "auto":
        if noisy:
            raise ConfigError("time.dt = \"auto\": runs with noise need a fixed step (Euler-"
                              "Maruyama has no error estimate); give e.g. time.dt = 0.01",
                              "time.dt")
        dt = AUTO_DT
    replicas = 1 if c["points"] == "quantile" else c["replicas"]
    limits.check_members(len(c["n"]) * replicas, "convergence.replicas", replicas,
                         "give fewer replicas or fewer token counts convergence.n")
    if cfg["particles"]["seed"] + replicas - 1 > cfgmod.MAX_SEED:
        raise ConfigError(f"particles.seed = {cfg['particles']['seed']}: the replicas' seeds "
                          f"seed + r pass {cfgmod.MAX_SEED}", "particles.seed")
    if cfg["domain"]["geometry"] == "sphere" and not uses_assignment(cfg):
        _check_sphere_transport(cfg, max(c["n"]))
    plan.update(dt=float(dt), noisy=noisy, replicas=replicas,
                members=[(n, r) for n in c["n"] for r in range(replicas)],
                times=save_times(cfg["time"]["t_final"], cfg["time"]["save_every"]))
    # the PDE table: a state at every token step (and half step for RK4), before any work
    steps = sum(m for _, _, m in cp.step_grid(plan["times"][1:], plan["dt"]))
    sizes.check_time_table(steps, 1 if noisy else 2, 8.0 * budget.grid_size(cfg), "time.dt",
                           dt, f"the PDE is tabled at every token step (and half step) "
                           f"up to time.t_final = {cfg['time']['t_final']:g}")
    sizes.warn_step_time(steps, sizes.CONVERGENCE_STEP_S, "time.dt", dt,  # (a member's)
                         f"stepping to time.t_final = {cfg['time']['t_final']:g}")
    return plan


def uses_assignment(cfg: dict) -> bool:
    """On the sphere with p = 2 and ``reference >= 1``: W2 against equal-mass atoms of
    the density by the exact assignment (module docstring)."""
    c = cfg["convergence"]
    return (cfg["domain"]["geometry"] == "sphere" and c["p"] == 2
            and c.get("reference", 0) >= 1)


def _check_sphere_transport(cfg: dict, n: int) -> None:
    """The exact S^2 transport of n tokens against the grid's atoms must fit in memory."""
    from meanfield.metrics import sphere_transport as st

    lmax = cfg["discretization"]["resolution"]
    atoms = (lmax + 1) * (2 * lmax + 2)  # the Gauss-Legendre grid of the band limit
    need = st.dense_memory(n, atoms, st.EMD_COPIES)
    if need > st.MEMORY_LIMIT_BYTES:
        raise ConfigError(f"convergence.n up to {n}: the exact transport of {n} tokens "
                          f"against the {atoms} grid nodes needs about {need / 2**30:.1f} "
                          "GiB; use fewer tokens or a smaller discretization.resolution",
                          "convergence.n")


# ---------------------------------------------------------------------------------------
# One member: the coupled runs of (n, replica) and their distances.

def frame_dataset(solver, state: np.ndarray) -> xr.Dataset:
    """The PDE density of ``state`` as an evolve frame (what the metrics take)."""
    grid = solver.grid
    attrs = {"geometry": grid.geometry, "method": solver.method}
    if grid.geometry == "zonal":
        attrs["dim"] = grid.dim
    return xr.Dataset({"density": (grid.dims, solver.to_density(state)),
                       "weights": (grid.dims, np.broadcast_to(grid.weights, grid.shape))},
                      coords=grid.coords(), attrs=attrs)


def initial_points(cfg: dict, plan: dict, solver, n: int, replica: int) -> np.ndarray:
    """The tokens' start: i.i.d. samples of the initial density (seed + replica), or its
    quantiles on the circle."""
    if cfg["convergence"]["points"] == "quantile":
        from meanfield.metrics.circle_measures import CircleMeasure

        rho0 = solver.initial_density(cfg["initial"])
        theta = CircleMeasure.from_density(rho0, solver.method).quantile(
            (np.arange(n) + 0.5) / n)
        return np.column_stack([np.cos(theta), np.sin(theta)])
    rng = initial_rng(cfg["particles"]["seed"] + replica)
    if cfg["domain"]["geometry"] == "zonal":
        return zonal_tokens(cfg["initial"], n, plan["dim"], rng)
    return sample_tokens(cfg["initial"], n, plan["dim"], rng)


def run_member(cfg: dict, plan: dict, table: cp.PdeTable, params: dict) -> dict:
    """The distances of member ``(n, replica)`` at the save times (module docstring)."""
    from meanfield.metrics.wasserstein import wasserstein

    n, replica = params["n"], params["replica"]
    solver = Discretization.from_config(cfg, threads=1)
    model = build_model({**cfg, "particles": {**cfg["particles"], "n": n}},
                        {**plan, "n": n}, threads=1)
    x0 = initial_points(cfg, plan, solver, n, replica)
    seed = cfg["particles"]["seed"] + replica
    paths = cp.coupled_paths(solver, table, model, x0, plan["times"][1:], plan["dt"],
                             cfg["model"]["kappa"], seed)
    p = cfg["convergence"]["p"]
    out = {name: np.empty(paths.times.size) for name in MEASURES}
    for k, t in enumerate(paths.times):
        frame = frame_dataset(solver, table.at(t))
        x, y = paths.particles[k], paths.nonlinear[k]
        if cfg["domain"]["geometry"] == "zonal":
            out["distance"][k], out["sampling_floor"][k] = polar_wp(frame, [x, y], p)
        elif uses_assignment(cfg):
            out["distance"][k], out["sampling_floor"][k] = reference_w2(
                cfg, solver, table.at(t), [x, y])
        else:
            out["distance"][k] = wasserstein(x, frame, p)
            out["sampling_floor"][k] = wasserstein(y, frame, p)
        out["coupling"][k] = cp.coupling_distance(x, y, p)
    # (with the reference atoms: W2 at t = 0 bounds W1 from above; module docstring;
    # zonal: the polar-angle W1 is a lower bound, no start for Dobrushin's bound)
    out["initial_w1"] = (math.nan if cfg["domain"]["geometry"] == "zonal" else
                         out["distance"][0] if p == 1 or uses_assignment(cfg) else
                         wasserstein(paths.particles[0], frame_dataset(solver, table.at(0.0)),
                                     1.0))
    return out


def polar_wp(frame: xr.Dataset, measures: list, p: float) -> list[float]:
    """Zonal: W_p between the polar-angle marginals of each token set and of the PDE
    frame (``zonal_marginal.line_wasserstein``; module docstring)."""
    nodes, cdf = zm.angle_nodes(frame)
    return [zm.line_wasserstein(zm.polar_angles(x), nodes, cdf, p) for x in measures]


def reference_w2(cfg: dict, solver, state: np.ndarray, measures: list) -> list[float]:
    """W2 of each token set (n points) against ``reference x n`` equal-mass atoms of the
    density of ``state`` (``sphere_assignment.quantize_density``), by the certified exact
    assignment (``sphere_assignment.assignment_w2``)."""
    from meanfield.metrics import sphere_assignment as sa

    n = measures[0].shape[0]
    m = cfg["convergence"]["reference"] * n
    # the atoms depend on (state, m) only: the replicas of one n that a process runs
    # share them (7.8 s at m = 1e5, L = 33); a few entries, the latest kept
    key = (hashlib.sha1(np.ascontiguousarray(state).tobytes()).hexdigest(), m,
           solver.grid.lmax)
    atoms = _ATOMS.get(key)
    if atoms is None:
        atoms = sa.quantize_density(solver.grid, state, m)
        while len(_ATOMS) >= ATOMS_KEPT:
            _ATOMS.pop(next(iter(_ATOMS)))
        _ATOMS[key] = atoms
    return [sa.assignment_w2(x, atoms) for x in measures]


_ATOMS: dict = {}  # (state digest, m, lmax) -> reference atoms, oldest first
ATOMS_KEPT = 4


# ---------------------------------------------------------------------------------------
# The study on the run engine.

class ConvergenceTask(MemberStudy):
    """Points: the start, the PDE (its table of states), then each member; a checkpoint
    keeps the PDE and the members done."""

    kind = "convergence"
    members_bar = True

    def __init__(self, cfg: dict, plan: dict, executor: Executor, progress: bool):
        super().__init__(cfg, executor, progress)
        self.plan = plan
        self.members = plan["members"]

    def points(self) -> list:
        return ["start", "pde", *range(len(self.members))]

    def where(self, done: int) -> str:
        if done <= 1:
            return "the start"
        return f"the PDE and {done - 2} of {len(self.members)} members"

    def start(self) -> None:
        return None

    def advance(self, state: Any, point: Any, on_step) -> Any:
        if point == "pde":
            return self._pde()
        if self._results is None:
            todo = list(range(point, len(self.members)))
            fn = functools.partial(run_member, self.cfg, self.plan, self.table)
            self._results = self.executor.imap(
                fn, [{"n": self.members[i][0], "replica": self.members[i][1]} for i in todo])
        result = next(self._results)
        self.member_done()
        return result.value if result.ok else result

    def _pde(self) -> cp.PdeTable:
        solver = Discretization.from_config(self.cfg)
        state0 = solver.to_state(solver.initial_density(self.cfg["initial"]))
        times = cp.table_times(self.plan["times"][1:], self.plan["dt"], self.plan["noisy"])
        return cp.pde_table(solver, state0, times, float(self.plan["times"][-1]))

    @property
    def table(self) -> cp.PdeTable:
        return self._table

    def frame(self, state: Any) -> Any:
        if isinstance(state, cp.PdeTable):
            self._table = state
        return state

    def describe(self, params: dict) -> str:
        return f"member n = {params['n']}, replica {params['replica']}"

    def dataset(self, frames: list, info: dict) -> xr.Dataset:
        return study_dataset(self.cfg, self.plan, frames[1] if len(frames) > 1 else None,
                             frames[2:], info)

    def checkpoint(self, state: Any, frames: list) -> xr.Dataset:
        frames = self.kept(frames)  # (members after a failed one are run again)
        if len(frames) < 2:
            return xr.Dataset()
        table = frames[1]
        states = np.stack(table.states)
        ds = xr.Dataset({"table_time": ("step", table.times),
                         "table_real": (("step", "coef"), states.real),
                         "table_imag": (("step", "coef"), states.imag)},
                        attrs={"table_complex": int(np.iscomplexobj(states)),
                               "table_shape": list(states.shape[1:])})
        done = [f for f in frames[2:] if isinstance(f, dict)]
        if done:
            for name in (*MEASURES, "initial_w1"):
                ds[f"member_{name}"] = (("member",) + (("time",) if name != "initial_w1"
                                                       else ()),
                                        np.stack([f[name] for f in done]))
        return ds

    def restore(self, ckpt: xr.Dataset) -> tuple[Any, list]:
        if "table_time" not in ckpt:
            return None, [None]
        states = ckpt["table_real"].values
        if ckpt.attrs["table_complex"]:
            states = states + 1j * ckpt["table_imag"].values
        shape = tuple(np.atleast_1d(ckpt.attrs["table_shape"]))
        table = cp.PdeTable(ckpt["table_time"].values,
                            [s.reshape(shape) for s in states])
        self._table = table
        frames = [None, table]
        if "member_distance" in ckpt:
            for i in range(ckpt.sizes["member"]):
                frames.append({name: ckpt[f"member_{name}"].values[i]
                               for name in (*MEASURES, "initial_w1")})
        return frames[-1], frames


# ---------------------------------------------------------------------------------------
# The dataset.

def study_dataset(cfg: dict, plan: dict, table: cp.PdeTable | None, done: list,
                  info: dict) -> xr.Dataset:
    """The convergence dataset (docs/datasets.md) of the members done (NaN for the
    others)."""
    c = cfg["convergence"]
    times = np.asarray(plan["times"], dtype=float)
    ns, replicas = list(c["n"]), plan["replicas"]
    shape = (len(ns), replicas, times.size)
    arrays = {name: np.full(shape, np.nan) for name in (*MEASURES, "dobrushin_bound")}
    for i, value in enumerate(done):
        if not isinstance(value, dict):
            continue
        n, r = plan["members"][i]
        for name in MEASURES:
            arrays[name][ns.index(n), r] = value[name]
        if not plan["noisy"] and table is not None and cfg["domain"]["geometry"] != "zonal":
            arrays["dobrushin_bound"][ns.index(n), r] = _bound(cfg, table, times,
                                                               value["initial_w1"])
    data = {}
    units = {"units": "rad"}
    zonal = cfg["domain"]["geometry"] == "zonal"
    of = " of the polar-angle marginals" if zonal else ""
    long_names = {
        "distance": f"W_{c['p']:g}(mu^n_t, mu_t){of}: tokens vs PDE",
        "coupling": "((1/n) sum_i d(X_i, Y_i)^p)^(1/p): tokens vs their nonlinear partners",
        "sampling_floor": f"W_{c['p']:g}(nu^n_t, mu_t){of}: n exact samples vs PDE",
        "dobrushin_bound": "(pi/2) exp(int_0^t L) W_1(mu^n_0, mu_0) (no noise)",
    }
    for name, values in arrays.items():
        data[name] = (("n", "replica", "time"), values, {**units, "long_name": long_names[name]})
    n_grid = np.broadcast_to(np.asarray(ns, dtype=float)[:, None], (len(ns), replicas))
    for name, prefix in (("distance", ""), ("coupling", "coupling_"),
                         ("sampling_floor", "sampling_floor_")):
        fits = np.array([fit_slope(n_grid.ravel(), arrays[name][:, :, k].ravel())
                         for k in range(times.size)])
        what = f"slope of log {name} against log n"
        data[f"{prefix}slope"] = ("time", fits[:, 0], {"units": "1", "long_name": what})
        data[f"{prefix}slope_low"] = ("time", fits[:, 1], {"units": "1",
                                                             "long_name": what + ", 95 % low"})
        data[f"{prefix}slope_high"] = ("time", fits[:, 2], {"units": "1",
                                                              "long_name": what + ", 95 % high"})
    coords = {"n": ("n", np.asarray(ns)), "replica": np.arange(replicas),
              "time": ("time", times, {"units": "1"})}
    m = cfg["model"]
    return assemble(data, coords, {
        "title": f"convergence of {model_name(m['normalized'])} tokens to the PDE on "
                 + (f"S^{cfg['domain']['dim'] - 1} (zonal: W_p of the polar angle)" if zonal
                    else f"the {cfg['domain']['geometry']}")
                 + f", beta = {m['beta']:g}, kappa = {m['kappa']:g}",
        "geometry": cfg["domain"]["geometry"], "model": model_name(m["normalized"]),
        "beta": m["beta"], "kappa": m["kappa"], "p": c["p"], "points": c["points"],
        "dt": plan["dt"]}, info)


def _bound(cfg: dict, table: cp.PdeTable, times: np.ndarray, w1: float) -> np.ndarray:
    """Dobrushin's bound at the save times, the rate integrated over the table's times."""
    r = _order_parameters(cfg, table)
    bound = dobrushin_bound(w1, table.times, r, cfg["model"]["beta"],
                            cfg["model"]["normalized"])
    idx = np.searchsorted(table.times, np.round(times, cp.TIME_ROUND))
    return bound[idx]


def _order_parameters(cfg: dict, table: cp.PdeTable) -> np.ndarray:
    """The PDE's order parameter at each table time (computed once per table)."""
    cached = getattr(table, "_order_parameters", None)
    if cached is not None:
        return cached
    solver = Discretization.from_config(cfg, threads=1)
    r = np.array([solver.model.diagnostics(solver.to_density(s))["order_parameter"]
                  for s in table.states])
    table._order_parameters = r
    return r


def convergence(config: dict | None = None, *, out: str | Path | None = None,
                overwrite: bool = False, resume: bool = False,
                progress: bool = False) -> xr.Dataset:
    """The convergence study of one config (module docstring).

    Args:
        config: the config; ``[convergence]`` n, replicas, p, points.
        out: where to write the netCDF result (default ``output.path``).
        overwrite: replace an existing result.
        resume: continue from ``<out>.checkpoint.nc`` (the members done are kept).
        progress: progress bars.

    Returns:
        The study dataset; ``status`` -1 when interrupted (the members done so far).

    Raises:
        ConfigError: bad input, before any work.
        TaskFailed: a member failed (named); the others are kept in the checkpoint.
    """
    cfg = cfgmod.validate(config)
    if cfg["domain"]["geometry"] == "euclidean":  # against the Gaussian mean field
        from meanfield.studies.transport.gaussian_convergence import gaussian_study

        return gaussian_study(cfg, out=out, overwrite=overwrite, resume=resume,
                              progress=progress)
    plan = check_convergence_config(cfg)
    # The largest member is a particle run of max(n) tokens (twice: X and Y); its memory
    # is what the particle run's estimate says, refused above what the machine has.
    largest = {**cfg, "particles": {**cfg["particles"], "n": max(cfg["convergence"]["n"])}}
    try:
        budget.check(largest, "particles")
    except ConfigError as exc:  # name the key the user gave
        if exc.key != "particles.n":
            raise
        raise ConfigError(str(exc).replace("particles.n", "the largest convergence.n"),
                          "convergence.n") from None
    return run_study(cfg, lambda executor: ConvergenceTask(cfg, plan, executor, progress), out,
                     overwrite=overwrite, resume=resume, progress=progress)
