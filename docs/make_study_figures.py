"""Make the committed figures of the study pages (docs/studies/figures/<command>.png).

A study page shows the figure its command writes. Where the full example config runs in
about a minute, the page shows that figure at full scale, committed here because the docs
build (CI) cannot afford to run it; the other pages show the figure of the matching
gallery example, which the build runs in its quick form (see each page's caption).

For each study below this script runs, in a temporary folder,

    meanfield <command> examples/<config>.toml --out result.nc
    meanfield plot result.nc --dpi 110

and keeps the page ``result_<page>.png`` that the page describes, re-encoded with a
palette (Pillow's adaptive 256 colours) so that each file stays under 300 kB.

Run from the repository root (about 15 minutes on two shared cores, most of it the
metastability and normalization studies)::

    python docs/make_study_figures.py            # every figure
    python docs/make_study_figures.py compare    # one study
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "studies" / "figures"
LIMIT = 300_000  # bytes per committed figure

# command -> (example config, the page of `meanfield plot` the study page shows)
STUDIES: dict[str, tuple[str, str]] = {
    "compare": ("compare_sphere.toml", "summary"),
    "convergence": ("convergence.toml", "summary"),
    "contraction": ("contraction.toml", "summary"),
    "critical-points": ("critical_points.toml", "summary"),
    "long-context": ("long_context.toml", "summary"),
    "bifurcation": ("bifurcation.toml", "summary"),
    "correlations": ("correlations.toml", "summary"),
    "normalization": ("normalization.toml", "summary"),
    "metastability": ("metastability.toml", "summary"),
    "phase-diagram": ("phase_diagram.toml", "summary"),
}
# --set overrides where the committed config costs too much to be made again at will: the
# phase diagram's full grid (five d, 50 β, t <= 30) with 128 systems per β instead of
# 2048 (57 s of CPU against about 470 s; the probabilities are noisier, the same shape)
OVERRIDES: dict[str, list[str]] = {"phase-diagram": ["phase_diagram.systems=128"]}


def make(command: str, dpi: int = 110) -> Path:
    """Run one study's example at full scale and write its committed figure."""
    from PIL import Image

    config, page = STUDIES[command]
    FIGURES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "result.nc"
        sets = [arg for value in OVERRIDES.get(command, []) for arg in ("--set", value)]
        subprocess.run(["meanfield", command, str(ROOT / "examples" / config), "--out",
                        str(result), "--no-progress", *sets], check=True)
        subprocess.run(["meanfield", "plot", str(result), "--dpi", str(dpi)], check=True)
        pages = sorted(Path(tmp).glob("result_*.png"))
        chosen = [p for p in pages if p.stem == f"result_{page}"] or pages[:1]
        if not chosen:
            raise RuntimeError(f"meanfield plot wrote no PNG for {command}")
        target = FIGURES / f"{command}.png"
        image = Image.open(chosen[0]).convert("RGB")
        image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(
            target, optimize=True)
    size = target.stat().st_size
    print(f"{target.relative_to(ROOT)}: {image.size[0]} x {image.size[1]} px, "
          f"{size / 1000:.0f} kB (from {chosen[0].name})")
    if size > LIMIT:
        raise RuntimeError(f"{target} is {size} bytes, over {LIMIT}: lower --dpi")
    return target


if __name__ == "__main__":
    for name in sys.argv[1:] or list(STUDIES):
        make(name)
