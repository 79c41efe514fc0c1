"""``liftoff bench dynamics``: the speed of the dynamics kernels against Pinocchio.

For each batch size ``B`` the same ``B`` random states are given to liftoff (one batched
call) and to Pinocchio (a Python loop over the states, the way a user of its bindings
evaluates a horizon), after every quantity is checked against Pinocchio to
:data:`.common.TOLERANCE`.
"""

from __future__ import annotations

import numpy as np

from liftoff import dynamics

from .common import (
    check_against_pinocchio,
    import_pinocchio,
    pinocchio_model,
    random_states,
    run_facts,
    seconds_per_call,
)

QUANTITIES = ("rnea", "rnea_derivatives", "aba", "aba_derivatives", "crba", "frame_jacobian")


DEFAULT_FRAME = "LF_FOOT"  # a foot of ANYmal


def ours_kernels(model, frame, q, v, a, tau):
    """One batched call per quantity on all the states."""
    return {
        "rnea": lambda: dynamics.rnea(model, q, v, a),
        "rnea_derivatives": lambda: dynamics.rnea_derivatives(model, q, v, a),
        "aba": lambda: dynamics.aba(model, q, v, tau),
        "aba_derivatives": lambda: dynamics.aba_derivatives(model, q, v, tau),
        "crba": lambda: dynamics.crba(model, q),
        "frame_jacobian": lambda: dynamics.frame_jacobian(model, q, frame, "LOCAL"),
    }


def pin_kernels(pin, pmodel, pdata, frame_id, q, v, a, tau):
    """A Python loop over the states per quantity (results left in Pinocchio's data)."""
    states = [tuple(np.ascontiguousarray(x) for x in s) for s in zip(q, v, a, tau)]
    local = pin.ReferenceFrame.LOCAL

    def rnea():
        for qi, vi, ai, _ in states:
            pin.rnea(pmodel, pdata, qi, vi, ai)

    def rnea_derivatives():
        for qi, vi, ai, _ in states:
            pin.computeRNEADerivatives(pmodel, pdata, qi, vi, ai)

    def aba():
        for qi, vi, _, ti in states:
            pin.aba(pmodel, pdata, qi, vi, ti)

    def aba_derivatives():
        for qi, vi, _, ti in states:
            pin.computeABADerivatives(pmodel, pdata, qi, vi, ti)

    def crba():
        for qi, _, _, _ in states:
            pin.crba(pmodel, pdata, qi)

    def frame_jacobian():
        for qi, _, _, _ in states:
            pin.computeFrameJacobian(pmodel, pdata, qi, frame_id, local)

    return dict(zip(QUANTITIES, (rnea, rnea_derivatives, aba, aba_derivatives, crba, frame_jacobian)))


def _symmetric(M):
    """Pinocchio may fill only the upper triangle of ``M`` and ``M^-1``."""
    return np.triu(M) + np.triu(M, 1).T


def pin_values(pin, pmodel, pdata, frame_id, q, v, a, tau):
    """Pinocchio's results per quantity, stacked over the states, as tuples of arrays."""
    out = {name: [] for name in QUANTITIES}
    for qi, vi, ai, ti in zip(q, v, a, tau):
        out["rnea"].append((pin.rnea(pmodel, pdata, qi, vi, ai).copy(),))
        dq, dv, da = pin.computeRNEADerivatives(pmodel, pdata, qi, vi, ai)
        out["rnea_derivatives"].append((np.array(dq), np.array(dv), _symmetric(np.array(da))))
        out["aba"].append((pin.aba(pmodel, pdata, qi, vi, ti).copy(),))
        dq, dv, dtau = pin.computeABADerivatives(pmodel, pdata, qi, vi, ti)
        out["aba_derivatives"].append((np.array(dq), np.array(dv), _symmetric(np.array(dtau))))
        out["crba"].append((_symmetric(pin.crba(pmodel, pdata, qi).copy()),))
        out["frame_jacobian"].append(
            (pin.computeFrameJacobian(pmodel, pdata, qi, frame_id, pin.ReferenceFrame.LOCAL).copy(),)
        )
    return {name: tuple(np.stack(parts) for parts in zip(*rows)) for name, rows in out.items()}


def dynamics_benchmark(robot="anymal", batches=(1, 128), repeat=5, frame=None, seed=0, progress=None) -> dict:
    """Time liftoff and Pinocchio on the same states; a JSON-ready dict of the results.

    ``frame``: the frame of ``frame_jacobian`` (default ``LF_FOOT``, else the model's last
    frame). ``progress``: optional callable receiving one line of text per step.
    """
    pin = import_pinocchio()
    retained = dynamics.retain_freed_memory()  # as the liftoff command does
    model = dynamics.load(robot)
    if frame is None:
        frame = DEFAULT_FRAME if DEFAULT_FRAME in model.frame_names else model.frame_names[-1]
    frame_name = model.frame_names[model.frame_id(frame)]
    pmodel = pinocchio_model(pin, model, robot)
    pdata = pmodel.createData()
    frame_id = pmodel.getFrameId(frame_name)
    states = random_states(model, max(batches), seed)

    say = progress or (lambda line: None)
    say(f"checking liftoff against Pinocchio {pin.__version__} on {max(batches)} states")
    errors = check_against_pinocchio(
        ours_kernels(model, frame_name, *states), pin_values(pin, pmodel, pdata, frame_id, *states), QUANTITIES
    )

    rows = []
    for B in batches:
        first = tuple(x[:B] for x in states)
        ours = ours_kernels(model, frame_name, *first)
        theirs = pin_kernels(pin, pmodel, pdata, frame_id, *first)
        for name in QUANTITIES:
            say(f"timing {name}, B = {B}")
            t_ours = seconds_per_call(ours[name], repeat) / B
            t_pin = seconds_per_call(theirs[name], repeat) / B
            rows.append(
                dict(
                    quantity=name,
                    batch=B,
                    ours_us_per_state=t_ours * 1e6,
                    pinocchio_us_per_state=t_pin * 1e6,
                    ratio_ours_over_pin=t_ours / t_pin,
                )
            )
    return dict(
        robot=model.name,
        nq=model.nq,
        nv=model.nv,
        frame=frame_name,
        seed=seed,
        max_abs_error_vs_pinocchio=errors,
        **run_facts(pin, repeat, retained),
        results=rows,
    )


def format_table(result: dict) -> str:
    head = (
        f"{result['robot']} (nq={result['nq']}, nv={result['nv']}), frame_jacobian of {result['frame']} in LOCAL; "
        f"best of {result['repeat']} runs; Pinocchio {result['versions']['pinocchio']}, "
        f"numpy {result['versions']['numpy']}, Python {result['versions']['python']}; "
        f"freed memory retained (dynamics.retain_freed_memory): {result['retained_freed_memory']}"
    )
    checked = f"checked against Pinocchio to {result['tolerance']:g}: max |ours - pin| = " + ", ".join(
        f"{name} {err:.1e}" for name, err in result["max_abs_error_vs_pinocchio"].items()
    )
    columns = f"{'quantity':<18} {'B':>5} {'ours µs/state':>14} {'pinocchio µs/state':>19} {'ours/pin':>9}"
    lines = [head, checked, "", columns, "-" * len(columns)]
    for r in result["results"]:
        lines.append(
            f"{r['quantity']:<18} {r['batch']:>5} {r['ours_us_per_state']:>14.2f} "
            f"{r['pinocchio_us_per_state']:>19.2f} {r['ratio_ours_over_pin']:>9.2f}"
        )
    return "\n".join(lines)
