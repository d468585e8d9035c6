"""``meanfield.metrics.kde_modes`` (issue 28, acceptance 3): the local maxima of the KDE
``sum_j e^{beta <x, x_j>}`` equal, in number and place, the local maxima of the same
function sampled on a dense grid (an independent method: no derivative, no ascent), on
S^1 and on S^2 at beta = 16 .. 1024; the S^1 root finder and the mean-shift ascent agree
with each other; closed forms (one point, two points)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield.metrics import kde_modes
from meanfield.metrics.kde import circle_kde_modes, sphere_kde_modes

BETAS = (16.0, 64.0, 256.0, 1024.0)


def _circle_grid_maxima(theta: np.ndarray, beta: float, m: int = 2**17) -> np.ndarray:
    """Angles of the grid points above both neighbours (cyclic), spacing 2 pi / m: at
    beta = 1024 that is 1/650 of the kernel width 1/sqrt(beta)."""
    grid = -np.pi + 2 * np.pi * np.arange(m) / m
    f = np.zeros(m)
    for t in theta:
        f += np.exp(beta * (np.cos(grid - t) - 1.0))
    top = (f > np.roll(f, 1)) & (f > np.roll(f, -1))
    return grid[top]


def _face_maxima(x: np.ndarray, beta: float, centre: np.ndarray, half: float,
                 cells: int) -> np.ndarray:
    """Maxima over the 8 neighbours of an equiangular gnomonic grid about ``centre``
    (angles ``a, b`` uniform in [-half, half], the point ``centre + tan(a) e1 + tan(b)
    e2`` normalised: the cubed sphere's face for half = pi/4, its cells within a factor
    ~1.3 of square, so that no ridge slips between the stencil's neighbours), interior
    points only."""
    e1 = np.linalg.svd(np.eye(3) - np.outer(centre, centre))[0][:, :2]
    u = np.tan(np.linspace(-half, half, cells + 1))
    uu, vv = np.meshgrid(u, u, indexing="ij")
    p = centre[None, None] + uu[..., None] * e1[:, 0] + vv[..., None] * e1[:, 1]
    p /= np.linalg.norm(p, axis=-1, keepdims=True)
    f = np.exp(beta * (p @ x.T - 1.0)).sum(axis=-1)
    inner = f[1:-1, 1:-1]
    top = np.ones_like(inner, bool)
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            if di or dj:
                top &= inner > f[1 + di:cells + di, 1 + dj:cells + dj]
    return p[1:-1, 1:-1][top]


@pytest.mark.parametrize("beta", BETAS)
def test_circle_modes_are_the_dense_grid_maxima(beta):
    """n = 40 .. 200 uniform samples (so that at every beta kernels overlap and modes
    merge: counts well below n): the same count, each mode within one grid spacing of a
    grid maximum (matched in order)."""
    rng = np.random.default_rng(int(beta))
    for n in (40, 200):
        theta = rng.uniform(-np.pi, np.pi, n)
        modes = kde_modes(theta, beta)
        grid = _circle_grid_maxima(theta, beta)
        assert len(modes) == len(grid) and 1 < len(modes) < n
        angle = np.arctan2(modes[:, 1], modes[:, 0])
        gap = np.abs(np.angle(np.exp(1j * (angle - grid))))
        assert np.all(gap <= 2 * np.pi / 2**17)


def test_circle_root_finder_and_mean_shift_agree():
    """The exact S^1 search and the mean-shift ascent (run on the circle as S^1 in R^3's
    equator) give the same modes to 1e-7 rad (at beta = 16 .. 1024, n = 100)."""
    rng = np.random.default_rng(7)
    for beta in BETAS:
        theta = rng.uniform(-np.pi, np.pi, 100)
        exact = circle_kde_modes(theta, beta)
        ascent = sphere_kde_modes(np.c_[np.cos(theta), np.sin(theta), 0 * theta], beta)
        found = np.sort(np.arctan2(ascent[:, 1], ascent[:, 0]))
        assert found.shape == exact.shape
        np.testing.assert_allclose(found, exact, atol=1e-7)


@pytest.mark.parametrize("beta", BETAS)
def test_sphere_modes_are_the_dense_grid_maxima(beta):
    """S^2, grid spacing (in angle) a twelfth of the kernel width 1/sqrt(beta). beta =
    16, 64: 120 samples uniform on the sphere, the grid the equiangular cubed sphere (six
    faces with two cells of overlap, maxima merged within two cells). beta = 256, 1024:
    60 samples uniform in a cap of angular radius r = sqrt(2 n / beta) (about one kernel
    area per sample, so kernels overlap and modes merge), the grid one equiangular face
    over the cap: the modes lie in the samples' spherical hull (a critical point with
    <grad f, x> > 0 is a positive combination of the x_j), so it sees them all. Same
    count; every mode within two grid cells of a grid maximum."""
    rng = np.random.default_rng(int(beta) + 1)
    width = 1 / math.sqrt(beta)
    step = width / 12
    if beta <= 64:
        n = 120
        x = rng.standard_normal((n, 3))
        half = math.pi / 4 + 2 * step
        faces = [s * np.eye(3)[i] for i in range(3) for s in (1, -1)]
    else:
        n = 60
        r = math.sqrt(2 * n / beta)
        centre = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
        # uniform in the cap: cos(angle) uniform in [cos r, 1], azimuth uniform
        cos = rng.uniform(math.cos(r), 1.0, n)
        phi = rng.uniform(0, 2 * np.pi, n)
        basis = np.linalg.svd(np.eye(3) - np.outer(centre, centre))[0][:, :2]
        sin = np.sqrt(1 - cos**2)
        x = cos[:, None] * centre + sin[:, None] * (np.cos(phi)[:, None] * basis[:, 0]
                                                     + np.sin(phi)[:, None] * basis[:, 1])
        half = r + 4 * step
        faces = [centre]
    x /= np.linalg.norm(x, axis=1)[:, None]
    cells = int(2 * half / step)
    modes = kde_modes(x, beta)
    grid = np.concatenate([_face_maxima(x, beta, c, half, cells) for c in faces])
    kept = []  # the cubed sphere's faces overlap: one maximum per place
    for p in grid:
        if all(np.linalg.norm(p - q) > 2 * step for q in kept):
            kept.append(p)
    grid = np.array(kept)
    assert len(modes) == len(grid) and 1 < len(modes) < n, (len(modes), len(grid))
    dist = np.linalg.norm(modes[:, None] - grid[None], axis=-1).min(axis=1)
    assert np.all(dist <= 2 * step)


def test_closed_forms():
    """One sample: its own point. Two samples at angle 2 a on S^1: one mode (at the
    midpoint) while f''(mid) < 0, i.e. beta cos(a)... exactly: f'' at the midpoint is
    2 beta (beta sin^2 a - cos a) e^{beta cos a}, so two modes iff beta sin^2 a > cos a.
    On S^2 the same pair (on a great circle) gives the same count."""
    assert np.allclose(kde_modes(np.array([[0.0, 0.0, 1.0]]), 5.0), [[0, 0, 1]])
    beta = 10.0
    a_c = math.acos((-1 + math.sqrt(1 + 4 * beta**2)) / (2 * beta))  # beta sin^2 = cos
    for a, count in ((0.9 * a_c, 1), (1.1 * a_c, 2)):
        theta = np.array([-a, a]) + 0.4
        assert len(kde_modes(theta, beta)) == count
        x = np.c_[np.cos(theta), np.sin(theta), [0.0, 0.0]] @ np.linalg.qr(
            np.random.default_rng(1).standard_normal((3, 3)))[0]
        assert len(kde_modes(x, beta)) == count
    one = kde_modes(np.array([-0.9 * a_c, 0.9 * a_c]) + 0.4, beta)
    assert np.allclose(one, [[math.cos(0.4), math.sin(0.4)]], atol=1e-12)


def test_bad_input():
    with pytest.raises(ValueError, match="beta"):
        kde_modes(np.array([0.0, 1.0]), 0.0)
    with pytest.raises(ValueError, match="shape"):
        kde_modes(np.zeros((0, 3)), 4.0)
    with pytest.raises(ValueError, match="zero vector"):
        kde_modes(np.zeros((2, 3)), 4.0)
