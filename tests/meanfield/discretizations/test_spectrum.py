"""The leading eigenvalues of F' at the uniform state against the closed-form mode growth
rates of docs/conventions.md (circle sigma_k, sphere sigma_l, with their multiplicities
2 and 2l + 1), and the spurious components (unused imaginary parts) left out."""
from __future__ import annotations

import numpy as np
import pytest

from meanfield import config
from meanfield.discretizations.base import Discretization
from meanfield.discretizations.spectrum import leading_eigenvalues
from meanfield.model.kernels import growth_rate, sphere_growth_rate


def _uniform(geometry: str, resolution: int, beta: float, kappa: float, normalized: bool):
    cfg = config.validate({"domain": {"geometry": geometry},
                           "discretization": {"resolution": resolution},
                           "model": {"beta": beta, "kappa": kappa, "normalized": normalized},
                           "initial": {"kind": "uniform"}})
    disc = Discretization.from_config(cfg)
    return disc, disc.to_state(disc.initial_density(cfg["initial"]))


@pytest.mark.parametrize("beta,kappa,normalized", [(0.0, 1.5, True), (1.0, 1.5, False),
                                                   (2.0, 4.0, True)])
def test_circle_uniform_state(beta, kappa, normalized):
    disc, u = _uniform("circle", 64, beta, kappa, normalized)
    lam = leading_eigenvalues(disc, u, 6)
    expected = np.repeat(np.sort(growth_rate(np.arange(1, 8), beta, kappa, normalized))[::-1],
                         2)[:6]
    np.testing.assert_allclose(lam.real, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lam.imag, 0.0, atol=1e-10)


@pytest.mark.parametrize("beta,kappa", [(0.0, 0.5), (1.0, 2.0)])
def test_sphere_uniform_state(beta, kappa):
    """Without the unused imaginary parts of the m = 0 coefficients, -2/kappa (their
    diffusion alone) would come before sigma_2."""
    disc, u = _uniform("sphere", 12, beta, kappa, True)
    lam = leading_eigenvalues(disc, u, 8)
    sigma = sphere_growth_rate(np.arange(1, 4), beta, kappa, True)
    expected = np.concatenate([np.full(3, sigma[0]), np.full(5, sigma[1])])
    np.testing.assert_allclose(lam.real, expected, rtol=1e-10)
