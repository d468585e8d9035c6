"""Pseudo-arclength continuation against analytic branches, folds and bifurcations."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar

from solvers.nonlinear import continuation
from solvers.nonlinear.dense import DenseJacobian, chord_newton

continue_branch, switch_branch = continuation.continue_branch, continuation.switch_branch


@pytest.fixture(autouse=True, params=["krylov", "dense"])
def linear_solver(request, monkeypatch):
    """Every test runs with both correctors (Newton-Krylov and the dense chord method);
    a test that names ``linear_solver`` itself keeps its own."""
    for name in ("continue_branch", "switch_branch"):
        monkeypatch.setitem(globals(), name, partial(getattr(continuation, name),
                                                     linear_solver=request.param))
    return request.param


def pitchfork(x, lam):
    """x' = lam x - x^3: trivial branch x = 0 (eigenvalue lam), x = +-sqrt(lam)."""
    return lam * x - x ** 3


def pitchfork_eigenvalues(x, lam):
    return np.array([lam - 3 * x[0] ** 2])


def test_simple_fold_with_finite_differences():
    """x^2 + lam = 0: a fold at (x, lam) = (0, 0); followed through it from x = -1 to
    x = +1 with finite-difference derivatives, landing on lam = -1 exactly."""
    br = continue_branch(lambda x, lam: x ** 2 + lam, np.array([-1.0]), -1.0, ds=0.1,
                         lam_bounds=(-1.0, 1.0), tol=1e-12)
    assert br.status == "completed", br.message
    assert br.lam[-1] == -1.0 and abs(br.x[-1, 0] - 1.0) < 1e-12
    assert np.max(np.abs(br.x[:, 0] ** 2 + br.lam)) < 1e-12
    folds = [p for p in br.special if p.kind == "fold"]
    assert len(folds) == 1 and folds[0].located
    assert abs(folds[0].lam) < 1e-12 and abs(folds[0].x[0]) < 1e-6
    assert br.lam[folds[0].index] <= 0 and br.x[folds[0].index, 0] < 0 < br.x[
        folds[0].index + 1, 0]
    assert br.stable is None and br.eigenvalues == []


N = 40
H = 1.0 / (N + 1)


def bratu(u, lam):
    """u'' + lam e^u = 0 on (0, 1), u(0) = u(1) = 0, second-order differences."""
    up = np.concatenate([[0.0], u, [0.0]])
    return (up[2:] - 2 * up[1:-1] + up[:-2]) / H ** 2 + lam * np.exp(u)


def bratu_jvp(u, lam, v):
    vp = np.concatenate([[0.0], v, [0.0]])
    return (vp[2:] - 2 * vp[1:-1] + vp[:-2]) / H ** 2 + lam * np.exp(u) * v


def bratu_eigenvalues(u, lam):
    jac = (np.diag(np.full(N, -2.0)) + np.diag(np.ones(N - 1), 1)
           + np.diag(np.ones(N - 1), -1)) / H ** 2 + np.diag(lam * np.exp(u))
    return np.linalg.eigvalsh(jac)[::-1][:4]


def discrete_bratu_fold() -> float:
    """The fold of the same discrete problem by an independent 1-variable reduction:
    shooting u_0 = 0, u_1 = a through the difference equation gives u_{N+1}(a, lam);
    lam(a) solves u_{N+1} = 0 and the fold is the maximum of lam(a)."""
    def shoot(a, lam):
        u0, u1 = 0.0, a
        for _ in range(N):
            u0, u1 = u1, 2 * u1 - u0 - H ** 2 * lam * np.exp(u1)
        return u1

    def lam_of(a):
        return brentq(lambda lam: shoot(a, lam), 1e-12, 20.0, xtol=1e-15, rtol=1e-15)

    res = minimize_scalar(lambda a: -lam_of(a), bounds=(0.01, 0.5), method="bounded",
                          options={"xatol": 1e-10})
    return -res.fun


def test_bratu_fold_and_stability():
    br = continue_branch(bratu, np.zeros(N), 0.5, jvp_x=bratu_jvp,
                         dF_dlam=lambda u, lam: np.exp(u), ds=0.2, ds_max=1.0,
                         lam_bounds=(0.5, 4.0), eigenvalues=bratu_eigenvalues, tol=1e-9)
    assert br.status == "completed", br.message
    assert br.lam[0] == 0.5 and br.lam[-1] == 0.5
    assert np.max([np.linalg.norm(bratu(u, lam)) for u, lam in zip(br.x, br.lam)]) < 1e-9
    assert len(br.special) == 1          # the eigenvalue crossing is the fold itself
    fold = br.special[0]
    assert fold.kind == "fold" and fold.multiplicity == 1
    reference = discrete_bratu_fold()    # 3.51274301512...
    assert abs(fold.lam - reference) < 1e-9, (fold.lam, reference)
    # the continuous fold 3.513830719 is O(h^2) away
    assert abs(fold.lam - 3.513830719) < 2e-3
    assert abs(bratu_eigenvalues(fold.x, fold.lam)[0]) < 1e-4 * 4 / H ** 2
    # lower branch stable, upper branch unstable with one positive eigenvalue
    k = fold.index
    assert br.stable[: k + 1].all() and not br.stable[k + 1:].any()
    assert all(np.sum(e > 0) == 1 for e in br.eigenvalues[k + 1:])
    assert br.x[-1].max() > 2.0 > br.x[0].max()


def test_pitchfork_on_the_trivial_branch():
    br = continue_branch(pitchfork, np.zeros(1), -1.0, ds=0.1, lam_bounds=(-1.0, 1.0),
                         eigenvalues=pitchfork_eigenvalues)
    assert br.status == "completed", br.message
    assert br.lam[0] == -1.0 and br.lam[-1] == 1.0
    assert np.all(br.x == 0)
    assert len(br.special) == 1
    bif = br.special[0]
    assert bif.kind == "bifurcation" and bif.multiplicity == 1 and bif.located
    assert abs(bif.lam) < 1e-10
    assert br.lam[bif.index] < 0 < br.lam[bif.index + 1]
    np.testing.assert_array_equal(br.stable, br.lam <= 0)


def test_o2_symmetric_bifurcation_has_multiplicity_two():
    """z' = lam z - |z|^2 z in R^2: at z = 0 the eigenvalue lam is double."""
    def f(z, lam):
        return lam * z - (z @ z) * z

    def eigenvalues(z, lam):
        return np.linalg.eigvals((lam - z @ z) * np.eye(2) - 2 * np.outer(z, z))

    br = continue_branch(f, np.zeros(2), -0.7, ds=0.1, lam_bounds=(-1.0, 1.0),
                         eigenvalues=eigenvalues)
    assert br.status == "completed", br.message
    assert len(br.special) == 1
    bif = br.special[0]
    assert bif.kind == "bifurcation" and bif.multiplicity == 2
    assert abs(bif.lam) < 1e-10


def test_switch_onto_the_square_root_branch():
    jvp_x = lambda x, lam, v: (lam - 3 * x ** 2) * v
    dF_dlam = lambda x, lam: x
    br = switch_branch(pitchfork, np.zeros(1), 0.0, np.array([1.0]), h=1e-2, ds=0.05,
                       lam_bounds=(-1.0, 1.0), eigenvalues=pitchfork_eigenvalues,
                       jvp_x=jvp_x, dF_dlam=dF_dlam, tol=1e-12)
    assert br.status == "completed", br.message
    assert abs(br.lam[0] - 1e-4) < 1e-14 and abs(br.x[0, 0] - 1e-2) < 1e-14
    assert br.lam[-1] == 1.0
    assert np.all(np.diff(br.lam) > 0)
    assert np.max(np.abs(br.x[:, 0] - np.sqrt(br.lam))) < 1e-10
    assert br.stable.all() and br.special == []
    # the other half, with finite-difference derivatives
    br = switch_branch(pitchfork, np.zeros(1), 0.0, np.array([-1.0]), h=1e-2, ds=0.05,
                       lam_bounds=(-1.0, 0.5), tol=1e-12)
    assert br.status == "completed", br.message
    assert br.lam[-1] == 0.5
    assert np.max(np.abs(br.x[:, 0] + np.sqrt(br.lam))) < 1e-10


def test_newton_failure_keeps_the_branch():
    """A residual that turns NaN beyond lam = 0.5: the run fails there, keeps the points
    before it and says where."""
    def f(x, lam):
        return x - lam if lam <= 0.5 else np.full(1, np.nan)

    br = continue_branch(f, np.zeros(1), 0.0, ds=0.1, ds_min=1e-4,
                         lam_bounds=(0.0, 2.0))
    assert br.status == "failed"
    assert len(br.lam) >= 3 and np.all(br.lam <= 0.5)
    assert br.lam[-1] > 0.45
    np.testing.assert_allclose(br.x[:, 0], br.lam, atol=1e-12)
    assert "lam = 0.4" in br.message and "not finite" in br.message


def test_first_point_failure_and_stopping():
    def f(x, lam):
        return x ** 2 + 1.0 + 0 * lam

    br = continue_branch(f, np.ones(1), 0.0)
    assert br.status == "failed" and br.lam.size == 0 and "first point" in br.message

    seen = []
    br = continue_branch(pitchfork, np.zeros(1), -1.0, ds=0.1,
                         callback=lambda i, x, lam: seen.append(i) or i == 3)
    assert br.status == "stopped" and len(br.lam) == 4 and seen == [0, 1, 2, 3]
    br = continue_branch(pitchfork, np.zeros(1), -1.0, ds=0.1, max_points=5)
    assert br.status == "stopped" and len(br.lam) == 5 and "max_points" in br.message
    br = continue_branch(pitchfork, np.zeros(1), 1.0, ds=0.1, direction=-1,
                         lam_bounds=(0.5, 1.0))
    assert br.status == "completed" and br.lam[-1] == 0.5 and np.all(np.diff(br.lam) < 0)


@pytest.mark.parametrize("kwargs", [{"x0": np.array([np.nan])}, {"lam0": 2.0},
                                    {"ds": 0.0}, {"ds": 1.0, "ds_max": 0.5},
                                    {"direction": 0}, {"max_points": 0}, {"tol": 0.0},
                                    {"linear_solver": "lu"}])
def test_bad_arguments_raise(kwargs):
    args = {"x0": np.zeros(1), "lam0": 0.0, "lam_bounds": (-1.0, 1.0)}
    args.update(kwargs)
    x0, lam0 = args.pop("x0"), args.pop("lam0")
    with pytest.raises(ValueError):
        continue_branch(pitchfork, x0, lam0, **args)


def test_preconditioner_gives_the_same_fold_with_fewer_products():
    """Right preconditioning by the inverse difference Laplacian (the stiff part):
    the same Bratu fold, far fewer Jacobian-vector products."""
    from scipy.linalg import solve_banded

    bands = np.zeros((3, N))
    bands[0, 1:], bands[1], bands[2, :-1] = 1 / H ** 2, -2 / H ** 2, 1 / H ** 2
    counts = []

    def run(precondition):
        calls = [0]

        def jvp(u, lam, v):
            calls[0] += 1
            return bratu_jvp(u, lam, v)

        br = continue_branch(bratu, np.zeros(N), 0.5, jvp_x=jvp,
                             dF_dlam=lambda u, lam: np.exp(u), ds=0.2, ds_max=1.0,
                             lam_bounds=(0.5, 4.0), tol=1e-9, precondition=precondition,
                             linear_solver="krylov")
        counts.append(calls[0])
        return br

    plain = run(None)
    pre = run(lambda r: solve_banded((1, 1), bands, r))
    assert plain.status == pre.status == "completed"
    folds = [[p.lam for p in br.special if p.kind == "fold"] for br in (plain, pre)]
    assert len(folds[0]) == len(folds[1]) == 1
    assert abs(folds[0][0] - folds[1][0]) < 1e-10
    assert 3 * counts[1] < counts[0], counts


def test_hopf_pair_counts_two():
    """x' = lam x - y - x r^2, y' = x + lam y - y r^2: at the origin the eigenvalues
    are lam +- i, a complex pair crossing at lam = 0 (multiplicity 2)."""
    def f(z, lam):
        r2 = z @ z
        return np.array([lam * z[0] - z[1] - z[0] * r2, z[0] + lam * z[1] - z[1] * r2])

    def eigenvalues(z, lam):
        return np.linalg.eigvals(np.array([[lam, -1.0], [1.0, lam]]) - (z @ z) * np.eye(2)
                                 - 2 * np.outer(z, z))

    br = continue_branch(f, np.zeros(2), 0.35, ds=0.1, direction=-1,
                         lam_bounds=(-0.5, 0.5), eigenvalues=eigenvalues)
    assert br.status == "completed", br.message
    assert [(p.kind, p.multiplicity) for p in br.special] == [("bifurcation", 2)]
    assert abs(br.special[0].lam) < 1e-10
    assert np.allclose(np.sort(br.special[0].eigenvalues.imag), [-1.0, 1.0])
    np.testing.assert_array_equal(br.stable, br.lam <= 0)


def test_dense_and_krylov_follow_the_same_bratu_branch_and_fold():
    """The chord corrector (dense LU reused along the branch) against Newton-Krylov:
    the same points (the same arclength steps) and the same fold to 1e-9. With a
    ``jacobian`` (one call) it is formed about once a point, for the exact tangent;
    without, from products, it is refined first, at less cost than forming it at every
    point."""
    formed, products = [], [0]

    def jacobian(u, lam):
        formed.append(lam)
        return (np.diag(np.full(N, -2 / H ** 2)) + np.diag(np.full(N - 1, 1 / H ** 2), 1)
                + np.diag(np.full(N - 1, 1 / H ** 2), -1) + lam * np.diag(np.exp(u)))

    def counted_jvp(u, lam, v):
        products[0] += 1
        return bratu_jvp(u, lam, v)

    kw = {"dF_dlam": lambda u, lam: np.exp(u), "ds": 0.2, "ds_min": 0.2, "ds_max": 0.2,
          "lam_bounds": (0.5, 4.0), "tol": 1e-11}
    krylov = continuation.continue_branch(bratu, np.zeros(N), 0.5, jvp_x=bratu_jvp,
                                          linear_solver="krylov", **kw)
    given = continuation.continue_branch(bratu, np.zeros(N), 0.5, jvp_x=bratu_jvp,
                                         jacobian=jacobian, **kw)
    columns = continuation.continue_branch(bratu, np.zeros(N), 0.5, jvp_x=counted_jvp,
                                           linear_solver="dense", **kw)
    for dense in (given, columns):
        assert krylov.status == dense.status == "completed"
        assert krylov.lam.size == dense.lam.size
        np.testing.assert_allclose(dense.lam, krylov.lam, atol=1e-9)
        np.testing.assert_allclose(dense.x, krylov.x, atol=1e-9)
        folds = [[p.lam for p in br.special if p.kind == "fold"] for br in (krylov, dense)]
        assert len(folds[1]) == 1 and abs(folds[0][0] - folds[1][0]) < 1e-9
    points = given.lam.size
    assert points <= len(formed) <= 1.5 * points, (len(formed), points)
    # each formation costs N + 1 products: refining is cheaper than forming it at every
    # point (measured 0.54 formations a point)
    assert products[0] < 0.75 * points * (N + 1), (products[0], points)


def test_chord_newton_refreshes_a_stale_jacobian_and_converges():
    """x^3 - a = 0 from far: the Jacobian of the start stops contracting, is formed
    again at the iterates (Newton), and the root is reached; a problem without a root
    fails with a message, never an exception."""
    a = 5.0
    jac = DenseJacobian(lambda y: np.array([[3 * y[0] ** 2, 0.0]]))
    row = np.array([0.0, 1.0])

    def g(y):
        return np.array([y[0] ** 3 - a, y[1] - 0.0])

    out = chord_newton(g, np.array([10.0, 0.0]), jac, row, tol=1e-12, max_iter=60)
    assert out.converged, out.message
    assert abs(out.x[0] - a ** (1 / 3)) < 1e-12
    assert out.linear_iterations >= 2  # refreshed on the way
    jac = DenseJacobian(lambda y: np.array([[2 * y[0], 0.0]]))
    out = chord_newton(lambda y: np.array([y[0] ** 2 + 1.0, y[1]]), np.array([1.0, 0.0]),
                       jac, row, tol=1e-12, max_iter=30)
    assert not out.converged and out.message


def test_blas_runs_on_one_thread_during_a_continuation():
    """The dense algebra (and the user's eigenvalues) run with BLAS on one thread; the
    setting is restored after."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    np.linalg.eigvals(np.eye(3))  # (BLAS loaded, so threadpoolctl sees it)
    before = [i["num_threads"] for i in threadpoolctl.threadpool_info()
              if i["user_api"] == "blas"]
    seen = []

    def eigenvalues(x, lam):
        seen.extend(i["num_threads"] for i in threadpoolctl.threadpool_info()
                    if i["user_api"] == "blas")
        return pitchfork_eigenvalues(x, lam)

    continue_branch(pitchfork, np.zeros(1), -1.0, ds=0.1, max_points=3,
                    eigenvalues=eigenvalues)
    assert seen and set(seen) == {1}
    after = [i["num_threads"] for i in threadpoolctl.threadpool_info()
             if i["user_api"] == "blas"]
    assert after == before
