"""Tokens in R^d over time for the figures of ``meanfield.plotting.weights.panels``: read
from a particle dataset (``position``, the saved ``attention``, the run's weights, beta, mask and
rescaled flag from its ``config`` attribute) or from plain arrays, checked once; the
attention recomputed from the one head when it was not saved; the shared labels.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from meanfield.errors import ConfigError

# the share of the tokens' diameter within which tokens count as one point (a vertex or a
# hyperplane that has not fully collapsed at the last saved time)
RELATIVE_TOLERANCE = 1e-3


@dataclass(frozen=True)
class TokenSeries:
    """Tokens over time, read from a dataset or given as arrays."""

    times: np.ndarray          # (T,)
    tokens: np.ndarray         # (T, n, d)
    attention: np.ndarray | None  # (T, n, n) or None
    heads: tuple | None        # the heads of the run, or None when not known
    rescaled: bool
    beta: float = 1.0          # the run's inverse temperature and mask (for P)
    mask: str = "none"

    @property
    def value(self) -> np.ndarray | None:
        """V of a one-head run, else None."""
        return self.heads[0].value if self.heads and len(self.heads) == 1 else None


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes")


def _run_of(ds: Any) -> dict:
    """What the dataset's config says of the run: ``heads`` (None when the weights cannot
    be rebuilt), ``beta``, ``mask``, ``rescaled`` (absent when there is no config)."""
    try:
        cfg = json.loads(ds.attrs["config"])
    except Exception:  # noqa: BLE001 - no config: the attributes decide
        return {}
    p = cfg.get("particles", {})
    out = {"beta": float(cfg.get("model", {}).get("beta", 1.0)),
           "mask": str(p.get("mask", "none")), "rescaled": bool(p.get("rescaled", False))}
    try:
        from meanfield.model.weighted_attention import build_heads

        out["heads"] = tuple(build_heads(cfg))
    except Exception:  # noqa: BLE001 - an optional panel: any failure leaves it out
        out["heads"] = None
    return out


def token_series(data: Any, times: Any = None, *, attention: Any = None,
                 heads: Any = None) -> TokenSeries:
    """Tokens over time from a dataset or arrays, checked.

    Args:
        data: a particle dataset of geometry ``"euclidean"``, or an array ``(T, n, d)``
            (``(n, d)``: one time), or a ``TokenSeries`` (returned as it is).
        times: ``(T,)`` times of an array (default ``0, 1, ...``); not with a dataset.
        attention: ``(T, n, n)`` attention matrices of an array (a dataset's come from its
            ``attention`` variable; of several heads, the first head's).
        heads: a ``Head`` or a sequence of them, used for V and to compute the attention
            when it is not given (one head, rescaled tokens when ``rescaled`` holds).

    Raises:
        ConfigError: naming what is missing or of the wrong shape.
    """
    import xarray as xr

    from meanfield.model.weighted_attention import Head

    if isinstance(data, TokenSeries):
        return data
    if isinstance(data, xr.Dataset):
        if "position" not in data.data_vars:
            raise ConfigError("a particle dataset needs 'position (time, particle, "
                              "component)'", "position")
        if times is not None:
            raise ConfigError("times are read from the dataset; pass them with arrays "
                              "only", "times")
        z = np.asarray(data["position"].transpose("time", "particle", "component").values,
                       dtype=float)
        t = np.asarray(data["time"].values, dtype=float)
        if attention is None and "attention" in data.data_vars:
            saved = data["attention"]
            if "head" in saved.dims:  # several heads: the first one's matrices are drawn
                saved = saved.isel(head=0)
            attention = saved.transpose("time", "particle", "key").values
        run = _run_of(data)
        rescaled = (_truthy(data.attrs["rescaled"]) if "rescaled" in data.attrs
                    else run.get("rescaled", False))
        if heads is None:
            heads = run.get("heads")
        beta, mask = run.get("beta", 1.0), run.get("mask", "none")
    else:
        z = np.asarray(data, dtype=float)
        z = z[None] if z.ndim == 2 else z
        t = np.arange(z.shape[0], dtype=float) if times is None else np.asarray(
            times, dtype=float).ravel()
        rescaled, beta, mask = True, 1.0, "none"
    if z.ndim != 3 or z.shape[1] < 1 or z.shape[2] < 1 or t.shape != (z.shape[0],):
        raise ConfigError(f"tokens must be (time, n, d) with one time each, got shape "
                          f"{z.shape} and {t.size} times", "position")
    if not np.all(np.isfinite(z)):
        raise ConfigError("the tokens ('position') have NaN or inf entries: nothing to "
                          "plot", "position")
    if isinstance(heads, Head):
        heads = (heads,)
    if attention is not None:
        attention = np.asarray(attention, dtype=float)
        if attention.shape != (z.shape[0], z.shape[1], z.shape[1]):
            want = (z.shape[0], z.shape[1], z.shape[1])
            raise ConfigError(f"attention must be (time, n, n) = {want}, got "
                              f"{attention.shape}", "attention")
    return TokenSeries(t, z, attention, tuple(heads) if heads else None, rescaled, beta,
                       mask)


def _attention(s: TokenSeries) -> np.ndarray | None:
    """The saved attention, or the one head's recomputed from the tokens (None if no)."""
    if s.attention is not None:
        return s.attention
    if not s.heads or len(s.heads) != 1:
        return None
    from meanfield.model.weighted_attention import attention_matrix, rescaled_attention

    h, kw = s.heads[0], {"beta": s.beta, "mask": s.mask}
    if s.rescaled:
        return np.stack([rescaled_attention(z, t, h, **kw)
                         for t, z in zip(s.times, s.tokens)])
    return np.stack([attention_matrix(z, h, **kw) for z in s.tokens])


def _tolerance(z: np.ndarray, tolerance: float | None) -> float:
    if tolerance is not None:
        return float(tolerance)
    span = float(np.max(np.ptp(z, axis=0))) if z.shape[0] > 1 else 0.0
    return RELATIVE_TOLERANCE * span


def _title(s: TokenSeries) -> str:
    n, d = s.tokens.shape[1:]
    what = "rescaled tokens $z = e^{-tV}x$" if s.rescaled else "tokens x"
    v = s.value
    if v is not None:
        lam = np.sort_complex(np.linalg.eigvals(v))[::-1]
        shown = ", ".join(f"{x.real:.3g}" if abs(x.imag) < 1e-12 else f"{x:.3g}"
                          for x in lam[:4])
        what += f", eig V = ({shown}{', …' if lam.size > 4 else ''})"
    return f"{n} {what} in R{_sup(d)}"


def _sup(d: int) -> str:
    return str(d).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))


def _principal(z: np.ndarray) -> np.ndarray:
    """(d, 2) orthonormal principal axes of a configuration (about its mean: tokens in
    R^d are not centred on the origin as unit vectors are)."""
    from meanfield.plotting.particles.panels import _principal_plane

    return _principal_plane(z - z.mean(axis=0)).T
