"""Input files bound to their result, found by a hostile user (issue 31, item 2): a run
records each input file (absolute path, SHA-256 of its bytes, the values of a small
matrix), and ``--resume`` refuses in one line, naming the file and its key, when a file
changed since the run began (it joined two models in one result, status 0)."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

import meanfield
from meanfield.cli import main
from meanfield.errors import ConfigError
from meanfield.runs import particles as particles_module
from meanfield.runs.schedule import checkpoint_path

TOML = """[domain]
geometry = "sphere"
[particles]
n = 4
seed = 1
[time]
t_final = 0.3
save_every = 0.1
dt = 0.05
[weights]
value = {file = "V.npy"}
"""


def _interrupted(tmp_path, monkeypatch, value: np.ndarray):
    """``sub/run.toml`` run from the parent folder and interrupted after its first
    interval (as a Ctrl-C: the checkpoint is kept); the result path."""
    (tmp_path / "sub").mkdir()
    toml = tmp_path / "sub" / "run.toml"
    # (an absolute path: the check does not lean on item 1's folder rule)
    toml.write_text(TOML.replace('"V.npy"', f'"{tmp_path / "sub" / "V.npy"}"'))
    np.save(tmp_path / "sub" / "V.npy", value)
    monkeypatch.chdir(tmp_path)
    real, calls = particles_module.ParticlesTask.advance, []

    def interrupt(self, *args):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *args)

    monkeypatch.setattr(particles_module.ParticlesTask, "advance", interrupt)
    out = tmp_path / "r.nc"
    assert main(["particles", "sub/run.toml", "--out", str(out), "--no-progress"]) == 130
    monkeypatch.setattr(particles_module.ParticlesTask, "advance", real)
    assert checkpoint_path(out).exists()
    return out


def test_resume_refuses_when_a_weights_file_changed(tmp_path, monkeypatch, capsys):
    """Interrupted with V = diag(-1, -2, -3); the file replaced by diag(-3, -2, -1) (the
    validated config is the same: the old code resumed, status 0, two models in one
    result); --resume: one line naming the file and weights.value.file, exit 2, the
    checkpoint kept and no result."""
    before = np.diag([-1.0, -2.0, -3.0])
    out = _interrupted(tmp_path, monkeypatch, before)
    kept = checkpoint_path(out).read_bytes()
    np.save(tmp_path / "sub" / "V.npy", before[::-1, ::-1])
    capsys.readouterr()
    code = main(["particles", "sub/run.toml", "--out", str(out), "--resume",
                 "--no-progress"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert str(tmp_path / "sub" / "V.npy") in lines[0] and "weights.value.file" in lines[0]
    assert "changed" in lines[0] and "--overwrite" in lines[0]
    assert checkpoint_path(out).read_bytes() == kept and not out.exists()
    with pytest.raises(ConfigError) as err:  # the Python API: the same, naming the key
        meanfield.particles(meanfield.config.load("sub/run.toml", task="particles"),
                            out=out, resume=True)
    assert err.value.key == "weights.value.file"
    # the file as it was: the resume goes on, and the result records the file
    np.save(tmp_path / "sub" / "V.npy", before)
    assert main(["particles", "sub/run.toml", "--out", str(out), "--resume",
                 "--no-progress"]) == 0
    assert not checkpoint_path(out).exists()


def test_the_result_records_each_input_file(tmp_path, monkeypatch):
    """The record: the key, the absolute path of the file beside the config (not the
    one in the working directory), the SHA-256 of its bytes and the small matrix."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "run.toml").write_text(TOML)
    value = np.array([[-1.0, 0.5, 0.0], [0.0, -1.0, 0.25], [0.0, 0.0, -1.0]])
    np.save(tmp_path / "sub" / "V.npy", value)
    np.save(tmp_path / "V.npy", 0.5 * np.eye(3))  # a decoy in the working directory
    monkeypatch.chdir(tmp_path)
    assert main(["particles", "sub/run.toml", "--out", "r.nc", "--no-progress"]) == 0
    with meanfield.io.read_netcdf(tmp_path / "r.nc") as ds:
        inputs = json.loads(ds.attrs["inputs"])
    path = tmp_path / "sub" / "V.npy"
    assert inputs == [{"key": "weights.value.file", "path": str(path),
                       "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                       "values": value.tolist()}]
