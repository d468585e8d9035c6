"""Initial tokens in R^d (domain.geometry = "euclidean", issue 20): Gaussian draws with the
requested mean and covariance from the particle seed's stream, token files as given."""
from __future__ import annotations

import numpy as np
import pytest

from meanfield import config as cfgmod
from meanfield.errors import ConfigError
from meanfield.initial.samplers import sample_tokens
from meanfield.model.tokens import initial_rng


def _initial(dim: int, **initial) -> dict:
    cfg = cfgmod.validate({"domain": {"geometry": "euclidean", "dim": dim},
                           "initial": initial}, "particles")
    return cfg["initial"]


@pytest.mark.parametrize("dim,mean,cov", [
    (2, [1.0, -2.0], [[2.0, 0.6], [0.6, 1.0]]),
    (3, [0.0, 0.5, 3.0], [[1.0, -0.3, 0.2], [-0.3, 0.5, 0.0], [0.2, 0.0, 4.0]]),
    (1, [-1.5], 0.25),
])
def test_gaussian_tokens_have_the_requested_moments(dim, mean, cov):
    n = 40_000
    x = sample_tokens(_initial(dim, kind="gaussian", mean=mean, covariance=cov), n, dim,
                      11, geometry="euclidean")
    assert x.shape == (n, dim)
    c = np.asarray(cov, dtype=float) * (np.eye(dim) if np.ndim(cov) == 0 else 1.0)
    # standard errors: of a mean sqrt(C_ii / n), of a covariance entry
    # sqrt((C_ii C_jj + C_ij^2) / n) (Gaussian fourth moments); margin 5 of them
    se_mean = np.sqrt(np.diag(c) / n)
    assert np.all(np.abs(x.mean(axis=0) - mean) < 5 * se_mean)
    se_cov = np.sqrt((np.outer(np.diag(c), np.diag(c)) + c ** 2) / n)
    assert np.all(np.abs(np.cov(x.T).reshape(dim, dim) - c) < 5 * se_cov)


def test_default_gaussian_is_standard_and_uses_the_initial_stream():
    init = _initial(2)
    assert init == {"kind": "gaussian", "mean": [0.0, 0.0], "covariance": 1.0}
    x = sample_tokens(init, 50, 2, 5, geometry="euclidean")
    # the particle seed's stream of initial tokens (initial_rng), one (n, d) block
    assert np.array_equal(x, initial_rng(5).standard_normal((50, 2)))
    assert np.array_equal(x, sample_tokens(init, 50, 2, initial_rng(5), geometry="euclidean"))


@pytest.mark.parametrize("dim", [1, 3])
def test_token_file_rows_are_taken_as_given(tmp_path, dim):
    rows = np.array([[3.0, -4.0, 0.5], [0.0, 0.0, 0.0], [1e-3, 2.0, -7.0]])[:, :dim]
    path = tmp_path / "z.npy"
    np.save(path, rows[:, 0] if dim == 1 else rows)  # d = 1: a plain list too
    init = _initial(dim, kind="tokens", path=str(path))
    assert init == {"kind": "tokens", "path": str(path)}
    x = sample_tokens(init, 3, dim, 0, geometry="euclidean")
    assert np.array_equal(x, rows)  # not normalised; the zero row is the origin
    text = tmp_path / "z.txt"
    np.savetxt(text, rows)
    assert np.array_equal(sample_tokens({"kind": "tokens", "path": str(text)}, 3, dim, 0,
                                        geometry="euclidean"), rows)
    with pytest.raises(ConfigError) as err:
        sample_tokens(init, 4, dim, 0, geometry="euclidean")
    assert err.value.key == "particles.n"


def test_token_file_of_another_dimension_is_refused(tmp_path):
    path = tmp_path / "z.txt"
    np.savetxt(path, np.ones((4, 3)))
    with pytest.raises(ConfigError) as err:
        sample_tokens({"kind": "tokens", "path": str(path)}, 4, 2, 0, geometry="euclidean")
    assert err.value.key == "initial.path" and "(n, 2)" in str(err.value)


def test_uniform_and_equiangular_in_r_d():
    x = sample_tokens(_initial(1, kind="uniform"), 200, 1, 0, geometry="euclidean")
    assert set(np.unique(x)) == {-1.0, 1.0}
    y = sample_tokens(_initial(4, kind="uniform"), 100, 4, 0, geometry="euclidean")
    assert np.max(np.abs(np.linalg.norm(y, axis=1) - 1)) < 1e-15
    e = sample_tokens(_initial(4, kind="equiangular", rho=0.25), 4, 4, 0,
                      geometry="euclidean")
    gram = e @ e.T
    assert np.max(np.abs(gram - (0.25 + 0.75 * np.eye(4)))) < 1e-14
    with pytest.raises(ConfigError) as err:
        sample_tokens(_initial(2, kind="equiangular"), 3, 2, 0, geometry="euclidean")
    assert err.value.key == "particles.n"


def test_sphere_kinds_are_refused_in_r_d():
    with pytest.raises(ConfigError) as err:
        sample_tokens({"kind": "von_mises", "center": [1.0, 0.0], "concentration": 1.0},
                      10, 2, 0, geometry="euclidean")
    assert err.value.key == "initial.kind" and "'gaussian'" in str(err.value)
    # without geometry: the sphere's kinds, unit rows (as before)
    x = sample_tokens({"kind": "uniform"}, 10, 2, 0)
    assert np.max(np.abs(np.linalg.norm(x, axis=1) - 1)) < 1e-15
