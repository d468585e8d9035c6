"""Negative beta: where the config accepts it (docs/conventions.md, "Negative beta").

``model.beta`` takes any finite number in [-1e8, 1e8] (``signed_beta``); once the whole
config is clean, ``check_negative_beta`` refuses a negative one everywhere except

- the PDE on the circle (``evolve`` and the PDE of ``compare``, both discretizations):
  the Fourier multipliers ``2 pi I_k(beta)`` hold for every real beta (``I_k(-b) =
  (-1)^k I_k(b)``), and the model scales USA's velocity by ``e^{|beta|}``, the inverse
  of ``ive``'s ``e^{-|beta|}``;
- SA and USA tokens with Post-LN (``architecture = "post-ln"``, no weights, mask or
  feed-forward layer) on the circle (``particles``, and the tokens of ``compare``): the
  direct kernel sums shift each row by its own maximum, any sign of beta (the fast
  sums expand ``e^{beta <x, y>}`` for beta >= 0 only: ``sum_method`` must be "auto",
  which then takes the direct sums, or "direct").

Everything else (the sphere and zonal PDEs, whose multipliers ``i_l(beta)`` and
``(2/beta)^{d/2-1}`` are written for beta > 0, tokens on S^{d-1} for d >= 3, Pre-LN,
hardmax, weights, and the studies, whose thresholds and scans assume beta >= 0) is
refused in one line naming the key, the value and where negative beta is accepted.
"""
from __future__ import annotations

from typing import Any

from meanfield.config import checkers as ck
from meanfield.config.weights import is_identity
from meanfield.errors import ConfigError

MAX_USA_BETA = 700.0  # (sections.MAX_USA_BETA: e^|beta| overflows beyond)
NEGATIVE_TASKS = ("evolve", "particles", "compare")
WHERE = ("negative beta is accepted on the circle only (domain.geometry = \"circle\"): "
         "by the PDE (evolve, compare) and by SA/USA tokens with architecture "
         "\"post-ln\" and no [weights] or [feedforward] (particles, compare); see "
         "docs/conventions.md")


def _signed_beta(key: str, value: Any) -> float:
    x = ck.finite_number(key, value)
    if abs(x) > ck.MAX_BETA:
        raise ConfigError(f"{key} = {ck.describe(value)}: beta is accepted up to "
                          f"{ck.MAX_BETA:g} in magnitude, >= {-ck.MAX_BETA:g} and <= "
                          f"{ck.MAX_BETA:g} (the attention weight e^(beta (<x, y> - 1)) "
                          "carries beta times the cosine's rounding, 1.1e-16)", key)
    return x


def check_negative_geometry(cfg: dict) -> None:
    """The early part of ``check_negative_beta``, run as soon as ``[domain]`` is clean
    (before the sections whose defaults use beta): negative beta off the circle."""
    beta = cfg.get("model", {}).get("beta")
    geometry = cfg["domain"]["geometry"]
    if beta is not None and beta < 0 and geometry != "circle":
        raise ConfigError(f"model.beta = {beta!r} < 0 with domain.geometry = "
                          f"{geometry!r}: {WHERE}", "model.beta")


signed_beta = ck.accepting(
    f"a finite number >= {ck.shown_number(-ck.MAX_BETA)} and <= "
    f"{ck.shown_number(ck.MAX_BETA)}; below 0 only on the circle, for the PDE and for "
    "SA/USA tokens with architecture 'post-ln' (docs/conventions.md)", _signed_beta)


def _refusal(cfg: dict, task: str | None) -> str | None:
    """Why ``cfg`` (clean, with a negative beta) cannot take it, or None."""
    if task is not None and task not in NEGATIVE_TASKS:
        return f"'meanfield {task.replace('_', '-')}' takes beta >= 0"
    geometry = cfg.get("domain", {}).get("geometry")
    if geometry != "circle":
        return f"domain.geometry = {geometry!r}"
    p = cfg.get("particles")
    if p is None:
        return None
    if p.get("architecture") not in (None, "post-ln"):
        return f"particles.architecture = {p['architecture']!r}"
    if p.get("sum_method") not in ("auto", "direct"):
        return f"particles.sum_method = {p['sum_method']!r} (the fast sums need beta >= 0)"
    if p.get("mask", "none") != "none" or p.get("save_attention"):
        return "a mask or saved attention (the weighted tokens)"
    if cfg.get("feedforward") or ("weights" in cfg and not is_identity(cfg)):
        return "[weights] or [feedforward] (the weighted tokens)"
    return None


def check_negative_beta(cfg: dict, task: str | None = None) -> None:
    """ConfigError (one line: the key, the value, where negative beta is accepted) for a
    negative ``model.beta`` outside the models of the module docstring."""
    beta = cfg.get("model", {}).get("beta")
    if beta is None or beta >= 0:
        return
    if not cfg["model"]["normalized"] and beta < -MAX_USA_BETA:
        raise ConfigError(f"model.beta = {beta!r}: the unnormalized (USA) velocity grows "
                          f"like e^|beta| and overflows beyond |beta| = {MAX_USA_BETA:g}; "
                          "use normalized = true", "model.beta")
    why = _refusal(cfg, task)
    if why is not None:
        raise ConfigError(f"model.beta = {beta!r} < 0 with {why}: {WHERE}", "model.beta")
