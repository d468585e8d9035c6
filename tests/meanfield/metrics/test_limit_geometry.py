"""The limit geometry of Table 1 of the emergence-of-clusters paper.

Unit checks against sets whose hulls and eigen-coordinates are known by construction, then
the theorems on the rescaled flow (``rescaled_velocity`` integrated by DOP853):

- Theorem 3.1 (V = I, Q^T K positive definite): every token ends at a vertex of the convex
  hull of the final tokens, and the vertices are far fewer than n. The rate: once each
  token gives all its attention to the leader of its cluster (a token that attends to
  itself), ``dz_i/dt = z_lead - z_i`` up to doubly exponentially small terms, so the
  distance to the vertex falls like ``e^{-t}``.
- Theorem 4.1 (a good triple): the coordinate ``c_1`` along ``phi_1`` obeys
  ``dc_1(z_i)/dt = lambda_1 sum_j P_ij (c_1(z_j) - c_1(z_i))``, so once the attention is
  Boolean the spread about each of the (at most 3) values falls like ``e^{-lambda_1 t}``.
- Theorem C.5 (V = -I, Q^T K = I): the tokens x of the original flow go to the origin.
  For small x, ``sum_j P_ij x_j = m + S x_i + O(|x|^3)`` (m the mean, S = (1/n) sum x x^T,
  m -> 0 fast), so ``x_i' = -S x_i``, ``S' = -2 S^2``: ``S(t) = (S_0^{-1} + 2t)^{-1}``,
  ``2t S(t) -> I`` and ``max_i |x_i| ~ t^{-1/2}``.
"""
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.stats import ortho_group

from meanfield.metrics.limit_geometry import (
    groups, hull_vertices, hyperplane_values, leading_coordinates, leading_eigenvector,
    origin_distance, vertex_distance)
from meanfield.model.weighted_attention import Head, pure_velocity, rescaled_velocity


# --- hulls of known sets --------------------------------------------------------------

def test_hull_vertices_of_a_cube_with_inner_points_are_its_corners():
    rng = np.random.default_rng(0)
    corners = np.array([[i, j, k] for i in (0, 1) for j in (0, 1) for k in (0, 1)], float)
    inner = 0.05 + 0.9 * rng.random((30, 3))
    z = np.concatenate([inner[:10], corners, inner[10:]])
    np.testing.assert_array_equal(hull_vertices(z), np.arange(10, 18))
    dist = vertex_distance(z)
    brute = np.min(np.linalg.norm(z[:, None] - corners[None], axis=-1), axis=1)
    np.testing.assert_allclose(dist, brute, rtol=1e-15)


def test_flat_sets_have_their_hull_in_their_own_subspace():
    # d = 1: the smallest and the largest token
    x = np.array([[0.3], [-2.0], [5.0], [1.0]])
    np.testing.assert_array_equal(hull_vertices(x), [1, 2])
    # collinear tokens in R^3: the two ends
    t = np.array([0.2, -1.0, 3.0, 0.5])
    line = np.array([1.0, 2.0, 0.0]) + t[:, None] * np.array([0.3, -0.1, 0.7])
    np.testing.assert_array_equal(hull_vertices(line), [1, 2])
    # a square with an inner point on a tilted plane of R^3: the four corners
    rot = ortho_group.rvs(3, random_state=1)
    square = np.array([[0, 0, 1], [1, 0, 1], [0.5, 0.4, 1], [1, 1, 1], [0, 1, 1]], float)
    np.testing.assert_array_equal(hull_vertices(square @ rot.T), [0, 1, 3, 4])
    # one point repeated: one vertex, the first token
    np.testing.assert_array_equal(hull_vertices(np.ones((4, 2))), [0])


def test_a_tolerance_counts_each_unresolved_cluster_once():
    """Corners of a triangle, each a small cloud (spread 1e-7): exact hulls count many
    cloud points, a tolerance of 1e-5 one per corner."""
    rng = np.random.default_rng(2)
    corners = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    z = np.repeat(corners, 8, axis=0) + 1e-7 * rng.standard_normal((24, 2))
    assert hull_vertices(z).size > 3
    v = hull_vertices(z, tolerance=1e-5)
    np.testing.assert_array_equal(v, [0, 8, 16])  # each cloud's first token
    assert vertex_distance(z, v).max() < 1e-6
    np.testing.assert_array_equal(groups(z, 1e-5), np.repeat([0, 1, 2], 8))


def test_bad_geometry_input_is_refused():
    with pytest.raises(ValueError, match="shape"):
        hull_vertices(np.ones(3))
    with pytest.raises(ValueError, match="finite"):
        hull_vertices(np.array([[0.0, np.inf]]))
    with pytest.raises(ValueError, match="tolerance"):
        hull_vertices(np.eye(3), tolerance=-1.0)
    with pytest.raises(ValueError, match="token indices"):
        vertex_distance(np.eye(3), [3])


# --- eigen-coordinates of known tokens -----------------------------------------------

def test_leading_coordinates_are_the_coefficients_of_phi_1_in_the_eigenbasis():
    rng = np.random.default_rng(3)
    basis = rng.standard_normal((3, 3))  # columns: eigenvectors of a non-normal V
    v = basis @ np.diag([2.0, -1.5, 0.3]) @ np.linalg.inv(basis)
    coeff = rng.standard_normal((10, 3))
    z = coeff @ basis.T  # z_i = sum_k coeff_ik basis_k
    lam, phi, psi = leading_eigenvector(v)
    assert lam == pytest.approx(2.0, rel=1e-12)
    np.testing.assert_allclose(v @ phi, 2.0 * phi, atol=1e-12)
    norm = np.linalg.norm(basis[:, 0]) * np.sign(phi @ basis[:, 0])
    np.testing.assert_allclose(leading_coordinates(z, v), coeff[:, 0] * norm, rtol=1e-10)
    # symmetric V: the orthogonal projection on the unit phi_1
    q = ortho_group.rvs(3, random_state=4)
    s = q @ np.diag([1.0, 0.5, 0.2]) @ q.T
    _, phi, _ = leading_eigenvector(s)
    np.testing.assert_allclose(leading_coordinates(z, s), z @ phi, rtol=1e-12)
    values = hyperplane_values(np.outer([0.0, 1e-4, 2.0, 2.0 + 5e-4, 7.0], phi), s, 1e-3)
    np.testing.assert_allclose(values, [5e-5, 2.00025, 7.0], rtol=1e-12)


@pytest.mark.parametrize("v, why", [
    (np.eye(2), "simple"),                          # lambda_1 = lambda_2
    (np.array([[0.0, -1.0], [1.0, 0.0]]), "real"),  # +-i
    (np.diag([-2.0, 1.0]), "positive"),             # largest modulus negative
    (np.ones((2, 3)), "square"),
])
def test_value_matrices_without_a_good_leading_eigenvalue_are_refused(v, why):
    with pytest.raises(ValueError, match="eigenvalue|square"):
        hyperplane_values(np.zeros((3, 2)), v, 1e-3)


def test_origin_distance_is_the_largest_norm():
    z = np.array([[3.0, 4.0], [0.0, 1.0]])
    assert origin_distance(z) == 5.0
    np.testing.assert_array_equal(origin_distance(np.stack([z, z / 5])), [5.0, 1.0])


# --- the theorems on the flow ----------------------------------------------------------

def rescaled_run(head, z0, times):
    n, d = z0.shape
    sol = solve_ivp(lambda t, y: rescaled_velocity(y.reshape(n, d), t, head).ravel(),
                    (0.0, times[-1]), z0.ravel(), method="DOP853", rtol=1e-10,
                    atol=1e-13, t_eval=times)
    assert sol.status == 0, sol.message
    return sol.y.T.reshape(len(times), n, d)


def rate(times, values):
    """The slope of log(values) against t (least squares)."""
    return np.polyfit(times, np.log(values), 1)[0]


@pytest.mark.parametrize("d, seed", [(2, 0), (2, 1), (3, 0), (3, 1)])
def test_theorem_3_1_tokens_end_at_the_vertices_of_a_polytope(d, seed):
    """V = I, Q random, K = Q^{-T} A with A random positive definite (Q^T K = A), n = 30
    standard normal tokens, t = 16. Measured (seeds 0, 1): d = 2 2 and 3 vertices, d = 3
    2 and 3; the largest distance to a vertex 1.0e-6, 5.7e-7, 8.1e-7, 6.4e-7 (2e-3 at
    t = 8); rates fitted on t in [10, 16]: -1.000 each."""
    n = 30
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((d, d))
    a = m @ m.T / d + 0.1 * np.eye(d)
    q = rng.standard_normal((d, d))
    head = Head(q, np.linalg.solve(q.T, a), np.eye(d))
    assert np.all(np.linalg.eigvalsh(head.query.T @ head.key + head.key.T @ head.query) > 0)
    times = np.arange(0.0, 16.5, 1.0)
    z = rescaled_run(head, rng.standard_normal((n, d)), times)
    vertices = hull_vertices(z[-1], tolerance=1e-3)
    dist = vertex_distance(z[-1], vertices)
    assert dist.max() < 1e-3
    assert 2 <= vertices.size <= n // 5  # far fewer vertices than tokens
    # the vertices are the hull's: no token outside the hull of the vertex tokens
    assert np.all(np.isin(hull_vertices(z[-1][vertices]), np.arange(vertices.size)))
    # rate 1 (V = I) of the approach, measured on t in [10, 16]
    late = times >= 10
    gaps = [vertex_distance(zk, tolerance=1e-3).max() for zk in z[late]]
    assert rate(times[late], gaps) == pytest.approx(-1.0, abs=0.02)


@pytest.mark.slow
@pytest.mark.parametrize("d, seed", [(2, 0), (2, 1), (3, 0), (3, 1)])
def test_theorem_3_1_with_a_thousand_tokens(d, seed):
    """The same with n = 1000 tokens up to t = 20 (seeds 100, 101). Measured: d = 2 2 and
    2 vertices, d = 3 7 and 4; the largest distance to a vertex 1.9e-8, 9.4e-9, 4.7e-8,
    2.6e-8; rates on [12, 20] -1.0000; no token near the origin (smallest |z_i| 2.3 to
    2.9); 45 to 110 s each on a loaded 2-core machine."""
    n = 1000
    rng = np.random.default_rng(100 + seed)
    m = rng.standard_normal((d, d))
    a = m @ m.T / d + 0.1 * np.eye(d)
    q = rng.standard_normal((d, d))
    head = Head(q, np.linalg.solve(q.T, a), np.eye(d))
    times = np.arange(0.0, 20.5, 1.0)
    z = rescaled_run(head, rng.standard_normal((n, d)), times)
    vertices = hull_vertices(z[-1], tolerance=1e-3)
    assert vertex_distance(z[-1], vertices).max() < 1e-6
    assert 2 <= vertices.size <= 20
    assert np.linalg.norm(z[-1], axis=1).min() > 1.0  # none tends to 0 (the other case)
    late = times >= 12
    gaps = [vertex_distance(zk, tolerance=1e-3).max() for zk in z[late]]
    assert rate(times[late], gaps) == pytest.approx(-1.0, abs=0.01)


@pytest.mark.parametrize("eigenvalues, seed", [([1.0, 0.5, 0.2], 0), ([1.35, -0.07], 1)])
def test_theorem_4_1_coordinates_along_phi_1_end_on_at_most_three_values(eigenvalues,
                                                                         seed):
    """Symmetric V (random orthogonal basis), Q = K = I: d = 3 with eigenvalues
    (1, 0.5, 0.2), and the paper's Figure 6 (d = 2, (1.35, -0.07)); n = 30. Measured:
    2 values each ((-1.898, 2.058) and (-1.993, 2.313)); the largest distance of a
    coordinate to its group's mean 5.0e-5 at t = 12 and 1.8e-5 at t = 9; rates fitted on
    the last 4 time units -1.0000 and -1.3500 (= -lambda_1)."""
    d, n = len(eigenvalues), 30
    o = ortho_group.rvs(d, random_state=seed)
    v = o @ np.diag(eigenvalues) @ o.T
    lam, _, _ = leading_eigenvector(v)
    t_end = 12.0 if lam < 1.2 else 9.0
    times = np.arange(0.0, t_end + 0.5, 1.0)
    z = rescaled_run(Head(np.eye(d), np.eye(d), v), np.random.default_rng(seed)
                     .standard_normal((n, d)), times)
    values = hyperplane_values(z[-1], v, 1e-3)
    assert 1 <= values.size <= 3
    c = leading_coordinates(z, v)
    label = np.argmin(np.abs(c[-1][:, None] - values), axis=1)  # each token's hyperplane
    spread = np.zeros(len(times))  # the largest deviation from its group's mean, each t
    for k in range(values.size):
        ck = c[:, label == k]
        spread = np.maximum(spread, np.max(np.abs(ck - ck.mean(axis=1, keepdims=True)),
                                           axis=1))
    assert spread[-1] < 1e-4
    late = times >= t_end - 4
    assert rate(times[late], spread[late]) == pytest.approx(-lam, rel=0.02)


def test_theorem_4_1_a_non_normal_v_clusters_its_eigen_coordinate_not_its_projection():
    """V = S diag(1, 0.5, -0.3) S^{-1}: the coefficient of phi_1 in the eigenbasis ends on
    2 values, while <z, phi_1> also carries the diverging coordinate of -0.3 (measured:
    30 distinct values of <z, phi_1> at 1e-3, the largest |z| 75 at t = 12)."""
    d, n = 3, 30
    s = np.random.default_rng(5).standard_normal((d, d))
    v = s @ np.diag([1.0, 0.5, -0.3]) @ np.linalg.inv(s)
    times = np.array([0.0, 6.0, 12.0])
    z = rescaled_run(Head(np.eye(d), np.eye(d), v),
                     np.random.default_rng(2).standard_normal((n, d)), times)
    assert hyperplane_values(z[-1], v, 1e-3).size == 2
    _, phi, _ = leading_eigenvector(v)
    projection = np.sort(z[-1] @ phi)
    assert 1 + np.count_nonzero(np.diff(projection) > 1e-3) > 10


@pytest.mark.parametrize("d", [2, 3])
def test_theorem_c_5_repulsive_tokens_collapse_to_the_origin_like_t_to_the_minus_half(d):
    """V = -I, Q = K = I, n = 30, the original flow x. Measured (d = 2, 3): max |x_i|
    2.44, 2.65 at t = 0, 0.130, 0.134 at t = 200; eigenvalues of 2t S(t) in [0.993, 0.999]
    at t = 200 (1 - O(1/t))."""
    n = 30
    head = Head.identity(d, -1.0)
    x0 = np.random.default_rng(0).standard_normal((n, d))
    times = np.array([0.0, 10.0, 50.0, 200.0])
    sol = solve_ivp(lambda t, y: pure_velocity(y.reshape(n, d), head).ravel(),
                    (0.0, times[-1]), x0.ravel(), method="DOP853", rtol=1e-10,
                    atol=1e-13, t_eval=times)
    assert sol.status == 0
    x = sol.y.T.reshape(len(times), n, d)
    r = origin_distance(x)
    assert np.all(np.diff(r) < 0) and r[-1] < 0.15
    second = np.einsum("pi,pj->ij", x[-1], x[-1]) / n
    np.testing.assert_allclose(np.linalg.eigvalsh(2 * times[-1] * second), 1.0, atol=0.02)
    # max |x_i| sqrt(t) settles: between t = 50 and 200 it changes by < 2 %
    assert r[-1] * np.sqrt(times[-1]) == pytest.approx(r[-2] * np.sqrt(times[-2]), rel=0.02)
