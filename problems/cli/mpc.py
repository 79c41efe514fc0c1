"""``liftoff mpc CONFIG``: a task's MPC in closed loop against a simulated plant."""

from __future__ import annotations

import json
import sys

from .arguments import RUN_ERROR, UserError, error, mass_scale, positive_float, quiet_bar


def add_parser(commands) -> None:
    p = commands.add_parser(
        "mpc",
        help="a task in closed loop: MPC against a simulated plant (polishing, gaits)",
        description="Run the MPC of a configuration (task: polishing or task: gait_mpc) against a simulated plant "
        "(MuJoCo, or liftoff's idealized one); write the results file (run.npz) and the task's figures (polishing: "
        "force.png, path.png; gaits: velocity.png, height.png, forces.png; both: ticks.png) to the output folder.",
    )
    p.add_argument("config", metavar="CONFIG", help="YAML configuration with task: polishing or gait_mpc")
    p.add_argument("--duration", type=positive_float, metavar="S", help="override mpc.duration (s)")
    p.add_argument(
        "--push",
        action="append",
        metavar="FRAME:FX,FY,FZ:T0:DT",
        help="a force (N, world axes) on FRAME from T0 for DT seconds; repeatable",
    )
    p.add_argument(
        "--mass-scale",
        type=mass_scale,
        default=1.0,
        metavar="X",
        help="the plant's mass and inertia of plant.scaled_joints' bodies times X, in [0.1, 10] (a model mismatch)",
    )
    p.add_argument("--formulation", choices=("lifted", "nonlifted"), help="override solver.formulation")
    p.add_argument(
        "--scheme",
        choices=("newton", "rti"),
        help="override mpc.scheme: the policy from a linearization after the update's iterations (newton), or from "
        "the last one (rti, the real-time iteration)",
    )
    p.add_argument(
        "--plant",
        choices=("mujoco", "liftoff"),
        help="override plant.engine: MuJoCo, or liftoff's (plant.contact: rigid_bilateral, its idealized plant, by "
        "default; unilateral or soft, its simulator)",
    )
    p.add_argument("--out", metavar="DIR", help="output folder (default: results/NAME_mpc)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the measures as one JSON object")
    p.set_defaults(run=run)


def run(args) -> int:
    from tqdm import tqdm

    from liftoff.dynamics import UnknownNameError
    from liftoff.problems.mpc.controller import MPCError
    from liftoff.problems.mpc.disturbances import Push
    from liftoff.problems.mpc.plants.mujoco_model import PlantError
    from liftoff.problems.mpc.tasks import run_file

    try:
        pushes = [Push.parse(text) for text in _push_texts(args)]
    except ValueError as e:
        raise UserError(str(e)) from None
    bar_format = "{l_bar}{bar}| {n:.2f}/{total:.2f} s simulated [{elapsed}<{remaining}]"
    bar = tqdm(unit="s", file=sys.stderr, disable=quiet_bar(args), bar_format=bar_format)

    def progress(t, duration):
        bar.total = round(duration, 6)
        bar.update(t - bar.n)

    try:
        with bar:
            quiet = args.quiet or args.json
            done = run_file(
                args.config,
                args.duration,
                pushes,
                args.mass_scale,
                args.formulation,
                args.out,
                progress,
                quiet,
                args.plant,
                args.scheme,
            )
    except MPCError as e:
        return error(str(e), RUN_ERROR)
    except PlantError as e:
        raise UserError(str(e)) from None
    except UnknownNameError as e:
        raise _push_error(e, args) or e from None
    except ValueError as e:  # a push the plant cannot apply
        raise UserError(str(e)) from None
    m = done.measures
    if args.json:
        print(json.dumps({**m, "results_file": str(done.results)}))
    else:
        head = f"{done.config.name}: {m['formulation']} MPC, {m['backend']} stages, {m['duration_s']:g} s simulated"
        timing = (
            f"updates: median {m['tick_ms_median']:.2f} ms, p95 {m['tick_ms_p95']:.2f} ms, "
            f"real-time factor {m['real_time_factor']:.2f}"
        )
        saved = f"saved {done.results} and {', '.join(p.name for p in done.figures)}"
        print("\n".join((head, *done.lines, timing, saved)))
    return RUN_ERROR if done.failed else 0


def _push_error(error, args):
    """The :class:`UserError` of a ``--push`` on a frame the robot does not have (the run's
    ``error``), naming the option and the frames of the robot spelled alike; ``None`` when
    ``error`` is about another name."""
    from liftoff import dynamics
    from liftoff.dynamics.model import close_names
    from liftoff.problems.mpc.disturbances import Push
    from liftoff.problems.mpc.tasks import task_of_file
    from liftoff.problems.tasks.config import load_config

    for text in _push_texts(args):
        frame = Push.parse(text).frame
        if f"unknown frame {frame!r}" not in str(error):
            continue
        robot = load_config(args.config, task_of_file(args.config).schema).robot
        names = dynamics.load(robot).frame_names
        close = close_names(frame, names) or [name for name in names if frame.lower() in name.lower()][:5]
        hint = f"did you mean {', '.join(close)}?" if close else "its frames are its URDF's links and joints"
        return UserError(f"--push {text}: {robot} has no frame {frame!r}; {hint}")
    return None


def _push_texts(args) -> list:
    """The ``--push`` values as given: argparse reads ``--push=--`` as an empty list, the ``--``
    taken for the end of the options."""
    return [text if isinstance(text, str) else "--" for text in args.push or ()]
