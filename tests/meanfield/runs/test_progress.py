"""progress=True from Python makes ``tqdm.auto`` bars (a widget in Jupyter, text in a
terminal), made in one place (``schedule.new_bar``) for the runs and the studies;
progress=False makes none; the command line keeps its text bar."""
from __future__ import annotations

import subprocess
import sys

import pytest
from tqdm import auto, std

import meanfield
from meanfield.runs.schedule import progress_bar

SMALL = {"model": {"beta": 0.0, "kappa": 3.0}, "discretization": {"resolution": 16},
         "time": {"t_final": 0.5, "save_every": 0.25}}


@pytest.fixture
def made(monkeypatch):
    """The bars made, by class: tqdm.auto's choice replaced by a recording subclass (in
    a notebook tqdm.auto.tqdm is the widget class; the code must take whatever it is)."""
    bars = []

    class Recording(auto.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, disable=True, **kwargs)
            self.asked = kwargs
            bars.append(self)

    monkeypatch.setattr(auto, "tqdm", Recording)
    return bars


def test_the_bar_is_tqdm_auto_class():
    bar = progress_bar(1.0, 0.0, True)
    try:
        assert type(bar) is auto.tqdm and isinstance(bar, std.tqdm)
    finally:
        bar.close()
    assert progress_bar(1.0, 0.0, False) is None


def test_evolve_and_a_study_use_tqdm_auto_when_asked(made):
    meanfield.evolve(SMALL, progress=True)
    assert len(made) == 1 and made[0].asked["unit"] == "t" and made[0].asked["total"] == 0.5
    meanfield.long_context({"long_context": {"direct_max": 32}}, progress=True)
    assert len(made) == 2 and made[1].asked["unit"] == "member"  # the members' bar
    meanfield.evolve(SMALL, progress=False)
    meanfield.long_context({"long_context": {"direct_max": 32}})  # default: no bar
    assert len(made) == 2


def test_the_command_line_keeps_a_text_bar(tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text("[model]\nbeta = 0.0\nkappa = 3.0\n[discretization]\nresolution = 16\n"
                   "[time]\nt_final = 0.5\nsave_every = 0.25\n")
    out = subprocess.run([sys.executable, "-m", "meanfield.cli", "evolve", str(cfg)],
                         capture_output=True, text=True, timeout=300, check=True)
    assert "100%" in out.stderr and "t = 0.5/0.5" in out.stderr  # tqdm text on stderr
