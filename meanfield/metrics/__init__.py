"""Diagnostics, clusters and distances between measures.

``wasserstein(mu, nu, p=2, *, geometry=None, method="auto", modulo_rotation=False)`` is
the public front of docs/datasets.md (``meanfield.metrics.wasserstein``, module of the
same name). It is imported here eagerly on purpose: the function must shadow its module
as the package attribute, and a lazy attribute would be replaced by the module as soon as
anything imported the module. The import is light (numpy only): POT is imported inside
the functions that solve transport problems.

``kde_modes(points, beta)``: the modes of the KDE ``e^{beta <., .>} * mu`` on S^1 and
S^{d-1} (``meanfield.metrics.kde``; [Rig25, §5.3]).

``in_hemisphere(points)``: do the points lie in an open hemisphere? An exact linear
program (``meanfield.metrics.hemisphere``; [GLPR25, Lemma 6.4]; scipy imported when it
runs).
"""
from meanfield.metrics.hemisphere import in_hemisphere
from meanfield.metrics.kde import kde_modes
from meanfield.metrics.wasserstein import wasserstein

__all__ = ["in_hemisphere", "kde_modes", "wasserstein"]
