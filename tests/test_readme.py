"""The README runs as written: its code blocks, in order, in an empty folder.

A newcomer reads README.md top to bottom and types what it shows. This test does the
same: every ```toml block whose first line is ``# NAME.toml`` is written to NAME.toml,
every line of a ```bash block runs through ``bash`` (the installed ``meanfield`` console
script, in a subprocess, exactly as written), and every ```python block runs, in order,
in one namespace (as pasted into one interpreter), all in one temporary folder. A
statement whose line ends in ``# → VALUE`` is a claim about its value, checked against
the value it has: ``0.83146…`` (the digits shown, truncated) or ``0.83 ± 0.002``.

The one claim with a margin is stochastic: the particle snippet's time average of the
order parameter of 20000 noisy Kuramoto tokens over t in [10, 25] (seed 3, so the value
is fixed). Measured for seeds 3, 4, 5, 6: 0.8299, 0.8320, 0.8305, 0.8308 (per-save
standard deviation 0.0015-0.0022, correlation time about 1, so about 15 independent
saves and a standard error near 0.0005), against the exact 0.83146: the margin 0.002
holds the spread of the seeds and the O(dt) bias of Euler-Maruyama, and 0.83 ± 0.002
contains the exact value (``test_readme_kuramoto_claim_is_the_root`` checks the digits
of the deterministic claim against an independent root).

What is not run, and why: the quick start's environment lines (``python3 -m venv``,
``. .venv/bin/activate``, ``pip install ...``, ``python -m pytest``): they create and
install the environment this test runs in, and the last one runs the suite that holds
this test; the docs build (``python -m sphinx``) needs the docs extra, which the test
environment does not have. CI (``.ci/run``) runs those lines as written, in a fresh environment. The
quick start's ``meanfield demo`` (about 20 s of work) runs in the slow variant only: the
default suite runs the same command in ``tests/meanfield/test_cli_demo.py`` and checks
its results.
"""
from __future__ import annotations

import ast
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import i0e, i1e

README = Path(__file__).resolve().parent.parent / "README.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.M | re.S)
# Pieces of the quick start's `&&` chains that build the environment (see the docstring).
ENVIRONMENT = (re.compile(r"python3? -m venv "), re.compile(r"\. \.venv/bin/activate$"),
               re.compile(r"pip install "), re.compile(r"python -m pytest"),
               re.compile(r"python -m sphinx "))
CLAIM = re.compile(r"#\s*→\s*(?P<value>[-+]?\d+\.\d+)(?P<cut>…)?(?:\s*±\s*(?P<pm>\d+\.?\d*))?")
COMMAND_TIMEOUT_S = 300


def readme_blocks(text: str) -> list[tuple[str, str, int]]:
    """The fenced code blocks of ``text``: (language, body, line of the fence)."""
    return [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1)
            for m in FENCE.finditer(text)]


def command_lines(body: str) -> list[str]:
    """The commands of a bash block: its lines without comments and blank lines, with
    backslash continuations joined."""
    lines, pending = [], ""
    for raw in body.splitlines():
        line = pending + raw
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1] + " "
            continue
        pending = ""
        if line.strip() and not line.lstrip().startswith("#"):
            lines.append(line.strip())
    return lines


def runnable(command: str) -> str | None:
    """``command`` without the quick start's environment pieces (None if nothing is left)."""
    pieces = [p.strip() for p in command.split("&&")]
    kept = [p for p in pieces if not any(e.search(p) for e in ENVIRONMENT)]
    return " && ".join(kept) or None


def check_claim(value, comment: str, where: str) -> None:
    """Check the value of a statement against the ``# → ...`` claim on its line."""
    m = CLAIM.search(comment)
    assert m, f"{where}: a claim `# → ...` that this test cannot read: {comment!r}"
    x = float(value)
    shown = m.group("value")
    if m.group("pm"):
        margin = float(m.group("pm"))
        assert abs(x - float(shown)) <= margin, f"{where}: {x!r} is not {shown} ± {margin}"
    elif m.group("cut"):  # the digits shown are the value's, truncated
        decimals = len(shown.split(".")[1])
        assert np.trunc(x * 10**decimals) / 10**decimals == pytest.approx(
            float(shown), abs=0.1 / 10**decimals), f"{where}: {x!r} does not begin {shown}"
    else:
        assert x == float(shown), f"{where}: {x!r} is not {shown}"


def run_python(body: str, namespace: dict, where: str) -> list[tuple[str, float]]:
    """Run one python block statement by statement in ``namespace``; check the claims.

    Returns the claims checked, as (comment, value)."""
    tree = ast.parse(body)
    lines = body.splitlines()
    checked = []
    for node in tree.body:
        last = lines[node.end_lineno - 1]
        code = compile(ast.Module(body=[node], type_ignores=[]), where, "exec")
        if "→" not in last:
            exec(code, namespace)
            continue
        assert isinstance(node, ast.Expr), f"{where}: a claim on a line that is no expression"
        value = eval(compile(ast.Expression(node.value), where, "eval"), namespace)
        comment = last[last.index("#"):]
        check_claim(value, comment, f"{where}, line {node.end_lineno}")
        checked.append((comment, float(value)))
    return checked


def output_of(command: str) -> str | None:
    """The result file a ``meanfield`` run command names with ``--out``, if any."""
    words = shlex.split(command, comments=True)
    return words[words.index("--out") + 1] if "--out" in words[:-1] else None


def _children_cpu() -> float:
    """CPU seconds of the finished child processes (the commands' cost, whatever the
    load of the machine)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_readme(folder: Path, *, demo: bool) -> dict:
    """Run the README in ``folder``; returns what ran (for the report of a failure)."""
    exe_dir = Path(sys.executable).parent  # a venv's console scripts sit beside python
    env = dict(os.environ, PATH=os.pathsep.join([str(exe_dir), os.environ.get("PATH", "")]))
    assert shutil.which("meanfield", path=env["PATH"]), (
        "the console script `meanfield` is not installed (pip install -e .)")
    text = README.read_text(encoding="utf-8")
    namespace: dict = {"__name__": "__readme__"}
    ran: dict = {"commands": [], "files": [], "claims": [], "seconds": {}}
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        for lang, body, line in readme_blocks(text):
            where = f"README.md:{line}"
            if lang == "toml":
                first = body.splitlines()[0]
                m = re.fullmatch(r"#\s*(\S+\.toml)\s*", first)
                assert m, f"{where}: a toml block must name its file on its first line"
                (folder / m.group(1)).write_text(body, encoding="utf-8")
                ran["files"].append(m.group(1))
            elif lang == "bash":
                for command in command_lines(body):
                    todo = runnable(command)
                    if todo is None or (todo == "meanfield demo" and not demo):
                        continue
                    start, cpu = time.perf_counter(), _children_cpu()
                    out = subprocess.run(["bash", "-c", todo], cwd=folder, env=env,
                                         capture_output=True, text=True,
                                         timeout=COMMAND_TIMEOUT_S, check=False)
                    ran["seconds"][todo] = time.perf_counter() - start
                    print(f"{ran['seconds'][todo]:7.1f} s ({_children_cpu() - cpu:5.1f} s CPU)  "
                          f"{todo}")  # (seen with -s)
                    assert out.returncode == 0, (
                        f"{where}: `{todo}` exited with status {out.returncode}:\n"
                        f"{out.stderr[-3000:]}")
                    target = output_of(todo)
                    if target is not None:
                        assert (folder / target).is_file(), f"{where}: `{todo}` wrote no {target}"
                    ran["commands"].append(todo)
            elif lang == "python":
                start, cpu = time.perf_counter(), time.process_time()
                ran["claims"] += run_python(body, namespace, where)
                ran["seconds"][where] = time.perf_counter() - start
                print(f"{ran['seconds'][where]:7.1f} s ({time.process_time() - cpu:5.1f} s CPU)  "
                      f"the python block of {where}")
            else:
                raise AssertionError(f"{where}: a ```{lang} block this test does not know")
    finally:
        os.chdir(cwd)
    return ran


RUN_COMMANDS = ("evolve", "particles", "compare", "convergence", "contraction", "bifurcation",
                "phase-diagram", "metastability", "normalization", "long-context")


def test_readme_results_go_to_distinct_files():
    """Static, without running anything: every toml block names its file, and no run
    command of the README writes where an earlier one did unless it says --overwrite
    (the README's first failure: `particles` and `compare` on run.toml's run.nc)."""
    import tomllib

    files, written = {}, {}
    for lang, body, line in readme_blocks(README.read_text(encoding="utf-8")):
        if lang == "toml":
            m = re.fullmatch(r"#\s*(\S+\.toml)\s*", body.splitlines()[0])
            assert m, f"README.md:{line}: a toml block must name its file on its first line"
            files[m.group(1)] = tomllib.loads(body)
        if lang != "bash":
            continue
        for command in command_lines(body):
            words = shlex.split(command, comments=True)
            if words[:1] != ["meanfield"] or len(words) < 3 or words[1] not in RUN_COMMANDS:
                continue
            config = words[2]
            assert config in files, f"README.md:{line}: `{command}` reads {config}, not shown before"
            target = (output_of(command) or files[config].get("output", {}).get("path")
                      or Path(config).with_suffix(".nc").name)
            assert target not in written or "--overwrite" in words, (
                f"README.md:{line}: `{command}` writes {target}, which "
                f"`{written.get(target)}` wrote before")
            written[target] = command
    assert written


def _text_files() -> list[Path]:
    root = README.parent
    found = []
    for pattern in ("*.md", "*.py", "*.toml", "*.cfg"):
        for path in root.rglob(pattern):
            parts = path.relative_to(root).parts
            if not any(p.startswith(".") or p.endswith(".egg-info") or p == "build"
                       for p in parts[:-1]):
                found.append(path)
    return found


def test_conventions_live_in_the_repository():
    """The signs and reference results the code relies on are stated in docs/, and every
    "docs/NAME.md" that a file mentions exists; nothing points outside the repository to
    a design file."""
    root = README.parent
    this = Path(__file__).resolve()
    outside = re.compile(r"\.\./shared|DESIGN\.md")
    mentioned = re.compile(r"docs/([\w-]+\.md)")
    for path in _text_files():
        if path.resolve() == this:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        assert not outside.search(text), f"{path.relative_to(root)} points outside the repository"
        for name in mentioned.findall(text):
            assert (root / "docs" / name).is_file(), f"{path.relative_to(root)}: no docs/{name}"
    conventions = (root / "docs" / "conventions.md").read_text(encoding="utf-8")
    for fact in ("∂_t ρ + div(ρ v[ρ]) = κ⁻¹ Δρ", "√(2/κ) dW_i", "σ_k = k² (a_k − 1/κ)",
                 "r = I_1(κr) / I_0(κr)", "min(λ_att, (d − 1) λ_rep / 2)"):
        assert fact in conventions, fact


def kuramoto_root(kappa: float) -> float:
    """The non-trivial root of r = I_1(kappa r)/I_0(kappa r), independently (brentq)."""
    return brentq(lambda r: r - i1e(kappa * r) / i0e(kappa * r), 1e-3, 1.0, xtol=1e-15)


def test_readme_blocks_are_understood():
    """Every block is one this test runs (a new kind would otherwise be passed over), the
    quick start's environment lines are the only commands skipped, and the claims are
    readable."""
    text = README.read_text(encoding="utf-8")
    blocks = readme_blocks(text)
    assert {lang for lang, _, _ in blocks} <= {"bash", "python", "toml"}
    skipped = [c for lang, body, _ in blocks if lang == "bash"
               for c in command_lines(body) if runnable(c) != c]
    assert skipped and all(c.startswith(("python3 -m venv .venv && ",
                                         ". .venv/bin/activate && ")) for c in skipped)
    for lang, body, line in blocks:
        for k, src in enumerate(body.splitlines()):
            if "→" in src and lang == "python":
                assert CLAIM.search(src), f"README.md:{line + k + 1}: unreadable claim"


def test_readme_kuramoto_claim_is_the_root():
    """The digits the README shows for noisy Kuramoto at kappa = 4 are those of the root
    of the self-consistency equation (the claim itself, against an independent value)."""
    text = README.read_text(encoding="utf-8")
    m = re.search(r'"kappa": 4\.0.*?order_parameter\[-1\]\s*# → (\d\.\d+)…', text, re.S)
    assert m, "the README's noisy Kuramoto example and its claimed order parameter"
    shown = m.group(1)
    decimals = len(shown.split(".")[1])
    assert np.trunc(kuramoto_root(4.0) * 10**decimals) / 10**decimals == pytest.approx(
        float(shown), abs=1e-12)


def _results_are_clean(folder: Path) -> None:
    """Every result the README writes finished without a problem (status 0): an example
    whose study reports a problem (an unresolved run, a fit window that measures
    neither rate, a pitchfork off kappa_c) would teach the wrong thing."""
    from meanfield.io import read_netcdf

    results = sorted(folder.glob("*.nc"))
    assert results
    for path in results:
        ds = read_netcdf(path)
        assert int(ds.attrs["status"]) == 0, f"{path.name}: {ds.attrs['message']}"


def test_readme_runs_as_written(tmp_path):
    """Every command and snippet of the README, in order, in an empty folder (the demo
    aside: see the module docstring)."""
    ran = run_readme(tmp_path, demo=False)
    assert ran["commands"] and ran["claims"] and ran["files"]
    _results_are_clean(tmp_path)
    # the noisy Kuramoto snippet ends on the root (its claim, checked above by digits)
    assert ran["claims"][0][1] == pytest.approx(kuramoto_root(4.0), abs=1e-6)


@pytest.mark.slow
def test_readme_runs_as_written_with_the_demo(tmp_path):
    """The same, with the quick start's ``meanfield demo``."""
    ran = run_readme(tmp_path, demo=True)
    assert "meanfield demo" in ran["commands"]
    _results_are_clean(tmp_path)
    assert (tmp_path / "meanfield-demo" / "order_parameter.png").is_file()
