"""The array engines of the batched token runs: which array library (and device) runs a
scheme written against the array API. The phase diagram (``tokens.phase_kernels``) and the
Gaussian convergence study (``transport.gaussian_convergence``) both take one by name.

"numpy" and "numba" run on the CPU (numba's batched reference is numpy); "torch" on CUDA
when it is available, else the CPU; "cupy" on the current CUDA device. A library that is
not installed, or CuPy without a device, is refused before any work, saying what to
install or which engine to give instead.
"""
from __future__ import annotations

import importlib
from typing import Any

import array_api_compat
import array_api_compat.numpy

from meanfield.errors import ConfigError

ENGINES = ("numba", "numpy", "torch", "cupy")
# what to install for an array library (the CUDA 12 wheel of CuPy: cupy-cuda11x for
# CUDA 11, see CuPy's installation page)
INSTALL = {"torch": "pip install torch", "cupy": "pip install cupy-cuda12x"}


def backend(engine: str) -> tuple[Any, Any]:
    """The array namespace and device of an engine of the batched scheme.

    "numpy" (and "numba", whose batched reference is numpy): ``array_api_compat.numpy``
    on the CPU; "torch": ``array_api_compat.torch`` on "cuda" if
    ``torch.cuda.is_available()`` else "cpu"; "cupy": ``array_api_compat.cupy`` on the
    current CUDA device.

    Raises:
        ConfigError: (key ``phase_diagram.engine``) the library is not installed (saying
            what to install) or, for CuPy, no CUDA device answers. Called by the study
            before any work.
    """
    if engine in ("numpy", "numba"):
        return array_api_compat.numpy, "cpu"
    if engine not in INSTALL:
        raise ConfigError(f"phase_diagram.engine = {engine!r}: give one of "
                          f"{', '.join(ENGINES)}", "phase_diagram.engine")
    try:
        importlib.import_module(engine)
        xp = importlib.import_module(f"array_api_compat.{engine}")
    except ImportError as exc:
        raise ConfigError(f"phase_diagram.engine = {engine!r} needs {engine}, which is not "
                          f"installed ({exc}): `{INSTALL[engine]}` (a build for your GPU: "
                          "see its installation page), or give engine = \"numba\" or "
                          "\"numpy\"", "phase_diagram.engine") from exc
    if engine == "torch":
        import torch

        return xp, torch.device("cuda" if torch.cuda.is_available() else "cpu")
    import cupy

    try:
        cupy.cuda.runtime.getDeviceCount()
        device = cupy.cuda.Device()
    except Exception as exc:  # CUDARuntimeError and the like: no driver, no device
        raise ConfigError(f"phase_diagram.engine = \"cupy\": CuPy is installed but no CUDA "
                          f"device answers ({exc}); give engine = \"torch\", \"numba\" or "
                          "\"numpy\"", "phase_diagram.engine") from exc
    return xp, device


def device_name(engine: str) -> str:
    """Where an engine runs, in words ("cpu", "cuda:0 (NVIDIA H100 ...)")."""
    _, dev = backend(engine)
    if engine == "torch" and str(dev).startswith("cuda"):
        import torch

        return f"{dev} ({torch.cuda.get_device_name()})"
    if engine == "cupy":
        import cupy

        name = cupy.cuda.runtime.getDeviceProperties(dev.id)["name"]
        return f"cuda:{dev.id} ({name.decode() if isinstance(name, bytes) else name})"
    return str(dev)
