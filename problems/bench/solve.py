"""``liftoff bench solve``: liftoff's gait solves against Crocoddyl's FDDP on its own ANYmal gait
examples, in the same run: CPU time with one BLAS thread, medians of repeated solves.

liftoff solves ``configs/anymal_GAIT.yaml`` (compiled backend, both formulations);
Crocoddyl solves the problem of its ``quadrupedal_gaits_fwddyn`` example for the same gait
(``SimpleQuadrupedalGaitProblem``, the example's step lengths, heights and knots, 100
iterations at most, from the initial state repeated and quasi-static controls). The problems
are not the same (horizons, costs, constraints), so the number to read is the time per knot
and per iteration, and its ratio ``liftoff / Crocoddyl``; the total time is reported beside
it. An iteration of liftoff is split into its compiled kernels, the Riccati recursion, the
rest of the linearization (condensing, interior-point terms, glue) and the expansion and step.

``--scaling`` times instead the trot with its phases stretched 0.5x to 8x, 2 and 8
iterations (their difference over 6 is the time of an iteration, without the start), gives each
stretch's time per knot, and fits ``time per iteration = fixed + per knot * knots``.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from pathlib import Path

import numpy as np

from liftoff.ocp.formulation import Formulation
from liftoff.problems.tasks.config import load_config, with_solver
from liftoff.problems.tasks.gaits import build_problem
from liftoff.solvers.ipm import solve

from .common import BenchError, one_blas_thread

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
GAITS = ("walk", "trot", "pace", "bound", "jump")
# Crocoddyl's quadrupedal_gaits_fwddyn example: the problem builder and its arguments after x0
CROCODDYL = {
    "walk": ("createWalkingProblem", (0.25, 0.15, 1e-2, 25, 2)),
    "trot": ("createTrottingProblem", (0.15, 0.1, 1e-2, 25, 2)),
    "pace": ("createPacingProblem", (0.15, 0.1, 1e-2, 25, 5)),
    "bound": ("createBoundingProblem", (0.15, 0.1, 1e-2, 25, 5)),
    "jump": ("createJumpingProblem", (0.15, [0.0, 0.3, 0.0], 1e-2, 10, 20)),
}
SCALES = (0.5, 1, 2, 4, 8)
SCALING_ITERATIONS = (2, 8)  # the time per iteration is the difference of these two solves' over 6


def _crocoddyl():
    try:
        import crocoddyl
        import example_robot_data
        from crocoddyl.utils.quadruped import SimpleQuadrupedalGaitProblem
    except ImportError:
        raise BenchError(
            "the solve benchmark times Crocoddyl's FDDP in the same run as the reference, but it is not "
            'installed; install it with: pip install -e ".[bench]" (crocoddyl 3.2.1 with pin 4.0.0)'
        ) from None
    return crocoddyl, example_robot_data, SimpleQuadrupedalGaitProblem


class CrocoddylGait:
    """Crocoddyl's FDDP on its example's ``gait``; :meth:`run` solves it once."""

    def __init__(self, gait: str):
        crocoddyl, robots, Problem = _crocoddyl()
        anymal = robots.load("anymal")
        q0 = anymal.model.referenceConfigurations["standing"].copy()
        self.x0 = np.concatenate([q0, np.zeros(anymal.model.nv)])
        builder, args = CROCODDYL[gait]
        self.problem = getattr(Problem(anymal.model, "LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"), builder)(
            self.x0, *args
        )
        self.problem.nthreads = 1  # Crocoddyl's default is 2 threads: CPU time would count both
        self.solver_type = crocoddyl.SolverFDDP

    def run(self) -> dict:
        problem, x0 = self.problem, self.x0
        solver = self.solver_type(problem)
        xs, us = [x0] * (problem.T + 1), problem.quasiStatic([x0] * problem.T)
        start = time.process_time()
        solver.solve(xs, us, 100, False)
        total = time.process_time() - start
        return {
            "knots": problem.T,
            "iterations": solver.iter,
            "total_s": total,
            "per_knot_iteration_s": total / (problem.T * max(solver.iter, 1)),
        }


class LiftoffGait:
    """liftoff on ``config`` in ``formulation`` with compiled kernels (compiled before any
    timing); :meth:`run` solves it once and splits an iteration. The non-lifted formulation
    keeps Gauss-Newton's Hessian (the exact one is the lifted formulation's)."""

    def __init__(self, config, formulation: str):
        self.form = Formulation(build_problem(config), formulation, "compiled")
        if self.form.backend != "compiled":
            raise BenchError("the solve benchmark times the compiled backend, which needs a C compiler")
        options = config.solver.options()
        self.options = options if formulation == "lifted" else dataclasses.replace(options, hessian="gauss-newton")

    def run(self) -> dict:
        form = self.form
        kernels = form.stages.kernel_seconds
        start = time.process_time()
        result = solve(form, self.options)
        total = time.process_time() - start
        n, K = max(result.iterations, 1), form.ocp.K
        kernel = (form.stages.kernel_seconds - kernels) / n
        split = {
            part: sum(getattr(h, f"{part}_time") for h in result.history) / n
            for part in ("linearize", "riccati", "expand")
        }
        per_iteration = total / n
        wall = result.solve_time_s / n  # the parts are wall time: split the solve's wall time, like with like
        return {
            "knots": K,
            "iterations": result.iterations,
            "exact_iterations": sum(h.exact for h in result.history),
            "curvatures": sum(h.fresh for h in result.history),  # the exact iterations that computed theirs
            "status": result.status,
            "total_s": total,
            "per_iteration_s": per_iteration,
            "per_knot_iteration_s": per_iteration / K,
            "split_s": {
                "kernels": kernel,
                "riccati": split["riccati"],
                "linearize_rest": split["linearize"] - kernel,
                "expand_step": split["expand"],
                "other": wall - split["linearize"] - split["riccati"] - split["expand"],
            },
        }


def _median(runs: list) -> dict:
    """The run of median total time."""
    return sorted(runs, key=lambda r: r["total_s"])[len(runs) // 2]


def solve_benchmark(gaits=GAITS, repeat=3, progress=None, solver=None) -> dict:
    """Every gait by liftoff (lifted, non-lifted) and by Crocoddyl, the solves of the three
    interleaved ``repeat`` times (so that the machine's slow spells touch all alike), with
    the ratios of the median runs; ``solver``: fields of the configurations' ``solver``
    section to replace (e.g. ``{"barrier": 1e-4}``)."""
    _crocoddyl()  # before anything is compiled or solved
    rows = []
    with one_blas_thread():
        for gait in gaits:
            config = with_solver(load_config(CONFIGS / f"anymal_{gait}.yaml"), **(solver or {}))
            cases = {
                "lifted": LiftoffGait(config, "lifted"),
                "nonlifted": LiftoffGait(config, "nonlifted"),
                "crocoddyl": CrocoddylGait(gait),
            }
            runs = {name: [] for name in cases}
            for _ in range(repeat):
                for name, case in cases.items():
                    runs[name].append(case.run())
            row = {"gait": gait, **{name: _median(r) for name, r in runs.items()}}
            lifted, croc = row["lifted"], row["crocoddyl"]
            row["ratio_per_knot_iteration"] = lifted["per_knot_iteration_s"] / croc["per_knot_iteration_s"]
            row["ratio_total"] = lifted["total_s"] / croc["total_s"]
            row["nonlifted_over_lifted_per_iteration"] = row["nonlifted"]["per_iteration_s"] / lifted["per_iteration_s"]
            rows.append(row)
            if progress:
                progress(format_row(row))
    return {"repeat": repeat, "solver": dict(solver or {}), "gaits": rows}


def _scaled(config, factor):
    """The trot with every phase's knots scaled by ``factor`` (at least one knot)."""
    phases = tuple(
        dataclasses.replace(p, knots=max(1, round(p.knots * factor)), duration=None) for p in config.gait.phases
    )
    gait = dataclasses.replace(config.gait, phases=phases, horizon=sum(p.knots for p in phases))
    return dataclasses.replace(config, gait=gait)


def scaling_benchmark(scales=SCALES, repeat=3, progress=None) -> dict:
    """Time per iteration of the trot stretched by ``scales``, and the linear fit."""
    base = load_config(CONFIGS / "anymal_trot.yaml")
    points = []
    with one_blas_thread():
        for factor in scales:
            case = LiftoffGait(_scaled(base, factor), "lifted")
            few, many = SCALING_ITERATIONS
            times = []
            for _ in range(repeat):
                total = {}
                for n in (few, many):
                    case.options = dataclasses.replace(case.options, max_iterations=n, tol=1e-300)
                    total[n] = case.run()["total_s"]
                times.append((total[many] - total[few]) / (many - few))
            points.append({"scale": factor, "knots": case.form.ocp.K, "per_iteration_s": statistics.median(times)})
            if progress:
                point = points[-1]
                progress(
                    f"trot x{factor:g}: {point['knots']} knots, {1e3 * point['per_iteration_s']:.2f} ms per iteration"
                )
    knots = np.array([p["knots"] for p in points], dtype=float)
    seconds = np.array([p["per_iteration_s"] for p in points])
    slope, fixed = np.polyfit(knots, seconds, 1)
    residual = float(np.max(np.abs(fixed + slope * knots - seconds) / seconds))
    return {"points": points, "fixed_s": float(fixed), "per_knot_s": float(slope), "max_relative_fit_error": residual}


def format_row(row) -> str:
    lifted, non, croc = row["lifted"], row["nonlifted"], row["crocoddyl"]
    return (
        f"{row['gait']:>5}  liftoff {lifted['knots']:3d} knots {lifted['iterations']:3d} it "
        f"{1e3 * lifted['total_s']:7.1f} ms ({1e6 * lifted['per_knot_iteration_s']:6.1f} us/knot-it; "
        f"non-lifted {non['iterations']:3d} it, x{row['nonlifted_over_lifted_per_iteration']:.2f} per it)  "
        f"crocoddyl {croc['knots']:3d} knots {croc['iterations']:3d} it {1e3 * croc['total_s']:7.1f} ms "
        f"({1e6 * croc['per_knot_iteration_s']:6.1f} us/knot-it)  "
        f"ratio per knot-it {row['ratio_per_knot_iteration']:.2f}, total {row['ratio_total']:.2f}"
    )


def format_table(result) -> str:
    columns = (
        "gait",
        "liftoff knots, it",
        "liftoff ms",
        "us/knot-it",
        "crocoddyl knots, it",
        "crocoddyl ms",
        "us/knot-it",
        "ratio/knot-it",
        "ratio total",
        "nonlifted/lifted per it",
    )
    settings = ", ".join(f"{k} {v}" for k, v in result.get("solver", {}).items()) or "the configurations'"
    lines = [f"liftoff's solver settings: {settings}", ""]
    lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in result["gaits"]:
        a, c = r["lifted"], r["crocoddyl"]
        cells = (
            r["gait"],
            f"{a['knots']}, {a['iterations']}"
            + (f" ({a['exact_iterations']} exact, {a['curvatures']} fresh)" if a["exact_iterations"] else ""),
            f"{1e3 * a['total_s']:.1f}",
            f"{1e6 * a['per_knot_iteration_s']:.1f}",
            f"{c['knots']}, {c['iterations']}",
            f"{1e3 * c['total_s']:.1f}",
            f"{1e6 * c['per_knot_iteration_s']:.1f}",
            f"{r['ratio_per_knot_iteration']:.2f}",
            f"{r['ratio_total']:.2f}",
            f"{r['nonlifted_over_lifted_per_iteration']:.2f}",
        )
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "split of a lifted iteration [ms]: kernels, Riccati, rest of the linearization, expansion and step, other"
    )
    for r in result["gaits"]:
        s = r["lifted"]["split_s"]
        lines.append(f"  {r['gait']:>5}: " + ", ".join(f"{k} {1e3 * v:.2f}" for k, v in s.items()))
    return "\n".join(lines)


def format_scaling(result) -> str:
    """The points of :func:`scaling_benchmark` (each one's time per knot too: the fit's straight line
    hides where it bends) and the fit."""
    lines = ["| scale | knots | ms per iteration | us per knot |", "|---|---|---|---|"]
    for p in result["points"]:
        seconds = p["per_iteration_s"]
        lines.append(f"| {p['scale']:g} | {p['knots']} | {1e3 * seconds:.2f} | {1e6 * seconds / p['knots']:.1f} |")
    lines.append(
        f"\nfit: {1e3 * result['fixed_s']:.2f} ms fixed + {1e6 * result['per_knot_s']:.1f} us per knot "
        f"(largest relative deviation {100 * result['max_relative_fit_error']:.1f}%)"
    )
    return "\n".join(lines)
