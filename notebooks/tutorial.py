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
# # meanfield in a notebook: the first hour
#
# This notebook is the Python half of the [tutorial](../docs/tutorial.md), worked in cells:
# solve the mean-field PDE of the tokens (`meanfield.evolve`), run the tokens themselves
# (`meanfield.particles`), put the two side by side (`meanfield.compare`), draw them
# (`meanfield.plot`), and read, write and re-run the results with xarray and netCDF. Each
# result is checked against the exact stationary state of the noisy Kuramoto model
# ([Kur75]; keys as in the [bibliography](../docs/references.md)), the case β = 0 where
# the equation can be solved by hand.
#
# It is stored as a plain Python file (jupytext "percent" format). Open it in Jupyter with
# `jupytext` installed, or convert it: `jupytext --to ipynb notebooks/tutorial.py`. The
# whole notebook runs in under a minute on a laptop core.

# %%
import numpy as np
import xarray as xr
from scipy import optimize, special

import meanfield

meanfield.__version__

# %% [markdown]
# ## The theory we will check
#
# On the circle, a density ρ(θ, t) of tokens obeys
# ∂_t ρ + ∂_θ(ρ v[ρ]) = κ⁻¹ ∂²_θ ρ (the signs and both velocity fields are in
# [Conventions](../docs/conventions.md)). At β = 0 the velocity is
# v(θ) = −r sin(θ − θ₀), where r e^{iθ₀} = ∫ e^{iθ} ρ dθ: r is the *order parameter*
# and θ₀ the *mean direction*. A stationary state has zero flux, so
# ρ ∝ exp(κ r cos(θ − θ₀)), and r must be the order parameter of that density:
#
# $$ \rho_\infty(\theta) = \frac{e^{\kappa r \cos(\theta-\theta_0)}}{2\pi I_0(\kappa r)},
# \qquad r = \frac{I_1(\kappa r)}{I_0(\kappa r)} . $$
#
# For κ ≤ 2 the only root is r = 0 (the uniform state); above κ_c = 2 a root r > 0
# appears. The tutorial page checks κ = 4; here we take κ = 3, nearer the threshold.

# %%
kappa = 3.0


def self_consistency(r: float) -> float:
    """r - I1(kappa r)/I0(kappa r): zero at a stationary order parameter (ive: no overflow)."""
    return r - special.ive(1, kappa * r) / special.ive(0, kappa * r)


r_theory = optimize.brentq(self_consistency, 1e-9, 1.0, xtol=1e-15)
r_theory

# %% [markdown]
# ## Evolve: the PDE
#
# A config is a dict of sections; what is left out takes its default (every key is in
# the [Config reference](../docs/config_reference.md)). The spectral scheme with 64
# points resolves these smooth densities to round-off; a von Mises bump relaxes to the
# stationary state at an exponential rate, so 60 time units bring r to its limit to
# about 1e-9. `progress=True` would show a `tqdm.auto` bar (a widget in Jupyter when
# ipywidgets is installed); runs this short do not need one.

# %%
config = {
    "model": {"beta": 0.0, "kappa": kappa},            # noisy Kuramoto
    "discretization": {"method": "spectral", "resolution": 64},
    "initial": {"kind": "von_mises", "center": 1.0, "concentration": 1.0},
    "time": {"t_final": 60.0, "save_every": 0.5},
}
ds = meanfield.evolve(config)
ds

# %% [markdown]
# The last saved density against the formula above, centred on the mean direction the
# run found (any θ₀ is a stationary state; the symmetric start keeps θ₀ = 1):

# %%
last = ds.isel(time=-1)
x, y = last.mean_direction.values
theta0 = np.arctan2(y, x)
rho_theory = (np.exp(kappa * r_theory * np.cos(ds.theta - theta0))
              / (2 * np.pi * special.i0(kappa * r_theory)))
r_error = abs(float(last.order_parameter) - r_theory)
density_error = float(np.max(np.abs(last.density - rho_theory)))
print(f"theta0 = {theta0:.12f}; |r - r_theory| = {r_error:.1e}; "
      f"max |rho - rho_theory| = {density_error:.1e}")
# 1e-7: what is left at t = 60 of the exponential approach (|r - r_theory| ~ 4e-3 at
# t = 15 and shrinks ~100-fold every 13 time units); the spectral error is ~1e-15.
assert r_error < 1e-7 and density_error < 1e-7
assert abs(float(last.mass) - 1.0) < 1e-12  # the scheme conserves mass to round-off

# %% [markdown]
# ## Plot: figures that show inline
#
# `meanfield.plot(ds)` returns the standard figures as a dict of matplotlib Figures:
# the last expression of a cell shows one. Given a folder, `meanfield.plot(ds, "figs",
# stem="kuramoto", format="pdf")` also writes them (and refuses to replace files without
# `overwrite=True`).

# %%
figs = meanfield.plot(ds)
print(list(figs))
figs["summary"]

# %% [markdown]
# ## Reading a result with xarray
#
# A result is an `xarray.Dataset`: select by coordinate value with `sel`, by position
# with `isel`. Every variable carries its `units` and a `long_name`, and the dataset's
# attributes hold the whole config (as JSON) and the package version, so a file says how
# it was made.

# %%
print(ds.order_parameter.sel(time=[0, 5, 10, 20, 60]).values)
print(ds.density.attrs)
print(ds.density.sel(time=10.0).sel(theta=slice(0.9, 1.1)).values)  # near theta0
print(ds.attrs["title"], "| meanfield", ds.attrs["version"])

# %% [markdown]
# `meanfield.config.from_json` reads the stored config back as a validated dict, with
# every default filled in:

# %%
stored = meanfield.config.from_json(ds.attrs["config"])
print(stored["model"])
print(stored["time"])

# %% [markdown]
# ## A netCDF round trip
#
# `out=` writes the result atomically (from the command line: `meanfield evolve run.toml
# --out run.nc`); `overwrite=True` replaces this notebook's own file from an earlier run.
# `xarray.open_dataset` reads it back. The config inside the file is
# enough to run it again, and the PDE solver is deterministic, so the rerun gives the same
# densities.

# %%
written = meanfield.evolve(config, out="kuramoto.nc", overwrite=True)
with xr.open_dataset("kuramoto.nc") as back:
    back = back.load()
xr.testing.assert_allclose(back.density, ds.density, rtol=1e-13, atol=0)
rerun = meanfield.evolve(meanfield.config.from_json(back.attrs["config"]))
xr.testing.assert_allclose(rerun.density, back.density, rtol=1e-13, atol=0)
print("file and rerun agree;", back.attrs["message"])

# %% [markdown]
# A result is never replaced by accident: writing to the same file again is refused
# before any work, with the error naming the key and saying what to do.

# %%
try:
    meanfield.evolve(config, out="kuramoto.nc")
except meanfield.ConfigError as err:
    print(type(err).__name__, "-", err)

# %% [markdown]
# ## Particles: the tokens the PDE is the limit of
#
# The same config with a `particles` section runs n tokens
# dθ_i = v dt + √(2/κ) dW_i (Euler–Maruyama with a fixed step `dt` when there is noise).
# Their order parameter fluctuates about the PDE's value. To check it honestly, we
# average r(t) over the stationary part of the run, t ≥ 12. The standard deviation of a
# time average is at most that of a single time, s (the samples are correlated, never
# more than perfectly), so we allow 3 s; the bias of finite n (O(1/n)) and of the step
# (O(dt)) is far smaller.

# %%
tokens = meanfield.particles({
    **config,
    "time": {"t_final": 30.0, "save_every": 0.25, "dt": 0.01},
    "particles": {"n": 2000, "seed": 7},
})
r_tokens = tokens.order_parameter.sel(time=slice(12, None))
mean, s = float(r_tokens.mean()), float(r_tokens.std())
print(f"tokens: r = {mean:.4f} (fluctuation s = {s:.4f}); PDE theory r = {r_theory:.4f}")
assert abs(mean - r_theory) < 3 * s
tokens

# %%
meanfield.plot(tokens)["summary"]

# %% [markdown]
# ## Compare: the PDE next to an ensemble of token systems
#
# `compare` runs the PDE and `ensemble` token systems sampled from the same initial
# density, bins the tokens, and reports the L¹ distance between their histograms and the
# PDE's bin masses beside the distance that sampling alone gives (`l1_noise_floor`, of
# order 1/√n). It starts at the floor. It then creeps above it even though the state
# stays smooth: the clustered state may sit at any angle, and the tokens' mean direction
# wanders (a random walk, about 0.1 rad by t = 6 for 1000 tokens at κ = 3) while the
# PDE's stays put, which shifts the histograms by a fraction of a bin.
# [Reading the figures](../docs/figures.md) explains what the gap means when clusters
# form.

# %%
cmp = meanfield.compare({
    **config,
    "time": {"t_final": 6.0, "save_every": 0.5, "dt": 0.01},
    "particles": {"n": 1000, "ensemble": 2, "seed": 1},
})
print((cmp.l1_distance / cmp.l1_noise_floor).values.round(2))
meanfield.plot(cmp)["summary"]

# %% [markdown]
# ## A glance at the sphere S²
#
# `domain.geometry = "sphere"` solves the same equation on S² (spectral, in spherical
# harmonics; `resolution` is the band limit). At β = 0 the stationary state is again
# ρ ∝ exp(κ r ⟨x, m⟩); averaging ⟨x, m⟩ over it gives the Langevin function in place of
# the Bessel ratio,
#
# $$ r = \coth(\kappa r) - \frac{1}{\kappa r}, $$
#
# with threshold κ_c = 3. At κ = 6, from a small degree-1 perturbation of the uniform
# density:

# %%
kappa_s2 = 6.0
r_theory_s2 = optimize.brentq(
    lambda r: r - (1 / np.tanh(kappa_s2 * r) - 1 / (kappa_s2 * r)), 1e-6, 1.0, xtol=1e-15)
sphere = meanfield.evolve({
    "domain": {"geometry": "sphere"},
    "model": {"beta": 0.0, "kappa": kappa_s2},
    "discretization": {"resolution": 20},
    "initial": {"kind": "perturbed", "degree": 1, "amplitude": 0.3},
    "time": {"t_final": 25.0, "save_every": 1.0},
})
r_s2 = float(sphere.order_parameter[-1])
print(f"S^2: r = {r_s2:.8f}, theory {r_theory_s2:.8f}")
# 1e-6: what is left at t = 25 of the exponential approach (|r - r_theory| ~ 5e-6 at
# t = 20, ~60-fold less every 5 time units); band limit 20 resolves this density to ~1e-8.
assert abs(r_s2 - r_theory_s2) < 1e-6
meanfield.plot(sphere)["summary"]

# %% [markdown]
# ## Where next
#
# - The same runs from the command line, with TOML configs: the second half of the
#   [tutorial](../docs/tutorial.md).
# - The other notebook, `notebooks/bifurcation.py`: the bifurcations of the noisy model.
# - The [gallery](../docs/auto_examples/index.rst) of the papers' figures, and the
#   [API reference](../docs/api.rst).
