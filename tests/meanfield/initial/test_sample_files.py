"""Sample files that once crashed or misled (issue 9): identical rows, one row, an empty
file. Each is one ConfigError naming initial.path and what is wrong, on the circle and
the sphere; with an explicit bandwidth identical samples are a valid estimate."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from meanfield.errors import ConfigError
from meanfield.initial import circle, sphere
from meanfield.initial.samplers import sample_tokens

FILES = {  # geometry -> (identical rows, one row)
    "circle": ("1 0\n1 0\n1 0\n", "1 0\n"),
    "sphere": ("0 0 1\n0 0 1\n0 0 1\n", "0 0 1\n"),
}
MODULES = {"circle": circle, "sphere": sphere}


def _write(tmp_path, text: str) -> str:
    path = tmp_path / "samples.txt"
    path.write_text(text)
    return str(path)


def _concentration(geometry: str, path: str, bandwidth) -> float:
    return MODULES[geometry].kde_concentration({"kind": "samples", "path": path,
                                               "bandwidth": bandwidth})


@pytest.mark.parametrize("geometry", ["circle", "sphere"])
@pytest.mark.parametrize("which, words", [(0, "3 samples, all the same point"),
                                          (1, "one sample")])
def test_auto_bandwidth_without_spread_is_one_config_error(tmp_path, geometry, which, words):
    path = _write(tmp_path, FILES[geometry][which])
    with pytest.raises(ConfigError) as info:
        _concentration(geometry, path, "auto")
    assert info.value.key == "initial.path"
    assert words in str(info.value) and "initial.bandwidth" in str(info.value)


def test_one_line_of_angles_is_angles_and_one_vector_is_one_sample(tmp_path):
    np.testing.assert_allclose(circle.load_sample_angles(_write(tmp_path, "0.5 1 2\n")),
                               [0.5, 1, 2])
    # one row of two numbers is one vector (x, y) = (0, 1): the angle pi/2
    np.testing.assert_allclose(circle.load_sample_angles(_write(tmp_path, "0 1\n")),
                               [np.pi / 2])


@pytest.mark.parametrize("geometry", ["circle", "sphere"])
@pytest.mark.parametrize("which", [0, 1])
def test_explicit_bandwidth_makes_identical_samples_a_kernel_bump(tmp_path, geometry, which):
    path = _write(tmp_path, FILES[geometry][which])
    assert _concentration(geometry, path, 0.5) == pytest.approx(4.0)
    initial = {"kind": "samples", "path": path, "bandwidth": 0.5}
    f = MODULES[geometry].density_function(initial)
    # one von Mises(-Fisher) bump of concentration 4 at the point: its exact density
    if geometry == "circle":
        from scipy.special import i0
        at = np.array([0.0, np.pi])
        expected = np.exp(4 * np.cos(at)) / (2 * np.pi * i0(4))
    else:
        at = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]])
        expected = 4 * np.exp(4 * at[:, 2]) / (4 * np.pi * np.sinh(4))
    np.testing.assert_allclose(f(at), expected, rtol=1e-10)
    x = sample_tokens(initial, 50, 2 if geometry == "circle" else 3, 0)
    assert np.all(np.isfinite(x))


@pytest.mark.parametrize("geometry", ["circle", "sphere"])
@pytest.mark.parametrize("bandwidth", ["auto", 0.3])
def test_empty_file_is_one_error_without_warning(tmp_path, geometry, bandwidth):
    path = _write(tmp_path, "")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ConfigError) as info:
            _concentration(geometry, path, bandwidth)
    assert info.value.key == "initial.path" and "holds no samples" in str(info.value)


def test_evolve_of_identical_samples_is_a_config_error(tmp_path):
    import meanfield
    path = _write(tmp_path, "0.5\n0.5\n0.5\n")
    with pytest.raises(ConfigError, match="all the same point") as info:
        meanfield.evolve({"initial": {"kind": "samples", "path": path},
                          "time": {"t_final": 0.01}})
    assert info.value.key == "initial.path"
