"""The gallery's order, its sections by family, and its thumbnails (used by docs/conf.py).

sphinx-gallery makes sections only from subfolders of ``examples/``; moving the scripts
would break every path that names them (tests, README, the study pages, the examples'
own TOML look-ups). So the scripts stay where they are and the build:

- runs and lists them in the order of ``FAMILIES`` (``within_subsection_order``), so the
  previous/next links of the example pages follow the families;
- rewrites the gallery index that sphinx-gallery wrote (one flat grid of cards) into one
  section per family, each a sentence and its grid (``sectioned_index``); an example that
  no family names fails the build, so a new example has to be placed;
- makes each thumbnail from ONE panel of the example's figure (``panel_bbox``: the
  largest axes with its labels and title), not the whole multi-panel figure, which at a
  card's 160 px was unreadable.
"""
from __future__ import annotations

import re
from pathlib import Path

# (section title, one sentence, the examples in order). Every examples/*.py is in one.
FAMILIES: list[tuple[str, str, list[str]]] = [
    ("The mean-field equation: stability and bifurcations",
     "The PDE of the density on the circle, the sphere and Sᵈ⁻¹: the uniform state's "
     "growth rates, the noisy Kuramoto pitchfork and the branches that follow it.",
     ["kuramoto_pitchfork", "growth_rates", "bifurcation_diagrams", "negative_beta",
      "zonal_dimensions"]),
    ("Tokens against the mean field",
     "Finite systems of tokens beside the PDE they converge to: the density and its "
     "histogram, the rate in Wasserstein distance, the correlations, long contexts.",
     ["sphere_density_and_tokens", "transport_rates", "correlations", "long_context"]),
    ("Clustering: phase diagrams, metastability, normalization",
     "How and when tokens on the sphere cluster: the (t, β) phase diagrams, the "
     "metastable staircase, the critical points of the energy, the normalization rules, "
     "Sinkhorn attention and a real transformer.",
     ["phase_diagrams", "metastability", "critical_points", "normalization",
      "normalization_random_weights", "sinkhorn_attention", "real_tokens"]),
    ("Value matrices, masks and repulsion",
     "Rescaled tokens with general (Q, K, V) ([GLPR23]): polytopes, leaders, hyperplanes, "
     "subspaces, Boolean attention, a causal mask, and the repulsive V = −I.",
     ["weights_polytope", "weights_leaders", "weights_hyperplanes", "weights_codimension",
      "weights_paranormal", "weights_good_triples", "weights_boolean_attention",
      "weights_causal", "weights_repulsive"]),
    ("Numerical checks",
     "The schemes' observed orders and the circle solvers against exact results.",
     ["scheme_orders", "circle_validation"]),
]
ORDER: list[str] = [name for _, _, names in FAMILIES for name in names]


def order_key(path: str) -> tuple[int, str]:
    """Sort key of an example file: its place in ``FAMILIES`` (unplaced ones last)."""
    name = Path(path).stem
    return (ORDER.index(name) if name in ORDER else len(ORDER), name)


_CARD = re.compile(r"\n\.\. raw:: html\n\n    <div class=\"sphx-glr-thumbcontainer\".*?"
                   r"<div class=\"sphx-glr-thumbnail-title\">.*?</div>\n    </div>\n",
                   re.S)
_DOC = re.compile(r":doc:`/auto_examples/(\w+)`")
_GRID_OPEN = '\n.. raw:: html\n\n    <div class="sphx-glr-thumbnails">\n'
_MARK = ".. sections by family: docs/_ext/gallery_layout.py"
_GRID_CLOSE = "\n.. raw:: html\n\n    </div>\n"


def sectioned_index(text: str) -> str:
    """The gallery index ``text`` sphinx-gallery wrote, with its cards in family sections.

    The header (up to the first card) and the hidden toctree stay; the cards are regrouped
    under one ``----`` heading per family, each family's sentence above its grid.

    Raises:
        RuntimeError: an example is in no family, or a family names an example that has
            no card (the index's layout changed, or a name is misspelled).
    """
    if _MARK in text:  # already sectioned (sphinx-gallery kept the index it had)
        return text
    cards = {_DOC.search(m.group(0)).group(1): m.group(0) for m in _CARD.finditer(text)}
    unplaced = sorted(set(cards) - set(ORDER))
    missing = [name for name in ORDER if name not in cards]
    if unplaced or missing:
        raise RuntimeError(
            f"docs/_ext/gallery_layout.py FAMILIES: examples in no family {unplaced}, "
            f"names without a gallery card {missing}")
    head = text[:text.index('.. raw:: html\n\n    <div class="sphx-glr-thumbnails">')]
    toctree = text[text.index(".. toctree::"):]
    parts = [head.rstrip("\n") + "\n\n" + _MARK + "\n"]
    for title, sentence, names in FAMILIES:
        parts += [f"\n{title}\n{'-' * len(title)}\n\n{sentence}\n", _GRID_OPEN]
        parts += [cards[name] for name in names]
        parts.append(_GRID_CLOSE)
    parts.append("\n\n" + toctree)
    return "".join(parts)


def panel_bbox(fig, pad: float = 0.06):
    """The bounding box, in inches, of the figure's largest panel with its labels.

    A colour bar or an inset is never the largest axes, so the box is a main panel:
    drawn alone it reads at a card's size where the whole figure did not. Panels wider
    than 2.2 times their height (a strip across the figure's foot, as in the polytope's
    and the bifurcation diagrams' figures) shrink to a line on a 400 x 280 card: the
    largest of the others is taken where there is one.
    """
    from matplotlib.transforms import Bbox

    renderer = fig.canvas.get_renderer()
    axes = [ax for ax in fig.axes if ax.get_visible()]
    if not axes:
        return None
    width, height = fig.get_size_inches()
    shape = [(ax.get_position().width * width, ax.get_position().height * height)
             for ax in axes]
    fits = [i for i, (w, h) in enumerate(shape) if w <= 2.2 * h] or list(range(len(axes)))
    ax = axes[max(fits, key=lambda i: shape[i][0] * shape[i][1])]
    box = ax.get_tightbbox(renderer).transformed(fig.dpi_scale_trans.inverted())
    return Bbox.from_extents(box.x0 - pad, box.y0 - pad, box.x1 + pad, box.y1 + pad)
