"""The ``meanfield`` command line.

    meanfield --version
    meanfield demo [--out DIR] [--overwrite]
    meanfield evolve CONFIG.toml [--set section.key=value ...] [--out PATH]
                     [--overwrite] [--resume] [--no-progress]
    meanfield particles CONFIG.toml [same options as evolve]
    meanfield compare CONFIG.toml [same options as evolve]
    meanfield convergence | contraction | bifurcation | phase-diagram CONFIG.toml
                     [same options]
    meanfield normalization | long-context CONFIG.toml [same options]
    meanfield metastability CONFIG.toml [same options]
    meanfield critical-points CONFIG.toml [same options]
    meanfield config --defaults TASK
    meanfield plot RESULT.nc [--out DIR] [--animate] [--format pdf|svg|png] [--dpi N]
                   [--overwrite]

Bad input prints one line ``meanfield: error: ...`` and exits with status 2; a run that
becomes unstable prints one line and exits with status 1; Ctrl-C keeps the checkpoint and
exits with status 130.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from meanfield.errors import ConfigError, OutputError, SolverError

# Tasks of docs/datasets.md that later issues bring. Not in --help (they do not run);
# typed anyway, they get one line saying so instead of argparse's list of choices.
PLANNED: tuple[str, ...] = ()
AVAILABLE = ("demo", "evolve", "particles", "compare", "convergence", "contraction",
             "bifurcation", "phase-diagram", "plot")
RUNS = ("evolve", "particles", "compare", "convergence", "contraction",
        "bifurcation", "phase-diagram")  # a config in, a result out
AVAILABLE += ("normalization", "long-context")  # issue 12, items 5-6
RUNS += ("normalization", "long-context")
AVAILABLE += ("metastability",)  # issue 12, item 4
RUNS += ("metastability",)
AVAILABLE += ("correlations",)  # issue 28, item 4
RUNS += ("correlations",)
AVAILABLE += ("config",)  # issue 21: the defaults of a task as a TOML file
AVAILABLE += ("critical-points",)  # issue 28, item 1
RUNS += ("critical-points",)


# The run commands and what each does (--help and 'config --defaults')
RUN_HELP: tuple[tuple[str, str], ...] = (
    ("evolve", "solve the PDE for a TOML config"),
    ("particles", "run the token system of a TOML config"),
    ("compare", "the PDE and a particle ensemble of one config"),
    ("convergence", "tokens against the PDE as n grows"),
    ("contraction", "W_2 decay rates over beta, PDE and tokens"),
    ("bifurcation", "branches of stationary states in kappa or beta"),
    ("phase-diagram", "pair clustering probability over (d, beta, t)"),
    ("normalization", "Post-LN against Pre-LN from random tokens"),
    ("long-context", "one attention layer as n grows, beta = gamma log n"),
    ("correlations", "one- and two-point functions of token ensembles"),
    ("metastability", "cluster staircase from uniform tokens, large beta"),
    ("critical-points", "critical points of the energy and their index"),
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line and status 2, like every other bad input
        raise ConfigError(f"{message} (see 'meanfield --help')")


def _parser() -> argparse.ArgumentParser:
    from meanfield.version import __version__

    p = _Parser(prog="meanfield", description="Mean-field dynamics of self-attention.")
    p.add_argument("--version", action="version", version=f"meanfield {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    d = sub.add_parser("demo", help="the showcase: runs and figures in a results folder")
    d.add_argument("--out", default="meanfield-demo", help="results folder")
    d.add_argument("--overwrite", action="store_true", help="replace existing results")
    d.add_argument("--no-progress", action="store_true")
    for name, what in RUN_HELP:
        e = sub.add_parser(name, help=what)
        e.add_argument("config", help="TOML config file")
        e.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                       help="override a config value (repeatable)")
        e.add_argument("--out", help="output netCDF (default: output.path, else CONFIG.nc)")
        e.add_argument("--overwrite", action="store_true", help="replace an existing result")
        e.add_argument("--resume", action="store_true", help="continue from the checkpoint")
        e.add_argument("--no-progress", action="store_true", help="no progress bar")
    c = sub.add_parser("config", help="print the defaults of a task as a TOML file")
    c.add_argument("--defaults", required=True, metavar="TASK", nargs="?",
                   help="the task (evolve, particles, compare, convergence, ...); "
                        "alone: the list of tasks")
    pl = sub.add_parser("plot", help="figures from a result file")
    pl.add_argument("result", help="netCDF result")
    pl.add_argument("--out", help="folder for the figures (default: beside the result)")
    pl.add_argument("--animate", action="store_true", help="also write an animation (GIF)")
    pl.add_argument("--format", default="png", choices=("png", "pdf", "svg"),
                    help="file format of the figures (default: png)")
    pl.add_argument("--dpi", type=float, default=150.0, metavar="N",
                    help="resolution in dots per inch (default: 150)")
    pl.add_argument("--overwrite", action="store_true", help="replace existing figures")
    return p


def _run(args) -> int:
    """evolve, particles, compare, convergence, contraction: a config in, a netCDF result
    out."""
    from meanfield import config as cfgmod

    # every command takes its task's sections only: a config written for another study
    # (a section of its own) is refused, not run with this one's defaults
    cfg = cfgmod.load(args.config, args.set, args.command.replace("-", "_"))
    out = args.out or cfg["output"]["path"] or str(Path(args.config).with_suffix(".nc"))
    task = _task(args.command)
    ds = task(cfg, out=out, overwrite=args.overwrite, resume=args.resume,
              progress=not args.no_progress)
    if ds.attrs["status"] == -1:
        print(f"meanfield: {ds.attrs['message']}", file=sys.stderr)
        return 130
    # the default place is said in full: the one line a run prints names the file
    _report(args.command, ds, out if args.out or cfg["output"]["path"] else
            f"{Path(out).resolve()} (beside the config: no --out or output.path)")
    return 0


def _task(command: str):
    """The entry point of a run command (imported here: the CLI starts fast)."""
    if command == "compare":
        from meanfield.studies.transport.compare import compare as task
    elif command == "convergence":
        from meanfield.studies.transport.convergence import convergence as task
    elif command == "contraction":
        from meanfield.studies.transport.contraction import contraction as task
    elif command == "bifurcation":
        from meanfield.studies.bifurcation.study import bifurcation as task
    elif command == "normalization":
        from meanfield.studies.tokens.normalization import normalization as task
    elif command == "long-context":
        from meanfield.studies.tokens.long_context import long_context as task
    elif command == "correlations":
        from meanfield.studies.correlations.study import correlations as task
    elif command == "phase-diagram":
        from meanfield.studies.tokens.phase_diagram import phase_diagram as task
    elif command == "metastability":
        from meanfield.studies.tokens.metastability import metastability as task
    elif command == "critical-points":
        from meanfield.studies.landscape.critical_points import critical_points as task
    elif command == "particles":
        from meanfield.runs.particles import particles as task
    else:
        from meanfield.runs.evolve import evolve as task
    return task


def _report(command: str, ds, out: str) -> None:
    """The line a finished run prints (its headline numbers), and a study's warning."""
    if command == "convergence" and ds.attrs.get("reference") == "gaussian":
        fits = [f"{name} {float(ds[name + '_slope'][-1]):.3f} "
                f"[{float(ds[name + '_slope_low'][-1]):.3f}, "
                f"{float(ds[name + '_slope_high'][-1]):.3f}]"
                for name in ("mean_error", "covariance_error")]
        print(f"wrote {out}  (slopes against n at t = {float(ds.time[-1]):g}: "
              + ", ".join(fits) + ")")
    elif command == "convergence":
        print(f"wrote {out}  (slope of W_{ds.attrs['p']:g} against n at t = "
              f"{float(ds.time[-1]):g}: {float(ds.slope[-1]):.3f} "
              f"[{float(ds.slope_low[-1]):.3f}, {float(ds.slope_high[-1]):.3f}])")
    elif command == "contraction":
        import numpy as np

        ratio = (ds.fitted_rate / ds.predicted_rate).values
        ok = ratio[np.isfinite(ratio)]
        print(f"wrote {out}  (fitted / predicted rate: "
              + (f"{ok.min():.3f} .. {ok.max():.3f})" if ok.size else "none fitted)"))
        if ds.attrs["status"] == 1:  # a member without a rate or over a crossover
            print(f"meanfield: warning: {ds.attrs['message']}", file=sys.stderr)
    elif command == "bifurcation":
        print(f"wrote {out}  ({_bifurcation_summary(ds)})")
        if ds.attrs["status"] == 1:
            print(f"meanfield: warning: {ds.attrs['message']}", file=sys.stderr)
    elif command == "normalization":  # each rule's rate or power of 1 - rho
        names = {"post-ln": "Post-LN", "pre-ln": "Pre-LN", "peri-ln": "Peri-LN",
                 "ngpt": "nGPT", "mix-ln": "Mix-LN"}
        print(f"wrote {out}  (1 - rho: " + ", ".join(
            f"{names.get(str(a), a)} {str(ds.law[k].values)} {float(ds.fitted[k]):.4f} "
            f"(predicted {float(ds.predicted[k]):.4g})"
            for k, a in enumerate(ds.architecture.values)) + ")")
    elif command == "long-context":
        print(f"wrote {out}  (output cosine at n = {int(ds.n[-1]):.3g}: " + ", ".join(
            f"gamma = {float(g):.4g}: {float(ds.cosine[i, -1]):.6f} (limit "
            f"{float(ds.limit[i]):.6f})" for i, g in enumerate(ds.gamma.values)) + ")")
    elif command == "correlations":
        print(f"wrote {out}  (n max|g| at t = {float(ds.time[-1]):g}: " + ", ".join(
            f"n = {int(n)}: {float(ds.scaled_correlation_max[i, -1]):.3g}"
            for i, n in enumerate(ds.n.values)) + f"; exponent "
              f"{float(ds.correlation_exponent[-1]):.3f})")
    elif command == "phase-diagram":
        print(f"wrote {out}  ({_phase_summary(ds)})")
    elif command == "metastability":
        print(f"wrote {out}  (first plateau: "
              + ", ".join(f"beta = {b:g}: {c:.3g} clusters (mode {k})" for b, c, k in
                          zip(ds.beta.values, ds.first_plateau_mean.values,
                              ds.most_unstable_mode.values))
              + f"; exponent {ds.attrs['plateau_exponent']:.3f})")
    elif command == "critical-points":  # the points per (n, beta) and Problem 3's verdict
        print(f"wrote {out}  (" + ", ".join(
            f"n = {int(n)}, beta = {b:g}: {int(k)} points" for n, b, k in
            zip(ds.member_n.values, ds.member_beta.values, ds.points_found.values))
            + f"; {ds.attrs['prediction']})")
    elif command == "compare":
        print(f"wrote {out}  (L1 distance at t = {float(ds.time[-1]):g}: "
              f"{float(ds.l1_distance[-1]):.3g}, noise floor "
              f"{float(ds.l1_noise_floor[-1]):.3g})")
    else:
        print(f"wrote {out}  (t = {float(ds.time[-1]):g}, {ds.attrs['steps']} steps, "
              f"{ds.attrs['wall_time_s']:.1f} s)")


def _phase_summary(ds) -> str:
    """One line on a phase diagram: the probability at the last time, per d, at the
    smallest and largest beta, and the run's time."""
    t = float(ds.time[-1])
    last = ds.pair_probability.isel(time=-1)
    parts = [f"d = {int(d)}: {float(last.isel(dim=i, beta=0)):.3f} .. "
             f"{float(last.isel(dim=i, beta=-1)):.3f}" for i, d in enumerate(ds.dim.values)]
    return (f"pair probability at t = {t:g} from beta = {float(ds.beta[0]):g} to "
            f"{float(ds.beta[-1]):g}: " + "; ".join(parts)
            + f"; {ds.attrs.get('wall_time_s', float('nan')):.1f} s")


def _bifurcation_summary(ds) -> str:
    """One line on a bifurcation result: its pitchforks and transitions (or the scan's
    kind when it has no special points); per d for a study across dimensions."""
    if "dim" in ds.dims:
        return "; ".join(f"d = {int(d)}: {_bifurcation_summary(ds.isel(dim=i))}"
                         for i, d in enumerate(ds["dim"].values))
    if "map_transition" in ds:
        first = [float(b) for b, t in zip(ds.beta.values, ds.map_transition.values)
                 if str(t) == "subcritical"]
        return (f"map of {ds.sizes['beta']} beta: kappa_c from "
                f"{float(ds.map_critical_kappa.min()):.6g} to "
                f"{float(ds.map_critical_kappa.max()):.6g}; "
                + (f"first order from beta = {min(first):g}" if first
                   else "continuous throughout"))
    if "special_type" not in ds:
        return f"{ds.attrs.get('kind', 'bifurcation')} scan"
    parameter = ds.attrs.get("parameter", "kappa")
    kinds = [str(t) for t in ds.special_type.values]
    where = [float(v) for v in ds[f"special_{parameter}"].values]
    found = [f"{k} at {parameter} = {w:.6g}" for k, w in zip(kinds, where)
             if k == "pitchfork"]
    types = [f"mode {int(m)}: {t}" for m, t, k in zip(ds.branch_mode.values,
                                                      ds.transition.values,
                                                      ds.branch_kind.values)
             if str(k) == "mode" and str(t)]
    value = float(ds.attrs.get("value", 1.0))  # V = c I: c <= 0 has no pitchfork at all
    return "; ".join(found + types) or (
        f"no pitchfork: value = {value:g} <= 0 keeps the uniform state stable"
        if value <= 0 else "no pitchfork in the range")


def _plot(args) -> int:
    from meanfield.io import check_writable, read_failure, read_netcdf
    from meanfield.plotting import plot_result

    path = Path(args.result)
    if not path.is_file():
        raise ConfigError(f"result {str(path)!r} does not exist", "result")
    try:
        ds = read_netcdf(path)
    except Exception as exc:  # noqa: BLE001 - netCDF4/HDF5/xarray raise many types
        raise ConfigError(f"result {str(path)!r} is not a readable netCDF file "
                          f"({read_failure(exc)})", "result") from None
    out_dir = Path(args.out) if args.out else path.parent
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out {str(out_dir)!r} is a file; plot writes its figures into "
                          "a folder: give a folder (made if missing)", "--out")
    check_writable(out_dir / f"{path.stem}_summary.{args.format}", overwrite=True,
                   key="--out")
    # every figure is checked before the first is written: an existing one refuses
    # (exit 2, naming it and --overwrite) unless --overwrite
    for written in plot_result(ds, out_dir, stem=path.stem, animate=args.animate,
                               dpi=args.dpi, format=args.format, overwrite=args.overwrite):
        print(f"wrote {written}")
    return 0


def _task_list() -> str:
    """``meanfield config --defaults`` without a task: the tasks, one a line."""
    helps = {name: what for name, what in RUN_HELP}
    return ("meanfield config --defaults TASK prints the keys TASK reads, with their\n"
            "defaults, as a TOML file to edit. The tasks:\n"
            + "".join(f"  {name:<17}{helps[name]}\n" for name in RUNS))


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    """Warnings on the command line: one line, like the errors (not Python's two)."""
    return f"meanfield: warning: {message}\n"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    warnings.formatwarning = _one_line_warning
    try:
        if argv and argv[0] in PLANNED:
            raise ConfigError(f"'meanfield {argv[0]}' is not available yet; available: "
                              f"{', '.join(AVAILABLE)}", "command")
        args = _parser().parse_args(argv)
        if args.command is None:
            _parser().print_help()
            return 2
        if args.command == "demo":
            from meanfield.demo import run_demo
            run_demo(args.out, overwrite=args.overwrite, progress=not args.no_progress,
                     report=print)  # a line per figure: what it shows
            return 0
        if args.command in RUNS:
            return _run(args)
        if args.command == "config":
            from meanfield.config.reference import defaults_toml
            sys.stdout.write(defaults_toml(args.defaults) if args.defaults
                             else _task_list())
            return 0
        return _plot(args)
    except ConfigError as exc:
        print(f"meanfield: error: {exc}", file=sys.stderr)
        return 2
    except OutputError as exc:
        print(f"meanfield: error: {exc}", file=sys.stderr)
        return 1
    except SolverError as exc:
        print(f"meanfield: solver error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("meanfield: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
