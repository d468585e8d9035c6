"""``solvers.matrix_exponential.ShiftedExponential``: ``e^{t(V - cI)}`` against closed
forms (a normal V: the exponential of its eigenvalues; a Jordan block: ``I + tN``), the
abscissa against the eigenvalues, and the overflow it reports for a non-normal V
(the model's uses: tests/meanfield/model/test_weighted_rescaled_form.py)."""
from __future__ import annotations

import numpy as np
import pytest

from solvers.matrix_exponential import ShiftedExponential

TIMES = (0.0, 0.3, 2.0, 25.0)


def test_a_symmetric_matrix_is_its_eigenvalues_exponential():
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    lam = np.array([2.0, 0.5, -1.0, -30.0])
    v = (q * lam) @ q.T
    v = (v + v.T) / 2  # exactly symmetric: the eigh path
    e = ShiftedExponential(v)
    assert e.method == "eigen" and abs(e.abscissa - 2.0) <= 1e-14 * 2.0
    for t in TIMES:
        exact = (q * np.exp(t * (lam - 2.0))) @ q.T
        np.testing.assert_allclose(e(t), exact, rtol=0, atol=1e-13)


def test_a_jordan_block_takes_expm_and_refuses_eigen():
    v = np.array([[1.0, 1.0], [0.0, 1.0]])  # e^{t(V - I)} = [[1, t], [0, 1]]
    e = ShiftedExponential(v)
    assert e.method == "expm" and e.abscissa == 1.0
    for t in TIMES:
        np.testing.assert_allclose(e(t), [[1.0, t], [0.0, 1.0]], rtol=1e-15, atol=1e-15)
    with pytest.raises(ValueError, match="condition number .* use 'expm' or 'auto'"):
        ShiftedExponential(v, method="eigen")
    with pytest.raises(ValueError, match="must be one of auto, eigen, expm, got 'lu'"):
        ShiftedExponential(v, method="lu")


def test_growth_past_the_double_range_is_reported():
    e = ShiftedExponential(np.array([[1.0, 1e300], [0.0, 1.0]]))
    with np.errstate(over="ignore", invalid="ignore"), \
            pytest.raises(ValueError, match="cannot be formed at t = 1e\\+10"):
        e(1e10)
