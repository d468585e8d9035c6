"""The bibliography (docs/references.md) and the citations that point into it.

Docstrings, examples, docs pages and the README cite works by a key and a place,
``[GLPR23, Theorem 3.1]``. These tests keep the two sides consistent: every cited key is
listed, every listed work can be found (an arXiv id, a DOI, a URL or a venue), keys are
unique, and the vague citations the keys replaced ("Theorem 7 of the review", "the
paper's eq. (1)", "the slides") do not come back. Plain file reads: well under a second.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCES = ROOT / "docs" / "references.md"

# A key: capitals then lower-case letters (authors' initials or a name), an optional "+"
# (et al.), two digits of the year, an optional letter; cited as "[KEY]" or "[KEY, place]".
KEY = r"[A-Z][A-Za-z]*\+?\d{2}[a-z]?"
CITED = re.compile(rf"\[({KEY})(?=[,\]])")
ENTRY = re.compile(rf"^- \*\*\[({KEY})\]", re.M)

# Where citations live; generated output (docs/_build, docs/auto_examples) is skipped.
# The notebooks' keys are checked too; their prose is not scanned for vague citations.
CITING_DIRS = ("meanfield", "solvers", "examples", "docs", "data")
KEY_DIRS = (*CITING_DIRS, "notebooks")
SUFFIXES = {".py", ".md", ".rst", ".toml", ".txt", ".cfg"}
SKIPPED = {"_build", "auto_examples", "__pycache__", ".ipynb_checkpoints"}

# A work can be found from its arXiv id, a DOI, a URL or its venue (a journal, a
# conference, a book's series or publisher, the seminar of a talk).
FINDABLE = re.compile(
    r"arXiv:\S+|doi:10\.\S+|https?://|Journal|Proceedings|NeurIPS|ICLR|AISTATS|"
    r"Bulletin|Archive for|Communications in|SIAM|ESAIM|Lecture Notes|Functional Analysis"
    r"|Graduate Studies|Birkhäuser|Springer|Society|Symposium|seminar|workshop", re.I)

# Citations that name no work or no place (case-insensitive). docs/references.md itself
# is not scanned: its entries name venues such as "Lecture Notes in Mathematics".
VAGUE = [
    r"\bthe review\b",
    r"\breview's\b",
    r"\bthe papers?\b",              # "the paper", "the paper's eq. (1)", "the papers'"
    r"\bthe slides\b",
    r"\blecture notes\b",
    r"\bthe survey\b",
    r"\bthe preprint\b",
    r"\bthe notes\b",
    r"\bof the perspective\b",
    r"\b(?:mathematical[- ]perspective|emergence[- ]of[- ]clusters|emergence|mean-field[- ]"
    r"dynamics)[- ](?:paper|review|notes|survey|slides)\b",
    r"\[the [a-z' -]*(?:paper|review|notes|slides|survey|talk)s?\]",  # "[the emergence paper]"
    r"\b(?:theorem|figure|section|proposition|lemma|corollary|table|eq\.)\s*\(?[\dA-Z][\w.]*\)?"
    r" of the (?:review|paper|papers|notes|slides|survey)\b",
]


def _files(dirs=CITING_DIRS):
    for name in dirs:
        for path in sorted((ROOT / name).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and not SKIPPED & set(path.parts):
                yield path


def _entries() -> list[tuple[str, str]]:
    """(key, text) of each entry of docs/references.md, in order."""
    text = REFERENCES.read_text(encoding="utf-8")
    starts = [(m.group(1), m.start()) for m in ENTRY.finditer(text)]
    ends = [s for _, s in starts[1:]] + [len(text)]
    return [(key, text[start:end].split("\n## ")[0]) for (key, start), end in zip(starts, ends)]


def _where(path: Path, text: str, pos: int) -> str:
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, pos) + 1}"


def test_the_bibliography_parses():
    entries = _entries()
    assert len(entries) >= 10, "docs/references.md lists fewer works than the docs cite"
    assert {"GLPR23", "GLPR25", "Rig25"} <= {key for key, _ in entries}


def test_keys_are_unique():
    keys = [key for key, _ in _entries()]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    assert not repeated, f"keys listed twice in docs/references.md: {repeated}"


def test_every_entry_can_be_found():
    missing = [key for key, text in _entries() if not FINDABLE.search(text)]
    assert not missing, f"entries without an arXiv id, a DOI, a URL or a venue: {missing}"


def test_every_cited_key_is_listed():
    listed = {key for key, _ in _entries()}
    unknown = []
    for path in [*_files(KEY_DIRS), ROOT / "README.md"]:
        if path == REFERENCES:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        unknown += [f"{_where(path, text, m.start())} [{m.group(1)}]"
                    for m in CITED.finditer(text) if m.group(1) not in listed]
    assert not unknown, "keys cited but not in docs/references.md:\n" + "\n".join(unknown)


# One pass per file over the lower-cased text (the patterns are lower case), and only
# over files that hold one of the words every pattern needs: 2 MB of sources in ~0.1 s.
_VAGUE_ANY = re.compile("|".join(f"(?:{p})" for p in VAGUE))
_TRIGGERS = ("review", "paper", "slides", "notes", "survey", "preprint", "perspective",
             "talk")


def test_no_vague_citations():
    found = []
    for path in _files():
        if path == REFERENCES:
            continue
        text = path.read_text(encoding="utf-8", errors="replace").lower()
        if any(word in text for word in _TRIGGERS):
            found += [f"{_where(path, text, m.start())}: {m.group(0)!r}"
                      for m in _VAGUE_ANY.finditer(text)]
    assert not found, ("cite a key and a place instead (docs/references.md), e.g. "
                       "'[Rig25, Theorem 7]':\n" + "\n".join(found))


@pytest.mark.parametrize("text, vague", [
    ("(Theorem 7 of the review, after Chen et al.)", True),
    ("softmax rows, the paper's eq. (1)", True),
    ("see [the emergence paper]", True),
    ("Golse's lecture notes", True),
    ("Figure 1 of the emergence-of-clusters paper", True),
    ("([Rig25, Theorem 7], after [CLPR26])", False),
    ("[GLPR23, Table 1, Theorem C.5]", False),
    ("gaussian [the default]", False),
])
def test_the_vague_patterns_catch_what_they_should(text, vague):
    assert any(re.search(p, text, re.I) for p in VAGUE) is vague
    assert bool(_VAGUE_ANY.search(text.lower())) is vague


@pytest.mark.parametrize("text, keys", [
    ("[GLPR23, Figure 6 and Theorem 4.1]", ["GLPR23"]),
    ("([CK07];\n[GLPR25, §9.1, Theorem 9.2])", ["CK07", "GLPR25"]),
    ("[FSV+19] and [Rig25]", ["FSV+19", "Rig25"]),
    ("x[A1] = y[idx]; P[i, j]; [1, 2]", []),
])
def test_the_key_pattern(text, keys):
    assert CITED.findall(text) == keys
