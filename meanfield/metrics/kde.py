"""The modes of the kernel density estimate ``e^{beta <., .>} * mu`` on S^1 and S^{d-1}.

[Rig25, §5.3]: SA is the blurring mean-shift of the kernel ``e^{-beta |x - y|^2 / 2} =
e^{-beta} e^{beta <x, y>}`` on the sphere, and the tokens are expected to gather into as
many clusters as the KDE ``f(x) = sum_j e^{beta <x, x_j>}`` of the initial tokens has
local maxima (of order ``sqrt(beta) log beta`` for Gaussian samples on the line, [GRS25]).
``kde_modes(points, beta)`` finds those maxima.

**S^1 (exact).** With ``x_j = e^{i theta_j}``, ``f(theta) = sum_j e^{beta cos(theta -
theta_j)}`` and its derivatives are sums of a few exponentials per term, so the local
maxima are the roots of ``f'`` where it falls through zero: ``f'`` is evaluated on a grid
of spacing ``h <= GRID_WIDTHS / sqrt(beta)`` (a tenth of the kernel's width ``1/sqrt(beta)``,
and at most ``2 pi / 64``); every interval where ``f'`` goes from ``> 0`` to ``<= 0``
holds a maximum, refined by safeguarded Newton (bisection when a Newton step leaves the
bracket) to ``|d theta| < 1e-13``. A pair of roots inside one interval (a maximum and a
minimum closer than ``h``) is found too: where ``f''`` changes sign in an interval
without a sign change of ``f'``, the extremum of ``f'`` there (the root of ``f''``) is
located and, if ``f'`` has the other sign at it, the interval is split there. Two roots
are missed only if ``f''`` has two roots in one interval of width ``h``, i.e. if ``f'''``
changes sign on a scale below a tenth of the kernel's width.

**S^{d-1} (mean-shift ascent).** From every sample, ``x <- normalize(sum_j
e^{beta <x, x_j>} x_j)``: since ``f`` is convex on R^d, ``f(y) >= f(x) + <grad f(x), y -
x>`` and ``y = grad f / |grad f|`` maximises ``<grad f(x), y>`` on the sphere, so every
step raises ``f`` (a fixed point is a critical point of ``f`` on the sphere). Trajectories
closer than ``1e-9`` are merged (their futures agree); the survivors finish with
Riemannian Newton steps (gradient ``P grad f``, Hessian ``P grad^2 f P - <x, grad f> P``
in a tangent basis), kept only when they raise ``f``. The limits are deduplicated (chord
below ``1e-6 / sqrt(beta)``) and those whose tangent Hessian is negative definite are the
modes (a sample on the stable manifold of a saddle would otherwise report it). A mode
whose basin holds no sample (a "ghost" mode, possible for d >= 2) is not found: the
count is that of the maxima the samples flow to, the mean-shift clustering's count.
"""
from __future__ import annotations

import math

import numpy as np

GRID_WIDTHS = 0.1  # grid spacing on S^1 in units of the kernel width 1/sqrt(beta)
CHUNK = 2**22  # entries of one (grid x samples) block


def _unit_rows(points) -> np.ndarray:
    x = np.asarray(points, dtype=float)
    if x.ndim == 1:  # angles on S^1
        x = np.column_stack([np.cos(x), np.sin(x)])
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 2 or not np.all(np.isfinite(x)):
        raise ValueError(f"points of shape {x.shape}: give (n, d) unit vectors, n >= 1, "
                         "d >= 2 (or n angles on S^1)")
    norm = np.linalg.norm(x, axis=1)
    if np.any(norm == 0):
        raise ValueError("points include the zero vector: give unit vectors")
    return x / norm[:, None]


def kde_modes(points, beta: float) -> np.ndarray:
    """The local maxima of ``f(x) = sum_j e^{beta <x, x_j>}`` on the sphere (module
    docstring): exact on S^1, by mean-shift ascent from every sample on S^{d-1}, d >= 3.

    Args:
        points: ``(n, d)`` unit vectors (normalised here) or ``n`` angles on S^1.
        beta: the inverse temperature, > 0.

    Returns:
        ``(m, d)`` unit vectors, one per mode (on S^1 in increasing angle in [-pi, pi)).

    Raises:
        ValueError: no points, not finite, or ``beta <= 0``.
    """
    x = _unit_rows(points)
    if not (math.isfinite(beta) and beta > 0):
        raise ValueError(f"beta = {beta!r}: the KDE needs 0 < beta < inf")
    if x.shape[1] == 2:
        theta = circle_kde_modes(np.arctan2(x[:, 1], x[:, 0]), beta)
        return np.column_stack([np.cos(theta), np.sin(theta)])
    return sphere_kde_modes(x, beta)


# --- S^1 ------------------------------------------------------------------------------

def _circle_derivatives(theta: np.ndarray, samples: np.ndarray, beta: float,
                        orders=(1, 2)) -> list[np.ndarray]:
    """``f^(k)(theta) e^{-beta}`` for k in ``orders`` (1: f', 2: f'') at each angle."""
    out = [np.empty(theta.size) for _ in orders]
    step = max(1, CHUNK // max(samples.size, 1))
    for a in range(0, theta.size, step):
        u = theta[a:a + step, None] - samples[None, :]
        c, s = np.cos(u), np.sin(u)
        w = np.exp(beta * (c - 1.0))
        for o, k in zip(out, orders):
            o[a:a + step] = (-beta * (s * w).sum(axis=1) if k == 1 else
                             beta * ((beta * s * s - c) * w).sum(axis=1))
    return out


def _bracketed_roots(lo, hi, samples, beta, order: int, iterations: int = 80):
    """Roots of ``f^(order)`` in the brackets ``[lo, hi]`` (sign change at the ends),
    vectorised: Newton on ``f^(order)`` with its derivative, bisection where Newton
    leaves the bracket."""
    lo, hi = lo.astype(float).copy(), hi.astype(float).copy()
    if lo.size == 0:
        return lo
    g_lo = _circle_derivatives(lo, samples, beta, (order,))[0]
    x = 0.5 * (lo + hi)
    for _ in range(iterations):
        g, dg = (_circle_derivatives(x, samples, beta, (order, order + 1))
                 if order == 1 else _third(x, samples, beta))
        left = np.sign(g) == np.sign(g_lo)  # the root lies right of x
        lo, hi = np.where(left, x, lo), np.where(left, hi, x)
        g_lo = np.where(left, g, g_lo)
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = x - g / dg
        inside = np.isfinite(newton) & (newton > lo) & (newton < hi)
        new = np.where(inside, newton, 0.5 * (lo + hi))
        done = np.abs(new - x) < 1e-13
        x = new
        if np.all(done | (hi - lo < 1e-13)):
            break
    return x


def _third(theta, samples, beta):
    """``(f'', f''')`` (times e^{-beta})."""
    f2 = _circle_derivatives(theta, samples, beta, (2,))[0]
    u = theta[:, None] - samples[None, :]
    c, s = np.cos(u), np.sin(u)
    w = np.exp(beta * (c - 1.0))
    # d/dtheta of (beta^2 s^2 - beta c) w = (2 beta^2 s c + beta s) w - beta s (..) w
    f3 = (beta * s * (2 * beta * c + 1.0 - beta * beta * s * s + beta * c) * w).sum(axis=1)
    return f2, f3


def circle_kde_modes(theta: np.ndarray, beta: float) -> np.ndarray:
    """The angles of the local maxima of ``sum_j e^{beta cos(theta - theta_j)}`` (module
    docstring), sorted in ``[-pi, pi)``."""
    samples = np.mod(np.asarray(theta, dtype=float) + np.pi, 2 * np.pi) - np.pi
    if np.ptp(samples) == 0:
        return samples[:1].copy()
    m = max(64, int(math.ceil(2 * np.pi * math.sqrt(beta) / GRID_WIDTHS)))
    grid = -np.pi + 2 * np.pi * np.arange(m + 1) / m  # the last point closes the circle
    g, g2 = _circle_derivatives(grid, samples, beta)
    a, b = grid[:-1], grid[1:]
    ga, gb, g2a, g2b = g[:-1], g[1:], g2[:-1], g2[1:]
    # intervals whose f' keeps its sign but whose f'' changes it: split at f'''s extremum
    hidden = (np.sign(ga) == np.sign(gb)) & (np.sign(g2a) != np.sign(g2b))
    lo_parts, hi_parts = [a[~hidden]], [b[~hidden]]
    if hidden.any():
        mid = _bracketed_roots(a[hidden], b[hidden], samples, beta, order=2)
        lo_parts += [a[hidden], mid]  # the sign test below evaluates f' at the ends
        hi_parts += [mid, b[hidden]]
    lo, hi = np.concatenate(lo_parts), np.concatenate(hi_parts)
    glo, ghi = _circle_derivatives(np.concatenate([lo, hi]), samples, beta, (1,))[0] \
        .reshape(2, -1)
    falls = (glo > 0) & (ghi <= 0)
    roots = _bracketed_roots(lo[falls], hi[falls], samples, beta, order=1)
    roots = np.sort(np.mod(roots + np.pi, 2 * np.pi) - np.pi)
    # a maximum at the seam (theta = -pi = pi) is bracketed once: the last interval
    # ends where the first starts, and (glo > 0, ghi <= 0) holds in one of them only
    return roots


# --- S^{d-1} --------------------------------------------------------------------------

def _ascent_step(y: np.ndarray, x: np.ndarray, beta: float) -> np.ndarray:
    g = y @ x.T
    w = np.exp(beta * (g - g.max(axis=1, keepdims=True)))  # scale-free: normalised next
    z = w @ x
    return z / np.linalg.norm(z, axis=1)[:, None]


def _tangent_hessian(y: np.ndarray, x: np.ndarray, beta: float):
    """Per point: a tangent basis ``B`` (d, d-1), the gradient and the Hessian of ``f
    e^{-beta}`` in it."""
    d = y.shape[1]
    w = np.exp(beta * (y @ x.T - 1.0))  # (m, n)
    grad = beta * (w @ x)  # Euclidean gradient
    radial = np.einsum("md,md->m", grad, y)
    out = []
    for i in range(y.shape[0]):
        basis = np.linalg.svd(np.eye(d) - np.outer(y[i], y[i]))[0][:, :d - 1]
        xb = x @ basis
        h = beta * beta * (xb * w[i][:, None]).T @ xb - radial[i] * np.eye(d - 1)
        out.append((basis, basis.T @ grad[i], h))
    return out


def sphere_kde_modes(x: np.ndarray, beta: float, iterations: int = 5000) -> np.ndarray:
    """The modes of ``sum_j e^{beta <y, x_j>}`` reached by mean-shift ascent from every
    sample (module docstring), in the order of their first sample."""
    y = x.copy()
    for it in range(iterations):
        new = _ascent_step(y, x, beta)
        change = np.max(np.linalg.norm(new - y, axis=1))
        y = new
        if it % 10 == 9 or change < 1e-6:
            y = _merge(y, 1e-9)
        if change < 1e-6:
            break
    for _ in range(20):  # Newton, kept where it raises f
        moved = False
        for i, (basis, g, h) in enumerate(_tangent_hessian(y, x, beta)):
            try:
                step = -np.linalg.solve(h, g)
            except np.linalg.LinAlgError:
                continue
            z = y[i] + basis @ step
            z /= np.linalg.norm(z)
            if _value(z, x, beta) >= _value(y[i], x, beta) and np.linalg.norm(z - y[i]) \
                    > 1e-15:
                moved |= np.linalg.norm(z - y[i]) > 1e-14
                y[i] = z
        if not moved:
            break
    y = _merge(y, 1e-6 / math.sqrt(beta))
    keep = [np.all(np.linalg.eigvalsh(h) < 0) for _, _, h in _tangent_hessian(y, x, beta)]
    return y[np.asarray(keep, bool)]


def _value(y: np.ndarray, x: np.ndarray, beta: float) -> float:
    return float(np.exp(beta * (x @ y - 1.0)).sum())


def _merge(y: np.ndarray, chord: float) -> np.ndarray:
    """One representative of each group of rows within ``chord`` of an earlier kept row."""
    kept: list[int] = []
    for i in range(y.shape[0]):
        if not kept or np.min(np.linalg.norm(y[kept] - y[i], axis=1)) >= chord:
            kept.append(i)
    return y[kept]
