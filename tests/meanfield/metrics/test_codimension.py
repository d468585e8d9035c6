"""Conjecture 4.2 and good triples of [GLPR23]: the positive eigen-coordinates."""
from __future__ import annotations

import numpy as np
import pytest

from meanfield.metrics.codimension import (
    codimension_values,
    good_triple,
    positive_coordinate_map,
    positive_eigen_coordinates,
)


def test_coordinates_of_a_complex_pair_and_a_real_eigenvalue():
    """V = S blockdiag([[1, -2], [2, 1]], 0.5, -1) S^-1: eigenvalues 1 +- 2i, 0.5, -1, so
    k = 3 real coordinates: the real and imaginary parts of the coefficient of the
    complex eigenvector (the plane S e_1, S e_2) and the coefficient of S e_3; S e_4
    (eigenvalue -1) has none. A token z = S a has coordinates that recover a's first
    three entries up to the rotation of the complex pair's plane (its norm is kept)."""
    rng = np.random.default_rng(3)
    s = np.eye(4) + 0.3 * rng.standard_normal((4, 4))
    block = np.zeros((4, 4))
    block[:2, :2] = [[1.0, -2.0], [2.0, 1.0]]
    block[2, 2], block[3, 3] = 0.5, -1.0
    v = s @ block @ np.linalg.inv(s)
    w, lam = positive_coordinate_map(v)
    assert w.shape == (3, 4)
    np.testing.assert_allclose(np.real(lam), [1.0, 1.0, 0.5], atol=1e-12)
    a = rng.standard_normal((5, 4))
    c = positive_eigen_coordinates(a @ s.T, v)
    # the coordinates vanish on G's direction s_4 and see nothing else of it
    np.testing.assert_allclose(positive_eigen_coordinates(s[:, 3][None], v), 0, atol=1e-12)
    # the real eigenvalue's coordinate is a_3 up to the eigenvector's scale
    ratio = c[:, 2] / a[:, 2]
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-10)
    # the complex pair: |coefficient| is proportional to |(a_1, a_2)| (a rotation and scale)
    ratio = np.hypot(c[:, 0], c[:, 1]) / np.hypot(a[:, 0], a[:, 1])
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-10)


def test_codimension_values_merge_tokens_on_one_subspace():
    v = np.diag([2.0, 1.0, -0.5])
    z = np.array([[1.0, 2.0, 5.0], [1.0, 2.0, -9.0], [-1.0, 0.5, 0.0]])
    values, labels = codimension_values(z, v, 1e-9)
    assert labels.tolist() == [0, 0, 1]  # the third coordinate is free
    np.testing.assert_allclose(np.abs(values), [[1.0, 2.0], [1.0, 0.5]])


@pytest.mark.parametrize("q, v, expected", [
    (np.eye(2), np.diag([2.0, 1.0]), True),
    (-np.eye(2), np.diag([2.0, 1.0]), False),                        # <Q phi, K phi> < 0
    (np.eye(2), np.diag([-2.0, 1.0]), False),                        # top eigenvalue < 0
    (np.eye(2), np.diag([2.0, -2.0]), False),                        # not simple
    (np.eye(2), np.array([[0.0, -1.0], [1.0, 0.0]]), False),         # complex
])
def test_good_triple_definition_1(q, v, expected):
    assert good_triple(q, np.eye(2), v) is expected
