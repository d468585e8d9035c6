"""``meanfield.metrics.wasserstein`` refuses every bad argument before any work, with a
ConfigError (a ValueError) naming the argument, the value and what is accepted (issue
19, item 4: ``starts = 0``, ``n_projections = 2.5``, ``p = True`` and complex input were
accepted), and takes numpy scalars where Python numbers are."""
import importlib

import numpy as np
import pytest

from meanfield.errors import ConfigError
from meanfield.metrics import arguments
from meanfield.metrics.wasserstein import wasserstein

front = importlib.import_module("meanfield.metrics.wasserstein")  # (the package's
# attribute of that name is the function)
ANGLES = [0.1, 1.0, 2.0]
POINTS = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


@pytest.mark.parametrize("kwargs, key, accepted", [
    ({"p": True}, "p", "1 <= p"),
    ({"p": 0.5}, "p", "1 <= p"),
    ({"p": float("nan")}, "p", "1 <= p"),
    ({"p": 1e308}, "p", "1 <= p"),
    ({"p": 1 + 1j}, "p", "1 <= p"),
    ({"p": "2"}, "p", "1 <= p"),
    ({"p": arguments.P_MAX * 1.5}, "p", "1 <= p"),
    ({"starts": 0}, "starts", "integer >= 1"),
    ({"starts": 2.0}, "starts", "integer >= 1"),
    ({"n_projections": 2.5}, "n_projections", "integer >= 1"),
    ({"n_projections": True}, "n_projections", "integer >= 1"),
    ({"seed": -1}, "seed", "integer >= 0"),
    ({"seed": "0"}, "seed", "integer >= 0"),
    ({"reg": 0.0}, "reg", "> 0"),
    ({"reg": float("inf")}, "reg", "> 0"),
    ({"reg": True}, "reg", "> 0"),
    ({"modulo_rotation": 1}, "modulo_rotation", "True or False"),
    ({"method": ["exact"]}, "method", "one of"),
    ({"geometry": "torus"}, "geometry", "one of"),
])
def test_bad_options_name_the_argument(kwargs, key, accepted, monkeypatch):
    # Before any work: parsing the measures would already be work.
    monkeypatch.setattr(front, "as_measure", lambda *a, **k: pytest.fail("parsed a measure"))
    with pytest.raises(ConfigError, match=accepted) as err:
        wasserstein(ANGLES, ANGLES, **kwargs)
    assert err.value.key == key
    assert str(err.value).startswith(key)
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("mu, nu, what", [
    (np.array([0.1, 1.0]) + 1j, ANGLES, "complex"),
    ([0.1 + 0j, 1.0], ANGLES, "complex"),
    (["a", "b"], ANGLES, "strings"),
    ([True, False], ANGLES, "booleans"),
    ([0.1, None], ANGLES, "objects"),
    ([[0.1, 0.2], [0.3]], ANGLES, "array of numbers"),
    ((ANGLES, np.array([1, 1, 1]) * 1j), ANGLES, "complex"),
    ((POINTS, ["1", "1", "1"]), POINTS, "strings"),
])
def test_measures_that_are_not_real_numbers(mu, nu, what):
    with pytest.raises(ConfigError, match=what) as err:
        wasserstein(mu, nu)
    assert err.value.key.startswith("mu")


def test_numpy_scalars_are_numbers():
    """np.int64 / np.float32 options behave as the Python numbers."""
    ref = wasserstein(ANGLES, [0.2, 1.5, 2.5], p=3)
    assert wasserstein(ANGLES, [0.2, 1.5, 2.5], p=np.int64(3)) == ref
    assert wasserstein(ANGLES, [0.2, 1.5, 2.5], p=np.float32(3)) == ref
    w = wasserstein(POINTS, POINTS[::-1], method="sliced", n_projections=np.int64(20),
                    seed=np.int32(1), p=2)
    assert w == wasserstein(POINTS, POINTS[::-1], method="sliced", n_projections=20,
                            seed=1, p=2)


def test_p_bound_is_inclusive():
    x = np.array([0.0, 1.0])
    assert wasserstein(x, x + 1e-3, p=arguments.P_MAX) == pytest.approx(1e-3, rel=1e-9)
