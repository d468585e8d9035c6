"""Issue 19, item 4: what scales an allocation or the work is estimated before anything
starts (``meanfield.runs.budget``: the save times, the result on disk, the bifurcation
study's grids and eigenproblems; ``meanfield.runs.limits``: time steps, members, local
workers). Each refusal names the key, the estimate and the limit; the CLI prints it as
one line with status 2."""
from __future__ import annotations

import math

import pytest

from meanfield import config as cfgmod
from meanfield.cli import main
from meanfield.errors import ConfigError
from meanfield.runs import budget, limits

GiB = 2**30


def one_error_line(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("meanfield: error: "), err
    return lines[0]


# --- save times -------------------------------------------------------------------------

def test_the_save_times_themselves_are_counted():
    """t_final = 1e6 every 1e-4: 1e10 save times, 160 GB of them before the first step
    (``save_times`` raised MemoryError)."""
    cfg = cfgmod.validate({"time": {"t_final": 1e6, "save_every": 1e-4}}, "evolve")
    est = budget.estimate(cfg, "evolve", streamed=True)
    frames = budget.frame_count(cfg)
    assert est.parts["save times"] == (16.0 * frames, "time.save_every")
    with pytest.raises(ConfigError) as err:
        budget.check(cfg, "evolve", available=16 * GiB, streamed=True)
    assert err.value.key == "time.save_every"
    assert "mostly save times" in str(err.value) and "time.save_every >= " in str(err.value)


def test_evolve_with_1e10_save_times_is_one_line(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[time]\nt_final = 1.0\n")
    line = one_error_line(capsys, ["evolve", str(cfg), "--set", "time.t_final=1e6",
                                   "--set", "time.save_every=1e-4",
                                   "--out", str(tmp_path / "r.nc")])
    # the disk first (38 TB of frames): its save_every fits the memory as well
    assert "time.save_every = 0.0001" in line and "on disk" in line


def test_a_result_larger_than_the_free_disk_is_refused():
    cfg = cfgmod.validate({"time": {"t_final": 1e4, "save_every": 1e-3},
                           "discretization": {"resolution": 256}}, "evolve")
    frames = budget.frame_count(cfg)
    need = budget.DISK_COPIES * frames * 256 * 8.0
    assert budget.check_disk(cfg, "evolve", "r.nc", free=int(need) + 1) == need
    with pytest.raises(ConfigError) as err:
        budget.check_disk(cfg, "evolve", "r.nc", free=int(need) - 1)
    assert err.value.key == "time.save_every" and "on disk" in str(err.value)
    # what it advises fits: its save_every gives at most the free space
    advised = float(str(err.value).split("time.save_every >= ")[1].split(" ")[0])
    fitted = cfgmod.validate({"time": {"t_final": 1e4, "save_every": advised},
                              "discretization": {"resolution": 256}}, "evolve")
    budget.check_disk(fitted, "evolve", "r.nc", free=int(need) - 1)


# --- the bifurcation study -------------------------------------------------------------

@pytest.mark.parametrize("geometry, resolution", [("sphere", 2047), ("circle", 10**8)])
def test_bifurcation_has_a_memory_estimate(tmp_path, capsys, geometry, resolution):
    """S^2 at L = 2047 allocated 128 GiB and S^1 at n = 1e8 planned FFTs for minutes: both
    are refused before any grid is made, naming the resolution that fits."""
    cfg = cfgmod.validate({"domain": {"geometry": geometry},
                           "discretization": {"resolution": resolution}}, "bifurcation")
    est = budget.estimate(cfg, "bifurcation")
    assert est.dominant == ("eigenproblems", "discretization.resolution")
    with pytest.raises(ConfigError) as err:
        budget.check(cfg, "bifurcation", available=64 * GiB)
    assert err.value.key == "discretization.resolution" and "fits" in str(err.value)
    toml = tmp_path / "b.toml"
    toml.write_text(f"[domain]\ngeometry = \"{geometry}\"\n[discretization]\n"
                    f"resolution = {resolution}\n")
    line = one_error_line(capsys, ["bifurcation", str(toml), "--out",
                                   str(tmp_path / "r.nc")])
    assert f"discretization.resolution = {resolution}" in line and "GiB" in line


def test_the_pitchforks_dense_jacobian_is_counted():
    """At each pitchfork the mode is read from the eigenvectors of the dense Jacobian of
    all (L+1)^2 real components: measured 1054 MiB over the import at L = 63, so the
    estimate grows as (L+1)^4; the scan's stability is dense up to DENSE_MAX only."""
    from meanfield.discretizations.spectrum import DENSE_MAX

    def eigen(lmax: int, mode: str = "continuation") -> float:
        cfg = cfgmod.validate({"domain": {"geometry": "sphere"},
                               "discretization": {"resolution": lmax},
                               "bifurcation": {"mode": mode}}, "bifurcation")
        return budget.estimate(cfg, "bifurcation").parts["eigenproblems"][0]

    assert eigen(63) == budget.SAFETY * budget.DENSE_ENTRY_BYTES * 64.0**4
    assert eigen(63) > 1054 * 2**20  # above the measured peak increment
    assert eigen(1023) / eigen(511) == pytest.approx((1024 / 512) ** 4, rel=0.01)
    scan = eigen(1023, "scan") / (budget.SAFETY)  # the axisymmetric blocks: 2L (L+1)^2
    assert scan == max(budget.DENSE_ENTRY_BYTES * DENSE_MAX**2,
                       budget.EIGEN_COPIES * 2 * 1023 * 1024**2 * 8.0)


# --- workers ----------------------------------------------------------------------------

def test_local_workers_are_capped_at_the_cores():
    assert limits.check_workers(4, None, cores=4) == 4
    assert limits.check_workers(2, None, cores=1) == 2  # two are always allowed
    assert limits.check_workers(1000, "tcp://10.0.0.1:8786", cores=2) == 1000  # theirs
    with pytest.raises(ConfigError) as err:
        limits.check_workers(1000, None, cores=16)
    assert err.value.key == "parallel.workers" and "at most 16" in str(err.value)


def test_a_thousand_workers_are_refused_before_any_process(tmp_path, capsys):
    toml = tmp_path / "lc.toml"
    toml.write_text("[long_context]\nn = [2, 4]\n[parallel]\nworkers = 1000\n")
    line = one_error_line(capsys, ["long-context", str(toml), "--out",
                                   str(tmp_path / "r.nc")])
    assert "parallel.workers = 1000" in line and "parallel.scheduler" in line


# --- work ----------------------------------------------------------------------------------

@pytest.mark.parametrize("command, section", [("normalization", "normalization"),
                                              ("metastability", "metastability")])
def test_times_of_1e12_are_refused_by_their_step_count(tmp_path, capsys, command, section):
    """Clustered tokens are stiff at their rate (2 for SA): the adaptive RK4 step stays
    below ~10.5 / rate (measured: 1904 and 1920 steps to t = 1e4), so t = 1e12 is more
    than 1e11 steps; refused, naming the key and the limit."""
    toml = tmp_path / "c.toml"
    toml.write_text(f"[{section}]\ntimes = [1, 1e12]\n[particles]\nn = 8\n")
    line = one_error_line(capsys, [command, str(toml), "--out", str(tmp_path / "r.nc")])
    assert f"{section}.times" in line and "at least 1.67e+11 time steps" in line
    assert f"end the times by t = {limits.MAX_STEPS * limits.CLUSTER_STEP_RATE / 2:.3g}" \
        in line


def test_the_default_times_pass_the_step_count():
    from meanfield.studies.tokens.normalization import check_normalization_config

    check_normalization_config(cfgmod.validate({"normalization": {"dim": 8}},
                                               "normalization"))  # times up to 1e4
    with pytest.raises(ConfigError) as err:
        limits.check_clustered_steps(1e12, 2 * math.exp(10), "k", 1, "USA")
    assert "step at most ~0.000272" in str(err.value)


def test_a_billion_members_are_refused_before_their_list_is_made(tmp_path, capsys):
    """1e5 token counts x 1e4 replicas: the plan's list of 1e9 members hung at 2.4 GB
    (here 1e3 x 1e4: validating 1e5 counts alone takes seconds)."""
    toml = tmp_path / "c.toml"
    toml.write_text("[convergence]\nn = {start = 2, stop = 1001, num = 1000}\n"
                    "replicas = 10000\n")
    line = one_error_line(capsys, ["convergence", str(toml), "--out", str(tmp_path / "r.nc")])
    assert "convergence.replicas = 10000" in line and "1e+07 members" in line
    assert limits.check_members(limits.MAX_MEMBERS, "k", 1, "") == limits.MAX_MEMBERS


@pytest.mark.parametrize("command, text, key", [
    ("phase-diagram", "[phase_diagram]\nsystems = 10000000\nbatch = 1\n",
     "phase_diagram.batch"),
    ("metastability", "[metastability]\nsystems = 1000000\nchunk = 1\n"
     "beta = {start = 1, stop = 100, num = 100}\n", "metastability.chunk"),
    ("normalization", "[normalization]\nsystems = 10000000\nchunk = 1\ndim = 8\n"
     "times = [1.0, 2.0]\narchitectures = [\"post-ln\"]\n",  # (one rule: the members,
     "normalization.chunk"),                                   # not the result, too many)
])
def test_member_counts_of_the_ensemble_studies(tmp_path, capsys, command, text, key):
    toml = tmp_path / "c.toml"
    toml.write_text(text + "[particles]\nn = 4\n")
    line = one_error_line(capsys, [command, str(toml), "--out", str(tmp_path / "r.nc")])
    assert key in line and "members" in line


def test_a_fixed_step_over_a_long_span_is_refused_by_its_step_count(tmp_path, capsys):
    """Noisy tokens need a fixed step: dt = 0.01 up to t = 1e12 is 1e14 steps."""
    toml = tmp_path / "p.toml"
    toml.write_text("[model]\nkappa = 4.0\n[time]\nt_final = 1e12\nsave_every = 1e11\n"
                    "dt = 0.01\n[particles]\nn = 10\n")
    line = one_error_line(capsys, ["particles", str(toml), "--out", str(tmp_path / "r.nc")])
    assert "time.dt = 0.01" in line and "at least 1e+14 time steps" in line
    cfg = cfgmod.validate({"time": {"t_final": 1e7, "save_every": 1e6, "dt": 0.01}},
                          "evolve")  # 1e9 steps: at the limit, not refused for them
    budget.check(cfg, "evolve", available=2**40)
