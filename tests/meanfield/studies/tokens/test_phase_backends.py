"""The phase diagram's batched engine on array libraries other than numpy (issue 12,
item 7): the array-API code on numpy is the numpy engine (the same numbers as the
compiled one), torch and CuPy asked where they are not installed are refused before any
work (saying what to install), and, where torch is importable, torch on its device
agrees with numpy to 1e-12."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from meanfield.errors import ConfigError
from meanfield.studies import array_engines as ae
from meanfield.studies.tokens import phase_diagram as pd
from meanfield.studies.tokens import phase_kernels as pk
from solvers.steppers.dormand_prince import integrate_batch_dopri

TIMES = np.linspace(0.0, 12.0, 25)
BETA = np.array([0.5, 2.0, 4.0, 1.0, 3.0, 6.0])
SMALL = {"particles": {"n": 8, "seed": 3},
         "phase_diagram": {"dims": [3, 16], "beta": [0.5, 2.0, 6.0],
                           "times": {"start": 0.0, "stop": 12.0, "num": 25},
                           "systems": 12, "batch": 20}}


def _fractions(**kw):
    args = {"n": 8, "beta": BETA, "systems": np.arange(BETA.size), "times": TIMES,
            "threshold": 0.999, "seed": 5, "tolerance": 1e-6}
    args.update(kw)
    return pk.pair_fractions(**args)


def _oracle_gram_field(beta, normalized):
    """The Gram field as written for numpy before the array-API port (in place, einsum)."""
    def f(g, index):
        b = beta[index].astype(g.dtype)[:, None, None]
        a = g - 1
        a *= b
        np.exp(a, out=a)
        if normalized:
            a /= a.sum(axis=-1, keepdims=True)
        else:
            a *= np.exp(b) / g.shape[-1]
        ag = a @ g
        dg = np.einsum("bii->bi", ag)
        out = ag + ag.swapaxes(1, 2)
        out -= (dg[:, :, None] + dg[:, None, :]) * g
        return out
    return f


def _oracle_token_field(beta, normalized):
    def f(x, index):
        b = beta[index].astype(x.dtype)[:, None, None]
        a = x @ x.swapaxes(1, 2)
        a -= 1
        a *= b
        np.exp(a, out=a)
        if normalized:
            a /= a.sum(axis=-1, keepdims=True)
        else:
            a *= np.exp(b) / x.shape[1]
        v = a @ x
        v -= np.einsum("bij,bij->bi", x, v)[..., None] * x
        return v
    return f


@pytest.mark.parametrize("normalized", [True, False])
def test_array_api_fields_equal_the_plain_numpy_fields_exactly(normalized):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 8, 11))
    x /= np.linalg.norm(x, axis=2, keepdims=True)
    g = x @ x.swapaxes(1, 2)
    beta, idx = np.array([0.3, 1.0, 2.0, 4.0, 8.0]), np.array([4, 0, 2, 1, 3])
    for dtype in (np.float64, np.float32):
        np.testing.assert_array_equal(
            pk.gram_field(beta, normalized)(g.astype(dtype), idx),
            _oracle_gram_field(beta, normalized)(g.astype(dtype), idx))
        np.testing.assert_array_equal(
            pk.token_field(beta, normalized)(x.astype(dtype), idx),
            _oracle_token_field(beta, normalized)(x.astype(dtype), idx))


@pytest.mark.parametrize("d", [3, 16])
@pytest.mark.parametrize("normalized", [True, False])
def test_numpy_engine_runs_the_array_api_code_and_equals_the_compiled_engine(d,
                                                                             normalized):
    """"numpy" is the array-API engine on ``array_api_compat.numpy`` (the only batched
    code): the same steps and fractions as the compiled engine, and its states are numpy
    arrays all along."""
    seen = []
    kw = {"d": d, "normalized": normalized}
    real = pk.integrate_batch_dopri

    def spy(field, x0, *a, **k):
        seen.append(type(x0))
        return real(field, x0, *a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pk, "integrate_batch_dopri", spy)
        a = _fractions(engine="numpy", **kw)
    b = _fractions(engine="numba", **kw)
    assert seen == [np.ndarray]
    np.testing.assert_allclose(a["fractions"], b["fractions"], atol=1e-12)
    np.testing.assert_array_equal(a["steps"], b["steps"])


def test_dopri_keeps_numpy_input_as_numpy_and_accepts_a_list():
    def f(x, idx):
        return -x

    got = np.full(2, np.nan)

    def observe(k, idx, x):
        assert isinstance(x, np.ndarray)
        if k == 1:
            got[idx] = x[:, 0, 0]
    res = integrate_batch_dopri(f, [[[1.0]], [[2.0]]], [0.0, 1.0], tolerance=1e-10,
                                observe=observe)
    assert isinstance(res["steps"], np.ndarray)
    np.testing.assert_allclose(got, np.array([1.0, 2.0]) * np.exp(-1.0), rtol=1e-8)


@pytest.mark.parametrize("engine,install", [("torch", "pip install torch"),
                                            ("cupy", "pip install cupy-cuda12x")])
def test_missing_library_is_refused_before_any_work(engine, install, monkeypatch):
    """The import is made to fail (``sys.modules[name] = None``), so this runs whether
    or not the library is installed."""
    monkeypatch.setitem(sys.modules, engine, None)
    monkeypatch.setattr(pd, "run_member", lambda *a: pytest.fail("work started"))
    cfg = {**SMALL, "phase_diagram": {**SMALL["phase_diagram"], "engine": engine}}
    with pytest.raises(ConfigError) as err:
        pd.phase_diagram(cfg)
    assert err.value.key == "phase_diagram.engine"
    assert engine in str(err.value) and install in str(err.value)
    with pytest.raises(ConfigError, match=install):
        _fractions(d=3, normalized=True, engine=engine)


def test_cupy_without_a_device_is_refused(monkeypatch):
    """CuPy installed but no CUDA device answering (a fake module: no CuPy needed)."""
    import types

    def no_device():
        raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")

    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(
        getDeviceCount=no_device))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setitem(sys.modules, "array_api_compat.cupy", types.ModuleType("x"))
    with pytest.raises(ConfigError, match="no CUDA device") as err:
        ae.backend("cupy")
    assert err.value.key == "phase_diagram.engine"


def test_numpy_backend_is_on_the_cpu():
    xp, dev = ae.backend("numpy")
    assert xp.__name__ == "array_api_compat.numpy" and dev == "cpu"
    assert ae.device_name("numpy") == "cpu"


@pytest.mark.parametrize("d", [3, 16])
@pytest.mark.parametrize("normalized", [True, False])
def test_torch_engine_agrees_with_numpy(d, normalized):
    """Where torch is installed: on its device ("cuda" if available, else the CPU), in
    float64, the fractions agree with numpy's to 1e-12 (seen: equal on the CPU). The
    step sequences may part: torch's exp and products round differently in the last
    bit, and an error estimate at the acceptance boundary (err = 1) can then go either
    way; the same systems freeze and the step counts stay within 2 %."""
    pytest.importorskip("torch")
    # (USA at large beta is stiff and slow on many small torch ops: beta <= 3 there)
    beta = BETA if normalized else BETA[BETA <= 3]
    kw = {"d": d, "normalized": normalized, "beta": beta, "systems": np.arange(beta.size)}
    a, b = _fractions(engine="numpy", **kw), _fractions(engine="torch", **kw)
    assert isinstance(b["fractions"], np.ndarray)
    np.testing.assert_allclose(b["fractions"], a["fractions"], atol=1e-12, rtol=0)
    np.testing.assert_array_equal(np.isfinite(b["left"]), np.isfinite(a["left"]))
    assert abs(b["steps"].sum() / a["steps"].sum() - 1) < 0.02


def test_torch_diagram_equals_the_numpy_diagram():
    pytest.importorskip("torch")
    num = pd.phase_diagram({**SMALL, "phase_diagram": {**SMALL["phase_diagram"],
                                                       "engine": "numpy"}})
    tor = pd.phase_diagram({**SMALL, "phase_diagram": {**SMALL["phase_diagram"],
                                                       "engine": "torch"}})
    assert tor.attrs["engine"] == "torch"
    np.testing.assert_allclose(tor.pair_probability.values, num.pair_probability.values,
                               atol=1e-12, rtol=0)
