"""``compare`` with ``[weights] value = c`` (V = c I): the PDE and the tokens (the
weighted post-LN model of ``meanfield.model.weighted_particles`` with Q = K = I, V = c I)
move with the same c. Without noise the tokens' order parameter follows the PDE's to the
sampling error of n i.i.d. tokens (1/sqrt(n) per coordinate; 4 of them allowed), and with
c < 0 both spread (r falls), where c = 1 would concentrate them."""
from __future__ import annotations

import numpy as np

from meanfield.studies.transport.compare import compare


def test_compare_repulsive_value_tokens_follow_the_pde():
    n = 1000
    ds = compare({"model": {"beta": 1.0}, "discretization": {"resolution": 64},
                  "initial": {"kind": "von_mises", "center": 0.5, "concentration": 2.0},
                  "time": {"t_final": 1.0, "save_every": 0.5, "dt": 0.05},
                  "particles": {"n": n, "ensemble": 1, "seed": 3},
                  "weights": {"value": -1.5}})
    assert ds.attrs["status"] == 0, ds.attrs["message"]
    assert ds.attrs["value"] == -1.5
    pde = ds.order_parameter.values
    tokens = ds.particle_order_parameter.values.reshape(pde.size, -1)[:, 0]
    assert pde[-1] < 0.8 * pde[0]  # spreading: the repulsive value reached both
    np.testing.assert_allclose(tokens, pde, atol=4 / np.sqrt(n))
    assert np.all(ds.l1_distance.values < 2.5 * ds.l1_noise_floor.values)
