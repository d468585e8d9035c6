# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A study: the bifurcations of the noisy model
#
# With noise 1/κ, a cloud of tokens on the circle stays spread out (the uniform density)
# when the noise is strong, and clusters when it is weak. This notebook follows that
# transition with `meanfield.bifurcation`, which traces the stationary states as κ
# varies (arclength continuation, each state found by Newton's method and its stability
# by the eigenvalues of the linearised equation), and checks what it finds against the
# theory of [The first bifurcation of the noisy model](../docs/bifurcation.md) (the
# bifurcations of the noisy transformer on the circle are studied in [BBR25]; the keys are
# those of the [bibliography](../docs/references.md)):
#
# 1. the noisy Kuramoto model (β = 0): a continuous transition at κ_c = 2, with the whole
#    branch given by a scalar equation;
# 2. unnormalized attention (USA) at β > 0: the transition turns first order above a
#    tricritical β*, with a fold, bistability and hysteresis;
# 3. the hysteresis seen again by integrating the equation in time, an independent method.
#
# Stored as a plain Python file (jupytext "percent" format): open it in Jupyter with
# `jupytext` installed, or convert it with `jupytext --to ipynb notebooks/bifurcation.py`.
# It runs in about 15 s.

# %%
import matplotlib.pyplot as plt
import numpy as np
from scipy import optimize, special

import meanfield

# %% [markdown]
# ## The theory
#
# The uniform density is stationary for every κ. A perturbation of Fourier mode k grows at
# the rate k²(a_k − 1/κ) ([Conventions](../docs/conventions.md), section 3), with
# a_1 = 1/2 at β = 0 and a_1 = I₁(β)/β for USA, so the uniform state turns unstable at
#
# $$ \kappa_c = 1/a_1 = 2 \ (\beta = 0), \qquad \kappa_c = \beta / I_1(\beta) \ (\text{USA}). $$
#
# Along the branch that leaves it, κ = κ_c + κ₂ r² + O(r⁴), r the order parameter. For
# β = 0 the stationary states are ρ ∝ exp(κ r cos θ) with r = I₁(κr)/I₀(κr); expanding
# I₁(x)/I₀(x) = x/2 − x³/16 + O(x⁵) gives 1 = κ/2 − κ³r²/16, so κ = 2 + r² + O(r⁴):
# **κ₂ = 1 > 0**, the branch bends forward (a supercritical pitchfork, a continuous
# transition). For USA the expansion gives
#
# $$ \kappa_2 = \kappa_c \, \frac{1 - 2q}{2(1 - q)}, \qquad q = \frac{I_2(\beta)}{I_1(\beta)}, $$
#
# which changes sign where q = 1/2: the **tricritical β***. Above it κ₂ < 0, the branch
# bends back to a fold below κ_c, and the transition is first order: the second Fourier
# mode of the interaction is then strong enough relative to the first, the classical
# criterion for such equations ([CGPS20] on the torus, [SS24] on spheres).

# %%
def kuramoto_r(kappa: float) -> float:
    """The stable root of r = I1(kappa r)/I0(kappa r) (0 for kappa <= 2)."""
    if kappa <= 2:
        return 0.0
    return optimize.brentq(lambda r: r - special.ive(1, kappa * r) / special.ive(0, kappa * r),
                           1e-12, 1.0, xtol=1e-15)


def usa_kappa_c(beta: float) -> float:
    """The uniform state's threshold 1/a_1 for USA on S^1."""
    return beta / special.iv(1, beta)


def usa_kappa_2(beta: float) -> float:
    """The Landau coefficient of USA on S^1 (its sign: the transition type)."""
    q = special.iv(2, beta) / special.iv(1, beta)
    return usa_kappa_c(beta) * (1 - 2 * q) / (2 * (1 - q))


beta_star = optimize.brentq(lambda b: special.iv(2, b) / special.iv(1, b) - 0.5, 0.5, 10.0)
print(f"tricritical beta* = {beta_star:.6f}")

# %% [markdown]
# ## 1. Noisy Kuramoto: a continuous transition at κ_c = 2
#
# `mode = "continuation"` follows the uniform branch and the branch of mode 1 from its
# pitchfork; `stride` large keeps the branch only, not every density on it.

# %%
kuramoto = meanfield.bifurcation({
    "model": {"beta": 0.0},
    "discretization": {"resolution": 32},
    "bifurcation": {"parameter": "kappa", "start": 1.5, "stop": 6.0, "modes": 1,
                    "mode": "continuation", "ds_max": 0.1, "stride": 1000},
})
meanfield.plot(kuramoto)["summary"]

# %% [markdown]
# The dataset holds the branches as `(branch, point)` arrays (branch 0 is the uniform
# state, branch 1 the mode-1 branch; `branch_points` says how many points each has) and
# the special points found on them. We check the pitchfork, every point of the branch
# against the scalar equation, its stability, and κ₂ from its first point,
# (κ − κ_c)/r², whose error is of order r² = 4e-4.

# %%
def branch(ds, b: int):
    """kappa, r and stability (1 stable, 0 unstable) along branch b."""
    n = int(ds.branch_points[b])
    return (ds.kappa[b, :n].values, ds.order_parameter[b, :n].values,
            ds.stable[b, :n].values)


pitchfork = float(kuramoto.special_kappa[kuramoto.special_type == "pitchfork"][0])
kappa, r, stable = branch(kuramoto, 1)
r_theory = np.array([kuramoto_r(k) for k in kappa])
kappa_2 = (kappa[0] - 2.0) / r[0] ** 2
print(f"pitchfork at kappa = {pitchfork:.10f} (theory 2)")
print(f"max |r - r_theory| over {len(r)} points = {np.max(np.abs(r - r_theory)):.1e}")
print(f"kappa_2 ~ {kappa_2:.5f} from r = {r[0]} (theory 1)")
assert abs(pitchfork - 2.0) < 1e-6
# 1e-7: Newton's tolerance and the 32-point grid (the most clustered state has Fourier
# coefficients ~1e-8 of its mean at k = 16)
assert np.max(np.abs(r - r_theory)) < 1e-7
assert stable.all()  # the clustered branch is stable ...
k_uniform, _, stable_uniform = branch(kuramoto, 0)
assert stable_uniform[k_uniform < 2].all() and not stable_uniform[k_uniform > 2].any()
assert abs(kappa_2 - 1.0) < 0.01  # ... and bends forward: supercritical

# %% [markdown]
# ## 2. USA: the transition turns first order above β*
#
# The sign of κ₂ over β, from the formula above:

# %%
betas = np.linspace(0.05, 6.0, 300)
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(betas, [usa_kappa_2(b) / usa_kappa_c(b) for b in betas], label=r"$\kappa_2/\kappa_c$")
ax.axhline(0, color="0.6", lw=0.8)
ax.axvline(beta_star, color="C3", ls=":", label=rf"$\beta^* = {beta_star:.3f}$")
ax.set_xlabel(r"$\beta$")
ax.set_ylabel(r"$\kappa_2 / \kappa_c$ (USA, S¹)")
ax.text(0.6, 0.1, "continuous", color="0.3")
ax.text(4.0, -0.15, "first order", color="0.3")
ax.legend(loc="upper right")
fig.tight_layout()

# %% [markdown]
# One β on each side: at β = 1 the branch should bend forward, at β = 4 back, to a fold
# κ_f < κ_c. (The kernel e^{β cos θ} needs more grid points as β grows: the study refuses
# a resolution that does not resolve it, saying how many it needs.)

# %%
usa = {}
for beta, stop in ((1.0, 2.5), (4.0, 0.42)):  # (0.42: just above kappa_c at beta = 4)
    kc = usa_kappa_c(beta)
    usa[beta] = meanfield.bifurcation({
        "model": {"beta": beta, "normalized": False},
        "discretization": {"resolution": 40},
        "bifurcation": {"parameter": "kappa", "start": 0.9 * kc, "stop": stop,
                        "modes": 1, "mode": "continuation", "ds": 0.02, "ds_max": 0.02,
                        "points": 1000, "stride": 1000},  # (short steps: a smooth curve)
    })
    ds = usa[beta]
    first = float(ds.special_kappa[ds.special_type == "pitchfork"].min())
    kappa, r, stable = branch(ds, 1)
    fitted = (kappa[0] - kc) / r[0] ** 2
    print(f"beta = {beta}: pitchfork at {first:.10f} (theory {kc:.10f}); "
          f"{ds.transition.values[1]}; kappa_2 ~ {fitted:.5f} (theory {usa_kappa_2(beta):.5f})")
    assert abs(first - kc) < 1e-6
    assert abs(fitted / usa_kappa_2(beta) - 1) < 0.01   # the O(r^2) error of the secant
    assert ds.transition.values[1] == ("supercritical" if beta < beta_star else "subcritical")

fold = float(usa[4.0].fold_kappa[1])
kappa_c4 = usa_kappa_c(4.0)
print(f"beta = 4: fold at kappa_f = {fold:.5f} < kappa_c = {kappa_c4:.5f}")
assert fold < kappa_c4
meanfield.plot(usa[4.0])["summary"]

# %% [markdown]
# Between the fold and κ_c both the uniform state and the clustered upper branch are
# stable (the dashed segment between them is the unstable state that separates their
# basins): which one the tokens end in depends on where they start.
#
# ## 3. Hysteresis by integrating in time
#
# `mode = "scan"` does what an experiment would: at each κ it integrates the equation in
# time until it stops changing, from a nearly uniform start and from a clustered one, and
# sweeps κ up and down, each value starting from the previous state. It knows nothing of
# the continuation. At β = 4 we scan κ = 0.38 (below the fold), 0.40 (between the fold
# and κ_c) and 0.42 (above κ_c).

# %%
scan = meanfield.bifurcation({
    "model": {"beta": 4.0, "normalized": False},
    "discretization": {"resolution": 40},
    "bifurcation": {"parameter": "kappa", "start": 0.38, "stop": 0.42, "scan_num": 3,
                    "mode": "scan"},
})
print(scan.order_parameter.to_pandas().round(6))
assert fold < 0.40 < kappa_c4 < 0.42
assert list(scan.bistable.values) == [False, True, False]
assert scan.stable.all()
r_scan = scan.order_parameter.values  # (sweep, kappa)
assert (r_scan[:, 0] == 0).all() and (r_scan[:, 2] > 0.5).all()  # one state each ...
r_40 = r_scan[:, 1]
clustered = r_40[r_40 > 0]
assert (r_40 == 0).any() and clustered.min() > 0.5 and np.ptp(clustered) < 1e-8  # ... two
# the clustered state at kappa = 0.42 is the continuation's last point, computed there
kappa, r, _ = branch(usa[4.0], 1)
print(f"kappa = 0.42: r = {r_scan[0, 2]:.10f} (scan), {r[-1]:.10f} (continuation)")
assert abs(kappa[-1] - 0.42) < 1e-12 and abs(r_scan[0, 2] - r[-1]) < 1e-8

# %% [markdown]
# The scan found the same states, stable where the continuation said, and both of them
# only between the fold and κ_c.
#
# ## Where next
#
# - The same on S² (κ_c = 3 at β = 0, κ₂ = 9/5, β* ≈ 1.82 for USA) and for SA, which stays
#   continuous at every β: the gallery example `examples/bifurcation_diagrams.py`.
# - From the command line: `meanfield bifurcation examples/bifurcation.toml --out bif.nc`,
#   then `meanfield plot bif.nc`.
# - The derivation of κ₂ and the keys of `[bifurcation]`:
#   [bifurcation.md](../docs/bifurcation.md), the
#   [Config reference](../docs/config_reference.md).
