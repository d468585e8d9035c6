"""Issue 19, item 4: inputs of a hostile user that gave tracebacks, ran the wrong study or
gave advice that cannot be followed. Each is refused (or run) before any work; the CLI
prints one line ``meanfield: error: ...`` and exits with status 2."""
from __future__ import annotations

import math
from decimal import Context, Decimal, localcontext

import numpy as np
import pytest

from meanfield import config as cfgmod
from meanfield.cli import main
from meanfield.config.checkers import MAX_BETA
from meanfield.errors import ConfigError


def one_error_line(capsys, argv: list[str]) -> str:
    """Run the CLI; assert status 2 and one line of error, no traceback; the line."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("meanfield: error: "), err
    assert "Traceback" not in err
    return lines[0]


def write(path, text: str) -> str:
    path.write_text(text)
    return str(path)


# --- a config for one study run by another command ---------------------------------------

@pytest.mark.parametrize("command, section, owner", [
    ("long-context", "convergence", "convergence"),
    ("bifurcation", "long_context", "long-context"),
    ("evolve", "phase_diagram", "phase-diagram"),
    ("normalization", "metastability", "metastability"),
    ("particles", "bifurcation", "bifurcation"),
    ("compare", "contraction", "contraction"),
    ("metastability", "normalization", "normalization"),
])
def test_a_section_of_another_study_is_refused_naming_its_command(tmp_path, capsys,
                                                                  command, section, owner):
    # (before the fix, every command but phase-diagram and metastability ran its defaults)
    cfg = write(tmp_path / "c.toml", f"[{section}]\n")
    line = one_error_line(capsys, [command, cfg, "--out", str(tmp_path / "r.nc")])
    assert f"section [{section}]" in line and f"'meanfield {owner}'" in line
    assert not (tmp_path / "r.nc").exists()


def test_evolve_of_a_particle_config_names_the_particle_commands(tmp_path, capsys):
    cfg = write(tmp_path / "c.toml", "[particles]\nn = 10\n")
    line = one_error_line(capsys, ["evolve", cfg, "--out", str(tmp_path / "r.nc")])
    assert "[particles]" in line and "'meanfield particles'" in line


# --- advice that can be followed ------------------------------------------------------------

def test_a_utf8_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "bom.toml"
    path.write_bytes("\ufeff[model]\nbeta = 2.5\n".encode())  # as Notepad writes it
    assert cfgmod.load(path, task="evolve")["model"]["beta"] == 2.5


def test_out_a_directory_is_refused_at_once_not_sent_to_overwrite(tmp_path, capsys):
    cfg = write(tmp_path / "c.toml", "[time]\nt_final = 0.1\n")
    folder = tmp_path / "results"
    folder.mkdir()
    line = one_error_line(capsys, ["evolve", cfg, "--out", str(folder)])
    assert "is a directory" in line and "--overwrite" not in line
    # and with --overwrite the same words (before: exists -> --overwrite -> directory)
    for flag in ("--overwrite", "--resume"):
        assert one_error_line(capsys, ["evolve", cfg, "--out", str(folder), flag]) == line


def test_contraction_checks_every_beta_before_its_first_member(tmp_path, capsys):
    # before: each PDE member failed with the ConfigError and the run ended with
    # "retry with resume", which repeats the failure
    cfg = write(tmp_path / "c.toml", "[discretization]\nresolution = 16\n[time]\n"
                "t_final = 0.2\n[contraction]\nbeta = [0.5, 40.0]\nsources = [\"pde\"]\n")
    line = one_error_line(capsys, ["contraction", cfg, "--out", str(tmp_path / "r.nc")])
    assert "contraction.beta = 40" in line and "resolution >= 100" in line
    assert not list(tmp_path.glob("r.nc*"))  # no checkpoint: nothing ran


def test_the_bifurcation_scan_never_advises_finite_volumes():
    from meanfield.errors import SolverError
    from meanfield.studies.bifurcation.scan_member import _member_disc

    cfg = cfgmod.validate({"discretization": {"resolution": 32}}, "bifurcation")
    disc = _member_disc(cfg, 0.01)
    state = np.full_like(np.asarray(disc.to_state(np.ones(disc.grid.shape))), np.nan)
    with pytest.raises(SolverError) as err:
        disc.check(state, 1.0)
    assert "finite-volume" not in str(err.value) and "time.dt" in str(err.value)


# --- beta: accepted where the kernels compute it, refused beyond with the limit -----------

@pytest.mark.parametrize("command, text, key", [
    ("evolve", "[model]\nbeta = 1e300\n", "model.beta"),
    ("phase-diagram", "[phase_diagram]\nbeta = [1.0, 1e9]\n", "phase_diagram.beta[1]"),
    ("metastability", "[metastability]\nbeta = [1e300]\n", "metastability.beta[0]"),
    ("contraction", "[contraction]\nbeta = {start = 0, stop = 1e12, num = 3}\n",
     "contraction.beta[1]"),
    ("bifurcation", "[model]\nkappa = 4.0\n[bifurcation]\nparameter = \"beta\"\n"
     "start = 0.0\nstop = 1e300\n", "bifurcation.stop"),
])
def test_beta_beyond_the_float64_kernels_is_refused_naming_the_largest(tmp_path, capsys,
                                                                      command, text, key):
    cfg = write(tmp_path / "c.toml", text)
    line = one_error_line(capsys, [command, cfg, "--out", str(tmp_path / "r.nc")])
    assert key in line and f"up to {MAX_BETA:g}" in line


def test_beta_up_to_the_limit_is_accepted():
    assert cfgmod.validate({"model": {"beta": MAX_BETA}}, "evolve")["model"]["beta"] == MAX_BETA
    assert cfgmod.validate({"phase_diagram": {"beta": [710.0, MAX_BETA]}},
                           "phase_diagram")["phase_diagram"]["beta"] == [710.0, MAX_BETA]
    with pytest.raises(ConfigError):
        cfgmod.validate({"model": {"beta": 1.0000001 * MAX_BETA}}, "evolve")


def _exact(x: float) -> Decimal:
    return Decimal(x)  # the float's exact binary value


@pytest.mark.parametrize("beta", [5.0, 710.0, 5000.0, 1e8])
def test_equiangular_right_hand_sides_hold_past_the_exponential_overflow(beta):
    """SA equiangular ODEs at beta beyond e^709 (phase_diagram.beta = [710] and the
    normalization's model.beta = 710 raised OverflowError): the scaled forms against the
    original formulas evaluated in 50-digit decimal arithmetic (no overflow there)."""
    from meanfield.model.particles import AttentionParticles
    from meanfield.studies.tokens.normalization_theory import equiangular_log_rhs

    with localcontext(Context(prec=50, Emax=10**9, Emin=-10**9)):
        _compare_equiangular(beta, AttentionParticles(beta, True).equiangular_rhs(32),
                             equiangular_log_rhs("pre-ln", 32, beta, True))


def _compare_equiangular(beta: float, rhs, log_rhs) -> None:
    n = 32
    for rho in (-1 / (n - 1), 0.0, 0.5, 1 - 1e-6):
        r = _exact(rho)
        want = (2 * (1 - r) * ((n - 1) * r + 1)
                / ((_exact(beta) * (1 - r)).exp() + n - 1))
        got = rhs(0.0, [rho])[0]
        assert math.isclose(got, float(want), rel_tol=1e-12, abs_tol=1e-16)
    for eps in (1e-12, 1e-3, 0.5):
        e, radius = _exact(eps), Decimal("1.5")
        den = (_exact(beta) * e).exp() + n - 1
        rate = 2 * (n - (n - 1) * e) / den
        radial = ((_exact(beta) * e).exp() + (n - 1) * (1 - e)) / den
        got = log_rhs(0.0, [math.log(eps), 1.5])
        assert math.isclose(got[0], float(-rate / radius), rel_tol=1e-12, abs_tol=1e-300)
        assert math.isclose(got[1], float(radial), rel_tol=1e-12)


def test_equiangular_time_at_beta_710_against_quadrature():
    """The time to reach the threshold at beta = 710 (it overflowed): against
    ``int drho / rho'`` by quadrature (an independent method)."""
    from scipy import integrate

    from meanfield.studies.tokens.phase_diagram import equiangular_time

    beta, n, rho0, threshold = 710.0, 32, 0.99, 0.999

    def speed(rho: float) -> float:
        w = math.exp(-beta * (1 - rho))
        return 2 * (1 - rho) * ((n - 1) * rho + 1) * w / (1 + (n - 1) * w)

    want = integrate.quad(lambda r: 1 / speed(r), rho0, threshold, epsrel=1e-12,
                          limit=200)[0]
    assert math.isclose(equiangular_time(beta, n, threshold, rho0=rho0), want, rel_tol=1e-7)
    assert equiangular_time(beta, n, threshold) == math.inf  # from 0: e^-710, not by 1e6


# --- a wide bifurcation range ---------------------------------------------------------------

def test_bifurcation_over_kappa_up_to_1e300_locates_the_pitchforks(tmp_path):
    """``bifurcation.stop = 1e300`` (brentq gave up after 100 iterations on [2, 5e297]):
    the uniform state's pitchforks lie at kappa_k = 1/a_k, a_k = I_k(1)/I_0(1) (SA,
    beta = 1), each found once."""
    from scipy import special

    from meanfield.studies.bifurcation.study import bifurcation

    ds = bifurcation({"discretization": {"resolution": 32},
                      "bifurcation": {"stop": 1e300, "points": 4, "ds_max": 0.1}})
    assert ds.attrs["status"] in (0, 1)
    found = np.sort(ds.special_kappa.values[ds.special_type.values == "pitchfork"])
    k = np.arange(1, found.size + 1)
    analytic = 1 / (special.ive(k, 1.0) / special.ive(0, 1.0))
    assert found.size >= 3
    np.testing.assert_allclose(found, analytic, rtol=1e-8)
