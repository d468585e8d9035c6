"""The documentation site opens offline: no page loads anything from outside the site.

The scanner (docs/_ext/site_check.py) is checked on small synthetic sites in every run;
the real site is scanned when it has been built (``docs/_build/html``, as .ci/run does in
its step (3), which runs this file after the build) and skipped otherwise.
"""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "docs" / "_build" / "html"


def _load_site_check():
    spec = importlib.util.spec_from_file_location(
        "site_check", ROOT / "docs" / "_ext" / "site_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


site_check = _load_site_check()


def _site(tmp_path: Path, pages: dict[str, str], files: tuple[str, ...] = ()) -> Path:
    """A small built site: the given pages plus empty files (scripts, images)."""
    for name in ("index.html", *files):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    for name, body in pages.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"<html><head></head><body>{body}</body></html>")
    return tmp_path


def _kinds(root: Path) -> list[tuple[str, str, str]]:
    return [(f.page, f.kind, f.url) for f in site_check.scan_site(root).findings]


def test_local_resources_pass(tmp_path):
    root = _site(tmp_path, {
        "studies/page.html": (
            '<script src="../_static/mathjax/tex-svg-full.js"></script>'
            '<link rel="stylesheet" href="../_static/furo.css">'
            '<img src="../_images/fig.png" srcset="../_images/fig.png 2x">'
            '<img src="data:image/png;base64,AAAA">'
            # links the reader follows load nothing, wherever they point
            '<a href="https://arxiv.org/abs/2312.10794">GLPR25</a>'
            '<link rel="canonical" href="https://example.org/page.html">'),
    }, files=("_static/mathjax/tex-svg-full.js", "_static/furo.css", "_images/fig.png"))
    report = site_check.scan_site(root)
    assert report.findings == []
    assert report.pages == 2
    assert report.study_pages_without_image == []


@pytest.mark.parametrize("body, url", [
    ('<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"></script>',
     "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"),
    ('<script src="//cdn.example.org/x.js"></script>', "//cdn.example.org/x.js"),
    ('<link rel="stylesheet" href="http://fonts.example.org/f.css">',
     "http://fonts.example.org/f.css"),
    ('<img src="https://example.org/fig.png">', "https://example.org/fig.png"),
    ('<img srcset="fig.png 1x, https://example.org/fig2.png 2x">',
     "https://example.org/fig2.png"),
    ('<iframe src="https://www.youtube.com/embed/x"></iframe>',
     "https://www.youtube.com/embed/x"),
    ('<style>@import "https://fonts.example.org/f.css";</style>',
     "https://fonts.example.org/f.css"),
    ('<div style="background: url(https://example.org/bg.png)"></div>',
     "https://example.org/bg.png"),
    # out of the site's folder, or from the disk's root: not the site either
    ('<script src="../outside.js"></script>', "../outside.js"),
    ('<script src="/usr/share/javascript/mathjax/MathJax.js"></script>',
     "/usr/share/javascript/mathjax/MathJax.js"),
])
def test_external_resources_fail(tmp_path, body, url):
    root = _site(tmp_path, {"page.html": body}, files=("fig.png",))
    assert _kinds(root) == [("page.html", "external", url)]


def test_missing_local_file_and_external_stylesheet_url(tmp_path):
    root = _site(tmp_path, {"page.html": '<script src="_static/mathjax/none.js"></script>'},
                 files=("_static/theme.css",))
    (root / "_static" / "theme.css").write_text(
        'a { background: url("../img/none.png") } @font-face { src: url(//f.org/a.woff2) }'
        ' b { mask: url(data:image/svg+xml;x) }')
    assert sorted(_kinds(root)) == [
        ("_static/theme.css", "external", "//f.org/a.woff2"),
        ("_static/theme.css", "missing", "../img/none.png"),
        ("page.html", "missing", "_static/mathjax/none.js"),
    ]
    assert site_check.main([str(root)]) == 1


def test_study_page_without_image(tmp_path):
    root = _site(tmp_path, {"studies/index.html": "the list",
                            "studies/a.html": "<p>a figure in words</p>",
                            "studies/b.html": '<img src="b.png">'}, files=("studies/b.png",))
    report = site_check.scan_site(root)
    assert report.study_pages_without_image == ["studies/a.html"]
    assert report.findings == []


def test_not_a_site(tmp_path):
    with pytest.raises(FileNotFoundError, match="no index.html"):
        site_check.scan_site(tmp_path)


def test_gallery_titles_write_their_maths_in_unicode():
    # A gallery card shows the docstring's first line as plain text, where no maths is
    # typeset: S², (t, β), not S^2, (t, beta).
    ascii_maths = re.compile(r"\^|_\{|\b(?:alpha|beta|gamma|kappa|lambda|rho|sigma|sqrt)\b")
    titles = {path.name: path.read_text(encoding="utf-8").splitlines()[0]
              for path in sorted((ROOT / "examples").glob("*.py"))}
    assert len(titles) > 20
    assert {name: t for name, t in titles.items() if ascii_maths.search(t)} == {}


# ------------------------------------------------------------------------- the real site

built = pytest.mark.skipif(not (SITE / "index.html").is_file(),
                           reason="the site is not built (docs/_build/html): .ci/run builds it")


@built
def test_built_site_loads_nothing_from_outside():
    report = site_check.scan_site(SITE)
    assert report.pages > 50
    assert report.external == [], "\n".join(map(str, report.external))
    assert report.missing == [], "\n".join(map(str, report.missing))


@built
def test_built_site_typesets_maths_with_its_own_mathjax():
    # a page with LaTeX maths loads the site's MathJax (and the file is there)
    page = (SITE / "studies" / "convergence.html").read_text(encoding="utf-8")
    assert r"\(" in page
    assert '<script defer="defer" src="../_static/mathjax/tex-svg-full.js' in page
    assert (SITE / "_static" / "mathjax" / "tex-svg-full.js").stat().st_size > 1_000_000


@built
def test_built_study_pages_show_a_figure():
    # each page's Figure section shows the figure of its command: a committed full-scale
    # image (docs/make_study_figures.py) or the gallery's quick run, as its caption says
    assert site_check.scan_site(SITE).study_pages_without_image == []


@built
def test_built_gallery_runs_every_example():
    # every example ran in the build and its page shows what it drew (an example that is
    # not run, or fails, has no image of its own on its page)
    examples = sorted(path.stem for path in (ROOT / "examples").glob("*.py"))
    silent = [name for name in examples
              if f"sphx_glr_{name}_001." not in
              (SITE / "auto_examples" / f"{name}.html").read_text(encoding="utf-8")]
    assert silent == []
    index = (SITE / "auto_examples" / "index.html").read_text(encoding="utf-8")
    assert "no_image" not in index and "broken_example" not in index
    # the families' sections, in their order
    titles = [title for title, _, _ in gallery_layout.FAMILIES]
    places = [index.find(title.replace("'", "&#8217;")) for title in titles]
    assert -1 not in places and places == sorted(places)


# ------------------------------------------------------------------------- the gallery

def _load_gallery_layout():
    spec = importlib.util.spec_from_file_location(
        "gallery_layout", ROOT / "docs" / "_ext" / "gallery_layout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gallery_layout = _load_gallery_layout()


def test_gallery_families_hold_every_example_once():
    examples = sorted(path.stem for path in (ROOT / "examples").glob("*.py"))
    assert sorted(gallery_layout.ORDER) == examples
    assert len(set(gallery_layout.ORDER)) == len(gallery_layout.ORDER)


def _card(name: str) -> str:
    return (f'\n.. raw:: html\n\n    <div class="sphx-glr-thumbcontainer" tooltip="{name}">'
            f"\n\n.. only:: html\n\n  :doc:`/auto_examples/{name}`\n\n.. raw:: html\n\n"
            f'      <div class="sphx-glr-thumbnail-title">{name}</div>\n    </div>\n')


def test_gallery_index_is_split_into_family_sections(monkeypatch):
    monkeypatch.setattr(gallery_layout, "FAMILIES", [
        ("First", "One sentence.", ["b", "a"]), ("Second", "Another.", ["c"])])
    monkeypatch.setattr(gallery_layout, "ORDER", ["b", "a", "c"])
    flat = (":orphan:\n\nGallery\n=======\n\nheader\n\n.. raw:: html\n\n"
            '    <div class="sphx-glr-thumbnails">\n' + "".join(map(_card, "abc"))
            + "\n.. raw:: html\n\n    </div>\n\n\n.. toctree::\n   :hidden:\n\n"
            "   /auto_examples/a\n")
    out = gallery_layout.sectioned_index(flat)
    assert out.index("First\n-----") < out.index("doc:`/auto_examples/b`") \
        < out.index("doc:`/auto_examples/a`") < out.index("Second\n------") \
        < out.index("doc:`/auto_examples/c`") < out.index(".. toctree::")
    assert out.count('<div class="sphx-glr-thumbnails">') == 2
    assert gallery_layout.sectioned_index(out) == out  # a second pass changes nothing
    with pytest.raises(RuntimeError, match=r"in no family \['d'\]"):
        gallery_layout.sectioned_index(flat.replace("</div>\n\n\n.. toc",
                                                    "</div>\n" + _card("d") + "\n.. toc"))


# ------------------------------------------------------------------ the study pages' figures

def test_study_pages_name_their_figure_and_its_scale():
    # each study page's Figure section opens with a figure: a committed full-scale image
    # (docs/studies/figures, under 300 kB, made by docs/make_study_figures.py) or the
    # gallery image of a quick example; its caption says which
    studies = ROOT / "docs" / "studies"
    for page in sorted(studies.glob("*.md")):
        if page.name == "index.md":
            continue
        figure = page.read_text(encoding="utf-8").split("\n## Figure\n", 1)[1]
        found = re.match(r"\s*```\{figure\} (\S+)\n(?::[^\n]*\n)*\n(.*?)\n```", figure,
                         re.S)
        assert found, f"{page.name}: no figure at the top of its Figure section"
        path, caption = found[1], " ".join(found[2].split())
        image = (studies / path).resolve()
        if path.startswith("figures/"):
            assert "Full scale" in caption and "make_study_figures.py" in caption, page.name
            assert image.is_file() and image.stat().st_size < 300_000, page.name
        else:
            example = re.fullmatch(r"\.\./auto_examples/images/sphx_glr_(\w+)_001\.png", path)
            assert example and "Quick scale" in caption, page.name
            assert (ROOT / "examples" / f"{example.group(1)}.py").is_file(), page.name
