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
  S^1, ``2l + 1`` for a degree on S^2) and the mode (the mode / degree their coefficients
  carry): a special point of type "pitchfork". Each is checked against the closed form of
  docs/conventions.md (``stationary_linear.critical_kappa``, ``1/a_k``): a relative
  difference above ``PITCHFORK_RTOL`` (1e-6), a wrong multiplicity, or an analytic
  crossing inside the range that was not found makes the run's ``status`` 1 and its
  ``message`` say so.
- One branch per mode ``k = 1..modes`` (degree on S^2; on S^2 an even degree sheds two
  distinct branches, ``amplitude`` of either sign of ``P_l``: a transcritical bifurcation
  in the axisymmetric states, so ``branch_sign`` +-1), from its pitchfork:
  ``solvers.nonlinear.switch_branch`` along the critical mode (cosine / zonal), then
  pseudo-arclength continuation (``continue_branch``) of the bordered stationary system
  of ``meanfield.studies.bifurcation.stationary`` (``BorderedSystem``: mass and phase conditions,
  exact Jacobian-vector products, the diffusion preconditioner; ``dF/dkappa`` exact,
  ``dF/dbeta`` by a forward difference). On S^2 the branch (zonal seed) is followed in
  the invariant subspace of axisymmetric states (``RealView(axisymmetric=True)``: the
  ``L + 1`` zonal coefficients, the mass condition only). Systems of at most
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
from solvers.nonlinear.dense import DENSE_UP_TO

PITCHFORK_RTOL = 1e-6  # detected kappa_c against the closed form (relative)
ZERO_EIG_RTOL = 1e-9  # an eigenvalue at a located crossing counts as zero below this x radius
EIG_TOL = 1e-10  # an eigenvalue is unstable when its real part exceeds this
EIG_COUNT = 24  # leading eigenvalues kept per point of a mode branch
SWITCH_H = 0.02  # offset along the critical mode of the first point (scaled unknowns)
DS_MIN_FACTOR = 1e-4  # ds_min = ds * this


# ---------------------------------------------------------------------------------------
# The uniform branch and its pitchforks.

def _unstable(eigenvalues: np.ndarray) -> int:
    return int(np.sum(np.real(eigenvalues) > EIG_TOL))


def _crossing_mode(disc) -> tuple[int, int, float]:
    """At a located crossing of the uniform state: (multiplicity, mode, |max radius|):
    the zero eigenvalues of the dense Jacobian and the mode their eigenvectors carry."""
    u = lin._uniform_state(disc)
    matvec, size = lin.mass_preserving_operator(disc, u)
    jac = np.column_stack([matvec(e) for e in np.eye(size)])
    lam, vec = np.linalg.eig(jac)
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
    leading, stable, counts = [], [], []
    states, energies = [], []
    u = lin._uniform_state(disc)
    for value in values:
        set_parameter(disc, parameter, value)
        # Every eigenvalue, none dropped: the uniform state has no symmetry zero mode, and
        # ``stability`` would drop the critical one at a point on kappa_c exactly. The
        # same dense computation as ``stability``; a zero eigenvalue (a point on a
        # crossing) is degenerate, not stable, as ``stability`` says.
        lam = lin.jacobian_eigenvalues(disc, u)
        radius = float(np.max(np.abs(lam))) if lam.size else 0.0
        zero = bool(np.any(np.abs(lam) <= lin.ZERO_RTOL * max(radius, 1.0)))
        counts.append(_unstable(lam))
        leading.append(float(lam[0].real) if lam.size else -math.inf)
        stable.append(counts[-1] == 0 and not zero)
        energies.append(st.free_energy(disc, u))
        states.append(disc.to_density(u))
    special: list[dict] = []

    def eig_at(value: float, index: int) -> float:
        # every eigenvalue, none dropped as zero: ``stability`` drops those below
        # ZERO_RTOL of the spectral radius, which near the crossing is the one located
        set_parameter(disc, parameter, value)
        lam = lin.jacobian_eigenvalues(disc, u)
        # (its zero, not EIG_TOL: the counts only bracket it)
        return float(lam[index].real) if index < lam.size else -math.inf

    def locate(lo: float, hi: float, n_lo: int, n_hi: int, depth: int = 0) -> None:
        index = min(n_lo, n_hi)
        f_lo, f_hi = eig_at(lo, index), eig_at(hi, index)
        if f_lo * f_hi > 0:  # an end on the crossing itself (round-off on either side)
            root = lo if abs(f_lo) < abs(f_hi) else hi
        elif lo > 0 and hi > 2 * lo:  # a wide bracket (kappa up to 1e300): in log, where
            # bisection halves orders of magnitude (brentq's 100 iterations cannot halve
            # [2, 5e297] down to 1e-14)
            root = math.exp(optimize.brentq(lambda s: eig_at(math.exp(s), index),
                                            math.log(lo), math.log(hi), xtol=1e-15,
                                            rtol=1e-15))
            root = min(max(root, lo), hi)
        else:
            root = optimize.brentq(eig_at, lo, hi, args=(index,), xtol=1e-14, rtol=1e-15)
        set_parameter(disc, parameter, root)
        multiplicity, mode, _ = _crossing_mode(disc)
        kappa, beta = kappa_beta(plan, parameter, root)
        analytic = (lin.critical_kappa(plan["geometry"], beta, plan["normalized"], mode,
                                       plan.get("value", 1.0))
                    if mode else math.nan)
        special.append({"type": "pitchfork", "lam": root, "kappa": kappa, "beta": beta,
                        "multiplicity": multiplicity, "mode": mode,
                        "order_parameter": 0.0, "analytic": analytic,
                        "side": 1 if n_hi > n_lo else -1, "located": True})
        rest = abs(n_hi - n_lo) - multiplicity
        if any(abs(s["lam"] - root) <= 1e-6 * max(1.0, abs(root)) for s in special[:-1]):
            special.pop()  # found again from a sub-bracket (wide brackets): once is enough
        if rest > 0 and depth < 8 and multiplicity > 0:  # more crossings in the interval
            eps = 1e-9 * max(1.0, abs(root))
            if root - eps > lo:
                set_parameter(disc, parameter, root - eps)
                n_mid = _unstable(lin.jacobian_eigenvalues(disc, u))
                if n_mid != n_lo:
                    locate(lo, root - eps, n_lo, n_mid, depth + 1)
            if root + eps < hi:
                set_parameter(disc, parameter, root + eps)
                n_mid = _unstable(lin.jacobian_eigenvalues(disc, u))
                if n_mid != n_hi:
                    locate(root + eps, hi, n_mid, n_hi, depth + 1)

    for i in range(num - 1):
        if counts[i] != counts[i + 1]:
            locate(float(values[i]), float(values[i + 1]), counts[i], counts[i + 1])
    special.sort(key=lambda s: s["lam"])
    kappa = [kappa_beta(plan, parameter, v)[0] for v in values]
    beta = [kappa_beta(plan, parameter, v)[1] for v in values]
    saved = sorted({*range(0, num, b["stride"]), num - 1})
    return {"kind": "uniform", "mode": 0, "sign": 0, "lam": values,
            "kappa": np.array(kappa), "beta": np.array(beta),
            "order_parameter": np.zeros(num), "amplitude": np.zeros(num),
            "free_energy": np.array(energies),
            "stable": np.array(stable, dtype=np.int8), "leading": np.array(leading),
            "special": special, "saved": saved,
            "states": np.stack([states[i] for i in saved]),
            "status": "completed", "message": f"{num} points, {len(special)} pitchfork(s)",
            "transition": "", "fold_lam": math.nan}


def pitchfork_check(plan: dict, cfg: dict, pitchforks: list[dict]) -> tuple[bool, str]:
    """The pitchforks found against the closed form (module docstring): (ok, message)."""
    b = cfg["bifurcation"]
    parameter = plan["parameter"]
    problems, found = [], {}
    for p in pitchforks:
        expected = 2 if plan["geometry"] == "circle" else 2 * p["mode"] + 1
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
    uniform = lin._uniform_state(disc)
    phi = lin.critical_modes(disc, mode)[0]
    # S^2: the branch of a zonal seed stays axisymmetric, and is followed in that
    # invariant subspace (RealView's docstring): L + 1 unknowns, the mass condition only
    axisymmetric = disc.geometry == "sphere"
    view = ss.RealView(disc, uniform, axisymmetric=axisymmetric)
    system = st.BorderedSystem(disc, view, phi, 0 if axisymmetric else mode)
    scale = 1.0 / float(view.to_real(uniform)[view.constant])  # the mean coefficient to 1
    z_bif = np.concatenate([view.to_real(uniform), np.zeros(system.p)])
    direction = np.concatenate([sign * view.to_real(phi), np.zeros(system.p)]) * scale
    invalid = (lambda v: v <= 0) if parameter == "kappa" else (lambda v: v < 0)

    def residual(y: np.ndarray, lam: float) -> np.ndarray:
        if invalid(lam) or not math.isfinite(lam):  # (a predictor beyond the physical
            return np.full(y.size, np.nan)          # range: Newton halves the step)
        set_parameter(disc, parameter, lam)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            # (a far predictor can make K*rho negative: SA's log gives NaN, and Newton
            # halves the step on a non-finite residual)
            return system.residual(y / scale)

    def jvp_x(y: np.ndarray, lam: float, v: np.ndarray) -> np.ndarray:
        set_parameter(disc, parameter, lam)
        return system.jvp(y / scale, v / scale)

    def dF_dkappa(y: np.ndarray, lam: float) -> np.ndarray:
        # F = (Delta / kappa) u + N(u): dF/dkappa = -(linear / kappa) u (N has no kappa)
        set_parameter(disc, parameter, lam)
        u = system.state(y / scale)
        f = view.to_real(-disc.linear * u / lam)
        return np.concatenate([f, np.zeros(system.p)])

    def precondition(r: np.ndarray) -> np.ndarray:
        return scale * system.precondition(r)

    formed: dict[str, Any] = {}

    def bordered_jacobian(y: np.ndarray, lam: float) -> np.ndarray:
        """The unscaled bordered Jacobian at (y, lam), kept for the eigenvalues of the
        same point (the continuation forms it at each point for the tangent)."""
        key = (lam, y.tobytes())
        if formed.get("key") != key:
            set_parameter(disc, parameter, lam)
            formed["key"], formed["matrix"] = key, system.jacobian(y / scale)
        return formed["matrix"]

    def jacobian(y: np.ndarray, lam: float) -> np.ndarray:
        return bordered_jacobian(y, lam) / scale

    dense = system.size + 1 <= DENSE_UP_TO
    last: dict[str, Any] = {}

    def eigenvalues(y: np.ndarray, lam: float) -> np.ndarray:
        set_parameter(disc, parameter, lam)
        # (the continuation's Jacobian is F' itself on the circle; on the sphere only its
        # axisymmetric block, and stability takes F' by blocks of each order m)
        block = (bordered_jacobian(y, lam)[: view.size, : view.size]
                 if dense and not axisymmetric else None)
        stab = lin.stability(disc, system.state(y / scale), count=EIG_COUNT, jacobian=block)
        last["stability"] = stab
        return stab.eigenvalues

    points: dict[str, list] = {name: [] for name in ("lam", "order_parameter", "amplitude",
                                                       "free_energy", "stable", "leading")}
    saved_states: list[tuple[int, np.ndarray]] = []

    def callback(index: int, y: np.ndarray, lam: float) -> None:
        set_parameter(disc, parameter, lam)
        u = system.state(y / scale)
        stab = last.get("stability")
        points["lam"].append(lam)
        points["order_parameter"].append(st.order_parameter(disc, u))
        points["amplitude"].append(st.mode_amplitude(disc, u, mode))
        points["free_energy"].append(st.free_energy(disc, u))
        points["stable"].append(-1 if stab is None else int(stab.stable))
        points["leading"].append(math.nan if stab is None else stab.leading)
        if index % b["stride"] == 0:
            saved_states.append((index, disc.to_density(u)))
        last["point"] = (index, u)

    ds = b["ds"]
    branch = switch_branch(
        residual, z_bif * scale, lam_c, direction, h=SWITCH_H, jvp_x=jvp_x,
        dF_dlam=dF_dkappa if parameter == "kappa" else None, tol=b["tolerance"],
        ds=ds, ds_min=ds * DS_MIN_FACTOR, ds_max=b["ds_max"],
        lam_bounds=(b["start"], b["stop"]), max_points=b["points"],
        eigenvalues=eigenvalues, eig_tol=EIG_TOL, precondition=precondition,
        # (a Jacobian formed in one batched call is formed anew at each point; one made
        # of products is refined first: the continuation's default)
        callback=callback, jacobian=jacobian if dense and disc.batched_jvp else None,
        linear_solver="dense" if dense else "krylov")
    n = len(points["lam"])
    if n and (not saved_states or saved_states[-1][0] != n - 1):
        index, u = last["point"]
        saved_states.append((index, disc.to_density(u)))
    lam = np.array(points["lam"], dtype=float)
    pairs = [kappa_beta(plan, parameter, v) for v in lam]
    special = []
    for s in branch.special:
        set_parameter(disc, parameter, s.lam)
        kappa, beta = kappa_beta(plan, parameter, s.lam)
        special.append({"type": s.kind, "lam": float(s.lam), "kappa": kappa, "beta": beta,
                        "multiplicity": int(s.multiplicity), "mode": mode,
                        "order_parameter": st.order_parameter(disc,
                                                              system.state(s.x / scale)),
                        "analytic": math.nan, "side": 0, "located": bool(s.located)})
    transition, fold_lam = "", math.nan
    if n:
        offset = lam[0] - lam_c
        folds = [s for s in special if s["type"] == "fold"]
        fold_lam = folds[0]["lam"] if folds else math.nan
        if abs(offset) <= 1e-12 * max(1.0, abs(lam_c)):
            transition = "undetermined"
        elif np.sign(offset) == pitchfork["side"]:
            transition = "supercritical"
        else:
            transition = "subcritical"
    message = branch.message
    if branch.status == "failed":
        message = f"Newton failed on the branch of mode {mode}: {branch.message}"
    return {"kind": "mode", "mode": mode, "sign": sign, "lam": lam,
            "kappa": np.array([p[0] for p in pairs]), "beta": np.array([p[1] for p in pairs]),
            "order_parameter": np.array(points["order_parameter"]),
            "amplitude": np.array(points["amplitude"]),
            "free_energy": np.array(points["free_energy"]),
            "stable": np.array(points["stable"], dtype=np.int8),
            "leading": np.array(points["leading"], dtype=float), "special": special,
            "saved": [i for i, _ in saved_states],
            "states": np.stack([d for _, d in saved_states]) if saved_states else None,
            "status": branch.status, "message": message, "transition": transition,
            "fold_lam": fold_lam}
