"""The Gaussian mean field against closed forms: d = 1 (and diagonal weights in d = 2,
where the coordinates decouple) has sigma = sigma0 / (1 - 2 v a sigma0 t) and alpha =
alpha0 e^{v t} (1 - 2 v a sigma0 t)^{-1/2}; A = K^T Q = 0 leaves Sigma fixed and moves
the mean by e^{t V}; a blow-up is refused with its time 1 / (2 v a sigma0)."""
import numpy as np
import pytest
from scipy.linalg import expm

from meanfield.model.gaussian import gaussian_mean_field


def closed_form_1d(alpha0, sigma0, q, k, v, t):
    a = k * q
    g = 1.0 - 2.0 * v * a * sigma0 * t
    return alpha0 * np.exp(v * t) / np.sqrt(g), sigma0 / g


@pytest.mark.parametrize("q, k, v", [(1.0, 1.0, 1.0), (0.7, -0.5, 1.3), (1.2, 0.8, -0.6)])
def test_one_dimension_matches_the_closed_form(q, k, v):
    t = np.linspace(0.0, 0.8, 9)
    sol = gaussian_mean_field([0.4], [[0.3]], t, query=[[q]], key=[[k]], value=[[v]])
    alpha, sigma = closed_form_1d(0.4, 0.3, q, k, v, t)
    np.testing.assert_allclose(sol.mean[:, 0], alpha, rtol=1e-9)
    np.testing.assert_allclose(sol.covariance[:, 0, 0], sigma, rtol=1e-9)


def test_diagonal_weights_decouple_into_one_dimensional_closed_forms():
    q, k, v = np.diag([1.0, 0.5]), np.diag([0.8, -1.0]), np.diag([-0.4, 1.1])
    alpha0, sigma0 = np.array([1.0, -0.5]), np.diag([0.2, 0.6])
    t = np.linspace(0.0, 1.0, 6)
    sol = gaussian_mean_field(alpha0, sigma0, t, query=q, key=k, value=v)
    for i in range(2):
        alpha, sigma = closed_form_1d(alpha0[i], sigma0[i, i], q[i, i], k[i, i], v[i, i], t)
        np.testing.assert_allclose(sol.mean[:, i], alpha, rtol=1e-9)
        np.testing.assert_allclose(sol.covariance[:, i, i], sigma, rtol=1e-9)
    np.testing.assert_allclose(sol.covariance[:, 0, 1], 0.0, atol=1e-14)


def test_no_interaction_moves_the_mean_by_the_value_matrix_alone():
    rng = np.random.default_rng(1)
    v = rng.normal(size=(3, 3))
    b = rng.normal(size=(3, 3))
    sigma0 = b @ b.T
    alpha0 = rng.normal(size=3)
    t = np.array([0.0, 0.5, 1.0])
    sol = gaussian_mean_field(alpha0, sigma0, t, query=np.zeros((3, 3)), value=v)
    for j, tj in enumerate(t):
        np.testing.assert_allclose(sol.mean[j], expm(tj * v) @ alpha0, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(sol.covariance[j], sigma0, rtol=1e-12)


def test_a_blow_up_is_refused_with_its_time():
    # v a sigma0 = 0.3: sigma blows up at t = 1 / 0.6
    with pytest.raises(ValueError, match=r"blows up at t = 1\.666"):
        gaussian_mean_field([0.0], [[0.3]], [0.0, 2.0])


@pytest.mark.parametrize("kwargs, match", [
    (dict(mean=[0.0, 1.0], covariance=[[1.0]]), "covariance must be a finite 2 x 2"),
    (dict(mean=[0.0], covariance=[[-1.0]]), "positive semi-definite"),
    (dict(mean=[0.0, 0.0], covariance=[[1.0, 0.5], [0.0, 1.0]]), "symmetric"),
    (dict(mean=[np.nan], covariance=[[1.0]]), "finite vector"),
])
def test_bad_input_is_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gaussian_mean_field(times=[0.0, 1.0], **kwargs)


def test_times_must_increase():
    with pytest.raises(ValueError, match="increasing"):
        gaussian_mean_field([0.0], [[1.0]], [1.0, 0.5], query=[[0.0]])


def attention_mean_by_quadrature(x, alpha, sigma, q, k, nodes=40):
    """E[y e^{<Q x, K y>}] / E[e^{<Q x, K y>}] for y ~ N(alpha, sigma), by tensor
    Gauss-Hermite quadrature (independent of the tilted-Gaussian formula)."""
    z, w = np.polynomial.hermite_e.hermegauss(nodes)  # weight e^{-z^2/2}
    zz = np.stack(np.meshgrid(z, z, indexing="ij"), -1).reshape(-1, 2)
    ww = np.outer(w, w).ravel()
    y = alpha + zz @ np.linalg.cholesky(sigma).T
    logit = (y @ k.T) @ (q @ x)
    p = ww * np.exp(logit - logit.max())
    return (p[:, None] * y).sum(0) / p.sum()


def test_the_initial_velocity_of_mean_and_covariance_is_that_of_the_attention_field():
    # general (non-symmetric) Q, K, V in d = 2: the field v(x) = V E_P[y] evaluated by
    # quadrature; its mean moves at v(alpha) and its covariance at J Sigma + Sigma J^T
    rng = np.random.default_rng(7)
    q, k, v = (rng.normal(size=(2, 2)) * 0.6 for _ in range(3))
    alpha0 = np.array([0.3, -0.2])
    b = rng.normal(size=(2, 2)) * 0.5
    sigma0 = b @ b.T + 0.1 * np.eye(2)

    def field(x):
        return v @ attention_mean_by_quadrature(x, alpha0, sigma0, q, k)

    eps = 1e-5
    jac = np.column_stack([(field(alpha0 + eps * e) - field(alpha0 - eps * e)) / (2 * eps)
                           for e in np.eye(2)])
    h = 1e-5
    sol = gaussian_mean_field(alpha0, sigma0, [0.0, h], query=q, key=k, value=v, rtol=1e-13)
    np.testing.assert_allclose((sol.mean[1] - sol.mean[0]) / h, field(alpha0),
                               rtol=1e-3, atol=1e-6)
    np.testing.assert_allclose((sol.covariance[1] - sol.covariance[0]) / h,
                               jac @ sigma0 + sigma0 @ jac.T, rtol=1e-3, atol=1e-6)
