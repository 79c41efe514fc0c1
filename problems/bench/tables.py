"""``liftoff bench constrained --tables``: seed 003 Tables II and III on this machine.

- Table II: µs per constrained-dynamics solve with exactly three proximal iterations, per
  algorithm, and the ratio to Pinocchio's ``constraintDynamics`` with the same settings;
- Table III: µs per damped OSIM (the damped Delassus inverse, ``mu = 1e-4``) by
  ``dynamics.damped_osim``'s algorithms, and the ratio to Pinocchio's: the OSIM of its
  contact Cholesky factorization (the paper's LTL-OSIM; :func:`_pin_osim` says how it is
  timed). Pinocchio's own cABA-OSIM,
  ``computeDampedDelassusMatrixInverse``, cannot serve: its Python binding has no
  ``initPvDelassus`` to allocate its workspace and returns wrong values.

Robots: example-robot-data's closest to the paper's (a 7-dof arm with a 6D weld on its hand,
a quadruped, Talos on its soles with its hands held, and the full Talos), at random states
away from singular configurations (Delassus condition number below 1e4). Every algorithm is
first checked against Pinocchio at convergence with ``mu = 1e-2`` (the augmented-Lagrangian
algorithms' rounding grows like ``1/mu``, and Solo's links are light). liftoff runs
one batched call over ``B`` states, Pinocchio a Python loop, in the same run.
"""

from __future__ import annotations

import numpy as np

from liftoff import dynamics

from .common import check_against_pinocchio, import_pinocchio, pinocchio_model, regular_states, run_facts
from .constrained import (
    ALGORITHMS,
    ContactCase,
    PinConstrained,
    as_arrays,
    contacts_of,
    ours_constrained_kernels,
    seconds_per_state,
)

TABLE_CASES = {
    "panda": ContactCase(("panda_hand",), "6D", "LOCAL"),
    "solo12": ContactCase(("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"), "3D", "LOCAL_WORLD_ALIGNED"),
    "talos": ContactCase(("left_sole_link", "right_sole_link", "arm_left_7_link", "arm_right_7_link"), "6D", "LOCAL"),
    "talos_full": ContactCase(("left_sole_link", "right_sole_link"), "6D", "LOCAL"),
}
THREE_ITERATIONS = dict(mu=1e-4, max_iter=3, tol=1e-300)  # never met: every state takes three
OSIM_MU = 1e-4
CHECK = dict(mu=1e-2, max_iter=200, tol=1e-10)  # the augmented-Lagrangian rounding (~1/mu) small on light robots


def _pin_osim(pin, reference: PinConstrained, q):
    """A kernel looping over the states ``q``: Pinocchio's damped OSIM of each, stacked. Its
    Python bindings prepare the constraint data in ``constraintDynamics`` (one proximal
    iteration), after which a ``ContactCholeskyDecomposition`` is computed and inverted: the
    time counts that factorization twice, an overestimate of Pinocchio's OSIM alone."""
    settings = pin.ProximalSettings(1e-12, OSIM_MU, 1)
    model, data, models, datas = reference.pmodel, reference.data, reference.models, reference.datas
    zeros = np.zeros(model.nv)
    chol = pin.ContactCholeskyDecomposition(model, data, models, datas)
    states = [np.ascontiguousarray(x) for x in q]

    def kernel():
        out = []
        for qi in states:
            pin.constraintDynamics(model, data, qi, zeros, zeros, models, datas, settings)
            chol.compute(model, data, models, datas, OSIM_MU)
            out.append(chol.getOperationalSpaceInertiaMatrix())
        return np.stack(out)

    return kernel


def tables_benchmark(batches=(1, 128), repeat=5, seed=0, progress=None) -> dict:
    """Tables II and III (module docstring); a JSON-ready dict."""
    pin = import_pinocchio()
    say = progress or (lambda line: None)
    table2, table3, cases = [], [], []
    for robot, case in TABLE_CASES.items():
        model = dynamics.load(robot)
        pmodel = pinocchio_model(pin, model, robot)
        contacts = contacts_of(case)
        q, v, tau = regular_states(model, contacts, max(batches), seed)
        say(f"checking {robot} against Pinocchio {pin.__version__} on {len(q)} states")
        pins = PinConstrained(pin, pmodel, case, CHECK).values(q, v, tau, derivatives=False)
        errors = {}
        for algorithm in ALGORITHMS:
            ours = ours_constrained_kernels(model, contacts, q, v, tau, algorithm, CHECK)
            err = check_against_pinocchio(as_arrays(ours), pins, ("constrained_dynamics",), f" ({robot}, {algorithm})")
            errors[algorithm] = err["constrained_dynamics"]
        osim_pin = (_pin_osim(pin, PinConstrained(pin, pmodel, case), q)(),)
        osims = [a for a in dynamics.OSIM_ALGORITHMS if model.has_free_flyer or a != "cABA-OSIMf"]  # floating bases
        for algorithm in osims:
            kernel = {"osim": lambda a=algorithm: dynamics.damped_osim(model, q, contacts, OSIM_MU, a)}
            err = check_against_pinocchio(kernel, {"osim": osim_pin}, ("osim",), f" ({robot}, {algorithm})")
            errors[f"osim[{algorithm}]"] = err["osim"]
        cases.append(
            dict(
                robot=robot,
                nv=model.nv,
                m=sum(c.dim for c in contacts),
                frames=list(case.frames),
                kind=case.kind,
                reference=case.reference,
                max_abs_error_vs_pinocchio=errors,
            )
        )
        for B in batches:
            first = (q[:B], v[:B], tau[:B])
            say(f"timing {robot}, B = {B}")
            three = PinConstrained(pin, pmodel, case, THREE_ITERATIONS).kernels(*first)["constrained_dynamics"]
            t_pin = seconds_per_state(three, repeat, B)
            for algorithm in ALGORITHMS:
                ours = ours_constrained_kernels(model, contacts, *first, algorithm, THREE_ITERATIONS)
                t = seconds_per_state(ours["constrained_dynamics"], repeat, B)
                table2.append(
                    dict(robot=robot, algorithm=algorithm, batch=B, ours_us=t, pinocchio_us=t_pin, ratio=t / t_pin)
                )
            t_pin = seconds_per_state(_pin_osim(pin, PinConstrained(pin, pmodel, case), q[:B]), repeat, B)
            for algorithm in osims:
                t = seconds_per_state(
                    lambda a=algorithm: dynamics.damped_osim(model, q[:B], contacts, OSIM_MU, a), repeat, B
                )
                table3.append(
                    dict(robot=robot, algorithm=algorithm, batch=B, ours_us=t, pinocchio_us=t_pin, ratio=t / t_pin)
                )
    return dict(
        benchmark="seed 003 tables",
        three_iterations=dict(mu=THREE_ITERATIONS["mu"], max_iter=3),
        osim_mu=OSIM_MU,
        checked_with=CHECK,
        **run_facts(pin, repeat),
        cases=cases,
        table2=table2,
        table3=table3,
    )


def format_tables(result: dict) -> str:
    version = result["versions"]["pinocchio"]
    lines = [f"seed 003 tables: µs per state, ratio ours / Pinocchio (same run); Pinocchio {version}"]
    for case in result["cases"]:
        worst = max(case["max_abs_error_vs_pinocchio"].values())
        lines.append(
            f"{case['robot']} (nv {case['nv']}, m {case['m']}): {len(case['frames'])} x {case['kind']} "
            f"{case['reference']} on {', '.join(case['frames'])}; every algorithm checked against Pinocchio "
            f"(max |ours - pin| {worst:.1e}, within 1e-8 (1 + |pin|))"
        )
    for title, key, algorithms in (
        ("Table II: constrained dynamics, three proximal iterations", "table2", ALGORITHMS),
        (f"Table III: damped OSIM (mu {result['osim_mu']:g})", "table3", dynamics.OSIM_ALGORITHMS),
    ):
        rows = result[key]
        lines += [
            "",
            title,
            f"{'robot':<11} {'B':>4} " + " ".join(f"{a:>20}" for a in algorithms) + f" {'pinocchio':>10}",
        ]
        for robot in dict.fromkeys(r["robot"] for r in rows):
            for B in dict.fromkeys(r["batch"] for r in rows):
                cells = {r["algorithm"]: r for r in rows if r["robot"] == robot and r["batch"] == B}
                text = " ".join(
                    f"{cells[a]['ours_us']:>11.1f} ({cells[a]['ratio']:>5.2f}x)" if a in cells else f"{'-':>20}"
                    for a in algorithms
                )
                lines.append(f"{robot:<11} {B:>4} {text} {next(iter(cells.values()))['pinocchio_us']:>10.1f}")
    return "\n".join(lines)
