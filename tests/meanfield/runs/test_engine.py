"""The run engine with a toy task (a random walk of its own generator): the hooks' order,
the dataset attrs, Ctrl-C in a step or in a frame, bit-identical resume, checkpoints on
the wall clock, a config mismatch, a task whose part failed, and the step hook (the
checkpoints between points: tests/meanfield/runs/test_checkpoint_clock.py)."""
from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

import meanfield
from meanfield import ConfigError
from meanfield import config as cfgmod
from meanfield.io import read_netcdf
from meanfield.runs.engine import Engine, RunTask, StepHook, TaskFailed
from meanfield.runs.schedule import checkpoint_path

POINTS = 6


class Walk(RunTask):
    """x_{k+1} = x_k + a standard normal draw; the generator's state is in the state."""

    kind = "walk"

    def __init__(self, cfg, interrupt_at=None, frame_fails_at=None, fail=False):
        super().__init__(cfg)
        self.rng = np.random.default_rng(cfg["particles"]["seed"])
        self.interrupt_at, self.frame_fails_at, self.fail = interrupt_at, frame_fails_at, fail
        self.advanced = []

    def points(self):
        return list(range(POINTS))

    def start(self):
        return (0.0, self.rng.bit_generator.state)

    def advance(self, state, point, on_step):
        self.advanced.append(point)
        if point == self.interrupt_at:
            raise KeyboardInterrupt
        self.rng.bit_generator.state = state[1]
        return (state[0] + self.rng.standard_normal(), self.rng.bit_generator.state)

    def frame(self, state):
        if len(self.advanced) == self.frame_fails_at:
            raise KeyboardInterrupt
        return state[0]

    def dataset(self, frames, info):
        return xr.Dataset({"x": ("point", np.array(frames))}, attrs=dict(info))

    def checkpoint(self, state, frames):
        ds = self.dataset(frames, {})
        ds.attrs["rng"] = json.dumps(state[1])
        return ds

    def restore(self, ckpt):
        frames = list(ckpt["x"].values)
        return (frames[-1], json.loads(ckpt.attrs["rng"])), frames

    def where(self, done):
        return f"point {done - 1}"

    def finish(self, frames):
        if self.fail:
            raise TaskFailed("part 3 failed")


def config(seed=0, every=60.0):
    return cfgmod.validate({"particles": {"seed": seed},
                            "output": {"checkpoint_every": every}})


def run(tmp_path, task, resume=False, name="w.nc"):
    return Engine(task.cfg, tmp_path / name, resume=resume, overwrite=False).run(task)


def test_finished_run_attrs_and_output(tmp_path):
    ds = run(tmp_path, Walk(config()))
    assert ds.attrs["kind"] == "walk" and ds.attrs["status"] == 0
    assert ds.attrs["message"] == "finished" and ds.attrs["version"] == meanfield.__version__
    assert json.loads(ds.attrs["config"])["particles"]["seed"] == 0
    assert ds.sizes["point"] == POINTS and "wall_time_s" in ds.attrs
    expect = np.concatenate([[0.0], np.cumsum(np.random.default_rng(0).standard_normal(5))])
    np.testing.assert_array_equal(ds.x.values, expect)
    np.testing.assert_array_equal(read_netcdf(tmp_path / "w.nc").x.values, expect)
    assert not checkpoint_path(tmp_path / "w.nc").exists()
    with pytest.raises(ConfigError, match="exists"):  # claimed before any work
        Engine(config(), tmp_path / "w.nc")


@pytest.mark.parametrize("where", ["advance", "frame"])
def test_ctrl_c_keeps_frames_and_resume_is_bit_identical(tmp_path, where):
    full = run(tmp_path, Walk(config()), name="full.nc")
    kwargs = {"interrupt_at": 3} if where == "advance" else {"frame_fails_at": 3}
    part = run(tmp_path, Walk(config(), **kwargs))
    assert part.attrs["status"] == -1 and part.sizes["point"] == 3
    ckpt = checkpoint_path(tmp_path / "w.nc")
    assert "point 2" in part.attrs["message"] and str(ckpt) in part.attrs["message"]
    assert not (tmp_path / "w.nc").exists() and ckpt.exists()
    assert read_netcdf(ckpt).attrs["status"] == -1
    task = Walk(config())
    resumed = run(tmp_path, task, resume=True)
    assert task.advanced == [3, 4, 5]  # from the last point kept, not from the start
    np.testing.assert_array_equal(resumed.x.values, full.x.values)
    assert resumed.attrs["status"] == 0 and not ckpt.exists()


def test_resume_refuses_a_checkpoint_of_another_config(tmp_path):
    run(tmp_path, Walk(config(), interrupt_at=2))
    with pytest.raises(ConfigError, match="another config") as err:
        run(tmp_path, Walk(config(seed=5)), resume=True)
    assert err.value.key == "resume"
    assert "--overwrite" in str(err.value)  # advice that can be followed from the CLI


@pytest.mark.parametrize("every, expect", [(1e-9, [False] + [True] * (POINTS - 2)),
                                           (3600.0, [False] * (POINTS - 1))])
def test_checkpoints_on_the_wall_clock(tmp_path, every, expect):
    seen = []

    class Watched(Walk):
        def advance(self, state, point, on_step):
            seen.append(checkpoint_path(tmp_path / "w.nc").exists())
            return super().advance(state, point, on_step)

    run(tmp_path, Watched(config(every=every)))
    assert seen == expect  # after each point when due, never before the first
    assert not checkpoint_path(tmp_path / "w.nc").exists()  # gone with the result


def test_failed_part_keeps_the_rest_and_says_so(tmp_path):
    with pytest.raises(TaskFailed, match="part 3 failed.*kept in.*resume"):
        run(tmp_path, Walk(config(), fail=True))
    assert read_netcdf(checkpoint_path(tmp_path / "w.nc")).sizes["point"] == POINTS


class Bar:
    n = 0.0

    def update(self, dt):
        self.n += dt


@pytest.mark.parametrize("due, checkpoints", [(True, True), (False, True), (True, False)])
def test_step_hook_builds_the_state_only_when_a_checkpoint_is_due(due, checkpoints):
    kept, built, bar = [], [], Bar()

    def make_state():
        built.append(1)
        return "state"

    hook = StepHook(bar, kept.append if checkpoints else None, lambda: due)
    hook(0.25)
    hook.midway(make_state)
    hook(0.5)
    assert bar.n == 0.5  # the bar follows simulated time
    assert kept == (["state"] if due and checkpoints else [])
    assert len(built) == len(kept)  # the state is copied only for a checkpoint
