"""The first hour of a new user (issue 9): caches outside the package, --version,
``meanfield.load_config``, a second ``meanfield demo``, commands not yet available."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import pytest

import meanfield
from meanfield import config
from meanfield.cli import PLANNED, main
from solvers.cache import cache_dir

REPO = Path(__file__).resolve().parents[2]


def _python(code: str, env_update: dict, cwd: Path) -> subprocess.CompletedProcess:
    """``python -c code`` in a fresh process, without a NUMBA_CACHE_DIR from outside."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(env_update)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, "-c", code], check=False,
                         capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    assert out.returncode == 0, out.stderr
    return out


@pytest.mark.parametrize("first_import", [
    "import meanfield.model.kernels",        # through the package
    "import solvers.particles.direct",       # the numerics layer alone
    "import numba; import meanfield",        # numba imported before meanfield
])
def test_numba_cache_goes_to_the_user_cache_dir(tmp_path, first_import):
    out = _python(f"{first_import}; import numba, os; print(numba.config.CACHE_DIR); "
                  "print(os.environ['NUMBA_CACHE_DIR'])",
                  {"MEANFIELD_CACHE": str(tmp_path)}, cwd=tmp_path)
    assert out.stdout.split() == [str(tmp_path / "numba")] * 2


def test_numba_cache_dir_set_by_the_user_is_kept(tmp_path):
    mine = tmp_path / "mine"
    out = _python("import meanfield.model.kernels, numba; print(numba.config.CACHE_DIR)",
                  {"MEANFIELD_CACHE": str(tmp_path), "NUMBA_CACHE_DIR": str(mine)},
                  cwd=tmp_path)
    assert out.stdout.strip() == str(mine)


def test_compiled_functions_are_written_to_the_cache_not_beside_the_module(tmp_path):
    # A cache=True function compiled in a fresh process: its index file appears under
    # $MEANFIELD_CACHE/numba and nothing new appears in the package's __pycache__.
    pycache = REPO / "meanfield" / "metrics" / "__pycache__"
    start = time.time() - 1.0
    _python("import numpy as np; from meanfield.metrics.clusters import _prim; "
            "_prim(np.eye(3))", {"MEANFIELD_CACHE": str(tmp_path)}, cwd=tmp_path)
    written = [p.name for p in (tmp_path / "numba").rglob("*.nbi")]
    assert any(name.startswith("clusters._prim") for name in written), written
    beside = [p for p in pycache.glob("clusters._prim*") if p.stat().st_mtime > start]
    assert beside == []


def test_fftw_wisdom_and_numba_share_one_cache_dir(monkeypatch, tmp_path):
    from solvers.transforms import fft

    monkeypatch.setenv("MEANFIELD_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path
    assert fft._wisdom_path().parent == tmp_path
    monkeypatch.delenv("MEANFIELD_CACHE")
    assert cache_dir() == Path.home() / ".cache" / "meanfield"


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"meanfield {meanfield.__version__}"
    try:  # installed (README step 1 or 2): the metadata pip recorded says the same
        assert meanfield.__version__ == metadata.version("meanfield")
    except metadata.PackageNotFoundError:  # a source tree on PYTHONPATH: no metadata
        pass


def test_commands_not_available_yet_are_not_advertised(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    helptext = capsys.readouterr().out
    assert "demo" in helptext and "evolve" in helptext
    for name in PLANNED:
        assert name not in helptext
        assert main([name, "run.toml", "--set", "model.beta=1"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1
        assert f"'meanfield {name}' is not available yet" in err


TOML = """
[model]
beta = 9.0
normalized = true

[discretization]
method = "finite-volume"
resolution = 128

[initial]
kind = "von_mises"
concentration = 3.0
"""


def test_load_config_reads_validates_and_overrides(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(TOML)
    raw = {"model": {"beta": 9.0, "normalized": True},
           "discretization": {"method": "finite-volume", "resolution": 128},
           "initial": {"kind": "von_mises", "concentration": 3.0}}
    assert meanfield.load_config(path) == config.validate(raw)
    raw["model"]["beta"] = 4.0
    raw["time"] = {"t_final": 2.0}
    assert meanfield.load_config(str(path), ["model.beta=4", "time.t_final=2"]) == \
        config.validate(raw)
    assert meanfield.load_config(path, "model.beta=4")["model"]["beta"] == 4.0


def test_load_config_for_a_task_runs_the_studies_that_take_their_own_sections():
    # phase_diagram and metastability refuse sections they do not take, so the config of
    # load_config without a task (every section) was refused by them; with task= it is
    # the CLI's config, and the study runs from it
    example = Path(__file__).resolve().parents[2] / "examples" / "metastability.toml"
    with pytest.raises(meanfield.ConfigError, match="not taken by task"):
        meanfield.metastability(meanfield.load_config(example))
    cfg = meanfield.load_config(example, ["particles.n=8", "metastability.beta=[4.0]",
                                          "metastability.systems=1",
                                          "metastability.times=[0.5, 1.0]"],
                                task="metastability")
    assert set(cfg) == set(config.task_sections("metastability"))
    assert meanfield.metastability(cfg).attrs["status"] == 0
    phase = example.with_name("phase_diagram.toml")  # the CLI's spelling is taken too
    assert set(meanfield.load_config(phase, task="phase-diagram")) == \
        set(config.task_sections("phase_diagram"))


def test_load_config_bad_input_names_the_key(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(TOML.replace("beta = 9.0", 'beta = "nine"'))
    with pytest.raises(meanfield.ConfigError) as exc:
        meanfield.load_config(path)
    assert exc.value.key == "model.beta"
    with pytest.raises(meanfield.ConfigError) as exc:
        meanfield.load_config(tmp_path / "missing.toml")
    assert "does not exist" in str(exc.value)


def test_demo_a_second_time_says_what_to_do(tmp_path, capsys):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "clustering.nc").write_bytes(b"first run")
    assert main(["demo", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--overwrite" in err and "--out" in err and "clustering.nc" in err
    assert (out / "clustering.nc").read_bytes() == b"first run"  # nothing computed
    assert sorted(p.name for p in out.iterdir()) == ["clustering.nc"]


def test_demo_out_onto_a_file_is_one_line(tmp_path, capsys):
    target = tmp_path / "afile"
    target.write_text("x")
    assert main(["demo", "--out", str(target), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is a file" in err


def test_cli_warnings_are_one_line(tmp_path):
    """A run the budget expects to take hours warns in one line before it starts (the
    run is stopped at once by an impossible output here: nothing is computed)."""
    toml = tmp_path / "slow.toml"
    toml.write_text('[model]\nkappa = 1e-6\n[discretization]\nmethod = "finite-volume"\n'
                    "resolution = 512\n[time]\nt_final = 1.0\n")
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    run = subprocess.run([sys.executable, "-m", "meanfield", "evolve", str(toml), "--out",
                          str(blocker / "r.nc"), "--no-progress"],
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 2
    err = run.stderr.strip().splitlines()
    warning = [line for line in err if line.startswith("meanfield: warning")]
    assert len(warning) == 1 and warning[0].startswith("meanfield: warning: this run will")
    assert len(err) == 2 and err[1].startswith("meanfield: error:")
