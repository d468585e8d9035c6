"""Sphinx configuration of the meanfield documentation site.

Build (warnings are errors, as in CI)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

Why Sphinx + sphinx-gallery: sphinx-gallery is the gallery of the scientific Python stack
(matplotlib, scipy, xarray and POT use it): each example script becomes a page with its
code, its printed output and its figure, and a broken example fails the build. myst-parser
makes the Markdown pages of docs/ pages of the site without conversion; autodoc with
napoleon reads the Google docstrings of the package.
"""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import meanfield

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

project = "meanfield"
author = "the meanfield authors"
copyright = "the meanfield authors"
release = meanfield.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5",
                    "auto_examples/*.json", "build.sh"]

myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3
# config.cache: the gallery's configuration holds the two functions below, so Sphinx
# cannot pickle it; it then rebuilds the pages when run again, which is what CI does.
suppress_warnings = ["config.cache"]

autodoc_default_options = {"members": False, "undoc-members": False}
autodoc_typehints = "description"
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "furo"
html_title = f"meanfield {release}"

# ---------------------------------------------------------------------------- maths
# The pages write their maths in LaTeX ($...$ through myst's dollarmath, :math: in the
# docstrings), which MathJax typesets in the browser. Sphinx's default loads MathJax from
# a CDN, so a site opened offline (a cluster node, a plane) showed raw TeX. The site now
# carries its own MathJax: the package django-static-mathjax (the `docs` extra) is a
# plain copy of MathJax 3.2.2 with no Python dependencies (despite its name it needs no
# Django: only its files are read); of it the build copies ONE file, the combined
# component es5/tex-svg-full.js (2.2 MB: the TeX input with every extension and the SVG
# output, whose glyphs are paths, so no font files are fetched), and MathJax's licence,
# into _static/mathjax/. tests/test_docs_site.py fails on a page that loads anything from
# outside the site.
_MATHJAX = Path(tempfile.mkdtemp(prefix="meanfield-mathjax-"))
atexit.register(shutil.rmtree, _MATHJAX, ignore_errors=True)


def _stage_mathjax(target: Path) -> None:
    """Copy the MathJax component and its licence under ``target/mathjax``."""
    from importlib import resources

    try:
        es5 = resources.files("mathjax") / "static" / "mathjax" / "es5"
    except ModuleNotFoundError:
        es5 = None
    if es5 is None or not es5.joinpath("tex-svg-full.js").is_file():
        raise RuntimeError("the docs need MathJax 3 from the package django-static-mathjax "
                           "(pip install -e \".[docs]\"); it is not installed")
    (target / "mathjax").mkdir(parents=True, exist_ok=True)
    for name, source in (("tex-svg-full.js", es5 / "tex-svg-full.js"),
                         ("LICENSE", es5.parent / "LICENSE")):
        (target / "mathjax" / name).write_bytes(source.read_bytes())


_stage_mathjax(_MATHJAX)
# docs/_static: the gallery's CSS (wrapped "Out:" lines, larger cards, study figures)
html_static_path = [str(_MATHJAX), "_static"]
html_css_files = ["gallery.css"]
# relative to _static/ of the built site
mathjax_path = "mathjax/tex-svg-full.js"

# ---------------------------------------------------------------------------- gallery
# The examples run with their --quick variant and write their figures into a temporary
# folder; the scraper below moves each new PNG or GIF into the gallery (the scripts draw with
# matplotlib's object API, not pyplot, so the default scraper sees no figure).
_FIGURES = Path(tempfile.mkdtemp(prefix="meanfield-gallery-"))
atexit.register(shutil.rmtree, _FIGURES, ignore_errors=True)
os.environ.setdefault("MPLBACKEND", "Agg")


sys.path.insert(0, str(HERE / "_ext"))
import gallery_layout  # noqa: E402  (docs/_ext: the gallery's order, sections, thumbnails)

# Each example's thumbnail is ONE panel of its first PNG (gallery_layout.panel_bbox), cut
# out when the example saves it: Figure.savefig is wrapped for the build, and writes
# that panel into _THUMBS only for a file saved into _FIGURES (nothing else changes).
# After the gallery is generated, _finish_gallery scales the panels into the thumbnails.
_THUMBS = Path(tempfile.mkdtemp(prefix="meanfield-thumbs-"))
atexit.register(shutil.rmtree, _THUMBS, ignore_errors=True)
_RUNNING: dict[str, str | None] = {"name": None}


def _wrap_savefig() -> None:
    from matplotlib.figure import Figure

    savefig = Figure.savefig
    if getattr(savefig, "_gallery_panel", False):
        return

    def savefig_and_panel(self, fname, *args, **kwargs):
        savefig(self, fname, *args, **kwargs)
        name = _RUNNING["name"]
        if (name is None or not isinstance(fname, (str, os.PathLike))
                or Path(fname).suffix != ".png"
                or Path(fname).resolve().parent != _FIGURES.resolve()
                or (_THUMBS / f"{name}.png").exists()):
            return
        box = gallery_layout.panel_bbox(self)
        if box is not None:
            savefig(self, _THUMBS / f"{name}.png", dpi=150, bbox_inches=box)

    savefig_and_panel._gallery_panel = True
    Figure.savefig = savefig_and_panel


_wrap_savefig()


def _reset_argv(gallery_conf, script_vars):
    """Command-line arguments each example runs with in the docs build."""
    name = Path(script_vars["src_file"]).stem
    _RUNNING["name"] = name
    # sphinx-gallery runs an example without __file__ (its globals are a fresh __main__);
    # the examples find their TOML configs and data next to themselves through it.
    script_vars["example_globals"]["__file__"] = script_vars["src_file"]
    return ["--quick", "--out", str(_FIGURES / f"{name}.png")]


def _png_scraper(block, block_vars, gallery_conf):
    """Move the PNGs and GIFs an example wrote into the gallery and return their reST."""
    from sphinx_gallery.scrapers import figure_rst

    images = block_vars["image_path_iterator"]
    written = []
    for image in sorted([*_FIGURES.glob("*.png"), *_FIGURES.glob("*.gif")]):
        target = str(Path(next(images)).with_suffix(image.suffix))  # a GIF stays animated
        shutil.move(str(image), target)
        written.append(target)
    return figure_rst(written, gallery_conf["src_dir"])


sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    # Every example script runs, with --quick and --out (each example has both).
    "filename_pattern": r"/\w+\.py$",
    "ignore_pattern": r"__init__\.py",
    # in the order of the families (docs/_ext/gallery_layout.py), whose sections
    # _finish_gallery writes into the index
    "within_subsection_order": gallery_layout.order_key,
    "thumbnail_size": (400, 280),
    "reset_argv": _reset_argv,
    "image_scrapers": (_png_scraper,),
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
    "plot_gallery": "True",
    "min_reported_time": 1,
    # The execution-times page sphinx-gallery writes loads jQuery and DataTables from
    # CDNs (tests/test_docs_site.py found it): not written; the build's log lists the times.
    "write_computation_times": False,
}


def _finish_gallery(app) -> None:
    """Sections by family in the gallery's index, and the one-panel thumbnails.

    Runs after sphinx-gallery generated the gallery (both on builder-inited; this one at
    a later priority) and before Sphinx reads the pages.
    """
    from sphinx_gallery.utils import scale_image

    gallery = Path(app.srcdir) / sphinx_gallery_conf["gallery_dirs"]
    index = gallery / "index.rst"
    index.write_text(gallery_layout.sectioned_index(index.read_text(encoding="utf-8")),
                     encoding="utf-8")
    for panel in sorted(_THUMBS.glob("*.png")):
        thumb = gallery / "images" / "thumb" / f"sphx_glr_{panel.stem}_thumb.png"
        if thumb.exists():  # (an example whose thumbnail is a GIF keeps it)
            scale_image(panel, thumb, *sphinx_gallery_conf["thumbnail_size"])


def setup(app):
    app.connect("builder-inited", _finish_gallery, priority=900)
