"""Figures of the token studies (``meanfield.studies.tokens``): ``phase_diagram``,
``metastability`` (its ``times`` page in ``metastability_times``), ``normalization`` and
``long_context``.

Submodules import each other directly; this package imports nothing."""
