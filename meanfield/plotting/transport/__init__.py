"""Figures of the transport studies (``meanfield.studies.transport``): ``comparison`` (the
PDE against tokens, ``kind = "compare"``; its data in ``comparison_data``, its density
panels in ``comparison_panels``, its time series in ``comparison_series``, the zonal
panels in ``comparison_zonal``), ``convergence`` (the error against n) and
``contraction`` (the W₂ decay rates).

Submodules import each other directly; this package imports nothing."""
