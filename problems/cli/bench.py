"""``liftoff bench dynamics | constrained | solve | ddp | mpc | polishing | legged``: liftoff against the reference
implementations in the same process (:mod:`liftoff.problems.bench`)."""

from __future__ import annotations

import json
from functools import partial

from .arguments import RUN_ERROR, UserError, choose, error, positive_float, positive_int


def add_parser(commands) -> None:
    p = commands.add_parser("bench", help="benchmarks against reference implementations")
    benches = p.add_subparsers(dest="bench", metavar="BENCH", required=True)
    _dynamics_parser(benches)
    _constrained_parser(benches)
    _solve_parser(benches)
    _ddp_parser(benches)
    _mpc_parser(benches)
    _polishing_parser(benches)
    _legged_parser(benches)
    _contact_parser(benches)


def _common(p, repeat, what) -> None:
    p.add_argument("--repeat", type=positive_int, default=repeat, metavar="N", help=f"{what} (default: {repeat})")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def _batch(p) -> None:
    p.add_argument(
        "--batch", type=positive_int, nargs="+", default=[1, 128], metavar="B", help="batch sizes (default: 1 128)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the random states (default: 0)")


def _dynamics_parser(benches) -> None:
    p = benches.add_parser(
        "dynamics",
        help="dynamics kernels vs Pinocchio",
        description="Time the batched dynamics kernels against Pinocchio on the same random states "
        "(after checking they agree to 1e-8).",
    )
    p.add_argument("--robot", default="anymal", help="robot name or URDF path (default: anymal)")
    p.add_argument("--frame", default=None, help="frame of frame_jacobian (default: LF_FOOT, else the last frame)")
    _batch(p)
    _common(p, 5, "timed runs per kernel, best kept")
    p.set_defaults(run=dynamics)


def _constrained_parser(benches) -> None:
    p = benches.add_parser(
        "constrained",
        help="constrained dynamics and its derivatives vs Pinocchio",
        description="Time proximal constrained forward dynamics (each algorithm) and its derivatives against "
        "Pinocchio's constraintDynamics on the same random states (after checking they agree to 1e-8): "
        "ANYmal with 3D contacts on its feet (LOCAL_WORLD_ALIGNED), Talos with 6D contacts on its soles (LOCAL). "
        "With --scaling, instead: the scaling study of seed 003 Fig. 3 on serial chains (6D contact on the end "
        "effector) and balanced binary trees (3D contacts on the leaves), then the time against the constraint "
        "dimension m on a 381-link tree with contacts on more and more leaves, and its slopes. "
        "With --convergence, instead: seed 000 Fig. 2, the proximal iterations against mu on well-posed, "
        "redundant and inconsistent contact sets. With "
        "--cassie, instead: seed 000's Cassie simulation, the loop closures' drift against time. With "
        "--factorization, instead: seed 000 Figs. 4-7, CPU time of liftoff's sparse factorization of the KKT matrix "
        "K_mu (Alg. 1) against dense (numpy, scipy) and sparse (scipy.sparse splu) factorizations of the same "
        "matrix and Pinocchio's, then of the OSIM and its inverse taken from it, on UR5, Solo12, ANYmal, iCub and "
        "Talos with contacts added one by one (after checking every solve and OSIM). With --operations, instead: "
        "seed 003 Figs. 1 and 5, the floating-point operations liftoff's numpy algorithms execute for one state "
        "(three proximal iterations, and the damped OSIM), by phase, on Go1, Talos and Talos full, and their slopes "
        "on serial chains.",
    )
    # defaults and choices live in liftoff.problems.bench.constrained (imported when the command runs)
    p.add_argument(
        "--robot",
        nargs="+",
        metavar="ROBOT",
        help="robots among anymal, talos (default: both); with --factorization among ur5, solo12, anymal, icub, talos "
        "(default: all five)",
    )
    p.add_argument(
        "--algorithm",
        nargs="+",
        metavar="ALG",
        help="algorithms among proxLTL, proxLTLs, constrainedABA, proxPV (default: all four)",
    )
    _batch(p)
    p.add_argument("--scaling", action="store_true", help="run the scaling study (chains and binary trees) instead")
    p.add_argument(
        "--convergence",
        action="store_true",
        help="seed 000 Fig. 2 instead: proximal iterations to 1e-10 against mu (cold start, max_iter 1000) on the "
        "robots' contacts well-posed, with a contact duplicated (redundant) and duplicated towards two targets "
        "(inconsistent)",
    )
    p.add_argument(
        "--mu",
        type=positive_float,
        nargs="+",
        metavar="MU",
        help="with --convergence: the dampings (default: 1e-8 to 1e2, one per decade)",
    )
    p.add_argument(
        "--states",
        type=positive_int,
        metavar="N",
        help="random states: with --convergence (default: 8), with --whiskers (default: 1000)",
    )
    p.add_argument(
        "--figure",
        metavar="FILE",
        help="with --scaling: also draw seed 003 Fig. 3 (µs per state against n, and against m) to FILE; "
        "with --convergence: seed 000 Fig. 2 (iterations against mu); with --cassie: the drift against time; "
        "with --factorization: seed 000 Figs. 4-7 (bars of µs per state); with --tables: seed 003 Fig. 2 (bars split "
        "into the proximal iterations and the rest); with --whiskers: seed 003 Fig. 4 (box plots); with --operations: "
        "seed 003 Figs. 1 and 5 (stacked bars of operations by phase)",
    )
    p.add_argument(
        "--operations",
        action="store_true",
        help="seed 003 Figs. 1 and 5 instead: operations counted for one state (go1 F3^2, F3^4, talos and "
        "talos_full F6^2, F6^2 H6^2) by phase, and their growth on --chain-sizes chains (default: 8 to 128)",
    )
    p.add_argument(
        "--tables",
        action="store_true",
        help="seed 003 Tables II and III instead: three proximal iterations (and one, for Fig. 2's split), and the "
        "damped OSIM, on panda (H3, H6), solo12 (F3^2, F3^4), talos_full (F6^2, F6^2 H6^2) and the G1 with hands "
        "(F6^2, F6^2 T3^3, F6^2 T3^6)",
    )
    p.add_argument(
        "--whiskers",
        action="store_true",
        help="seed 003 Fig. 4 instead: the constraint residual after each of 10 proximal iterations (mu 1e-6) per "
        "algorithm on Talos with soles and left hand 6D and left elbow 3D (redundant), over --states random states",
    )
    p.add_argument(
        "--cassie",
        action="store_true",
        help="seed 000's simulation instead: Cassie (cassie_v2.sdf, 4 loop closures, feet held at heel and toe) "
        "standing, then falling, 1 s at 1 kHz; the constraint drift against time with and without Baumgarte, and "
        "Pinocchio's constraintDynamics on the same model",
    )
    p.add_argument(
        "--factorization",
        action="store_true",
        help="seed 000 Figs. 4-7 instead: the factorization of K_mu, and the OSIM and its inverse from it, by liftoff "
        "(batched, B of --batch), numpy, scipy, scipy.sparse and Pinocchio on max(--batch) states",
    )
    p.add_argument(
        "--chain-sizes", type=positive_int, nargs="+", metavar="N", help="links of the chains (default: 8 16 32 64)"
    )
    p.add_argument(
        "--tree-sizes",
        type=positive_int,
        nargs="+",
        metavar="N",
        help="links of the binary trees, 3 (2^d - 1): 3, 9, 21, 45, 93, 189, ... (default: 9 21 45 93)",
    )
    p.add_argument(
        "--scaling-batch", type=positive_int, metavar="B", help="states per call in the scaling study (default: 32)"
    )
    _common(p, 5, "timed runs per kernel, best kept")
    p.set_defaults(run=constrained)


def _solve_parser(benches) -> None:
    p = benches.add_parser(
        "solve",
        help="gait solves vs Crocoddyl's FDDP",
        description="Solve the five ANYmal gait configurations (compiled backend, lifted and non-lifted) and "
        "Crocoddyl's FDDP on its own ANYmal gait examples in the same run, CPU time with one BLAS thread, medians; "
        "print the time per knot and iteration, its ratio to Crocoddyl's, the total times and the split of an "
        "iteration. With --scaling, instead: time per iteration and per knot of the trot stretched 0.5x to 8x, and "
        "a linear fit.",
    )
    p.add_argument("--gait", nargs="+", metavar="GAIT", help="gaits among walk, trot, pace, bound, jump (default: all)")
    p.add_argument("--scaling", action="store_true", help="time per iteration against the horizon length instead")
    p.add_argument("--barrier", type=positive_float, metavar="EPS", help="liftoff's barrier (default: the configs')")
    p.add_argument(
        "--barrier-update",
        choices=("fixed", "monotone", "adaptive"),
        help="liftoff's barrier course: monotone from 0.1, adaptive from 1, down to --barrier (default: the configs')",
    )
    p.add_argument(
        "--hessian",
        choices=("gauss-newton", "exact"),
        help="liftoff's stage Hessians: exact where Gauss-Newton is slow, lifted only (default: the configs')",
    )
    _common(p, 3, "solves per case, median kept")
    p.set_defaults(run=solve)


def _ddp_parser(benches) -> None:
    p = benches.add_parser(
        "ddp",
        help="liftoff's FDDP vs Crocoddyl's on the same problem",
        description="Build each gait configuration's OCP without cones and limits both in liftoff and in Crocoddyl "
        "(same contacts, Baumgarte gains, impacts, costs and explicit Euler steps), solve both with FDDP from the "
        "same initial guess in the same process, and print the one-step dynamics mismatch, the iterations, the "
        "final costs and their relative difference.",
    )
    p.add_argument(
        "configs", metavar="CONFIG", nargs="*", default=["configs/anymal_trot.yaml"], help="gait configurations"
    )
    p.add_argument("--json", action="store_true", help="print the results as one JSON list")
    p.set_defaults(run=ddp)


def _mpc_parser(benches) -> None:
    p = benches.add_parser(
        "mpc",
        help="the speed of the MPC loops",
        description="Run the polishing MPC and the ANYmal trot MPC in closed loop, one after the other on one BLAS "
        "thread, and print the CPU time of their updates (median, p95, max, and where it goes), the policy's and the "
        "plant's time per call, and the real-time factors.",
    )
    p.add_argument("--task", nargs="+", choices=("polishing", "trot"), help="tasks (default: both)")
    p.add_argument("--plant", choices=("mujoco", "liftoff"), help="the plant (default: each configuration's)")
    p.add_argument(
        "--scheme",
        nargs="+",
        choices=("newton", "rti"),
        help="MPC schemes: the policy from a linearization after the update's Newton iteration (newton), or from its "
        "one linearization (rti, the real-time iteration); default: both",
    )
    p.add_argument("--duration", type=positive_float, default=2.0, metavar="S", help="simulated seconds (default 2)")
    _common(p, 1, "rounds of every task and scheme, their runs pooled")
    p.set_defaults(run=mpc)


def _polishing_parser(benches) -> None:
    p = benches.add_parser(
        "polishing",
        help="the polishing MPC against MuJoCo, scenario by scenario",
        description="Run the polishing MPC against MuJoCo (default contact, the URDF's joint damping and friction) "
        "on the table, the vertical board and the tilted board, frictionless and at friction 0.3; with pushes "
        "and a heavier arm; and the force-feedback comparison on compliant tables (torque state against torque "
        "control); print the measures of every scenario.",
    )
    p.add_argument(
        "--group",
        nargs="+",
        choices=("surfaces", "disturbances", "fidelity", "feedback"),
        help="scenario groups (default: all four)",
    )
    p.add_argument("--figure", metavar="FILE", help="draw the force-feedback comparison (seed 001 Fig. 2) to FILE")
    _closed_loop_options(p)
    p.set_defaults(run=polishing)


def _legged_parser(benches) -> None:
    p = benches.add_parser(
        "legged",
        help="the legged MPC against MuJoCo, scenario by scenario",
        description="Run the legged MPC (trot, walk, bound) against MuJoCo (default contact, ground friction 0.5): "
        "each gait at its command; pushes of 50 N and 100 N on the base, lateral and forward, at 8 phases of the "
        "gait cycle; a 10% heavier base and ground friction 0.4; a command schedule with a stop and a turn; print "
        "the measures of every scenario.",
    )
    p.add_argument(
        "--group",
        nargs="+",
        choices=("gaits", "pushes", "robustness", "commands"),
        help="scenario groups (default: all)",
    )
    p.add_argument("--gait", nargs="+", choices=("trot", "walk", "bound"), help="gaits (default: all three)")
    _closed_loop_options(p)
    p.set_defaults(run=legged)


def _contact_parser(benches) -> None:
    p = benches.add_parser(
        "contact",
        help="seed 002's simulations: soft against rigid unilateral contact",
        description="Drop a ball on the ground in liftoff's simulator under the soft contact at three stiffnesses "
        "(each at half its stability bound, or at --dt) and under the rigid unilateral contact; drop ANYmal 5 cm "
        "with PD-held joints under the unilateral contact with PGS and ADMM; print penetration, energy, the contact "
        "solvers' iterations and time per step.",
    )
    p.add_argument(
        "--stiffness", type=positive_float, nargs=3, metavar="K", help="soft stiffnesses [N/m] (default: 1e3 1e5 1e7)"
    )
    p.add_argument("--damping-ratio", type=positive_float, metavar="Z", help="soft contact damping ratio (default 0.1)")
    p.add_argument("--dt", type=positive_float, metavar="S", help="step of the soft runs (default: half each bound)")
    p.add_argument("--duration", type=positive_float, default=1.0, metavar="S", help="simulated seconds (default 1)")
    p.add_argument("--figure", metavar="FILE", help="draw penetration and energy against time to FILE")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(run=contact)


def _closed_loop_options(p) -> None:
    """What the closed-loop benchmarks share: simulated time, worker processes and the output."""
    p.add_argument("--duration", type=positive_float, default=10.0, metavar="S", help="simulated seconds (default 10)")
    p.add_argument("--workers", type=positive_int, metavar="N", help="processes (default: the number of cores)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def _report(result, table, args) -> int:
    print(json.dumps(result, indent=2) if args.json else table(result))
    return 0


def dynamics(args) -> int:
    from liftoff.problems.bench import dynamics as bench
    from liftoff.problems.bench.common import BenchError, stderr_progress

    try:
        result = bench.dynamics_benchmark(
            args.robot, tuple(args.batch), args.repeat, args.frame, args.seed, None if args.quiet else stderr_progress
        )
    except BenchError as err:
        return error(str(err), RUN_ERROR)
    return _report(result, bench.format_table, args)


# the studies of liftoff bench constrained besides its default timing, one at a time, each with its figure
STUDIES = ("--scaling", "--tables", "--convergence", "--cassie", "--factorization", "--whiskers", "--operations")


def constrained(args) -> int:
    from liftoff.problems.bench import constrained as bench
    from liftoff.problems.bench import tables
    from liftoff.problems.bench.common import stderr_progress
    from liftoff.problems.files import check_output

    progress = None if args.quiet else stderr_progress
    algorithms = choose(args.algorithm, bench.ALGORITHMS, "--algorithm")
    studies = [name for name in STUDIES if getattr(args, name[2:])]
    if len(studies) > 1:
        raise UserError(f"{' and '.join(studies)} are separate studies: run one at a time")
    if args.figure is not None and not studies:
        raise UserError(
            "--figure draws the scaling study: use it with --scaling, or the convergence study with --convergence, "
            "or the Cassie simulation with --cassie, or the factorization study with --factorization, or seed 003's "
            "Fig. 2 with --tables, or Fig. 4 with --whiskers, or Figs. 1 and 5 with --operations"
        )
    if not args.convergence and args.mu:
        raise UserError("--mu is an option of --convergence")
    if not (args.convergence or args.whiskers) and args.states:
        raise UserError("--states is an option of --convergence and --whiskers")
    figure = None if args.figure is None else check_output(args.figure)
    if args.cassie:
        return _cassie(bench, args, figure, progress)
    if args.factorization:
        return _factorization(args, figure, progress)
    if args.whiskers:
        return _whiskers(args, algorithms, figure, progress)
    if args.operations:
        return _operations(args, figure, progress)
    if args.convergence:
        run = partial(
            bench.convergence_benchmark,
            robots=choose(args.robot, tuple(bench.CONTACT_CASES), "--robot"),
            mus=tuple(args.mu or bench.CONVERGENCE_MUS),
            states=args.states or bench.CONVERGENCE_STATES,
            algorithms=algorithms,
            seed=args.seed,
            progress=progress,
        )
        return _study(run, bench.convergence_figure, bench.format_convergence_table, figure, args)
    if args.tables:
        run = partial(
            tables.tables_benchmark, batches=tuple(args.batch), repeat=args.repeat, seed=args.seed, progress=progress
        )
        return _study(run, tables.tables_figure, tables.format_tables, figure, args)
    if args.scaling:
        run = partial(
            bench.scaling_benchmark,
            chain_sizes=tuple(args.chain_sizes or bench.CHAIN_SIZES),
            tree_sizes=tuple(args.tree_sizes or bench.TREE_SIZES),
            batch=args.scaling_batch or bench.SCALING_BATCH,
            repeat=args.repeat,
            algorithms=algorithms,
            seed=args.seed,
            progress=progress,
        )
        return _study(run, bench.scaling_figure, bench.format_scaling_table, figure, args)
    run = partial(
        bench.constrained_benchmark,
        robots=choose(args.robot, tuple(bench.CONTACT_CASES), "--robot"),
        batches=tuple(args.batch),
        repeat=args.repeat,
        algorithms=algorithms,
        seed=args.seed,
        progress=progress,
    )
    return _study(run, None, bench.format_constrained_table, None, args)


def _refuse(args, names, study) -> None:
    """:class:`UserError` naming the options among ``names`` given to ``study``, which has none of them."""
    given = [name for name in names if getattr(args, name[2:].replace("-", "_"))]
    if given:
        raise UserError(f"{', '.join(given)}: not {'options' if len(given) > 1 else 'an option'} of {study}")


def _study(run, draw, table, figure, args) -> int:
    """Run a study (``run()``), draw it to ``figure`` if asked and report it; a
    :class:`BenchError` is the run's error line."""
    from liftoff.problems.bench.common import BenchError

    try:
        result = run()
    except BenchError as err:
        return error(str(err), RUN_ERROR)
    if figure is not None:
        draw(result, figure)
    return _report(result, table, args)


def _cassie(bench, args, figure, progress) -> int:
    """``liftoff bench constrained --cassie``: options of the other studies are refused."""
    _refuse(args, ("--robot", "--algorithm", "--chain-sizes", "--tree-sizes", "--scaling-batch"), "--cassie")
    run = partial(bench.cassie_benchmark, progress=progress)
    return _study(run, bench.cassie_figure, bench.format_cassie_table, figure, args)


def _whiskers(args, algorithms, figure, progress) -> int:
    """``liftoff bench constrained --whiskers``: options of the other studies are refused."""
    from liftoff.problems.bench import tables

    _refuse(args, ("--robot", "--chain-sizes", "--tree-sizes", "--scaling-batch"), "--whiskers")
    states = args.states or tables.WHISKER_STATES
    run = partial(tables.whiskers_benchmark, states=states, algorithms=algorithms, seed=args.seed, progress=progress)
    return _study(run, tables.whiskers_figure, tables.format_whiskers_table, figure, args)


def _operations(args, figure, progress) -> int:
    """``liftoff bench constrained --operations``: options of the other studies are refused."""
    from liftoff.problems.bench import operations as bench

    _refuse(args, ("--robot", "--algorithm", "--tree-sizes", "--scaling-batch"), "--operations")
    sizes = tuple(args.chain_sizes or bench.CHAIN_SIZES)
    run = partial(bench.operations_benchmark, chain_sizes=sizes, seed=args.seed, progress=progress)
    return _study(run, bench.operations_figure, bench.format_operations_table, figure, args)


def _factorization(args, figure, progress) -> int:
    """``liftoff bench constrained --factorization``: options of the other studies are refused."""
    from liftoff.problems.bench import factorization as bench

    _refuse(args, ("--algorithm", "--chain-sizes", "--tree-sizes", "--scaling-batch"), "--factorization")
    robots = choose(args.robot, tuple(bench.FACTORIZATION_ROBOTS), "--robot")
    run = partial(
        bench.factorization_benchmark,
        robots=robots,
        batches=tuple(args.batch),
        repeat=args.repeat,
        seed=args.seed,
        progress=progress,
    )
    return _study(run, bench.factorization_figure, bench.format_factorization_table, figure, args)


def solve(args) -> int:
    from liftoff.problems.bench import solve as bench
    from liftoff.problems.bench.common import BenchError, stderr_progress

    progress = None if args.quiet else stderr_progress
    try:
        if args.scaling:
            return _report(bench.scaling_benchmark(repeat=args.repeat, progress=progress), bench.format_scaling, args)
        result = bench.solve_benchmark(
            choose(args.gait, bench.GAITS, "--gait"), args.repeat, progress, _solver_overrides(args)
        )
    except BenchError as err:
        return error(str(err), RUN_ERROR)
    return _report(result, bench.format_table, args)


DECREASING_START = {"monotone": 0.1, "adaptive": 1.0}  # where a decreasing barrier starts (--barrier-update)


def _solver_overrides(args) -> dict:
    """The solver fields ``--barrier``, ``--barrier-update`` and ``--hessian`` set: a decreasing
    barrier starts at :data:`DECREASING_START` and stops at ``--barrier``. The monotone barrier
    starts at the configurations' 0.1 (seed 004's); the adaptive one higher, at 1: far from the
    gait, its first steps stay on a wider central path, and it falls as fast as the steps allow."""
    out = {} if args.hessian is None else {"hessian": args.hessian}
    if args.barrier_update in (None, "fixed"):
        out |= {} if args.barrier_update is None else {"barrier_update": "fixed"}
        return out | ({} if args.barrier is None else {"barrier": args.barrier})
    start = DECREASING_START[args.barrier_update]
    return out | {"barrier_update": args.barrier_update, "barrier": start, "barrier_min": args.barrier or 1e-4}


def ddp(args) -> int:
    from liftoff.problems.bench import ddp as bench
    from liftoff.problems.bench.common import BenchError
    from liftoff.problems.tasks.config import load_gait_config

    for path in args.configs:
        load_gait_config(path)  # one line for a bad file, before anything runs
    try:
        results = [bench.crosscheck(path) for path in args.configs]
    except BenchError as err:
        return error(str(err), RUN_ERROR)
    print(json.dumps(results, indent=2) if args.json else "\n\n".join(map(bench.format_crosscheck, results)))
    return 0


def mpc(args) -> int:
    from liftoff.problems.bench import mpc as bench
    from liftoff.problems.bench.common import BenchError, stderr_progress

    tasks = tuple(dict.fromkeys(args.task)) if args.task else tuple(bench.TASKS)
    schemes = tuple(dict.fromkeys(args.scheme)) if args.scheme else bench.SCHEMES
    progress = None if args.quiet else stderr_progress
    try:
        result = bench.mpc_benchmark(tasks, args.duration, args.plant, progress, schemes, args.repeat)
    except BenchError as err:
        return error(str(err), RUN_ERROR)
    return _report(result, bench.format_table, args)


def polishing(args) -> int:
    from liftoff.problems.bench import polishing as bench
    from liftoff.problems.bench.common import stderr_progress
    from liftoff.problems.files import check_output

    groups = tuple(dict.fromkeys(args.group)) if args.group else bench.GROUPS
    if args.figure is not None and "feedback" not in groups:
        raise UserError("--figure draws the force-feedback comparison: run the feedback group")
    figure = None if args.figure is None else check_output(args.figure)
    result = bench.polishing_benchmark(groups, args.duration, args.workers, None if args.quiet else stderr_progress)
    if figure is not None:
        bench.feedback_figure(result, figure)
    return _report(result, bench.format_table, args)


def legged(args) -> int:
    from liftoff.problems.bench import legged as bench
    from liftoff.problems.bench.common import stderr_progress

    groups = tuple(dict.fromkeys(args.group)) if args.group else bench.GROUPS
    gaits = tuple(dict.fromkeys(args.gait)) if args.gait else tuple(bench.GAITS)
    result = bench.legged_benchmark(groups, gaits, args.duration, args.workers, None if args.quiet else stderr_progress)
    return _report(result, bench.format_table, args)


def contact(args) -> int:
    from liftoff.problems.bench import contact as bench
    from liftoff.problems.bench.common import stderr_progress
    from liftoff.problems.files import check_output

    stiffnesses = tuple(args.stiffness or bench.STIFFNESSES)
    ratio = bench.DAMPING_RATIO if args.damping_ratio is None else args.damping_ratio
    unstable = None if args.dt is None else bench.unstable_time_step(args.dt, stiffnesses, ratio)
    if unstable:
        raise UserError(f"--dt {unstable}")
    figure = None if args.figure is None else check_output(args.figure)
    result = bench.contact_benchmark(
        stiffnesses, ratio, args.dt, args.duration, progress=None if args.quiet else stderr_progress
    )
    if figure is not None:
        bench.contact_figure(result, figure)
    return _report(result, bench.format_table, args)
