"""Check a built documentation site for what it needs from outside itself.

A page of the site must open offline (on a cluster node, on a plane): every script,
stylesheet, image, frame or media file it loads must be a file of the site. This module
reads every HTML page (and every stylesheet) of a built site and lists

- **external** resources: loaded from an absolute URL (``http://``, ``https://``, a
  protocol-relative ``//host/...`` or any other scheme except ``data:``), or by a relative
  path that climbs out of the site's root;
- **missing** resources: a relative path to a file the site does not hold (a MathJax
  copied to the wrong folder would otherwise fail silently, offline or not);
- **study pages without a figure**: a page under ``studies/`` (other than the index)
  with no ``<img>``.

Links the reader follows (``<a href>``) load nothing and are not checked. Used by
``tests/test_docs_site.py`` (synthetic pages in the default run, the real site when
``docs/_build/html`` exists) and from the command line::

    python docs/_ext/site_check.py docs/_build/html

which prints one line per finding and exits 1 when a page loads something from outside
the site or misses a file (0 otherwise; study pages without a figure are reported).
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# (tag, attribute) pairs whose value the browser fetches when the page opens.
_LOADED = {
    ("script", "src"), ("img", "src"), ("iframe", "src"), ("frame", "src"),
    ("embed", "src"), ("video", "src"), ("video", "poster"), ("audio", "src"),
    ("source", "src"), ("track", "src"), ("input", "src"), ("object", "data"),
    ("image", "href"), ("use", "href"), ("image", "xlink:href"), ("use", "xlink:href"),
}
# <link rel=...> values that make the browser fetch the href (not rel="next", "canonical").
_LINK_LOADS = {"stylesheet", "icon", "shortcut", "apple-touch-icon", "preload",
               "modulepreload", "prefetch", "manifest", "mask-icon"}
_SRCSET = {("img", "srcset"), ("source", "srcset")}
_CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)|@import\s+(['"])([^'"]+)\3""")


@dataclass
class Finding:
    """One resource a page loads that the site cannot give offline."""

    page: str
    kind: str  # "external" or "missing"
    tag: str
    url: str

    def __str__(self) -> str:
        return f"{self.page}: {self.kind} {self.tag} {self.url}"


@dataclass
class Report:
    """What :func:`scan_site` found."""

    pages: int = 0
    findings: list[Finding] = field(default_factory=list)
    study_pages_without_image: list[str] = field(default_factory=list)

    @property
    def external(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "external"]

    @property
    def missing(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "missing"]


class _Resources(HTMLParser):
    """Collect (tag, url) of everything a page loads, and whether it has an image."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.loaded: list[tuple[str, str]] = []
        self.images = 0
        self._style = False
        self._css: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value for name, value in attrs if value is not None}
        if tag == "img":
            self.images += 1
        if tag == "style":
            self._style = True
        for name, value in values.items():
            if (tag, name) in _LOADED:
                self.loaded.append((f"<{tag} {name}>", value))
            elif (tag, name) in _SRCSET:
                for candidate in value.split(","):
                    if candidate.strip():
                        self.loaded.append((f"<{tag} {name}>", candidate.split()[0]))
            elif name == "style":
                self._css.append(value)
        if tag == "link" and "href" in values:
            rels = set(values.get("rel", "").lower().split())
            if rels & _LINK_LOADS:
                self.loaded.append((f"<link rel={values.get('rel')}>", values["href"]))

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._style = False

    def handle_data(self, data: str) -> None:
        if self._style:
            self._css.append(data)

    def css_urls(self) -> list[tuple[str, str]]:
        return [("css url()", url) for text in self._css for url in css_references(text)]


def css_references(text: str) -> list[str]:
    """The URLs a stylesheet's text fetches (``url(...)`` and ``@import``)."""
    return [m.group(2) or m.group(4) for m in _CSS_URL.finditer(text)]


def classify(url: str, page: Path, root: Path) -> str | None:
    """``"external"``, ``"missing"`` or None (a file of the site, or nothing fetched).

    Args:
        url: the value of the attribute, as written.
        page: the file that holds the reference (relative paths start from its folder).
        root: the site's root folder.
    """
    url = url.strip()
    if not url or url.startswith("#"):
        return None
    parts = urlsplit(url)
    if parts.scheme == "data":
        return None
    if parts.scheme or parts.netloc or url.startswith("//"):
        return "external"
    if url.startswith("/"):
        # Root-relative: on a file:// URL this is the disk's root, never the site.
        return "external"
    target = (page.parent / unquote(parts.path)).resolve()
    root = root.resolve()
    if target != root and root not in target.parents:
        return "external"
    if not parts.path:
        return None
    return None if target.exists() else "missing"


def scan_page(html: str, page: Path, root: Path) -> tuple[list[Finding], int]:
    """The findings of one HTML page and its number of ``<img>`` tags."""
    parser = _Resources()
    parser.feed(html)
    parser.close()
    name = page.resolve().relative_to(root.resolve()).as_posix()
    findings = []
    for tag, url in [*parser.loaded, *parser.css_urls()]:
        kind = classify(url, page, root)
        if kind is not None:
            findings.append(Finding(name, kind, tag, url))
    return findings, parser.images


def scan_site(root: str | Path) -> Report:
    """Scan every ``*.html`` and ``*.css`` file under ``root``.

    Args:
        root: the built site (the folder of ``index.html``).

    Returns:
        The pages scanned, the resources the site cannot give offline, and the study
        pages (``studies/*.html`` except ``studies/index.html``) that show no image.

    Raises:
        FileNotFoundError: if ``root`` holds no ``index.html``.
    """
    root = Path(root)
    if not (root / "index.html").is_file():
        raise FileNotFoundError(f"{root} is not a built site: it has no index.html")
    report = Report()
    for page in sorted(root.rglob("*.html")):
        findings, images = scan_page(page.read_text(encoding="utf-8", errors="replace"),
                                     page, root)
        report.pages += 1
        report.findings += findings
        name = page.relative_to(root).as_posix()
        if (name.startswith("studies/") and name != "studies/index.html" and images == 0):
            report.study_pages_without_image.append(name)
    for sheet in sorted(root.rglob("*.css")):
        name = sheet.relative_to(root).as_posix()
        for url in css_references(sheet.read_text(encoding="utf-8", errors="replace")):
            kind = classify(url, sheet, root)
            if kind is not None:
                report.findings.append(Finding(name, kind, "css url()", url))
    return report


def main(argv: list[str] | None = None) -> int:
    """Print the findings for the site named on the command line; 1 if any page fails."""
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0] if args else "docs/_build/html")
    report = scan_site(root)
    for finding in report.findings:
        print(finding)
    for name in report.study_pages_without_image:
        print(f"{name}: study page without an image")
    print(f"{report.pages} pages: {len(report.external)} external, "
          f"{len(report.missing)} missing, "
          f"{len(report.study_pages_without_image)} study pages without an image")
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
