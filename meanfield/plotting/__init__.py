"""Figures and animations of ``meanfield`` results.

Every function takes a result ``xarray.Dataset`` (see ``meanfield.evolve``) and draws it
according to its ``geometry`` attribute, ``"circle"``, ``"sphere"`` or ``"zonal"``
(without the attribute: a ``theta`` dimension means circle, ``lat`` and ``lon`` mean
sphere). A
dataset that cannot be drawn raises ``ConfigError`` naming what was found and what is
accepted. Nothing here touches pyplot's global state: figures are plain
``matplotlib.figure.Figure`` objects with an Agg canvas, so the module works headless
(servers, CI) and the returned figures display in notebooks.

Typical use::

    from meanfield.plotting import figure, plot, plot_result
    fig = figure(ds)                       # one summary figure
    figs = plot(ds)                        # every standard figure: {"summary": Figure, ...}
    figs = plot(ds, "out", stem="run1", format="pdf")   # ... also written to out/run1_*.pdf
    paths = plot_result(ds, "out", stem="run1", animate=True)   # the files written

Sphere maps (matplotlib only)::

    from meanfield.plotting import map_mollweide, map_orthographic
    mesh = map_mollweide(ds, time=2.0, log="auto", points=xyz)  # new figure: mesh.axes.figure
    map_orthographic(ds, center=[0, 0, 1])                       # view of the north pole

Functions drawing into caller-supplied axes (``spacetime``, ``snapshots``,
``diagnostics``, the maps) respect the caller's rcParams; figures made here use a
compact style sized for a two-column paper, ``style()``, a context manager: draw your own
figures inside it to match them::

    from meanfield.plotting import style
    with style():
        fig = Figure(figsize=(6, 3), layout="constrained")
        spacetime(ds, fig.add_subplot())

Zonal densities on S^{d-1} (``geometry = "zonal"``, any d) are drawn as the density
in θ and the marginal of t = cos θ at time slices; the linear theory in every dimension
has its own figure::

    marginal_snapshots(ds, ax)    # zonal: the density of t = cos θ at a few times
    from meanfield.plotting.densities.zonal_theory import linear_theory_figure
    fig = linear_theory_figure(dims=(2, 3, 8, 64, 512), beta=16.0)  # σ_l, κ_c/d

Token datasets (``attrs["kind"] = "particles"``, from ``meanfield.particles``) and
comparisons of the PDE with tokens (``"compare"``, from ``meanfield.compare``) go through
the same ``figure`` and ``plot_result``; their panels are also public::

    trajectories(ds, ax)          # circle tokens: θ_i(t), or their density over (θ, t)
    token_map(ds, time=2.0)       # sphere tokens on an orthographic view (or Mollweide)
    gram(ds, ax)                  # any d: the Gram matrix <x_i, x_j>, clustered order
    density_vs_histogram(cmp, ax, time=1.0)  # circle: PDE density over token histogram
    histogram_map(cmp, ax)        # sphere: token histogram per mesh cell, Mollweide
    l1_distance(cmp, ax); order_comparison(cmp, ax)

Layout, as ``meanfield.studies``: the shared base here, the figures by family below.
The base: ``common`` (validation and dispatch: the geometry and kind registries, and the
functions above that work for every geometry), ``output`` (the standard set of figures,
``figures``, ``plot`` and ``plot_result``, and their files), ``helpers`` (style,
formatting, colour scales, dataset checks, animation writing, the diagnostics panels),
``legible`` (plain and integer ticks, Greek titles, legends under panels, caption notes).
The families, each registering its figures on import:

- ``densities``: the PDE's densities by geometry, ``circle``, ``sphere`` and ``zonal``
  (the sphere grid in ``sphere_grid``, its Mollweide and orthographic maps in
  ``sphere_maps``; the zonal curves in ``zonal_grid``, the linear theory in every
  dimension in ``zonal_theory``);
- ``particles``: token runs on the circle and the sphere (``figures``, the kind
  ``"particles"``; its panels ``trajectories``, ``token_map``, ``gram`` in ``panels``);
- ``weights``: tokens in R^d with general weights (``geometry = "euclidean"``):
  ``figures`` (the dispatch) draws the panels of ``panels`` (paths, attention matrices,
  distance to Boolean, polytope, hyperplanes), read by ``token_series``, the polytope's
  vertices labelled by ``vertices``;
- ``transport``: ``comparison`` (PDE against tokens; its data in ``comparison_data``, its
  density panels in ``comparison_panels``, its time series in ``comparison_series``, the
  zonal panels in ``comparison_zonal``), ``convergence`` and ``contraction``;
- ``bifurcation``: ``diagrams`` (``bifurcation_figure(ds, scan=...)`` overlays a
  brute-force scan on a continuation), ``curves`` (the branches as computed),
  ``across_dims``;
- ``tokens``: ``phase_diagram``, ``metastability`` (its ``times`` page in
  ``metastability_times``), ``normalization``, ``long_context``;
- ``landscape``: ``critical_points``; ``correlations``: ``figures``.
"""
from __future__ import annotations

# Imported for their registrations, in the order that fixes SUPPORTED_KINDS.
from meanfield.plotting.densities import circle as _circle  # noqa: F401
from meanfield.plotting.transport import comparison as _comparison  # noqa: F401
from meanfield.plotting.transport import contraction as _contraction  # noqa: F401
from meanfield.plotting.landscape import critical_points as _critical_points  # noqa: F401
from meanfield.plotting.weights import figures as _euclidean  # noqa: F401  (tokens in R^d)
from meanfield.plotting.correlations import figures as _correlations  # noqa: F401
from meanfield.plotting.tokens import long_context as _long_context  # noqa: F401
from meanfield.plotting.tokens import metastability as _metastability  # noqa: F401
from meanfield.plotting.tokens import normalization as _normalization  # noqa: F401
from meanfield.plotting.densities import sphere as _sphere  # noqa: F401
from meanfield.plotting.densities import zonal as _zonal  # noqa: F401
from meanfield.plotting.bifurcation.diagrams import (  # registers "bifurcation"
    bifurcation_diagram,
    bifurcation_figure,
    free_energy_diagram,
)
from meanfield.plotting.common import (
    _KINDS,
    _PLOTTERS,
    diagnostics,
    figure,
    snapshots,
    spacetime,
)
from meanfield.plotting.densities.sphere_maps import map_mollweide, map_orthographic
from meanfield.plotting.densities.zonal import marginal_snapshots
from meanfield.plotting.helpers import style
from meanfield.plotting.output import FORMATS, figures, plot, plot_result
from meanfield.plotting.transport.comparison_panels import density_vs_histogram, histogram_map
from meanfield.plotting.transport.comparison_series import l1_distance, order_comparison
from meanfield.plotting.transport.convergence import error_vs_n, error_vs_time  # registers
from meanfield.plotting.particles.figures import gram, token_map, trajectories  # registers
from meanfield.plotting.tokens.phase_diagram import phase_figure  # registers "phase_diagram"

SUPPORTED_GEOMETRIES: tuple[str, ...] = tuple(_PLOTTERS)
SUPPORTED_KINDS: tuple[str, ...] = tuple(_KINDS)

__all__ = [
    "SUPPORTED_GEOMETRIES",
    "SUPPORTED_KINDS",
    "bifurcation_diagram",
    "bifurcation_figure",
    "density_vs_histogram",
    "FORMATS",
    "diagnostics",
    "error_vs_n",
    "error_vs_time",
    "figure",
    "figures",
    "free_energy_diagram",
    "gram",
    "histogram_map",
    "l1_distance",
    "map_mollweide",
    "map_orthographic",
    "marginal_snapshots",
    "order_comparison",
    "phase_figure",
    "plot",
    "plot_result",
    "snapshots",
    "spacetime",
    "style",
    "token_map",
    "trajectories",
]
