"""Input files, found by a hostile user (issue 31, items 1, 7 and 12): a weights file is
read against the config file's folder (not the working directory); a complex ``.npy`` is
refused on the command line as in Python; a text ``.npy``, a device, a directory and a
file that is not numbers are each named for what they are, and no message quotes a
file's contents; nothing the package reads is unpickled."""
from __future__ import annotations

import ast
import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

from meanfield import config as cfgmod
from meanfield.cli import main
from meanfield.config.input_files import SMALL_VALUES, read_numbers, record, resolve
from meanfield.config.weights import head_matrices
from meanfield.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]

TOML = """[domain]
geometry = "sphere"
[particles]
n = 4
[weights]
value = {file = "V.npy"}
"""


def _layout(tmp_path: Path) -> Path:
    """``sub/run.toml`` naming ``V.npy``; ``sub/V.npy`` = -I and ``./V.npy`` = 0.5 I."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "run.toml").write_text(TOML)
    np.save(tmp_path / "sub" / "V.npy", -np.eye(3))
    np.save(tmp_path / "V.npy", 0.5 * np.eye(3))
    return tmp_path / "sub" / "run.toml"


@pytest.mark.parametrize("where", ["parent", "sub"])
def test_a_weights_file_is_read_against_the_config_folder(tmp_path, monkeypatch, where):
    """Item 1: from the parent folder the run took ./V.npy (0.5 I, a wrong result with no
    error); from anywhere it must take sub/V.npy (-I), the file beside the config."""
    toml = _layout(tmp_path)
    monkeypatch.chdir(tmp_path if where == "parent" else tmp_path / "sub")
    cfg = cfgmod.load(os.path.relpath(toml), task="particles")
    (_, _, value), = head_matrices(cfg)
    np.testing.assert_array_equal(value, -np.eye(3))
    assert cfg["weights"]["value"] == {"file": str(tmp_path / "sub" / "V.npy")}


def test_the_python_api_reads_a_dict_configs_files_against_the_working_directory(
        tmp_path, monkeypatch):
    """A config given as a dict has no folder: its relative paths are the working
    directory's (docs/weights.md says so)."""
    _layout(tmp_path)
    monkeypatch.chdir(tmp_path)
    cfg = cfgmod.validate({"domain": {"geometry": "sphere"},
                           "weights": {"value": {"file": "V.npy"}}}, "particles")
    (_, _, value), = head_matrices(cfg)
    np.testing.assert_array_equal(value, 0.5 * np.eye(3))


def test_every_input_path_is_resolved_by_one_rule(tmp_path):
    """Heads, feed-forward weights, layers and [initial] paths (mixture components
    included) of a raw config: relative ones joined to the folder, absolute ones and
    values that are not paths left alone."""
    raw = {"weights": {"heads": [{"query": {"file": "Q.npy"}, "key": "identity"},
                                 {"value": {"file": "/abs/V.npy"}}]},
           "feedforward": {"weight": {"file": "W.txt"}},
           "initial": {"kind": "mixture", "components": [
               {"kind": "samples", "path": "s.txt"}, {"kind": "uniform"}]},
           "output": {"path": "out.nc"}}
    resolve(raw, tmp_path)
    assert raw["weights"]["heads"][0]["query"]["file"] == str(tmp_path / "Q.npy")
    assert raw["weights"]["heads"][1]["value"]["file"] == "/abs/V.npy"
    assert raw["feedforward"]["weight"]["file"] == str(tmp_path / "W.txt")
    assert raw["initial"]["components"][0]["path"] == str(tmp_path / "s.txt")
    assert raw["output"]["path"] == "out.nc"  # an output, not an input
    tokens = {"initial": {"kind": "tokens", "path": "x.npy"}}
    resolve(tokens, "rel")
    assert tokens["initial"]["path"] == str(Path.cwd() / "rel" / "x.npy")


def test_the_record_holds_every_input_file(tmp_path):
    """Item 2's record on tokens and heads: each file's key, absolute path and SHA-256;
    the numbers of a small file, not those of a large one (> SMALL_VALUES numbers)."""
    small, large = tmp_path / "V.txt", tmp_path / "X.npy"
    small.write_text("1 2\n3 4\n")
    np.save(large, np.arange(2.0 * (SMALL_VALUES + 1)).reshape(-1, 2))
    got = record({"initial": {"kind": "tokens", "path": str(large)},
                  "weights": {"heads": [{"query": "identity"},
                                        {"value": {"file": str(small)}}]},
                  "output": {"path": "not-an-input.nc"}})
    sha = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (small, large)}
    assert got == [{"key": "initial.path", "path": str(large), "sha256": sha[large]},
                   {"key": "weights.heads[1].value.file", "path": str(small),
                    "sha256": sha[small], "values": [[1.0, 2.0], [3.0, 4.0]]}]


def _cli_error(capsys, tmp_path, spec_file: str) -> str:
    """The one line ``meanfield particles`` prints for weights.value = {file = spec_file}
    (exit 2, nothing written)."""
    toml = tmp_path / "run.toml"
    toml.write_text(TOML.replace('"V.npy"', repr(spec_file).replace("'", '"')))
    code = main(["particles", str(toml), "--out", str(tmp_path / "r.nc"), "--no-progress"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and not (tmp_path / "r.nc").exists()
    return lines[0]


def test_a_complex_npy_is_refused_as_the_python_api_refuses_it(tmp_path, capsys):
    """Item 7: the command line ran the real part (one numpy warning); the message is
    the one Python gives for the same array."""
    m = np.eye(3) * (1 + 1j)
    np.save(tmp_path / "C.npy", m)
    with pytest.raises(ConfigError) as api:
        cfgmod.validate({"domain": {"geometry": "sphere"}, "weights": {"value": m}},
                        "particles")
    line = _cli_error(capsys, tmp_path, str(tmp_path / "C.npy"))
    assert str(api.value) in line  # weights.value[0][0] = (1+1j) must be a number
    assert "complex" in line and "C.npy" in line


def test_complex_tokens_are_refused_too(tmp_path):
    np.save(tmp_path / "X.npy", np.ones((4, 3), dtype=complex))
    with pytest.raises(ConfigError, match=r"initial.path\[0\]\[0\] = \(1\+0j\) must be a "
                                          "number") as err:
        read_numbers(str(tmp_path / "X.npy"), "initial.path")
    assert err.value.key == "initial.path"


def test_a_text_file_named_npy_is_said_to_be_one(tmp_path, capsys):
    """Item 12: it was reported as 'pickled (object) data'."""
    (tmp_path / "T.npy").write_text("1 0 0\n0 1 0\n0 0 1\n")
    line = _cli_error(capsys, tmp_path, str(tmp_path / "T.npy"))
    assert "is not a .npy file" in line and "text" in line and "pickle" not in line


@pytest.mark.parametrize("target, words", [("/dev/zero", "is not a regular file"),
                                           ("DIR", "is a directory")])
def test_devices_and_directories_are_named_for_what_they_are(tmp_path, capsys, target,
                                                             words):
    """Item 12: both were reported as 'no such file'."""
    if target == "DIR":
        (tmp_path / "D.npy").mkdir()
        target = str(tmp_path / "D.npy")
    elif not os.path.exists(target):
        pytest.skip(f"{target} does not exist here")
    line = _cli_error(capsys, tmp_path, target)
    assert words in line and "no such file" not in line and "weights.value.file" in line


SECRET = "MEANFIELD_SECRET=hunter2"


@pytest.mark.parametrize("name, content", [
    ("environ.txt", f"{SECRET}\0HOME=/root\0".encode()),
    ("notes.csv", f"{SECRET}, and more\n1, 2, 3\n".encode()),
    ("binary.dat", b"\xff\xfe" + SECRET.encode() + b"\x00\x81"),
    ("rows.txt", f"1 2 3\n4 5 6\n7 8 {SECRET}\n".encode()),
])
def test_no_message_quotes_a_file_that_is_not_numbers(tmp_path, capsys, name, content):
    """Item 12: the message quoted the file's first line (a secret, from an environment
    file); now it names the line and column, never the text."""
    (tmp_path / name).write_bytes(content)
    line = _cli_error(capsys, tmp_path, str(tmp_path / name))
    assert "hunter2" not in line and "SECRET" not in line
    assert "weights.value.file" in line and name in line
    with pytest.raises(ConfigError) as err:  # the samples and tokens reader: the same
        read_numbers(str(tmp_path / name), "initial.path")
    assert "hunter2" not in str(err.value)


def test_proc_self_environ_is_not_quoted(tmp_path, capsys):
    environ = Path("/proc/self/environ")
    if not environ.exists():
        pytest.skip("no /proc here")
    first = environ.read_bytes().split(b"\0")[0].decode(errors="replace")
    line = _cli_error(capsys, tmp_path, str(environ))
    assert first and first not in line and "line 1, column 1 is not a number" in line


class _Payload:
    """An object whose unpickling writes a file: the proof that a pickle was run."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (Path(self.marker), "pickle ran"))


def test_an_object_npy_is_never_unpickled(tmp_path, capsys):
    marker = tmp_path / "ran"
    arr = np.empty((3, 3), dtype=object)
    arr[...] = 0.0
    arr[0, 0] = _Payload(str(marker))
    np.save(tmp_path / "P.npy", arr, allow_pickle=True)
    line = _cli_error(capsys, tmp_path, str(tmp_path / "P.npy"))
    assert "Python objects" in line and not marker.exists()


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node, ast.unparse(node.func)


def test_nothing_in_the_package_unpickles_what_it_reads():
    """Item 12: every np.load passes allow_pickle=False, no pickle.load(s) and no
    allow_pickle=True anywhere in meanfield (the FFTW wisdom cache in solvers is issue
    31 item 9's)."""
    bad = []
    for path in sorted((ROOT / "meanfield").rglob("*.py")):
        for node, func in _calls(ast.parse(path.read_text())):
            kw = {k.arg: ast.unparse(k.value) for k in node.keywords}
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if func in ("np.load", "numpy.load") and kw.get("allow_pickle") != "False":
                bad.append(f"{where} {func} without allow_pickle=False")
            if func.startswith("pickle.") or kw.get("allow_pickle") == "True":
                bad.append(f"{where} {func}")
    assert not bad, bad
