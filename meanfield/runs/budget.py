"""What a run will cost, said before it starts: memory (refused above what the machine has)
and, where it is cheap to say, time (a warning for runs of hours).

``estimate(cfg, task)`` reads a validated config only (nothing is allocated) and returns a
``Budget``: the bytes of each part of the run with the config key that drives it, plus
seconds where a cheap lower bound exists. ``check(cfg, task)`` compares the total with the
available memory (``/proc/meminfo`` MemAvailable, else ``os.sysconf``; ``MEMORY_MARGIN`` of
it) and raises ``ConfigError`` naming the dominant key, the estimate in GiB and the value
of that key that would fit (``meanfield.runs.fits``); a run estimated above
``LONG_RUN_S`` is warned about (``LongRunWarning``), never refused. With ``out`` the saved frames must also fit on the
disk (``check_disk``). The ensemble studies check theirs with ``check_ensemble``; the
counts of the work (time steps, members, local workers) are ``meanfield.runs.limits``.

The parts (bytes of float64 = 8, complex = 16):

- the PDE state and its work arrays per (geometry, method): circle, ``n`` points: the
  ETDRK4 stages, phi functions and the 3/2-padded product grids (spectral) or the SSP-RK3
  stages and the FFT convolution of the potential (finite volumes), ``C * n * 8``; sphere
  spectral, band limit ``L``: ``C * (L+1)(2L+2) * 8`` (grids, the product grids of the 3/2
  rule, the packed coefficients and the ETDRK4 stages all scale as ``L^2``); sphere finite
  volumes, ``N`` cells: the mesh build (Delaunay, Voronoi, Lloyd) and the per-edge arrays,
  ``C * N``. A discretization registered later may give its own ``memory_bytes(cfg)``
  classmethod (bytes of state and work arrays); otherwise it is counted as the circle's;
- the saved frames: ``frames x grid size x 8`` times ``FRAME_COPIES`` (the list of frames,
  the stacked array of the dataset, the copy the netCDF writer makes); with an output
  (``streamed``: evolve and particles write their frames to part files as they go,
  ``meanfield.runs.frames``) at most ``FRAME_COPIES`` parts of ``PART_BYTES`` (plus a frame)
  are in memory: the buffer, its stacked array while it is written, and the part being
  copied into the result at the end. compare keeps its PDE and members in memory;
- particles: ``n x d x 8`` times the stepper's stages and temporaries, the direct sums'
  Gram blocks (``solvers.particles.direct``, 16 MiB each), the attention-rank SVD
  (``n^2``), the equiangular tokens' random rotation (``ROTATION_ARRAYS`` d x d), and
  the frames ``frames x n x d x 8`` times ``FRAME_COPIES``; the weighted
  models (``meanfield.model.weighted_particles``) with saved or ranked attention add
  ``ATTENTION_ARRAYS`` dense ``n x n`` arrays per head, and ``particles.save_attention``
  adds ``heads x n^2 x 8`` bytes to each frame (memory and disk);
- compare: the PDE, the ``particles.ensemble`` members' kept frames (the positions; zonal:
  their first components only) with
  their copies in the comparison and the checkpoint, and the working set of the members
  running at once (``parallel.workers``);
- every stepped run: the array of save times itself (16 bytes a frame);
- bifurcation: the PDE's, the branch states kept, and the eigenproblems
  (``_bifurcation_parts``: a dense Jacobian of every real component at each pitchfork).

The coefficients ``C`` were measured on this machine (peak RSS increment over the imported
package, ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` in a fresh process) and are then
multiplied by ``SAFETY``. Estimate (with ``OVERHEAD``) / measured peak, 2026-11-23, 2 shared
cores, fixed steps, 3 frames unless said:

    circle spectral n = 65536 ................. 361 / 113 MiB (3.2)
    circle spectral n = 8192, 2001 frames ..... 551 / 317 MiB (1.7); with an output
        (frames streamed in 32 MiB parts) ....... 272 / 188 MiB (1.4) (re-measured
        2026-11-23, fixed dt = save_every = 0.001; before streaming: 343 MiB with one)
    circle finite volumes n = 262144 .......... 356 / 152 MiB (2.3)
    sphere spectral L = 127 / 255 / 511 ....... 649 / 73, 796 / 478, 1386 / 478 MiB
    sphere finite volumes N = 40962 / 163842 .. 329 / 135, 864 / 396 MiB (2.4, 2.2)
    particles S^1 n = 2e5; S^2 n = 1e5 ........ 328 / 110, 296 / 134 MiB (3.0, 2.2)
    compare S^2 L = 32, 4 x 20000 tokens, 101 frames ........ 1129 / 606 MiB (1.9)

so the estimate is 1.4-3x the peak (9x for the small sphere, whose fixed part is counted
in full): a run refused would need at least ~half of what is said. Sphere L = 2047 is
estimated at ~31 GiB (the issue's run was killed at 24 GB).

Time: finite volumes step under their diffusion bound ``dt <= cfl 2.51 dx^2 / (4 D)``
(circle) or ``cfl 2.51 / (D lambda_max)``, ``lambda_max ~ 7 / dbar^2`` with ``dbar = 3.82 /
sqrt(N)`` (sphere), ``D = 1 / kappa``: at least ``t_final / dt`` steps of 3 stages at a
measured cost per stage and per cell (``FV_STAGE_S``, ``FV_CELL_STAGE_S``). This is a lower
bound (the positivity bound can only shorten the step), so the warning is no false alarm.
"""
from __future__ import annotations

import copy
import math
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from meanfield import config as cfgmod
from meanfield.config import memory
from meanfield.errors import ConfigError
from meanfield.runs import fits as fit_advice

GiB = 2**30
MiB = 2**20
MEMORY_MARGIN = memory.MEMORY_MARGIN  # of MemAvailable: the rest is left to the system
SAFETY = 1.5  # on the measured coefficients below (allocator slack, other machines)
OVERHEAD = 150 * MiB  # JIT-compiled kernels, FFT plans, xarray: not in the formulas
FRAME_COPIES = 3  # the frames list, the dataset's stacked array, the netCDF write buffer
LONG_RUN_S = 3600.0
MANY_FRAMES = 1000  # above this many frames their count, not the grid, is what to cut

# Bytes per grid value of the state and work arrays (measured, before SAFETY).
BYTES_PER_POINT = {
    ("circle", "spectral"): 2200.0,
    ("circle", "finite-volume"): 500.0,
    ("sphere", "spectral"): 1000.0,
    ("sphere", "finite-volume"): 3000.0,
}
# Bytes that do not grow with the grid (measured: the sphere's transforms take ~400 MiB
# from band limit 255 up, the same at 511).
FIXED_BYTES = {("sphere", "spectral"): 450 * MiB}
PARTICLE_ARRAYS = 16  # n x d arrays alive in a step: RK4 stages, velocities, temporaries
# n x n arrays per head of a frame's attention (weighted models, saved or ranked): P of
# each head and their stack (measured: attention_matrix peaks at 1.13 n^2 doubles, the
# rescaled form at 1.01, n = 4000; the velocity itself forms none, it runs in blocks)
ATTENTION_ARRAYS = 2
GRAM_BLOCK = 16 * MiB  # solvers.particles.direct.BLAS_BLOCK_ELEMENTS doubles
# d x d arrays of the equiangular tokens' random rotation (initial.tokens): the Gaussian,
# Q and R of its QR, Q with R's signs, and LAPACK's copy
ROTATION_ARRAYS = 5
# Seconds of one SSP-RK3 stage: a fixed part (Python, kernel calls) plus a part per cell
# (measured lower ends: circle 1024 cells 0.17 ms, sphere 10242 cells 8 ms per stage).
FV_STAGE_S = 5e-5
FV_CELL_STAGE_S = {"circle": 2e-8, "sphere": 2e-7, "zonal": 2e-8}


class LongRunWarning(UserWarning):
    """A run is estimated to take longer than ``LONG_RUN_S``."""


@dataclass
class Budget:
    """What a run costs.

    Attributes:
        parts: name -> (bytes, the config key whose value drives it).
        seconds: a lower bound of the wall time, or None where it is not cheap to say.
        what: one phrase saying what the seconds count (e.g. "finite-volume steps").
    """

    parts: dict[str, tuple[float, str]] = field(default_factory=dict)
    seconds: float | None = None
    what: str = ""

    @property
    def bytes(self) -> float:
        return OVERHEAD + sum(b for b, _ in self.parts.values())

    @property
    def dominant(self) -> tuple[str, str]:
        """(part name, key) of the largest part."""
        name = max(self.parts, key=lambda k: self.parts[k][0])
        return name, self.parts[name][1]


# ---------------------------------------------------------------------------------------
# The estimates.

def frame_count(cfg: dict) -> int:
    """The number of saved frames (``meanfield.runs.schedule.save_times``), counted as it
    counts them, without making the array (1e10 save times would be 160 GB)."""
    t_final, every = cfg["time"]["t_final"], cfg["time"]["save_every"]
    count = int(math.floor(t_final / every * (1 + 1e-12)))  # as save_times counts them
    return count + 1 + (t_final - every * count > 1e-12 * t_final)


def _frames_key(frames: int, size_key: str) -> str:
    return "time.save_every" if frames > MANY_FRAMES else size_key


def grid_size(cfg: dict) -> int:
    """The values of one PDE frame: points, Gauss-Legendre grid values or cells."""
    geometry, method = cfg["domain"]["geometry"], cfg["discretization"]["method"]
    res = cfg["discretization"]["resolution"]
    if geometry == "sphere" and method == "spectral":
        return (res + 1) * (2 * res + 2)
    return res


def _frame_bytes(frames: int, frame: float, streamed: bool) -> float:
    """The bytes of the saved frames in memory (``frame``: bytes of one): all of them, or
    with ``streamed`` a part's worth (``meanfield.runs.frames.PART_BYTES``) at most."""
    from meanfield.runs import frames as frames_module
    total = frames * frame
    if streamed:
        total = min(total, frames_module.PART_BYTES + frame)
    return float(FRAME_COPIES * total)


def _pde_work(cfg: dict) -> float:
    """Bytes of the PDE state and its work arrays (module docstring)."""
    from meanfield.discretizations.base import Discretization
    pair = (cfg["domain"]["geometry"], cfg["discretization"]["method"])
    own = getattr(Discretization.from_name(*pair), "memory_bytes", None)
    if own is not None:
        return float(own(cfg))
    return SAFETY * BYTES_PER_POINT.get(pair, BYTES_PER_POINT[("circle", "spectral")]) \
        * grid_size(cfg) + FIXED_BYTES.get(pair, 0)


def _save_times_part(cfg: dict, budget: Budget) -> None:
    """The array of save times itself (``schedule.save_times``: an integer range and its
    float multiple, 16 bytes a frame): 1e10 frames would be 160 GB before any step."""
    budget.parts["save times"] = (16.0 * frame_count(cfg), "time.save_every")


def _pde_parts(cfg: dict, budget: Budget, streamed: bool = False) -> None:
    pair = (cfg["domain"]["geometry"], cfg["discretization"]["method"])
    size, key = grid_size(cfg), "discretization.resolution"
    budget.parts["PDE state and work arrays"] = (_pde_work(cfg), key)
    _save_times_part(cfg, budget)
    frames = frame_count(cfg)
    budget.parts["PDE frames"] = (_frame_bytes(frames, size * 8.0, streamed),
                                  _frames_key(frames, key))
    if pair[1] == "finite-volume":
        _fv_time(cfg, budget)


def _fv_time(cfg: dict, budget: Budget) -> None:
    """A lower bound of a finite-volume run's time: its diffusion-bound step count."""
    kappa = cfg["model"]["kappa"]
    if math.isinf(kappa):
        return
    diffusion, n = 1.0 / kappa, cfg["discretization"]["resolution"]
    cfl = cfg["discretization"]["cfl"]
    if cfg["domain"]["geometry"] == "circle":
        dt = cfl * 2.51 * (2 * math.pi / n) ** 2 / (4 * diffusion)
    elif cfg["domain"]["geometry"] == "zonal":
        # the pole cells are the stiffest: face/cell measure ~ (d - 1)/h there, so the
        # Gershgorin radius of GradientFlowZonalFV is ~ 2 max(2, d - 1)/h^2, h = pi/n
        dim = cfg["domain"]["dim"]
        dt = cfl * 2.51 * (math.pi / n) ** 2 / (2 * max(2, dim - 1) * diffusion)
    else:
        dt = cfl * 2.51 / (diffusion * 7.0 / (3.82 / math.sqrt(n)) ** 2)
    steps = cfg["time"]["t_final"] / dt
    stage = FV_STAGE_S + n * FV_CELL_STAGE_S[cfg["domain"]["geometry"]]
    budget.seconds = steps * 3 * stage
    budget.what = (f"at least {steps:.3g} finite-volume steps (diffusion bound dt <= "
                   f"{dt:.3g} with kappa = {kappa:g})")


def _particle_size(cfg: dict) -> tuple[int, int, str]:
    """(n, d, the key of the larger of the two) without reading more than the config
    (and the row count of a token file)."""
    n, dim = cfg["particles"]["n"], cfg["domain"]["dim"]
    if n is None and cfg["initial"]["kind"] == "tokens":
        from meanfield.initial import samplers
        n = samplers.token_count(cfg["initial"]["path"])
    n = cfgmod.DEFAULT_N if n is None else n
    return n, dim, "domain.dim" if dim > n else "particles.n"


def _particle_parts(cfg: dict, budget: Budget, prefix: str = "",
                    streamed: bool = False) -> None:
    from meanfield.runs.particle_dataset import attention_heads, frame_bytes
    n, d, key = _particle_size(cfg)
    budget.parts[prefix + "token state and stages"] = (
        SAFETY * PARTICLE_ARRAYS * n * d * 8 + 4 * GRAM_BLOCK, key)
    if (cfg.get("initial") or {}).get("kind") == "equiangular":  # turned by a random
        budget.parts[prefix + "initial rotation"] = (  # rotation: QR of a d x d Gaussian
            ROTATION_ARRAYS * float(d) * d * 8, "domain.dim")
    heads = attention_heads(cfg)
    if cfg["particles"]["attention_rank"] or cfg["particles"].get("save_attention"):
        if heads:  # each frame's attention matrices, formed for the diagnostics
            budget.parts[prefix + "attention matrices"] = (
                SAFETY * ATTENTION_ARRAYS * heads * n * n * 8.0, "particles.n")
        budget.parts[prefix + "attention matrix SVD"] = (  # (measured 1.19 n^2 a head)
            4.0 * max(heads, 1) * n * n * 8, "particles.n")
    _save_times_part(cfg, budget)
    frames = frame_count(cfg)
    what = "token and attention frames" if cfg["particles"].get("save_attention") \
        else "token frames"
    budget.parts[prefix + what] = (
        _frame_bytes(frames, frame_bytes(cfg, n, d), streamed), _frames_key(frames, key))


def estimate(cfg: dict, task: str, streamed: bool = False) -> Budget:
    """The memory (and, for finite volumes with noise, a time bound) of a run.

    Args:
        cfg: a validated config (``meanfield.config.validate``).
        task: "evolve", "particles" or "compare".
        streamed: the run has an output, so evolve's and particles' frames go to disk as
            it goes (compare's stay in memory: its runs have no output of their own).

    Returns:
        The ``Budget``; nothing is allocated or computed beyond arithmetic on the config.
    """
    budget = Budget()
    streamed = streamed and task != "compare"
    if task in ("evolve", "compare"):
        _pde_parts(cfg, budget, streamed)
    if task == "particles":
        _particle_parts(cfg, budget, streamed=streamed)
    if task == "compare":
        n, d, key = _particle_size(cfg)
        frames, ensemble = frame_count(cfg), cfg["particles"]["ensemble"]
        running = Budget()
        _particle_parts(cfg, running)
        budget.parts["members running"] = (
            min(cfg["parallel"]["workers"], ensemble) * running.bytes, running.dominant[1])
        kept = 1 if cfg["domain"]["geometry"] == "zonal" else d  # (zonal: <x_i, e> only)
        budget.parts["ensemble frames"] = (float(FRAME_COPIES * ensemble * frames * n * kept
                                                 * 8), _frames_key(frames, key))
    if task == "bifurcation":
        _bifurcation_parts(cfg, budget)
    return budget


EIGEN_COPIES = 6  # arrays of the stability problem's size alive at once: the probes,
#                   their states, the products, the real columns, a block, eigvals' copy
DENSE_ENTRY_BYTES = 56  # per entry of a dense Jacobian and its eigenproblem: the identity,
#   the columns and their stack (8 each), the complex eigenvectors (16), LAPACK's copy (8)
#   and work; measured peak over the import: S^2 L = 31 / 63: 92 / 1054 MiB (estimated
#   with SAFETY and the rest: 687 / 1957 MiB)


def _bifurcation_parts(cfg: dict, budget: Budget) -> None:
    """The bifurcation study: one discretization's state and work arrays (``scan``: one
    per worker), the branch states it keeps, and its eigenproblems. At each pitchfork of
    the uniform branch (continuation and map) the mode is read off the eigenvectors of
    the dense Jacobian of every real component (``bifurcation_branches._crossing_mode``):
    ``size^2`` entries, ``size = (L+1)^2`` on S^2 and ``n`` on S^1, ``DENSE_ENTRY_BYTES``
    each (1.3 PB at L = 2047); the scan's stability is dense up to
    ``spectrum.DENSE_MAX`` unknowns (ARPACK beyond). On S^2 the stability of the
    axisymmetric states is formed by blocks from ``2L`` products of the ``(L+1)^2`` real
    components each (``stationary_linear.axisymmetric_eigenvalues``): ``~2L (L+1)^2``
    doubles, 128 GiB a copy at L = 2047. On the zonal geometry a state is ``L + 1``
    coefficients (two branches per even degree); a study across d keeps every d's."""
    from meanfield.discretizations.spectrum import DENSE_MAX
    b, res = cfg["bifurcation"], cfg["discretization"]["resolution"]
    key = "discretization.resolution"
    sphere = cfg["domain"]["geometry"] == "sphere"
    at_once = min(cfg["parallel"]["workers"], 2 * len(b["scan_starts"])) \
        if b["mode"] == "scan" else 1
    budget.parts["PDE state and work arrays"] = (at_once * _pde_work(cfg), key)
    branches = 1 + b["modes"] * (2 if sphere or cfg["domain"]["geometry"] == "zonal" else 1)
    # (a zonal study across d keeps the states of every d: one d runs at a time)
    dims = cfg["domain"]["dim"]
    saved = branches * (b["points"] // b["stride"] + 2) * (len(dims) if isinstance(
        dims, list) else 1)
    budget.parts["branch states"] = (FRAME_COPIES * saved * grid_size(cfg) * 8.0,
                                     "bifurcation.points")
    size = (res + 1) ** 2 if sphere else res  # real components of a state
    dense = min(size, DENSE_MAX) if b["mode"] == "scan" else size
    eigen = float(DENSE_ENTRY_BYTES) * dense * dense
    if sphere:
        eigen = max(eigen, EIGEN_COPIES * 2 * res * (res + 1) ** 2 * 8.0)
    budget.parts["eigenproblems"] = (SAFETY * at_once * eigen, key)


# ---------------------------------------------------------------------------------------
# Checking a run against the machine.

available_memory = memory.available_memory  # (read by validation too: config.memory)


def free_disk(folder: Path) -> int:
    """Bytes free on the file system that holds ``folder`` (an existing folder)."""
    return shutil.disk_usage(folder).free


def check(cfg: dict, task: str, available: int | None = None, *,
          streamed: bool = False, out: str | Path | None = None) -> Budget:
    """Refuse a run that does not fit in memory (or whose result does not fit on the
    disk); warn about one of hours.

    Args:
        cfg: a validated config.
        task: "evolve", "particles", "compare" or "bifurcation".
        available: bytes available (default ``available_memory()``).
        streamed: the run has an output (its frames go to disk; see ``estimate``).
        out: the result file of an evolve or particles run: its frames must fit in
            the free space of its folder (``check_disk``).

    Returns:
        The ``Budget``.

    Raises:
        ConfigError: the estimate passes ``MEMORY_MARGIN`` of the available memory; the
            message names the dominant key, the estimate and what would fit.
    """
    t = cfg.get("time")
    if t is not None and t["dt"] != "auto":  # a fixed step: t_final / dt steps at least
        from meanfield.runs.limits import check_steps
        check_steps(t["t_final"] / t["dt"], "time.dt", t["dt"],
                    f"stepping to time.t_final = {t['t_final']:g}",
                    "raise time.dt or shorten time.t_final")
    if out is not None and task in ("evolve", "particles"):
        check_disk(cfg, task, out)  # first: its save_every also fits the memory's frames
    budget = estimate(cfg, task, streamed)
    limit = MEMORY_MARGIN * (available_memory() if available is None else available)
    if budget.bytes > limit:
        part, key = budget.dominant
        section, name = key.split(".")
        raise ConfigError(
            f"{key} = {cfg[section][name]!r}: the run would need about "
            f"{budget.bytes / GiB:.3g} GiB (mostly {part}) but {limit / GiB:.3g} GiB are "
            f"available ({MEMORY_MARGIN:.0%} of the free memory); "
            + _what_fits(cfg, task, key, limit, streamed), key)
    if budget.seconds is not None and budget.seconds > LONG_RUN_S:
        warnings.warn(f"this run will take at least {budget.seconds / 3600:.3g} h: "
                      f"{budget.what}; raise model.kappa or use method = \"spectral\"",
                      LongRunWarning, stacklevel=3)
    return budget


DISK_COPIES = 2  # the streamed parts and the result they are assembled into


def check_disk(cfg: dict, task: str, out: str | Path, free: int | None = None) -> float:
    """Refuse an evolve or particles run whose saved frames (``DISK_COPIES`` times: the
    parts and the result) pass the free space of the result's folder; the bytes."""
    frames = frame_count(cfg)
    if task == "evolve":
        size, key = grid_size(cfg) * 8.0, "discretization.resolution"
    else:
        from meanfield.runs.particle_dataset import frame_bytes
        n, d, key = _particle_size(cfg)
        size = frame_bytes(cfg, n, d)
    need = DISK_COPIES * frames * size
    if free is None:  # (the nearest folder that exists: the result's is made later)
        from meanfield.config.checkers import path as file_path
        out = file_path("out", out)  # (out = 123: the ConfigError naming out)
        folder = next((p for p in Path(out).absolute().parents if p.exists()), Path("/"))
        free = free_disk(folder)
    if need > free:
        key = _frames_key(frames, key)
        section, name = key.split(".")
        t_final = cfg["time"]["t_final"]
        most = int(free // (DISK_COPIES * size))  # frames that fit
        every = fit_advice.round_up(t_final / (most - 1)) if most >= 2 else None
        raise ConfigError(
            f"{key} = {cfg[section][name]!r}: the result would take about {need / GiB:.3g} "
            f"GiB on disk ({frames} frames of {size / MiB:.3g} MiB, {DISK_COPIES} copies "
            f"while its parts are assembled) but {free / GiB:.3g} GiB are free beside "
            f"{str(out)!r}; " + (f"time.save_every >= {every:.3g} fits" if most >= 2
                                 else "even two frames do not fit")
            + ", or another --out", key)
    return need


def _what_fits(cfg: dict, task: str, key: str, limit: float, streamed: bool = False) -> str:
    """The value of ``key`` (the others kept) whose run fits in ``limit`` bytes."""
    section, name = key.split(".")

    def fits(v) -> bool:
        trial = copy.deepcopy(cfg)
        trial[section][name] = v
        return estimate(trial, task, streamed).bytes <= limit

    return fit_advice.what_fits(cfg, key, fits, frame_count(cfg))


ENSEMBLE_ARRAYS = 24  # n x max(n, m) arrays a system holds in a step: 7 Dormand-Prince
#                       stages, the Gram and attention matrices, temporaries


def check_ensemble(systems: int, n: int, m: int, key: str, value, *, saves: int = 0,
                   stepped: int | None = None, available: int | None = None) -> float:
    """Refuse, before any work, an ensemble that does not fit in memory: ``systems``
    token systems held at once (``n`` tokens of ``m`` components; their start and
    ``saves`` kept states), of which ``stepped`` (default all) are in a step at once,
    each with ``ENSEMBLE_ARRAYS`` arrays of ``n x max(n, m)`` doubles (the attention and
    Gram matrices are ``n x n``); times ``SAFETY``, plus ``OVERHEAD``.

    Args:
        systems: systems held at once (a member's batch times the workers).
        n, m: tokens per system and their components (``min(n, d)`` when reduced).
        key, value: the config key that drives the size (named in the error).
        saves: states kept per system.
        stepped: systems in a step at once (a compiled engine steps one per thread).
        available: bytes available (default ``available_memory()``).

    Returns:
        The estimate in bytes.

    Raises:
        ConfigError: the estimate passes ``MEMORY_MARGIN`` of the available memory.
    """
    stepped = systems if stepped is None else min(stepped, systems)
    held = systems * (saves + 1) * n * m * 8.0
    working = stepped * ENSEMBLE_ARRAYS * n * max(n, m) * 8.0
    need = OVERHEAD + SAFETY * (held + working)
    limit = MEMORY_MARGIN * (available_memory() if available is None else available)
    if need > limit:
        raise ConfigError(
            f"{key} = {value!r}: {systems} systems of {n} tokens x {m} components held at "
            f"once ({stepped} in a step) would need about {need / GiB:.3g} GiB but "
            f"{limit / GiB:.3g} GiB are available ({MEMORY_MARGIN:.0%} of the free "
            f"memory); lower {key}", key)
    return need
