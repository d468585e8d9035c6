"""The branches of the continuation study (``bifurcation.mode = "continuation"``,
``meanfield.studies.bifurcation.study``): the uniform branch and its pitchforks, checked
against the closed form, and the branch each mode sheds, followed by
pseudo-arclength continuation, with its transition type.

- The uniform branch (branch 0). The uniform density is stationary for every parameter.
  At ``num = min(points, ceil((stop - start) / ds_max) + 1)`` equally spaced parameter
  values its eigenvalues are computed by ``stationary_linear.stability`` (all of them,
  dense), the point is labelled stable/unstable, and wherever the number of eigenvalues
  with a positive real part changes between two points, the crossing is located by
  ``brentq`` on the eigenvalue that crosses (to ~1e-13). There the eigenvectors of the
  (dense) Jacobian with a zero eigenvalue give the multiplicity (2 for a Fourier mode on
  S^1, ``2l + 1`` for a degree on S^2, 1 on the zonal geometry) and the mode (the mode / degree their coefficients
  carry): a special point of type "pitchfork". Each is checked against the closed form of
  docs/conventions.md (``stationary_linear.critical_kappa``, ``1/a_k``): a relative
  difference above ``PITCHFORK_RTOL`` (1e-6), a wrong multiplicity, or an analytic
  crossing inside the range that was not found makes the run's ``status`` 1 and its
  ``message`` say so.
- One branch per mode ``k = 1..modes`` (degree on S^2; on S^2 an even degree sheds two
  distinct branches, ``amplitude`` of either sign of ``P_l``: a transcritical bifurcation
  in the axisymmetric states, so ``branch_sign`` +-1; so does a zonal S^{d-1}, d >= 3),
  from its pitchfork:
  ``solvers.nonlinear.switch_branch`` along the critical mode (cosine / zonal), then
  pseudo-arclength continuation (``continue_branch``) of the bordered stationary system
  of ``meanfield.studies.bifurcation.stationary`` (the problem: ``shed_branch.ShedBranch``;
  ``BorderedSystem``: mass and phase conditions, exact Jacobian-vector products, the
  diffusion preconditioner; ``dF/dkappa`` exact,
  ``dF/dbeta`` by a forward difference). On S^2 the branch (zonal seed) is followed in
  the invariant subspace of axisymmetric states (``RealView(axisymmetric=True)``: the
  ``L + 1`` zonal coefficients, the mass condition only); on the zonal geometry of
  S^{d-1} the state is the ``L + 1`` Gegenbauer coefficients, the mass condition only,
  and ``stable`` means stable against zonal perturbations. Systems of at most
  ``DENSE_UP_TO`` unknowns (S^1 up to n ~ 800, S^2 up to L ~ 400) take the dense chord
  corrector (``solvers.nonlinear.dense``, the bordered Jacobian formed in one batched
  call on S^1), larger ones Newton-Krylov. The unknown is scaled by the area of the
  domain (the mean coefficient is 1), so that the arclength weighs state and parameter
  alike. Each point is labelled by ``stability`` (rotation zero modes dropped; on S^1
  from the corrector's own dense Jacobian, on S^2 by the blocks of each azimuthal order,
  ``stationary_linear.axisymmetric_eigenvalues``); folds (the
  parameter's tangent changes sign) and eigenvalue crossings (type "bifurcation", with
  their multiplicity) are located on the branch by ``continue_branch``.
- Transition type per mode branch (``transition``): "supercritical" when the branch
  leaves the pitchfork toward the side where the uniform state is unstable in that mode
  (kappa > kappa_c for the parameter kappa), "subcritical" when it leaves backward (then
  ``fold_kappa``/``fold_beta`` hold the first fold met, where it turns, NaN if none in
  the range), "undetermined" when the first point is within round-off of the pitchfork.
- A Newton failure stops that branch (``branch_status`` "failed", the where and why in
  ``branch_message``; its points are kept) and the others go on; ``status`` is then 1.

Each branch is a dict (``kind``, ``mode``, ``sign``, the points' ``lam``, ``kappa``,
``beta``, ``order_parameter``, ``free_energy``, ``stable``, ``leading``, the
``special`` points, the ``saved`` states, ``status``, ``message``, ``transition``,
``fold_lam``): one row of dim ``branch`` of the dataset that
``branch_dataset.study_dataset`` writes.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize

from meanfield.studies.bifurcation import spectral_state as ss
from meanfield.studies.bifurcation import stationary as st
from meanfield.studies.bifurcation import stationary_linear as lin
from meanfield.studies.bifurcation.plan import kappa_beta, set_parameter
from meanfield.studies.bifurcation.shed_branch import ShedBranch
from solvers.nonlinear.dense import DENSE_UP_TO

PITCHFORK_RTOL = 1e-6  # detected kappa_c against the closed form (relative)
# A zonal branch stops where its state is no longer carried (_BranchRecord.representable):
# (both keep the order parameter to ~1e-8: an error of F at the floor moves the state by
# the floor over the slowest relaxation rate, O(1) in the moments' units)
FLOOR_LIMIT = 1e-8  # the residual's round-off floor in the moments' rows
TAIL_LIMIT = 1e-8  # the largest moment over the top quarter of the degrees
ZERO_EIG_RTOL = 1e-9  # an eigenvalue at a located crossing counts as zero below this x radius
EIG_TOL = 1e-10  # an eigenvalue is unstable when its real part exceeds this
EIG_COUNT = 24  # leading eigenvalues kept per point of a mode branch
SWITCH_H = 0.02  # offset along the critical mode of the first point (scaled unknowns)
DS_MIN_FACTOR = 1e-4  # ds_min = ds * this


# ---------------------------------------------------------------------------------------
# The uniform branch and its pitchforks.

def _unstable(eigenvalues: np.ndarray) -> int:
    return int(np.sum(np.real(eigenvalues) > EIG_TOL))


def _crossing_mode(disc, spectrum: lin.UniformSpectrum) -> tuple[int, int, float]:
    """At a located crossing of the uniform state: (multiplicity, mode, |max radius|):
    the zero eigenvalues of the dense Jacobian and the mode their eigenvectors carry."""
    u = lin._uniform_state(disc)
    lam, vec = np.linalg.eig(spectrum.jacobian())
    radius = float(np.max(np.abs(lam)))
    zero = np.abs(lam) <= ZERO_EIG_RTOL * max(radius, 1.0)
    if not zero.any():
        return 0, 0, radius
    view = ss.RealView(disc, u)
    keep = np.arange(view.size) != view.constant
    degrees = ss.degrees(disc)
    modes = []
    for j in np.flatnonzero(zero):
        full = np.zeros(view.size)
        full[keep] = np.real(vec[:, j]) if np.abs(np.real(vec[:, j])).max() > 0 else 0
        state = view.to_state(full)
        modes.append(int(np.asarray(degrees).ravel()[int(np.argmax(np.abs(state).ravel()))]))
    mode = max(set(modes), key=modes.count)
    return int(zero.sum()), mode, radius


def uniform_branch(disc, cfg: dict, plan: dict) -> dict:
    """The uniform branch: its points, eigenvalues, stability and pitchforks (module
    docstring)."""
    b = cfg["bifurcation"]
    parameter = plan["parameter"]
    num = int(min(b["points"], max(2, math.ceil((b["stop"] - b["start"]) / b["ds_max"]) + 1)))
    values = np.linspace(b["start"], b["stop"], num)
    u = lin._uniform_state(disc)
    spectrum = lin.UniformSpectrum(disc, u)
    points = _uniform_points(disc, parameter, values, spectrum)
    counts = points["counts"]
    search = _PitchforkSearch(disc, plan, spectrum)
    for i in range(num - 1):
        if counts[i] != counts[i + 1]:
            search.locate(float(values[i]), float(values[i + 1]), counts[i], counts[i + 1])
    special = search.special
    special.sort(key=lambda s: s["lam"])
    kappa = [kappa_beta(plan, parameter, v)[0] for v in values]
    beta = [kappa_beta(plan, parameter, v)[1] for v in values]
    saved = sorted({*range(0, num, b["stride"]), num - 1})
    return {"kind": "uniform", "mode": 0, "sign": 0, "lam": values,
            "kappa": np.array(kappa), "beta": np.array(beta),
            "order_parameter": np.zeros(num), "amplitude": np.zeros(num),
            "free_energy": np.array(points["energies"]),
            "stable": np.array(points["stable"], dtype=np.int8),
            "leading": np.array(points["leading"]),
            "special": special, "saved": saved,
            "states": np.stack([points["states"][i] for i in saved]),
            "status": "completed", "message": f"{num} points, {len(special)} pitchfork(s)",
            "transition": "", "fold_lam": math.nan}


def _uniform_points(disc, parameter: str, values: np.ndarray,
                    spectrum: lin.UniformSpectrum) -> dict[str, list]:
    """The uniform state ``spectrum.u`` at each parameter value: the number of unstable
    eigenvalues (``counts``), the leading one, whether it is stable, its free energy and
    its density."""
    u = spectrum.u
    points: dict[str, list] = {name: [] for name in ("counts", "leading", "stable",
                                                     "energies", "states")}
    for value in values:
        set_parameter(disc, parameter, value)
        # Every eigenvalue, none dropped: the uniform state has no symmetry zero mode, and
        # ``stability`` would drop the critical one at a point on kappa_c exactly. The
        # same dense computation as ``stability``; a zero eigenvalue (a point on a
        # crossing) is degenerate, not stable, as ``stability`` says.
        lam = spectrum.eigenvalues()
        radius = float(np.max(np.abs(lam))) if lam.size else 0.0
        zero = bool(np.any(np.abs(lam) <= lin.ZERO_RTOL * max(radius, 1.0)))
        points["counts"].append(_unstable(lam))
        points["leading"].append(float(lam[0].real) if lam.size else -math.inf)
        points["stable"].append(points["counts"][-1] == 0 and not zero)
        points["energies"].append(st.free_energy(disc, u))
        points["states"].append(disc.to_density(u))
    return points


class _PitchforkSearch:
    """The pitchforks of the uniform state ``u`` (module docstring): the crossing of the
    eigenvalue that changes sign between two parameter values where the number of
    unstable eigenvalues differs, located by ``brentq``, and again inside the bracket
    while it holds more crossings than the one found (``special``: the points, in the
    order found)."""

    def __init__(self, disc, plan: dict, spectrum: lin.UniformSpectrum):
        self.disc, self.plan, self.spectrum = disc, plan, spectrum
        self.parameter = plan["parameter"]
        self.special: list[dict] = []

    def eig_at(self, value: float, index: int) -> float:
        # every eigenvalue, none dropped as zero: ``stability`` drops those below
        # ZERO_RTOL of the spectral radius, which near the crossing is the one located
        set_parameter(self.disc, self.parameter, value)
        lam = self.spectrum.eigenvalues()
        # (its zero, not EIG_TOL: the counts only bracket it)
        return float(lam[index].real) if index < lam.size else -math.inf

    def unstable_at(self, value: float) -> int:
        set_parameter(self.disc, self.parameter, value)
        return _unstable(self.spectrum.eigenvalues())

    def root(self, lo: float, hi: float, index: int) -> float:
        """Where eigenvalue ``index`` crosses zero in ``[lo, hi]``."""
        f_lo, f_hi = self.eig_at(lo, index), self.eig_at(hi, index)
        if f_lo * f_hi > 0:  # an end on the crossing itself (round-off on either side)
            return lo if abs(f_lo) < abs(f_hi) else hi
        if lo > 0 and hi > 2 * lo:  # a wide bracket (kappa up to 1e300): in log, where
            # bisection halves orders of magnitude (brentq's 100 iterations cannot halve
            # [2, 5e297] down to 1e-14)
            root = math.exp(optimize.brentq(lambda s: self.eig_at(math.exp(s), index),
                                            math.log(lo), math.log(hi), xtol=1e-15,
                                            rtol=1e-15))
            return min(max(root, lo), hi)
        return optimize.brentq(self.eig_at, lo, hi, args=(index,), xtol=1e-14, rtol=1e-15)

    def pitchfork(self, root: float, n_lo: int, n_hi: int) -> dict:
        """The special point at the crossing ``root``: its multiplicity, mode and the
        closed form's kappa_c there."""
        plan = self.plan
        set_parameter(self.disc, self.parameter, root)
        multiplicity, mode, _ = _crossing_mode(self.disc, self.spectrum)
        kappa, beta = kappa_beta(plan, self.parameter, root)
        analytic = (lin.critical_kappa(plan["geometry"], beta, plan["normalized"], mode,
                                       plan.get("value", 1.0), plan.get("dim"))
                    if mode else math.nan)
        return {"type": "pitchfork", "lam": root, "kappa": kappa, "beta": beta,
                "multiplicity": multiplicity, "mode": mode,
                "order_parameter": 0.0, "analytic": analytic,
                "side": 1 if n_hi > n_lo else -1, "located": True}

    def locate(self, lo: float, hi: float, n_lo: int, n_hi: int, depth: int = 0) -> None:
        special = self.special
        root = self.root(lo, hi, min(n_lo, n_hi))
        special.append(self.pitchfork(root, n_lo, n_hi))
        multiplicity = special[-1]["multiplicity"]
        rest = abs(n_hi - n_lo) - multiplicity
        if any(abs(s["lam"] - root) <= 1e-6 * max(1.0, abs(root)) for s in special[:-1]):
            special.pop()  # found again from a sub-bracket (wide brackets): once is enough
        if rest > 0 and depth < 8 and multiplicity > 0:  # more crossings in the interval
            eps = 1e-9 * max(1.0, abs(root))
            if root - eps > lo:
                n_mid = self.unstable_at(root - eps)
                if n_mid != n_lo:
                    self.locate(lo, root - eps, n_lo, n_mid, depth + 1)
            if root + eps < hi:
                n_mid = self.unstable_at(root + eps)
                if n_mid != n_hi:
                    self.locate(root + eps, hi, n_mid, n_hi, depth + 1)


def pitchfork_multiplicity(geometry: str, mode: int) -> int:
    """The multiplicity of the uniform state's zero eigenvalue at the pitchfork of mode
    ``mode``: 2 on S^1 (cos, sin), ``2l + 1`` on S^2, 1 on the zonal geometry (its
    states hold one harmonic of each degree)."""
    return {"circle": 2, "sphere": 2 * mode + 1}.get(geometry, 1)


def pitchfork_check(plan: dict, cfg: dict, pitchforks: list[dict]) -> tuple[bool, str]:
    """The pitchforks found against the closed form (module docstring): (ok, message)."""
    b = cfg["bifurcation"]
    parameter = plan["parameter"]
    problems, found = [], {}
    for p in pitchforks:
        expected = pitchfork_multiplicity(plan["geometry"], p["mode"])
        target = p["kappa"] if parameter == "kappa" else plan["kappa"]
        rel = abs(p["analytic"] - target) / abs(target) if p["mode"] else math.inf
        found.setdefault(p["mode"], p)
        if not rel <= PITCHFORK_RTOL:
            problems.append(f"the pitchfork of mode {p['mode']} at {parameter} = "
                            f"{p['lam']:.10g} differs from the closed form kappa_c = "
                            f"{p['analytic']:.10g} by {rel:.2e} relative (above "
                            f"{PITCHFORK_RTOL:g})")
        if p["multiplicity"] != expected:
            problems.append(f"the pitchfork of mode {p['mode']} at {parameter} = "
                            f"{p['lam']:.10g} has multiplicity {p['multiplicity']}, "
                            f"not {expected}")
    for k in range(1, b["modes"] + 1):
        if parameter == "kappa":
            kc = plan["critical_kappa"][k - 1]
            inside = b["start"] < kc < b["stop"]
            where = f"kappa_c = {kc:.10g}"
        else:
            kc = plan["critical_beta"][k - 1]
            inside = math.isfinite(kc) and b["start"] < kc < b["stop"]
            where = f"beta_c = {kc:.10g}"
        if inside and k not in found:
            problems.append(f"the closed form puts the pitchfork of mode {k} at {where} "
                            "inside the range, but none was found there")
    if problems:
        return False, "; ".join(problems)
    value = plan.get("value", 1.0)
    if value <= 0 and not pitchforks:
        return True, (f"no pitchfork: value = {value:g} (V = c I with c <= 0, "
                      f"{'repulsive' if value < 0 else 'no interaction'}) makes every mode "
                      "of the uniform state decay, k^2 (c a_k - 1/kappa) < 0, for every "
                      "kappa and beta: no branch leaves it")
    located = ", ".join(f"mode {p['mode']} at {parameter} = {p['lam']:.12g} "
                        f"(x{p['multiplicity']})" for p in pitchforks)
    return True, (f"pitchforks agree with the closed form to {PITCHFORK_RTOL:g}: {located}"
                  if pitchforks else "no pitchfork in the range (none expected)")


# ---------------------------------------------------------------------------------------
# A branch shed by the uniform state.

def _skipped(mode: int, sign: int, message: str) -> dict:
    empty = np.zeros(0)
    return {"kind": "mode", "mode": mode, "sign": sign, "lam": empty, "kappa": empty,
            "beta": empty, "order_parameter": empty, "amplitude": empty,
            "free_energy": empty,
            "stable": np.zeros(0, np.int8), "leading": empty, "special": [], "saved": [],
            "states": None, "status": "skipped", "message": message,
            "transition": "", "fold_lam": math.nan}


def mode_branch(disc, cfg: dict, plan: dict, pitchfork: dict | None, mode: int,
                sign: int) -> dict:
    """The branch shed at mode ``mode`` (degree) from ``pitchfork``, followed by
    pseudo-arclength continuation (module docstring)."""
    from solvers.nonlinear.continuation import switch_branch

    b = cfg["bifurcation"]
    parameter = plan["parameter"]
    if pitchfork is None:
        value = plan.get("value", 1.0)
        why = (f" (value = {value:g} <= 0: the uniform state is stable for every kappa "
               "and beta)" if value <= 0 else "")
        return _skipped(mode, sign, f"no pitchfork of mode {mode} in the range "
                                    f"[{b['start']:g}, {b['stop']:g}] of {parameter}{why}")
    lam_c = float(pitchfork["lam"])
    set_parameter(disc, parameter, lam_c)
    problem = ShedBranch(disc, parameter, mode)
    dense = problem.system.size + 1 <= DENSE_UP_TO
    record = _BranchRecord(problem, mode, b["stride"], dense)
    ds, unit = b["ds"], problem.lam_scale  # (the continuation's parameter: lam / unit)
    branch = switch_branch(
        problem.residual, problem.start(), lam_c / unit, problem.direction(sign),
        h=SWITCH_H, jvp_x=problem.jvp_x,
        dF_dlam=problem.dF_dkappa if parameter == "kappa" else None, tol=b["tolerance"],
        ds=ds, ds_min=ds * DS_MIN_FACTOR, ds_max=b["ds_max"],
        lam_bounds=(b["start"] / unit, b["stop"] / unit), max_points=b["points"],
        eigenvalues=record.eigenvalues, eig_tol=EIG_TOL, precondition=problem.precondition,
        # (a Jacobian formed in one batched call is formed anew at each point; one made
        # of products is refined first: the continuation's default)
        callback=record.callback,
        jacobian=problem.jacobian if dense and disc.batched_jvp else None,
        linear_solver="dense" if dense else "krylov")
    record.save_last()
    special = _branch_specials(problem, plan, branch, mode)
    lam = np.array(record.points["lam"], dtype=float)
    transition, fold_lam = _transition(lam, lam_c, pitchfork, special)
    message = record.stopped or branch.message
    if branch.status == "failed":
        message = f"Newton failed on the branch of mode {mode}: {branch.message}"
    return {"kind": "mode", "mode": mode, "sign": sign, "lam": lam,
            **record.arrays(plan, parameter), "special": special,
            "status": branch.status, "message": message, "transition": transition,
            "fold_lam": fold_lam}


class _BranchRecord:
    """What ``mode_branch`` keeps of each point of the branch: the parameter, order
    parameter, mode amplitude, free energy, stability (on S^1 from the corrector's own
    dense Jacobian) and leading eigenvalue, and the density every ``stride`` points."""

    def __init__(self, problem: ShedBranch, mode: int, stride: int, dense: bool):
        self.problem, self.mode, self.stride, self.dense = problem, mode, stride, dense
        self.points: dict[str, list] = {name: [] for name in (
            "lam", "order_parameter", "amplitude", "free_energy", "stable", "leading")}
        self.saved: list[tuple[int, np.ndarray]] = []
        self.last: dict[str, Any] = {}
        self.stopped = ""  # why the branch stopped early (zonal: representable)

    def eigenvalues(self, y: np.ndarray, lam: float) -> np.ndarray:
        problem = self.problem
        set_parameter(problem.disc, problem.parameter, problem.parameter_value(lam))
        # (the continuation's Jacobian is F' itself on the circle; on the sphere only its
        # axisymmetric block, and stability takes F' by blocks of each order m)
        block = (problem.system.state_jacobian(problem.bordered_jacobian(y, lam))
                 if self.dense and not problem.axisymmetric else None)
        stab = lin.stability(problem.disc, problem.state(y), count=EIG_COUNT,
                             jacobian=block)
        self.last["stability"] = stab
        return stab.eigenvalues

    def callback(self, index: int, y: np.ndarray, lam: float) -> bool:
        problem, points = self.problem, self.points
        disc = problem.disc
        lam = problem.parameter_value(lam)
        set_parameter(disc, problem.parameter, lam)
        u = problem.state(y)
        if disc.geometry == "zonal" and not self.representable(u, lam):
            return True
        stab = self.last.get("stability")
        points["lam"].append(lam)
        points["order_parameter"].append(st.order_parameter(disc, u))
        points["amplitude"].append(st.mode_amplitude(disc, u, self.mode))
        points["free_energy"].append(st.free_energy(disc, u))
        points["stable"].append(-1 if stab is None else int(stab.stable))
        points["leading"].append(math.nan if stab is None else stab.leading)
        if index % self.stride == 0:
            self.saved.append((index, disc.to_density(u)))
        self.last["point"] = (index, u)
        return False

    def representable(self, u: np.ndarray, lam: float) -> bool:
        """Zonal: whether the state is carried by the band limit (its moments over the
        top quarter of the degrees below ``TAIL_LIMIT``) and by double precision (the
        residual's round-off floor below ``FLOOR_LIMIT``: the coefficients of a clustered
        state grow like ``Q_l(1)``, ``stationary.residual_floor``); else the branch
        stops here, ``self.stopped`` saying why."""
        disc, parameter = self.problem.disc, self.problem.parameter
        tail, floor = st.spectral_tail(disc, u), st.residual_floor(disc, u)
        if tail <= TAIL_LIMIT and floor <= FLOOR_LIMIT:
            return True
        where = (f"stopped at {parameter} = {lam:.10g} (r = "
                 f"{st.order_parameter(disc, u):.4g}): the state is ")
        if tail > TAIL_LIMIT:
            self.stopped = (where + f"not resolved: its moments reach {tail:.2g} over the "
                            f"top quarter of the degrees (above {TAIL_LIMIT:g}); raise "
                            "discretization.resolution")
        else:
            self.stopped = (where + "too concentrated for the Gegenbauer coefficients "
                            f"in double precision at d = {disc.grid.dim}: the residual's "
                            f"round-off floor is {floor:.2g} (above {FLOOR_LIMIT:g}; max "
                            f"|c_l| = {np.max(np.abs(u)):.2g})")
        return False

    def save_last(self) -> None:
        """The last point's state too, when the stride did not save it."""
        n = len(self.points["lam"])
        if n and (not self.saved or self.saved[-1][0] != n - 1):
            index, u = self.last["point"]
            self.saved.append((index, self.problem.disc.to_density(u)))

    def arrays(self, plan: dict, parameter: str) -> dict[str, Any]:
        """The points as the branch dict's arrays (``kappa``, ``beta``, ..., ``saved``,
        ``states``)."""
        points = self.points
        pairs = [kappa_beta(plan, parameter, v)
                 for v in np.array(points["lam"], dtype=float)]
        return {"kappa": np.array([p[0] for p in pairs]),
                "beta": np.array([p[1] for p in pairs]),
                "order_parameter": np.array(points["order_parameter"]),
                "amplitude": np.array(points["amplitude"]),
                "free_energy": np.array(points["free_energy"]),
                "stable": np.array(points["stable"], dtype=np.int8),
                "leading": np.array(points["leading"], dtype=float),
                "saved": [i for i, _ in self.saved],
                "states": np.stack([d for _, d in self.saved]) if self.saved else None}


def _branch_specials(problem: ShedBranch, plan: dict, branch, mode: int) -> list[dict]:
    """The folds and eigenvalue crossings that the continuation located on the branch,
    as special points."""
    special = []
    for s in branch.special:
        lam = problem.parameter_value(s.lam)
        set_parameter(problem.disc, problem.parameter, lam)
        kappa, beta = kappa_beta(plan, problem.parameter, lam)
        special.append({"type": s.kind, "lam": lam, "kappa": kappa, "beta": beta,
                        "multiplicity": int(s.multiplicity), "mode": mode,
                        "order_parameter": st.order_parameter(problem.disc,
                                                              problem.state(s.x)),
                        "analytic": math.nan, "side": 0, "located": bool(s.located)})
    return special


def _transition(lam: np.ndarray, lam_c: float, pitchfork: dict, special: list[dict]
                ) -> tuple[str, float]:
    """The transition type of the branch (module docstring) and its first fold (NaN if
    none)."""
    if not lam.size:
        return "", math.nan
    offset = lam[0] - lam_c
    folds = [s for s in special if s["type"] == "fold"]
    fold_lam = folds[0]["lam"] if folds else math.nan
    if abs(offset) <= 1e-12 * max(1.0, abs(lam_c)):
        return "undetermined", fold_lam
    if np.sign(offset) == pitchfork["side"]:
        return "supercritical", fold_lam
    return "subcritical", fold_lam
