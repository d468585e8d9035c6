"""Runs that would eat the machine are refused before any work (issue 9): the memory
estimate of ``meanfield.runs.budget`` against a fixed available memory, the key it names,
what it says would fit, and the long-run warning."""
from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import pytest

from meanfield import config as cfgmod
from meanfield.errors import ConfigError
from meanfield.runs import budget
from meanfield.runs.engine import Engine
from meanfield.runs.evolve import evolve
from meanfield.runs.particles import particles
from meanfield.runs.schedule import save_times
from meanfield.studies.transport.compare import compare

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
AVAILABLE = 16 * budget.GiB  # a fixed machine, whatever this one has free
DISK = 1024 * budget.GiB  # and a fixed disk: the result's frames are checked against it


@pytest.fixture
def machine(monkeypatch):
    """16 GiB available, 1 TiB of disk, and any run that gets past the checks fails
    loudly."""
    monkeypatch.setattr(budget, "available_memory", lambda: AVAILABLE)
    monkeypatch.setattr(budget, "free_disk", lambda folder: DISK)

    def reached(*args, **kwargs):
        raise AssertionError("the run started: it should have been refused before")

    monkeypatch.setattr(Engine, "run", reached)
    from meanfield.discretizations.base import Discretization
    monkeypatch.setattr(Discretization, "from_config", staticmethod(reached))


def refused(run, config: dict, key: str) -> str:
    with pytest.raises(ConfigError) as info:
        run(config)
    assert info.value.key == key
    message = str(info.value)
    assert re.search(r"about [0-9.e+]+ GiB", message), message
    return message


def fits_exactly(config: dict, task: str, key: str, message: str) -> None:
    """The value the message proposes fits and the next one does not."""
    value = int(re.search(re.escape(key) + r" <= (\d+) fits", message).group(1))
    section, name = key.split(".")
    cfg = cfgmod.validate(config, task)
    limit = budget.MEMORY_MARGIN * AVAILABLE
    cfg[section][name] = value
    assert budget.estimate(cfg, task).bytes <= limit
    cfg[section][name] = value + 1
    assert budget.estimate(cfg, task).bytes > limit


def test_huge_circle_resolution_is_refused(machine):
    config = {"discretization": {"resolution": 10**9}}
    message = refused(evolve, config, "discretization.resolution")
    fits_exactly(config, "evolve", "discretization.resolution", message)


def test_huge_particle_dimension_is_refused(machine):
    config = {"domain": {"geometry": "sphere", "dim": 10**6}, "initial": {"kind": "uniform"}}
    message = refused(particles, config, "domain.dim")
    fits_exactly(config, "particles", "domain.dim", message)


def test_too_many_particles_are_refused(machine):
    config = {"particles": {"n": 10**9}}
    message = refused(particles, config, "particles.n")
    fits_exactly(config, "particles", "particles.n", message)


def test_too_many_frames_are_refused(machine):
    config = {"time": {"t_final": 1e6, "save_every": 1e-3}}
    message = refused(evolve, config, "time.save_every")
    proposed = float(re.search(r"time.save_every >= ([0-9.e+-]+) fits", message).group(1))
    cfg = cfgmod.validate(config, "evolve")
    cfg["time"]["save_every"] = proposed
    assert budget.estimate(cfg, "evolve").bytes <= budget.MEMORY_MARGIN * AVAILABLE
    assert proposed > 1e-3


def test_sphere_band_limit_2047_is_refused_on_16_gib(machine):
    config = {"domain": {"geometry": "sphere"}, "discretization": {"resolution": 2047}}
    message = refused(evolve, config, "discretization.resolution")
    fits_exactly(config, "evolve", "discretization.resolution", message)


def test_sphere_finite_volumes_propose_a_mesh(machine, monkeypatch):
    finest = cfgmod.SPHERE_MESH_CELLS[-1]
    config = {"domain": {"geometry": "sphere"},
              "discretization": {"method": "finite-volume", "resolution": finest}}
    cfg = cfgmod.validate(config, "evolve")
    small = budget.estimate(cfgmod.validate(
        {**config, "discretization": {"method": "finite-volume", "resolution": 642}}),
        "evolve").bytes
    available = (small + budget.estimate(cfg, "evolve").bytes) / 2 / budget.MEMORY_MARGIN
    monkeypatch.setattr(budget, "available_memory", lambda: available)
    message = refused(evolve, config, "discretization.resolution")
    proposed = int(re.search(r"resolution = (\d+) fits", message).group(1))
    assert 642 <= proposed < finest and proposed in cfgmod.SPHERE_MESH_CELLS
    bigger = cfgmod.SPHERE_MESH_CELLS[cfgmod.SPHERE_MESH_CELLS.index(proposed) + 1]
    cfg["discretization"]["resolution"] = bigger
    assert budget.estimate(cfg, "evolve").bytes > budget.MEMORY_MARGIN * available


def test_compare_counts_the_ensemble(machine):
    config = {"particles": {"n": 10**6, "ensemble": 100}, "time": {"dt": 0.01}}
    message = refused(compare, config, "particles.n")
    assert "particles.n = 1000000" in message
    one = cfgmod.validate({"particles": {"n": 10**6, "ensemble": 1}, "time": {"dt": 0.01}},
                          "compare")
    many = cfgmod.validate(config, "compare")
    assert budget.estimate(many, "compare").bytes > 50 * budget.estimate(one, "particles").bytes


@pytest.mark.parametrize("name, task", [("clustering.toml", "evolve"),
                                        ("samples.toml", "evolve"),
                                        ("compare_sphere.toml", "compare"),
                                        ("high_dim_clustering.toml", "particles")])
def test_examples_fit_and_are_not_warned_about(name, task):
    cfg = cfgmod.load(EXAMPLES / name, task=task)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = budget.check(cfg, task, available=AVAILABLE)
    assert b.bytes < 1 * budget.GiB


@pytest.mark.parametrize("task", ["evolve", "particles", "compare"])
def test_defaults_fit(task):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        budget.check(cfgmod.validate({}, task), task, available=AVAILABLE)


def test_stiff_finite_volumes_are_warned_about_not_refused():
    cfg = cfgmod.validate({"model": {"kappa": 1e-6},
                           "discretization": {"method": "finite-volume"}}, "evolve")
    with pytest.warns(budget.LongRunWarning, match=r"at least .* h: at least"):
        b = budget.check(cfg, "evolve", available=AVAILABLE)
    # the diffusion bound, by hand: dt = 0.8 * 2.51 (2 pi / 256)^2 / (4 * 1e6)
    dt = 0.8 * 2.51 * (2 * math.pi / 256) ** 2 / 4e6
    t_final = cfg["time"]["t_final"]
    stage = budget.FV_STAGE_S + 256 * budget.FV_CELL_STAGE_S["circle"]
    assert b.seconds == pytest.approx(t_final / dt * 3 * stage)


def test_ordinary_finite_volume_noise_is_not_warned_about():
    cfg = cfgmod.validate({"model": {"kappa": 10.0},
                           "discretization": {"method": "finite-volume"}}, "evolve")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = budget.check(cfg, "evolve", available=AVAILABLE)
    assert b.seconds < 60


@pytest.mark.parametrize("t_final, save_every", [(10.0, 0.1), (1.0, 0.3), (12.0, 0.1),
                                                 (1.0, 1.0), (6.0, 0.25)])
def test_frame_count_is_the_number_of_save_times(t_final, save_every):
    cfg = cfgmod.validate({"time": {"t_final": t_final, "save_every": save_every}}, "evolve")
    assert budget.frame_count(cfg) == len(save_times(t_final, save_every))


def test_available_memory_reads_meminfo():
    assert 0 < budget.available_memory() < 2**62


@pytest.mark.parametrize("run, task, config", [
    (evolve, "evolve", {"time": {"t_final": 2e4, "save_every": 1e-3}}),
    (particles, "particles", {"particles": {"n": 10**5},
                              "time": {"t_final": 100.0, "save_every": 0.01}})])
def test_frames_streamed_with_an_output_are_counted_by_the_part(machine, tmp_path,
                                                                 monkeypatch, run, task,
                                                                 config):
    """Without an output all frames are in memory (refused here); with one they go to
    disk in parts (``meanfield.runs.frames``): a part's worth is counted and it fits."""
    from meanfield.runs import frames

    cfg = cfgmod.validate(config, task)
    kept = budget.estimate(cfg, task)
    streamed = budget.estimate(cfg, task, streamed=True)
    name = "PDE frames" if task == "evolve" else "token frames"
    assert kept.parts[name][0] > 2 * AVAILABLE
    # a part and one frame (2.4 MB for 1e5 tokens), a few times
    assert streamed.parts[name][0] <= budget.FRAME_COPIES * (frames.PART_BYTES + 3e6)
    refused(run, config, "time.save_every")
    with pytest.raises(AssertionError, match="the run started"):  # past the budget
        run(config, out=tmp_path / "run.nc")
    both = cfgmod.validate(config)
    assert budget.estimate(both, "compare", streamed=True).bytes == \
        budget.estimate(both, "compare").bytes  # compare's runs keep theirs in memory


def test_ensemble_studies_refuse_what_does_not_fit_before_any_work():
    """An ensemble too big for memory (the phase diagram's and the metastability study's
    attention matrices grow as n^2) is a ConfigError naming the key, before any member
    runs; a small one passes with its estimate."""
    from meanfield.studies.tokens.metastability import metastability
    from meanfield.studies.tokens.phase_diagram import phase_diagram

    with pytest.raises(ConfigError, match="particles.n = 100000"):
        phase_diagram({"particles": {"n": 100000}, "phase_diagram": {"systems": 4}})
    with pytest.raises(ConfigError, match="particles.n = 10000000"):
        metastability({"particles": {"n": 10_000_000}})
    gib = budget.check_ensemble(8, 32, 32, "particles.n", 32, saves=10) / budget.GiB
    assert 0 < gib < 1
    with pytest.raises(ConfigError, match="lower particles.n"):
        budget.check_ensemble(8, 32, 32, "particles.n", 32, available=budget.OVERHEAD)
