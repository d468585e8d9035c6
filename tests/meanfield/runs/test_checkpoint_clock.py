"""Checkpoints on the wall clock between save times (issue 9): a stepping task offers its
exact state after each step (``StepHook.midway``), the engine writes it when a checkpoint
is due; Ctrl-C afterwards keeps the latest exact state (never an older one), and resume
from the middle of an interval lands on the next save bit for bit as an uninterrupted run.

Evolve (spectral, finite-volume, on the circle and the sphere: the driver ``integrate``)
and particles (noise: fixed Euler-Maruyama steps; no noise: adaptive RK4), each
interrupted by a patched step hook raising KeyboardInterrupt in the middle of an
interval."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import meanfield
from meanfield.io import read_netcdf
from meanfield.model import particles as pm
from meanfield.runs import engine as engine_module
from meanfield.runs import evolve as evolve_module
from meanfield.runs import pde_steps
from meanfield.runs.schedule import checkpoint_path, save_times

EVOLVE = {"model": {"beta": 1.0, "kappa": 3.0, "normalized": False},
          "initial": {"kind": "von_mises", "center": 1.0, "concentration": 1.0},
          "time": {"t_final": 0.75, "save_every": 0.25, "tolerance": 1e-10}}
SPHERE = {"domain": {"geometry": "sphere"}, "model": {"beta": 1.0, "kappa": 5.0},
          "initial": {"kind": "von_mises", "center": [0.0, 0.6, 0.8], "concentration": 2.0},
          "time": {"t_final": 0.75, "save_every": 0.25, "tolerance": 1e-12}}
PARTICLES = {"model": {"beta": 1.0}, "initial": {"kind": "von_mises", "concentration": 1.0},
             "time": {"t_final": 0.75, "save_every": 0.25}, "particles": {"n": 60}}
CASES = {
    "evolve-spectral": (meanfield.evolve,
                        {**EVOLVE, "discretization": {"method": "spectral", "resolution": 32}}),
    "evolve-finite-volume": (meanfield.evolve, {**EVOLVE, "discretization": {
        "method": "finite-volume", "resolution": 32}}),
    "evolve-sphere-spectral": (meanfield.evolve, {**SPHERE, "discretization": {
        "method": "spectral", "resolution": 24}}),
    "evolve-sphere-finite-volume": (meanfield.evolve, {**SPHERE, "discretization": {
        "method": "finite-volume", "resolution": 642}}),
    "particles-noise": (meanfield.particles, {**PARTICLES, "model": {"beta": 1.0, "kappa": 10.0},
                                              "time": {**PARTICLES["time"], "dt": 0.02}}),
    "particles-adaptive": (meanfield.particles, {**PARTICLES, "time": {
        **PARTICLES["time"], "tolerance": 1e-10}}),
    # Mix-LN switches inside interval 2 (meanfield.model.normalizations.PhasedStepper)
    "particles-mix-ln": (meanfield.particles, {
        **PARTICLES, "time": {**PARTICLES["time"], "tolerance": 1e-10},
        "particles": {"n": 30, "architecture": "mix-ln", "mix_switch": 0.4}}),
}
SAVES = save_times(0.75, 0.25)


class Steps:
    """Spies on the ``on_state`` of the stepping: records where each step ends (``t``, and
    ``taken`` for the noise steps, which report the interval's start), makes a checkpoint
    due at step ``due_at`` only (None: the real clock), raises KeyboardInterrupt after
    step ``stop_at``; all steps are counted from 1 over the whole run."""

    def __init__(self, due_at=None, stop_at=None, out=None):
        self.records, self.due_at, self.stop_at, self.out = [], due_at, stop_at, out
        self.due_now = False

    def wrap(self, on_state):
        def spy(t, *rest):
            self.records.append((t, rest[2]) if len(rest) == 3 else (t, 0))
            step = len(self.records)
            self.due_now = step == self.due_at
            if self.stop_at is not None and step == self.stop_at and self.due_at is None:
                # a checkpoint of the step before is on disk when Ctrl-C comes
                assert where(read_netcdf(checkpoint_path(self.out))) == self.records[-2]
            on_state(t, *rest)
            self.due_now = False
            if step == self.stop_at:
                raise KeyboardInterrupt
        return spy

    def patch(self, monkeypatch, name):
        if name.startswith("evolve"):
            real = evolve_module.integrate

            def integrate(*args, on_state, **kw):
                return real(*args, on_state=self.wrap(on_state), **kw)
            monkeypatch.setattr(evolve_module, "integrate", integrate)
            # adaptive spectral runs step through DenseRun (steps not cut by the saves):
            # its hook gets the stepping state, recorded at the step's end as (t, 0)
            real_dense = pde_steps.DenseRun.advance

            def advance(run, st, point, on_step, on_state=None):
                spy = self.wrap(lambda t, stepping: on_state(stepping))
                return real_dense(run, st, point, on_step,
                                  on_state=lambda stepping: spy(stepping.t, stepping))
            monkeypatch.setattr(pde_steps.DenseRun, "advance", advance)
        else:
            real = pm.TokenStepper.advance

            def advance(stepper, *args, on_state=None, **kw):
                return real(stepper, *args, on_state=self.wrap(on_state), **kw)
            monkeypatch.setattr(pm.TokenStepper, "advance", advance)
        if self.due_at is not None:
            monkeypatch.setattr(engine_module.CheckpointClock, "due",
                                lambda clock: self.due_now)


# adaptive spectral and particle runs: steps that the saves do not cut
# (meanfield.runs.pde_steps; meanfield.model.free_steps, issue 32)
DENSE = ("evolve-spectral", "evolve-sphere-spectral", "particles-adaptive")


def where(ckpt):
    """(t, taken) of a checkpoint's state in the middle of an interval, else None."""
    if "checkpoint_t" not in ckpt.attrs:
        return None
    return float(ckpt.attrs["checkpoint_t"]), int(ckpt.attrs.get("checkpoint_taken", 0))


def interval(record) -> int:
    """The interval (1: from SAVES[0] to SAVES[1]) a step ends in."""
    t, taken = record
    # noise steps report the interval's start; the others their end (a save: the last)
    return int(np.searchsorted(SAVES, t, side="right" if taken else "left"))


@functools.cache
def uninterrupted(name):
    """The uninterrupted run and where its steps end."""
    run, cfg = CASES[name]
    steps = Steps()
    with pytest.MonkeyPatch.context() as mp:
        steps.patch(mp, name)
        ds = run(cfg)
    return ds, steps.records


def plan(name, mode):
    """(due_at, stop_at, checkpointed step) for a mode: "every" (checkpoint_every tiny;
    Ctrl-C two steps into interval 2), "same" (one checkpoint a step into interval 2,
    Ctrl-C two steps later in the same interval), "later" (Ctrl-C in interval 3)."""
    records = uninterrupted(name)[1]
    # the steps strictly inside intervals 2 and 3 (the last of each lands on the save)
    second = [k + 1 for k, r in enumerate(records) if interval(r) == 2][:-1]
    third = [k + 1 for k, r in enumerate(records) if interval(r) == 3][:-1]
    assert len(second) >= 3 and third, "too few steps in an interval to test"
    if mode == "every":
        return None, second[1], second[1]
    if mode == "same":
        return second[0], second[2], second[0]
    if name in DENSE:  # (the first step of interval 3 crosses the save: the one after)
        assert len(third) >= 2, "too few steps in an interval to test"
        return second[0], third[1], None
    return second[0], third[0], None


@pytest.mark.parametrize("mode", ["every", "same", "later"])
@pytest.mark.parametrize("name", list(CASES))
def test_checkpoint_between_saves_and_exact_resume(tmp_path, monkeypatch, name, mode):
    if name == "particles-mix-ln" and mode != "same":  # (the others: as particles-adaptive)
        pytest.skip("Mix-LN checks the resume across its switch in mode 'same' only")
    run, cfg = CASES[name]
    full, records = uninterrupted(name)
    due_at, stop_at, kept = plan(name, mode)
    out = tmp_path / "run.nc"
    every = 1e-9 if mode == "every" else 1e9
    cfg = {**cfg, "output": {"checkpoint_every": every}}
    steps = Steps(due_at, stop_at, out)
    with monkeypatch.context() as mp:
        steps.patch(mp, name)
        part = run(cfg, out=out)
    assert part.attrs["status"] == -1 and "resume" in part.attrs["message"]
    assert steps.records == records[:stop_at]  # the interrupted run stepped as the full one
    ckpt = read_netcdf(checkpoint_path(out))
    if kept is None:  # Ctrl-C in a later interval: the save after the checkpoint is later
        assert ckpt.attrs["checkpoint_frames"] == 3
        if name in DENSE:  # (steps cross the saves: the state is that of the crossing step)
            assert where(ckpt) == next(r for r in records if r[0] > SAVES[2])
        else:  # (a save ends a step: no state inside an interval)
            assert where(ckpt) is None
    else:  # the state of the step checkpointed, not the older save before it
        assert where(ckpt) == records[kept - 1] and ckpt.attrs["checkpoint_frames"] == 2
        assert "stepped on to t = " in ckpt.attrs["message"]
    resumed = run(cfg, out=out, resume=True)
    assert resumed.attrs["status"] == 0 and not checkpoint_path(out).exists()
    for var in ("density", "position", "energy"):
        if var in full:
            np.testing.assert_array_equal(resumed[var].values, full[var].values)
