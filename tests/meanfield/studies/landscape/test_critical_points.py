"""The critical-points study ([GLPR25, §7.2, Problem 3]; issue 28, acceptance 1): on S^1
the equally spaced tokens and the two antipodal clusters are found with the Hessian
spectra of their closed forms (computed here on their own: the circulant's eigenvalues as
the FFT of its first row, the antipodal block matrix's by hand), every non-synchronised
point found for n = 6 at beta = 1, 4, 9 is a strict saddle; the same on S^2; orbits
compared modulo rotations, reflections and permutations; bad input refused before any
work; an interrupted study resumed to the same numbers."""
from __future__ import annotations

import numpy as np
import pytest

from meanfield.cli import main
from meanfield.errors import ConfigError
from meanfield.io import read_netcdf
from meanfield.studies.landscape import critical_points as cp
from meanfield.studies.landscape import critical_search as search


def _circulant_spectrum(n: int, beta: float) -> np.ndarray:
    """Eigenvalues of the angle Hessian at n equally spaced tokens: the DFT of the first
    row c_j = h(2 pi j/n), c_0 = -sum_{j>0} c_j (a circulant)."""
    delta = 2 * np.pi * np.arange(1, n) / n
    c = np.exp(beta * np.cos(delta)) * (np.cos(delta) - beta * np.sin(delta) ** 2) / n**2
    row = np.concatenate([[-c.sum()], c])
    return np.sort(np.fft.fft(row).real)


def _antipodal_spectrum(n: int, k: int, beta: float) -> np.ndarray:
    """Eigenvalues of [[a J - alpha I, b J], [b J, a J - alpha' I]] (k and n - k tokens)."""
    a, b = np.exp(beta) / n**2, -np.exp(-beta) / n**2
    return np.sort(np.concatenate([np.full(k - 1, -(k * a + (n - k) * b)),
                                   np.full(n - k - 1, -((n - k) * a + k * b)),
                                   [0.0, -n * b]]))


@pytest.fixture(scope="module")
def circle():
    """n = 6 at beta = 1, 4, 9 on S^1, 24 starts per family (1.4 s)."""
    return cp.critical_points({"critical_points": {"n": [6], "beta": [1.0, 4.0, 9.0],
                                                   "starts": 24}})


def test_acceptance_1_closed_forms_on_the_circle(circle):
    """Measured: relative errors <= 2e-15, absolute <= 1.2e-12 (beta = 9, eigenvalues up
    to 1350); asserted 1e-10 relative to the largest eigenvalue (and absolute at beta = 1)."""
    ds = circle
    for beta in (1.0, 4.0, 9.0):
        rows = ds.beta.values == beta
        kinds = ds.kind.values[rows]
        eig = ds.hessian_eigenvalues.values[rows]
        sizes = ds.cluster_sizes.values[rows]
        found = {}
        for kind, w, s in zip(kinds, eig, sizes):
            if kind == "equally_spaced":
                found["equal"] = (w, _circulant_spectrum(6, beta))
            elif kind == "antipodal":
                k = int(s[1])  # the smaller cluster
                found[f"antipodal {k}"] = (w, _antipodal_spectrum(6, k, beta))
        assert set(found) == {"equal", "antipodal 1", "antipodal 2", "antipodal 3"}, beta
        for name, (w, want) in found.items():
            error = np.max(np.abs(w - want))
            assert error <= 1e-10 * np.max(np.abs(want)), (beta, name, error)
            if beta == 1.0:
                assert error <= 1e-10, (name, error)
        # the antipodal clusters' one unstable eigenvalue: e^-beta/n
        anti = kinds == "antipodal"
        np.testing.assert_allclose(ds.unstable_eigenvalue.values[rows][anti],
                                   np.exp(-beta) / 6, rtol=1e-6)


def test_acceptance_1_every_other_point_is_a_strict_saddle(circle):
    ds = circle
    sync = ds.kind.values == "synchronised"
    assert sync.sum() == 3  # one per beta, index 0: the maximum
    assert np.all(ds.index.values[sync] == 0)
    assert np.all(ds.index.values[~sync] >= 1) and np.all(ds.strict_saddle.values[~sync])
    assert list(ds.counterexamples.values) == [0, 0, 0]
    assert ds.attrs["counterexamples_total"] == 0
    # nothing degenerate: one zero mode, the rotation, at every point
    assert np.all(ds.zero_modes.values == 1) and np.all(ds.symmetry_zero_modes.values == 1)
    assert np.all(ds.gradient_residual.values < 1e-11)
    # every point distinct modulo rotations, reflections and permutations
    for beta in (1.0, 4.0, 9.0):
        rows = np.flatnonzero(ds.beta.values == beta)
        inv = [search.invariant(ds.positions.values[i]) for i in rows]
        assert not any(search.same(inv[i], inv[j], 2, 1e-6)
                       for i in range(len(inv)) for j in range(i))
    # the synchronised energy is E_beta of a Dirac mass: (e^beta - I_0(beta))/(2 beta)
    from scipy.special import i0
    for beta in (1.0, 4.0, 9.0):
        e = ds.energy.values[sync & (ds.beta.values == beta)][0]
        assert abs(e - (np.exp(beta) - i0(beta)) / (2 * beta)) < 1e-13 * e


def test_sphere_closed_forms_and_saddles():
    """S^2, n = 4, beta = 3: the synchronised state and the antipodal clusters (spectra:
    the circle's twice), every other point of index >= 1, zero modes = orbit dimension."""
    ds = cp.critical_points({"critical_points": {"n": [4], "dim": 3, "beta": [3.0],
                                                 "starts": 12}})
    kinds = ds.kind.values
    sync = kinds == "synchronised"
    assert sync.sum() == 1 and ds.index.values[sync][0] == 0
    assert np.all(ds.index.values[~sync] >= 1)
    assert np.all(ds.zero_modes.values == ds.symmetry_zero_modes.values)
    anti = np.flatnonzero(kinds == "antipodal")
    assert {int(ds.cluster_sizes.values[i][1]) for i in anti} == {1, 2}
    for i in anti:
        k = int(ds.cluster_sizes.values[i][1])
        want = np.sort(np.tile(_antipodal_spectrum(4, k, 3.0), 2))
        w = ds.hessian_eigenvalues.values[i]
        assert np.max(np.abs(w - want)) <= 1e-10 * np.max(np.abs(want))


@pytest.mark.parametrize("d", [2, 3])
def test_same_orbit_modulo_rotations_reflections_permutations(d):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))  # a rotation or a reflection
    y = (x @ q.T)[rng.permutation(6)]
    mirror = x * np.r_[1.0, -1.0, np.ones(d - 2)]
    a = search.invariant(search.canonical(x))
    for other in (y, mirror):
        assert search.same(a, search.invariant(search.canonical(other)), d, 1e-9)
    moved = x.copy()
    moved[0] = search.exp_map(x[:1], np.full((1, d - 1), 1e-3))[0]
    assert not search.same(a, search.invariant(search.canonical(moved)), d, 1e-6)


@pytest.mark.parametrize("change, key", [
    ({"n": [1]}, "critical_points.n[0]"),
    ({"n": [6, 65]}, "critical_points.n[1]"),
    ({"n": [6, 4]}, "critical_points.n"),
    ({"dim": 1}, "critical_points.dim"),
    ({"beta": [0.0]}, "critical_points.beta[0]"),
    ({"beta": [4.0, 1.0]}, "critical_points.beta"),
    ({"beta": [800.0]}, "critical_points.beta[0]"),
    ({"families": ["random", "bogus"]}, "critical_points.families[1]"),
    ({"families": []}, "critical_points.families"),
    ({"families": ["random", "random"]}, "critical_points.families"),
    ({"starts": 0}, "critical_points.starts"),
    ({"jitter": -0.1}, "critical_points.jitter"),
    ({"tolerance": 0.0}, "critical_points.tolerance"),
    ({"zero_tolerance": 1.0}, "critical_points.zero_tolerance"),
    ({"match_tolerance": 0.0}, "critical_points.match_tolerance"),
    ({"max_iterations": 0}, "critical_points.max_iterations"),
    ({"seed": -1}, "critical_points.seed"),
])
def test_bad_input_before_any_work(change, key, monkeypatch):
    monkeypatch.setattr(cp, "run_member", lambda *a: pytest.fail("work started"))
    with pytest.raises(ConfigError) as err:
        cp.critical_points({"critical_points": change})
    assert err.value.key == key


def test_cli_one_line_run_resume(tmp_path, capsys, monkeypatch):
    """One line and status 2 for a bad value; a run interrupted after its first member
    resumes to the numbers of an uninterrupted one."""
    path = tmp_path / "c.toml"
    path.write_text("[critical_points]\nfamilies = [\"spiral\"]\n")
    assert main(["critical-points", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "critical_points.families[0]" in err[0]
    path.write_text("[critical_points]\nn = [4, 5]\nbeta = [2.0]\nstarts = 6\n"
                    "[output]\ncheckpoint_every = 1e-9\n")
    whole = tmp_path / "whole.nc"
    assert main(["critical-points", str(path), "--out", str(whole), "--no-progress"]) == 0
    assert "holds" in capsys.readouterr().out
    real = cp.run_member

    def stop_second(cfg, params):
        if params["n"] == 5:
            raise KeyboardInterrupt
        return real(cfg, params)

    monkeypatch.setattr(cp, "run_member", stop_second)
    part = tmp_path / "part.nc"
    assert main(["critical-points", str(path), "--out", str(part), "--no-progress"]) == 130
    monkeypatch.setattr(cp, "run_member", real)
    assert main(["critical-points", str(path), "--out", str(part), "--resume",
                 "--no-progress"]) == 0
    a, b = read_netcdf(whole), read_netcdf(part)
    for name in ("energy", "index", "hessian_eigenvalues", "positions", "kind", "hits"):
        np.testing.assert_array_equal(a[name].values, b[name].values)
    assert main(["plot", str(part), "--out", str(tmp_path / "figs")]) == 0
    assert (tmp_path / "figs" / "part_summary.png").stat().st_size > 10_000
