"""Token studies: finite systems of tokens under attention, many at once.
``phase_diagram`` (clustering in (t, beta), with its batched fields ``phase_kernels`` and
the compiled engine ``phase_numba``), ``metastability`` (the cluster staircase and the
last merge), ``normalization`` (post-LN, pre-LN and the other architectures), and
``long_context`` (the cosine of equiangular tokens against the context length n).

Submodules import each other directly; this package imports nothing."""
