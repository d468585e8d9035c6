"""Circle figures fit for a paper (issue 21, section 4): angles relative to the mean
direction, the periodic seam closed, no mass-error panel, one energy label, β = 0 named
Kuramoto. Synthetic von Mises datasets: every expected value is analytic."""
from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from scipy.special import i0e

from meanfield.plotting import diagnostics, figure, snapshots, spacetime, trajectories
from meanfield.plotting.helpers import ENERGY_LABEL


def von_mises(theta: np.ndarray, centre: float, k: float) -> np.ndarray:
    """exp(k cos(θ − centre)) / (2π I0(k)), computed stably."""
    return np.exp(k * (np.cos(theta - centre) - 1.0)) / (2 * np.pi * i0e(k))


def circle_dataset(centre: float, n_theta: int = 60, model: str = "SA",
                   beta: float = 1.0) -> xr.Dataset:
    """Von Mises densities sharpening (k = 1 + 4t) around ``centre``, with mass 1."""
    theta = np.linspace(0.0, 2 * np.pi, n_theta, endpoint=False)
    time = np.linspace(0.0, 4.0, 9)
    rho = np.stack([von_mises(theta, centre, 1.0 + 4.0 * t) for t in time])
    return xr.Dataset(
        {"density": (("time", "theta"), rho, {"units": "1/rad"}),
         "mass": (("time",), np.ones(time.size)),
         "energy": (("time",), -0.5 * np.ones(time.size), {"units": "1"}),
         "order_parameter": (("time",), np.full(time.size, 0.5))},
        coords={"time": time, "theta": ("theta", theta, {"units": "rad"})},
        attrs={"geometry": "circle", "model": model, "beta": beta, "kappa": math.inf,
               "method": "spectral"})


def tokens_dataset(centre: float, n: int = 30, beta: float = 1.0) -> xr.Dataset:
    """Tokens on S¹ contracting onto the angle ``centre`` (some start across the seam)."""
    rng = np.random.default_rng(3)
    time = np.linspace(0.0, 3.0, 7)
    spread = rng.uniform(-1.0, 1.0, n)
    angle = np.mod(centre + spread[None] * np.exp(-time)[:, None], 2 * np.pi)
    x = np.stack([np.cos(angle), np.sin(angle)], axis=-1)
    r = np.linalg.norm(x.mean(axis=1), axis=1)
    return xr.Dataset(
        {"position": (("time", "particle", "component"), x),
         "angle": (("time", "particle"), angle, {"units": "rad"}),
         "order_parameter": (("time",), r),
         "energy": (("time",), -0.5 * r**2, {"units": "1"})},
        coords={"time": time, "particle": np.arange(n), "component": ["x", "y"]},
        attrs={"kind": "particles", "geometry": "circle", "dim": 2, "model": "SA",
               "beta": beta, "kappa": math.inf, "n": n})


def new_axes():
    from matplotlib.figure import Figure

    fig = Figure(layout="constrained")
    return fig, fig.add_subplot()


def mesh_cells(mesh) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x edges, the cell centres in x, values (rows, cells)) of a flat QuadMesh."""
    xy = mesh.get_coordinates()
    edges = xy[0, :, 0]
    values = np.asarray(mesh.get_array()).reshape(xy.shape[0] - 1, xy.shape[1] - 1)
    return edges, 0.5 * (edges[:-1] + edges[1:]), values


@pytest.mark.parametrize("centre", [0.0, math.pi, 2.0, 2 * math.pi - 0.05])
def test_a_cluster_is_drawn_in_the_middle_of_the_frame(centre):
    ds = circle_dataset(centre)
    h = 2 * np.pi / ds.sizes["theta"]
    # the space-time image: at the last time the peak is the middle cell of [−π, π)
    _, ax = new_axes()
    _, mids, values = mesh_cells(spacetime(ds, ax, colorbar=False))
    lo, hi = ax.get_xlim()
    assert (lo, hi) == (-np.pi, np.pi)
    assert abs(mids[np.argmax(values[-1])] - 0.5 * (lo + hi)) <= h / 2 + 1e-12
    # the snapshots: the last curve peaks there too, and so does a cluster at θ = π
    # (which a fixed frame [−π, π) would cut in two halves at its edges)
    _, ax = new_axes()
    line = snapshots(ds, ax, n=3)[-1]
    x, y = line.get_xdata(), line.get_ydata()
    assert abs(x[np.argmax(y)]) <= h / 2 + 1e-12
    shown = {0.0: "0.00", math.pi: "3.14", 2.0: "2.00", 2 * math.pi - 0.05: "-0.05"}
    assert ax.get_xlabel() == (f"θ − θ̄ (rad), θ̄ = {shown[centre]}"
                               " = mean direction at t = 4").replace("-", "−")


@pytest.mark.parametrize("centre", [math.pi, 0.0])
def test_token_trajectories_are_centred_on_their_mean_direction(centre):
    ds = tokens_dataset(centre)
    _, ax = new_axes()
    lines = trajectories(ds, ax)
    last = np.array([seg[-1, 0] for seg in lines.get_segments() if seg[-1, 1] == 3.0])
    assert last.size == ds.sizes["particle"]
    # the tokens end within exp(−3) of the centre: drawn within that of 0, no wrap
    assert np.max(np.abs(last)) <= math.exp(-3.0) + 1e-9
    assert ax.get_xlim() == (-np.pi, np.pi)
    assert ax.get_xlabel().startswith("θ − θ̄ (rad), θ̄ = ")


def test_the_token_density_image_has_a_bin_centred_on_the_mean_direction():
    ds = tokens_dataset(math.pi, n=300)  # over max_lines: the density image
    _, ax = new_axes()
    edges, mids, values = mesh_cells(trajectories(ds, ax, colorbar=False))
    bins = mids.size
    assert bins % 2 == 1 and edges[0] == -np.pi and edges[-1] == np.pi
    # all tokens end within e^-3 < half a bin of θ̄: in the one middle bin, not two
    assert mids[bins // 2] == pytest.approx(0.0, abs=1e-12)
    assert values[-1, bins // 2] * (2 * np.pi / bins) == pytest.approx(1.0)


def test_the_seam_is_closed_and_the_image_is_the_density_shifted():
    centre = 1.0  # not a grid angle: the cells do not line up with ±π
    ds = circle_dataset(centre, n_theta=48)
    _, ax = new_axes()
    edges, mids, values = mesh_cells(spacetime(ds, ax, colorbar=False))
    # the cells cover the whole period, with no white strip at either side
    assert edges[0] < -np.pi and edges[-1] > np.pi
    assert np.all(np.diff(edges) > 0)
    assert np.allclose(np.diff(edges), 2 * np.pi / 48)
    # each drawn cell holds the density at θ̄ + x (θ̄ = 1 exactly, by symmetry)
    t = ds["time"].values
    expected = np.stack([von_mises(centre + mids, centre, 1.0 + 4.0 * s) for s in t])
    assert np.allclose(values, expected, rtol=1e-12, atol=0)


def test_no_mass_panel_and_the_worst_mass_error_in_a_caption():
    ds = circle_dataset(2.0)
    ds["mass"] = ("time", 1.0 + np.array([0, 3e-13, -5e-12, 1e-14, 0, 0, 0, 0, 2e-12]))
    fig = figure(ds)
    titles = " ".join(ax.get_title(loc="left") for ax in fig.axes)
    assert "mass" not in titles
    assert fig._supxlabel.get_text() == "mass: max over t of |M(t) − 1| = 5.0e-12"
    axes = diagnostics(ds)
    assert [ax.get_title() for ax in axes] == ["order parameter", "energy"]
    assert axes[0].figure._supxlabel.get_text() == fig._supxlabel.get_text()


def test_one_energy_label_for_pde_and_tokens():
    pde = diagnostics(circle_dataset(2.0))[1]
    tokens = diagnostics(tokens_dataset(2.0))[1]
    assert pde.get_title() == tokens.get_title() == "energy"
    assert pde.get_ylabel() == tokens.get_ylabel() == ENERGY_LABEL == "E(t) − E(uniform)"


@pytest.mark.parametrize("model", ["SA", "USA"])
def test_beta_zero_is_titled_kuramoto(model):
    title = figure(circle_dataset(2.0, model=model, beta=0.0)).get_suptitle()
    assert "Kuramoto model" in title and "β = 0" in title and "SA" not in title
    title = figure(tokens_dataset(2.0, beta=0.0)).get_suptitle()
    assert "Kuramoto model" in title and "SA" not in title
    assert f"{model} model" in figure(circle_dataset(2.0, model=model)).get_suptitle()


def test_several_clusters_keep_off_the_frames_edge():
    """Looked at: the demo's three clusters (r = 0.08) centred on their mean direction
    put one at θ − θ̄ = 2.9, on the frame's right edge. Three equal clusters at 0, 2.4
    and 4 rad: their mean direction (−2.94) puts the one at 0 within 0.21 rad of the
    edge; the frame is now centred opposite the widest gap between them (0 .. 2.4, the
    others 1.6 and 2.28 rad: the edge at 1.2 rad), so no density above uniform lies
    within 0.5 rad of either edge, and the label says how θ̄ was chosen. A single
    cluster keeps its mean direction."""
    from meanfield.plotting.densities.circle import _centre

    theta = np.linspace(0.0, 2 * np.pi, 240, endpoint=False)
    rho = sum(von_mises(theta, c, 60.0) for c in (0.0, 2.4, 4.0)) / 3
    ds = circle_dataset(0.0, n_theta=240).isel(time=[0])
    ds["density"] = (("time", "theta"), rho[None], {"units": "1/rad"})
    mean = float(np.angle(np.sum(rho * np.exp(1j * theta))))
    assert abs(np.angle(np.exp(1j * (0.0 - mean - np.pi)))) < 0.21  # the old edge
    centre, what = _centre(ds)
    assert what == "opposite the widest gap"
    assert abs(np.angle(np.exp(1j * (centre + np.pi - 1.2)))) < 2 * np.pi / 240
    edge = np.abs(np.angle(np.exp(1j * (theta - centre - np.pi)))) < 0.5
    assert rho[edge].max() < 1 / (2 * np.pi)
    one = circle_dataset(1.0)
    assert _centre(one)[1].startswith("mean direction")
    assert _centre(one)[0] == pytest.approx(1.0, abs=1e-9)
