"""The dataset of the critical-points study: one row (``point``) per critical point found,
the members' (n, beta) on each row, the per-member counts of starts (docs/studies/
critical-points.md lists every variable)."""
from __future__ import annotations

import numpy as np
import xarray as xr

from meanfield.studies.dataset import assemble, variable
from meanfield.studies.landscape.critical_search import FAMILIES

_POINT_FLOAT = ("energy", "energy_gap", "closed_form_error", "residual",
                "unstable_eigenvalue")
_POINT_INT = ("index", "zero_modes", "symmetry_zero_modes")


def _rows(done: list, members: list[dict], n_max: int, d: int) -> dict[str, np.ndarray]:
    """The members' rows concatenated (empty arrays of the right shapes if none)."""
    empty = {"positions": (0, n_max, d), "unstable_direction": (0, n_max, d),
             "eigenvalues": (0, n_max * (d - 1)), "sizes": (0, n_max),
             "hits": (0, len(FAMILIES))}
    rows: dict[str, list] = {k: [] for k in (*_POINT_FLOAT, *_POINT_INT, "degenerate",
                                             "kind", *empty, "beta", "n")}
    for params, frame in zip(members, done):
        if not isinstance(frame, dict):
            continue
        for k in rows:
            if k in ("beta", "n"):
                rows[k].append(np.full(frame["energy"].size, params[k]))
            else:
                rows[k].append(np.asarray(frame[k]))
    out = {}
    for k, parts in rows.items():
        if parts:
            out[k] = np.concatenate(parts)
        else:
            out[k] = np.zeros(empty.get(k, (0,)), dtype=object if k == "kind" else float)
    return out


def _member_counts(done: list, m: int) -> tuple[np.ndarray, ...]:
    """Per member: starts and converged starts per family, points found, and
    non-synchronised points of index 0 (-1 where the member is not done)."""
    starts = np.zeros((m, len(FAMILIES)), dtype=np.int64)
    converged = np.zeros((m, len(FAMILIES)), dtype=np.int64)
    found = np.full(m, -1, dtype=np.int64)
    counterexamples = np.full(m, -1, dtype=np.int64)
    for i, frame in enumerate(done):
        if isinstance(frame, dict):
            starts[i], converged[i] = frame["starts"], frame["converged"]
            found[i] = frame["energy"].size
            counterexamples[i] = int(np.sum((frame["kind"].astype(str) != "synchronised")
                                            & (frame["index"] < 1)))
    return starts, converged, found, counterexamples


def study_dataset(cfg: dict, members: list[dict], done: list, info: dict) -> xr.Dataset:
    """The critical-points dataset of the members done (module docstring)."""
    c = cfg["critical_points"]
    d, n_max = c["dim"], max(c["n"])
    r = _rows(done, members, n_max, d)
    p = r["energy"].size
    sync = r["kind"].astype(str) == "synchronised"
    strict = r["index"] >= 1
    counter = ~sync & ~strict
    starts, converged, found, counterexamples = _member_counts(done, len(members))
    pt, mb = ("point",), ("member",)
    data = {
        "energy": variable(pt, r["energy"].astype(float), "E_beta - E_beta(uniform)"),
        "energy_gap": variable(pt, r["energy_gap"].astype(float),
                               "E_beta(synchronised) - E_beta, without cancellation"),
        "index": variable(pt, r["index"].astype(np.int64),
                          "number of positive Hessian eigenvalues (0: a local maximum)"),
        "hessian_eigenvalues": variable(pt + ("mode",), r["eigenvalues"].astype(float),
                                        "Hessian of E_beta in tangent coordinates "
                                        "(angles on S^1), ascending; NaN beyond n(d-1)"),
        "zero_modes": variable(pt, r["zero_modes"].astype(np.int64),
                               "eigenvalues with |lambda| <= zero_tolerance max |lambda|"),
        "symmetry_zero_modes": variable(pt, r["symmetry_zero_modes"].astype(np.int64),
                                        "dimension of the orbit under rotations"),
        "degenerate": variable(pt, r["degenerate"].astype(bool),
                               "more zero modes than the rotations force"),
        "strict_saddle": variable(pt, strict, "index >= 1"),
        "kind": variable(pt, r["kind"].astype(str),
                         "synchronised, antipodal, equally_spaced, regular_clusters, other"),
        "clusters": variable(pt, np.sum(r["sizes"] > 0, axis=1).astype(np.int64),
                             "distinct positions"),
        "cluster_sizes": variable(pt + ("token",), r["sizes"].astype(np.int64),
                                  "tokens per distinct position, 0-padded"),
        "closed_form_error": variable(pt, r["closed_form_error"].astype(float),
                                      "max |eigenvalue - closed form| / max |eigenvalue| "
                                      "(NaN: kind other)"),
        "gradient_residual": variable(pt, r["residual"].astype(float),
                                      "max |grad E_beta| / (e^beta / n)"),
        "hits": variable(pt + ("family",), r["hits"].astype(np.int64),
                         "starts of each family that converged to this point"),
        "positions": variable(pt + ("token", "component"), r["positions"].astype(float),
                              "tokens (unit vectors; NaN beyond n)"),
        "unstable_eigenvalue": variable(pt, r["unstable_eigenvalue"].astype(float),
                                        "largest Hessian eigenvalue"),
        "unstable_direction": variable(pt + ("token", "component"),
                                       r["unstable_direction"].astype(float),
                                       "its eigenvector as tangent vectors, unit norm "
                                       "(NaN when index = 0)"),
        "counterexamples": variable(mb, counterexamples, "non-synchronised points of "
                                    "index 0 (-1: member not done)"),
        "points_found": variable(mb, found, "distinct critical points (-1: not done)"),
        "starts": variable(mb + ("family",), starts, "starts run"),
        "converged": variable(mb + ("family",), converged, "starts that converged"),
    }
    if d == 2:
        pos = r["positions"].astype(float)
        angles = np.mod(np.arctan2(pos[..., 1], pos[..., 0]), 2 * np.pi)
        data["angles"] = variable(pt + ("token",), angles,
                                  "token angles, sorted from 0", units="rad")
    coords = {"point": ("point", np.arange(p)),
              "beta": ("point", r["beta"].astype(float), {"units": "1"}),
              "n": ("point", r["n"].astype(np.int64), {"units": "1"}),
              "family": ("family", list(FAMILIES)),
              "member_n": ("member", np.array([q["n"] for q in members], dtype=np.int64)),
              "member_beta": ("member", np.array([q["beta"] for q in members], dtype=float))}
    total = int(np.sum(counter))
    return assemble(data, coords, {
        "title": f"critical points of E_beta, {','.join(map(str, c['n']))} tokens on "
                 f"S^{d - 1}",
        "dim": d, "zero_tolerance": c["zero_tolerance"], "tolerance": c["tolerance"],
        "match_tolerance": c["match_tolerance"], "jitter": c["jitter"],
        "counterexamples_total": total,
        "prediction": "every non-synchronised critical point is a strict saddle (index >= "
                      f"1): {'holds' if total == 0 else 'fails'} for the points found"},
        info)
