"""``liftoff bench constrained``: proximal constrained forward dynamics (seed 000 eq. 17-18,
seed 003 Sec. II) and its derivatives (seed 001 Prop. 1) against Pinocchio's
``constraintDynamics`` (its proxLTL) and ``computeConstraintDynamicsDerivatives`` with the same
proximal settings, on robots in contact; and, with ``--scaling``, the scaling study of seed 003
Fig. 3 on serial chains and balanced binary trees of growing size, and the time against the
constraint dimension on a tree of fixed size with its slopes (:func:`scaling_figure` draws
both); with ``--convergence``, seed 000 Fig. 2: the proximal iterations against mu on
well-posed, redundant and inconsistent contact sets (:func:`convergence_benchmark`,
:func:`convergence_figure`).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np

from liftoff import dynamics
from liftoff.dynamics import sample_models
from liftoff.dynamics.constrained import STATUSES
from liftoff.problems.files import save_figure

from .common import (
    MAX_CONDITION,
    BenchError,
    check_against_pinocchio,
    import_pinocchio,
    pinocchio_model,
    random_states,
    regular_states,
    run_facts,
    seconds_per_call,
)

ALGORITHMS = ("proxLTL", "proxLTLs", "constrainedABA", "proxPV")
CONSTRAINED_QUANTITIES = ("constrained_dynamics", "constrained_dynamics_derivatives")
PROXIMAL = dict(mu=1e-4, max_iter=30, tol=1e-10)  # liftoff's defaults, given to Pinocchio alike
# The scaling study's chains are ill-conditioned at random configurations: the augmented-
# Lagrangian algorithms (proxLTLs, constrainedABA) need a larger damping to stay within
# TOLERANCE of Pinocchio (their rounding grows like 1/mu, see dynamics/constrained.py).
SCALING_PROXIMAL = dict(mu=1e-3, max_iter=60, tol=1e-10)
REQUIRED_API = ("Contact", "constrained_dynamics", "constrained_dynamics_derivatives")
CHAIN_SIZES = (8, 16, 32, 64)
TREE_SIZES = (9, 21, 45, 93)
SCALING_BATCH = 32
# Time against m: a binary tree of fixed size with 3D contacts on more and more of its
# 64 leaves, spread over the branches; the slopes are fitted over the LARGEST_POINTS largest m.
M_TREE_SIZE = 381
LEAF_COUNTS = (4, 8, 16, 32, 64)
OSIM_ALGORITHMS = ("cABA-OSIM", "proxPV", "proxLTL")
LARGEST_POINTS = 3


@dataclass(frozen=True)
class ContactCase:
    """Contacts of one kind, in one reference frame, on some frames of a robot."""

    frames: tuple
    kind: str  # "3D" or "6D"
    reference: str  # "LOCAL", "WORLD" or "LOCAL_WORLD_ALIGNED"


CONTACT_CASES = {
    "anymal": ContactCase(("LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT"), "3D", "LOCAL_WORLD_ALIGNED"),
    "talos": ContactCase(("left_sole_link", "right_sole_link"), "6D", "LOCAL"),
}


def require_constrained_dynamics(names=REQUIRED_API) -> None:
    """Raise :class:`BenchError` (not an ImportError traceback) while the API is missing."""
    missing = [name for name in names if not hasattr(dynamics, name)]
    if missing:
        raise BenchError(
            "the constrained benchmark needs "
            + ", ".join(f"dynamics.{name}" for name in missing)
            + ", which this version of liftoff does not have yet"
        )


def contacts_of(case) -> list:
    """The contacts of a :class:`ContactCase`, or of a tuple of them in order (a mixed set)."""
    cases = (case,) if isinstance(case, ContactCase) else case
    return [dynamics.Contact(frame, kind=c.kind, reference=c.reference) for c in cases for frame in c.frames]


class PinConstrained:
    """Pinocchio's proximal constrained dynamics for the contacts of ``case`` (a
    :class:`ContactCase` or a tuple of them, as :func:`contacts_of`), set up once.

    Each contact is a ``RigidConstraintModel`` on the parent joint of the frame, at the
    frame's placement in that joint; its force ``contact_force`` (stacked: ``data.lambda_c``)
    is the force on the robot in the contact's reference frame, as liftoff's ``f``.
    """

    def __init__(self, pin, pmodel, case: ContactCase, settings=PROXIMAL):
        self.pin, self.pmodel, self.data = pin, pmodel, pmodel.createData()
        kinds = {"3D": pin.ContactType.CONTACT_3D, "6D": pin.ContactType.CONTACT_6D}
        models = []
        for c in (case,) if isinstance(case, ContactCase) else case:
            kind, reference = kinds[c.kind], getattr(pin.ReferenceFrame, c.reference)
            for name in c.frames:
                frame = pmodel.frames[pmodel.getFrameId(name)]
                models.append(pin.RigidConstraintModel(kind, pmodel, frame.parentJoint, frame.placement, reference))
        self.models = pin.StdVec_RigidConstraintModel(models)
        self.datas = pin.StdVec_RigidConstraintData([m.createData() for m in models])
        pin.initConstraintDynamics(pmodel, self.data, self.models, self.datas)
        self.settings = pin.ProximalSettings(settings["tol"], settings["mu"], settings["max_iter"])

    def values(self, q, v, tau, derivatives=True) -> dict:
        """Results stacked over the states; ``"iterations"``: proximal iterations per state."""
        pin, pmodel, data = self.pin, self.pmodel, self.data
        out = {name: [] for name in CONSTRAINED_QUANTITIES}
        iterations = []
        for qi, vi, ti in zip(q, v, tau):
            a = pin.constraintDynamics(pmodel, data, qi, vi, ti, self.models, self.datas, self.settings).copy()
            out["constrained_dynamics"].append((a, data.lambda_c.copy()))
            iterations.append(self.settings.iter)
            if derivatives:
                parts = pin.computeConstraintDynamicsDerivatives(pmodel, data, self.models, self.datas, self.settings)
                out["constrained_dynamics_derivatives"].append(tuple(np.array(x) for x in parts))
        result = {name: tuple(np.stack(p) for p in zip(*rows)) for name, rows in out.items() if rows}
        result["iterations"] = np.array(iterations)
        return result

    def kernels(self, q, v, tau) -> dict:
        """A Python loop over the states per quantity. The derivatives need the forward
        solution of their state, so their loop calls ``constraintDynamics`` too (as liftoff's
        ``constrained_dynamics_derivatives`` computes it from ``(q, v, tau)``)."""
        pin, pmodel, data, models, datas, settings = (
            self.pin,
            self.pmodel,
            self.data,
            self.models,
            self.datas,
            self.settings,
        )
        states = [tuple(np.ascontiguousarray(x) for x in s) for s in zip(q, v, tau)]

        def forward():
            for qi, vi, ti in states:
                pin.constraintDynamics(pmodel, data, qi, vi, ti, models, datas, settings)

        def derivatives():
            for qi, vi, ti in states:
                pin.constraintDynamics(pmodel, data, qi, vi, ti, models, datas, settings)
                pin.computeConstraintDynamicsDerivatives(pmodel, data, models, datas, settings)

        return dict(zip(CONSTRAINED_QUANTITIES, (forward, derivatives)))


def ours_constrained_kernels(model, contacts, q, v, tau, algorithm, settings=PROXIMAL) -> dict:
    """One batched call per quantity; ``algorithm`` for the forward dynamics."""
    return {
        "constrained_dynamics": lambda: dynamics.constrained_dynamics(
            model, q, v, tau, contacts, algorithm=algorithm, **settings
        ),
        "constrained_dynamics_derivatives": lambda: dynamics.constrained_dynamics_derivatives(
            model, q, v, tau, contacts, **settings
        ),
    }


def as_arrays(kernels: dict) -> dict:
    """The kernels with the forward result unpacked to ``(a, f)`` (it also carries statistics)."""

    def forward():
        a, f = kernels["constrained_dynamics"]()
        return a, f

    return {**kernels, "constrained_dynamics": forward}


def _iterations(result):
    """Max and mean proximal iterations over the states of a liftoff result (None if absent)."""
    its = getattr(result, "iterations", None)
    return None if its is None else _stats(its)


def _stats(its) -> dict:
    return dict(max=int(np.max(its)), mean=float(np.mean(its)))


def seconds_per_state(fn, repeat, B) -> float:
    """µs per state of ``fn``, a call on ``B`` states (best of ``repeat`` runs)."""
    return seconds_per_call(fn, repeat) / B * 1e6


def constrained_benchmark(
    robots=tuple(CONTACT_CASES), batches=(1, 128), repeat=5, algorithms=ALGORITHMS, seed=0, progress=None
) -> dict:
    """Time constrained dynamics and its derivatives against Pinocchio; a JSON-ready dict.

    For each robot of ``CONTACT_CASES``: every algorithm's ``(a, f)`` and the derivatives are
    checked against Pinocchio on ``max(batches)`` random states, then timed on the first
    ``B`` of them for each ``B`` of ``batches`` (liftoff: one batched call; Pinocchio: a
    Python loop).
    """
    pin = import_pinocchio()
    require_constrained_dynamics()
    retained = dynamics.retain_freed_memory()
    say = progress or (lambda line: None)
    cases, rows = [], []
    for robot in robots:
        case = CONTACT_CASES[robot]
        model = dynamics.load(robot)
        pmodel = pinocchio_model(pin, model, robot)
        contacts = contacts_of(case)
        reference = PinConstrained(pin, pmodel, case)
        q, v, _, tau = random_states(model, max(batches), seed)

        say(f"checking {robot} against Pinocchio {pin.__version__} on {len(q)} states")
        pins = reference.values(q, v, tau)
        errors, iterations = {}, {"pinocchio": _stats(pins["iterations"])}
        for algorithm in algorithms:
            ours = ours_constrained_kernels(model, contacts, q, v, tau, algorithm)
            err = check_against_pinocchio(as_arrays(ours), pins, ("constrained_dynamics",), f" ({robot}, {algorithm})")
            errors[f"constrained_dynamics[{algorithm}]"] = err["constrained_dynamics"]
            iterations[algorithm] = _iterations(ours["constrained_dynamics"]())
        ours = ours_constrained_kernels(model, contacts, q, v, tau, algorithms[0])
        errors.update(check_against_pinocchio(ours, pins, ("constrained_dynamics_derivatives",), f" ({robot})"))

        for B in batches:
            first = (q[:B], v[:B], tau[:B])
            theirs = PinConstrained(pin, pmodel, case).kernels(*first)
            t_pin = {name: seconds_per_state(theirs[name], repeat, B) for name in CONSTRAINED_QUANTITIES}
            timed = [("constrained_dynamics", algorithm) for algorithm in algorithms] + [
                ("constrained_dynamics_derivatives", "-")
            ]
            for name, algorithm in timed:
                say(f"timing {robot} {name}" + (f" ({algorithm})" if algorithm != "-" else "") + f", B = {B}")
                ours = ours_constrained_kernels(
                    model, contacts, *first, algorithms[0] if algorithm == "-" else algorithm
                )
                t = seconds_per_state(ours[name], repeat, B)
                rows.append(
                    dict(
                        robot=robot,
                        quantity=name,
                        algorithm=algorithm,
                        batch=B,
                        ours_us_per_state=t,
                        pinocchio_us_per_state=t_pin[name],
                        ratio_ours_over_pin=t / t_pin[name],
                    )
                )
        cases.append(
            dict(
                robot=robot,
                nq=model.nq,
                nv=model.nv,
                contacts=dict(frames=list(case.frames), kind=case.kind, reference=case.reference),
                constraint_dimension=len(case.frames) * int(case.kind[0]),
                max_abs_error_vs_pinocchio=errors,
                iterations=iterations,
            )
        )
    return dict(
        benchmark="constrained",
        proximal_settings=PROXIMAL,
        algorithms=list(algorithms),
        pinocchio_reference="constraintDynamics (proxLTL) and computeConstraintDynamicsDerivatives, "
        "same proximal settings; "
        "the derivatives loop calls constraintDynamics first",
        seed=seed,
        **run_facts(pin, repeat, retained),
        cases=cases,
        results=rows,
    )


def _mechanisms(chain_sizes, tree_sizes):
    """``(mechanism, n, model, urdf text, ContactCase)`` of the scaling study."""
    for n in chain_sizes:
        yield (
            "chain",
            n,
            sample_models.serial_chain(n),
            sample_models.serial_chain_urdf(n),
            ContactCase(("end_effector",), "6D", "LOCAL"),
        )
    for n in tree_sizes:
        model = sample_models.binary_tree(n)
        leaves = tuple(sample_models.leaf_frames(model))
        yield "tree", n, model, sample_models.binary_tree_urdf(n), ContactCase(leaves, "3D", "LOCAL_WORLD_ALIGNED")


def scaling_benchmark(
    chain_sizes=CHAIN_SIZES,
    tree_sizes=TREE_SIZES,
    batch=SCALING_BATCH,
    repeat=5,
    algorithms=ALGORITHMS,
    seed=0,
    progress=None,
    leaf_counts=LEAF_COUNTS,
) -> dict:
    """Seed 003 Fig. 3: µs per state of ``constrained_dynamics`` per algorithm against the size;
    and, for ``leaf_counts`` (none: skipped), against the constraint dimension on a tree of
    fixed size (:func:`constraint_scaling_benchmark`).

    Serial chains of ``n`` links with a 6D contact on ``end_effector`` (LOCAL), balanced
    binary trees of ``n`` links with 3D contacts on every leaf (LOCAL_WORLD_ALIGNED); ``batch``
    random states per call, ``SCALING_PROXIMAL`` settings; Pinocchio's ``constraintDynamics``
    (proxLTL) as the reference column, checked against first.
    """
    mechanisms = list(_mechanisms(chain_sizes, tree_sizes))  # a bad size fails before anything runs
    pin = import_pinocchio()
    require_constrained_dynamics(("Contact", "constrained_dynamics"))
    retained = dynamics.retain_freed_memory()
    say = progress or (lambda line: None)
    rows = []
    for mechanism, n, model, text, case in mechanisms:
        pmodel = pin.buildModelFromXML(text)
        contacts = contacts_of(case)
        reference = PinConstrained(pin, pmodel, case, SCALING_PROXIMAL)
        q, v, _, tau = random_states(model, batch, seed)
        say(f"checking {mechanism} n = {n} against Pinocchio")
        pins = reference.values(q, v, tau, derivatives=False)
        row = dict(
            mechanism=mechanism,
            n=n,
            nv=model.nv,
            constraint_dimension=len(case.frames) * int(case.kind[0]),
            contacts=f"{case.kind} in {case.reference} on {'end_effector' if mechanism == 'chain' else 'all leaves'}",
            ours_us_per_state={},
            ratio_ours_over_pin={},
            max_abs_error_vs_pinocchio={},
            iterations={"pinocchio": _stats(pins["iterations"])},
        )
        kernels = {
            algorithm: ours_constrained_kernels(model, contacts, q, v, tau, algorithm, SCALING_PROXIMAL)
            for algorithm in algorithms
        }
        for algorithm, ours in kernels.items():
            # relative to the largest entry: long chains at random configurations are ill-conditioned
            err = check_against_pinocchio(
                as_arrays(ours),
                pins,
                ("constrained_dynamics",),
                f" ({mechanism} n = {n}, {algorithm})",
                per_entry=False,
            )
            row["max_abs_error_vs_pinocchio"][algorithm] = err["constrained_dynamics"]
            row["iterations"][algorithm] = _iterations(ours["constrained_dynamics"]())
        say(f"timing {mechanism} n = {n}, B = {batch}")
        row["pinocchio_us_per_state"] = seconds_per_state(
            reference.kernels(q, v, tau)["constrained_dynamics"], repeat, batch
        )
        for algorithm, ours in kernels.items():
            t = seconds_per_state(ours["constrained_dynamics"], repeat, batch)
            row["ours_us_per_state"][algorithm] = t
            row["ratio_ours_over_pin"][algorithm] = t / row["pinocchio_us_per_state"]
        rows.append(row)
    return dict(
        benchmark="constrained scaling (seed 003 Fig. 3)",
        batch=batch,
        proximal_settings=SCALING_PROXIMAL,
        algorithms=list(algorithms),
        pinocchio_reference="constraintDynamics (proxLTL), same proximal settings",
        seed=seed,
        **run_facts(pin, repeat, retained),
        results=rows,
        constraint_scaling=constraint_scaling_benchmark(
            leaf_counts=leaf_counts, batch=batch, repeat=repeat, algorithms=algorithms, seed=seed, progress=progress
        )
        if leaf_counts
        else None,
    )


def _spread(leaves, k):
    """``k`` of the ``leaves``, spread evenly over the tree's branches."""
    return tuple(leaves[i * len(leaves) // k] for i in range(k))


def _slope(m, t, points=LARGEST_POINTS):
    """The log-log slope of ``t`` against ``m`` over the ``points`` largest ``m``."""
    return float(np.polyfit(np.log(m[-points:]), np.log(t[-points:]), 1)[0])


def constraint_scaling_benchmark(
    n=M_TREE_SIZE, leaf_counts=LEAF_COUNTS, batch=SCALING_BATCH, repeat=5, algorithms=ALGORITHMS, seed=0, progress=None
) -> dict:
    """Time against the constraint dimension ``m`` on a binary tree of ``n`` links: 3D contacts
    (LOCAL_WORLD_ALIGNED) on ``k`` of its leaves for each ``k`` of ``leaf_counts``; µs per state
    of ``constrained_dynamics`` per algorithm (``SCALING_PROXIMAL``, checked against Pinocchio's
    constraintDynamics first) and of ``damped_osim`` per ``OSIM_ALGORITHMS``; and the log-log
    slope of each against ``m`` over the ``LARGEST_POINTS`` largest ``m`` (seed 003: proxPV
    ``O(n + m^2 d + m^3)`` with its dense ``m x m`` factorization, constrainedABA ``O(n + m)``)."""
    model = sample_models.binary_tree(n)
    leaves = tuple(sample_models.leaf_frames(model))
    if not leaf_counts or any(not 1 <= k <= len(leaves) for k in leaf_counts):
        raise BenchError(
            f"leaf counts must be within 1..{len(leaves)} (the leaves of a {n}-link tree), got {leaf_counts}"
        )
    pin = import_pinocchio()
    pmodel = pin.buildModelFromXML(sample_models.binary_tree_urdf(n))
    say = progress or (lambda line: None)
    q, v, _, tau = random_states(model, batch, seed)
    rows = []
    for k in sorted(leaf_counts):
        case = ContactCase(_spread(leaves, k), "3D", "LOCAL_WORLD_ALIGNED")
        contacts = contacts_of(case)
        say(f"checking the tree n = {n} with {k} leaves in contact against Pinocchio")
        pins = PinConstrained(pin, pmodel, case, SCALING_PROXIMAL).values(q, v, tau, derivatives=False)
        kernels = {a: ours_constrained_kernels(model, contacts, q, v, tau, a, SCALING_PROXIMAL) for a in algorithms}
        for algorithm, ours in kernels.items():
            check_against_pinocchio(
                as_arrays(ours),
                pins,
                ("constrained_dynamics",),
                f" (tree n = {n}, {k} leaves, {algorithm})",
                per_entry=False,
            )
        say(f"timing the tree n = {n} with {k} leaves in contact, B = {batch}")
        mu = SCALING_PROXIMAL["mu"]
        rows.append(
            dict(
                leaves=k,
                m=3 * k,
                ours_us_per_state={
                    a: seconds_per_state(ours["constrained_dynamics"], repeat, batch) for a, ours in kernels.items()
                },
                osim_us_per_state={
                    a: seconds_per_state(lambda a=a: dynamics.damped_osim(model, q, contacts, mu, a), repeat, batch)
                    for a in OSIM_ALGORITHMS
                },
            )
        )
    m = np.array([r["m"] for r in rows], dtype=float)
    slopes = {
        kind: {a: _slope(m, np.array([r[kind][a] for r in rows])) for a in rows[0][kind]} if len(rows) >= 2 else {}
        for kind in ("ours_us_per_state", "osim_us_per_state")
    }
    return dict(
        n=n,
        nv=model.nv,
        depth=len(model.tree.levels),
        fitted_points=min(LARGEST_POINTS, len(rows)),
        rows=rows,
        slopes=slopes,
    )


def _settings_line(result) -> str:
    s = result["proximal_settings"]
    return (
        f"proximal settings mu {s['mu']:g}, max_iter {s['max_iter']}, tol {s['tol']:g}; "
        f"best of {result['repeat']} runs; Pinocchio {result['versions']['pinocchio']}, "
        f"numpy {result['versions']['numpy']}, Python {result['versions']['python']}; "
        f"freed memory retained: {result['retained_freed_memory']}"
    )


def _its(stats) -> str:
    return "-" if stats is None else f"{stats['max']}"


def format_constrained_table(result: dict) -> str:
    lines = [_settings_line(result), f"reference: Pinocchio {result['pinocchio_reference']}"]
    for case in result["cases"]:
        c = case["contacts"]
        lines.append(
            f"{case['robot']} (nq={case['nq']}, nv={case['nv']}): "
            f"{len(c['frames'])} x {c['kind']} contacts in {c['reference']} "
            f"on {', '.join(c['frames'])} (m = {case['constraint_dimension']})"
        )
        lines.append(
            f"  checked against Pinocchio to {result['tolerance']:g}: max |ours - pin| = "
            + ", ".join(f"{name} {err:.1e}" for name, err in case["max_abs_error_vs_pinocchio"].items())
        )
        lines.append(
            "  proximal iterations (max over the states): "
            + ", ".join(f"{name} {_its(stats)}" for name, stats in case["iterations"].items())
        )
    columns = (
        f"{'robot':<7} {'quantity':<33} {'algorithm':<15} {'B':>5} "
        f"{'ours µs/state':>14} {'pinocchio µs/state':>19} {'ours/pin':>9}"
    )
    lines += ["", columns, "-" * len(columns)]
    for r in result["results"]:
        lines.append(
            f"{r['robot']:<7} {r['quantity']:<33} {r['algorithm']:<15} {r['batch']:>5} {r['ours_us_per_state']:>14.2f} "
            f"{r['pinocchio_us_per_state']:>19.2f} {r['ratio_ours_over_pin']:>9.2f}"
        )
    return "\n".join(lines)


def format_scaling_table(result: dict) -> str:
    algorithms = result["algorithms"]
    lines = [
        f"{result['benchmark']}: constrained_dynamics, µs per state (B = {result['batch']} random states per call), "
        "and the ratio ours / Pinocchio's constraintDynamics",
        _settings_line(result),
        "chain: 6D contact on end_effector in LOCAL; tree: 3D contacts on all leaves in LOCAL_WORLD_ALIGNED; "
        f"every algorithm checked against Pinocchio to {result['tolerance']:g} first",
        "",
    ]
    width = max(14, *(len(a) for a in algorithms))
    columns = (
        f"{'mechanism':<9} {'n':>4} {'m':>4} "
        + " ".join(f"{a:>{width}}" for a in algorithms)
        + f" {'pinocchio':>{width}}  "
        + " ".join(f"{a + '/pin':>{width + 4}}" for a in algorithms)
        + "  max iterations (ours | pin)"
    )
    lines += [columns, "-" * len(columns)]
    for r in result["results"]:
        lines.append(
            f"{r['mechanism']:<9} {r['n']:>4} {r['constraint_dimension']:>4} "
            + " ".join(f"{r['ours_us_per_state'][a]:>{width}.1f}" for a in algorithms)
            + f" {r['pinocchio_us_per_state']:>{width}.1f}  "
            + " ".join(f"{r['ratio_ours_over_pin'][a]:>{width + 4}.2f}" for a in algorithms)
            + "  "
            + " ".join(_its(r["iterations"][a]) for a in algorithms)
            + f" | {_its(r['iterations']['pinocchio'])}"
        )
    if result.get("constraint_scaling"):
        lines += ["", *_constraint_scaling_lines(result["constraint_scaling"])]
    return "\n".join(lines)


def _constraint_scaling_lines(study: dict) -> list:
    kinds = (("ours_us_per_state", "constrained_dynamics"), ("osim_us_per_state", "damped_osim"))
    names = [(kind, a) for kind, _ in kinds for a in study["rows"][0][kind]]
    width = max(12, *(len(a) + 5 for _, a in names))
    label = {kind: short for kind, short in (("ours_us_per_state", "cd"), ("osim_us_per_state", "osim"))}
    columns = f"{'leaves':>6} {'m':>4} " + " ".join(f"{label[kind] + ' ' + a:>{width}}" for kind, a in names)
    lines = [
        f"against m: binary tree of n = {study['n']} links (depth {study['depth']}), "
        "3D contacts in LOCAL_WORLD_ALIGNED on more and more leaves spread over the branches; "
        "µs per state (cd: constrained_dynamics, osim: damped_osim)",
        columns,
        "-" * len(columns),
    ]
    for r in study["rows"]:
        lines.append(f"{r['leaves']:>6} {r['m']:>4} " + " ".join(f"{r[kind][a]:>{width}.1f}" for kind, a in names))
    if study["slopes"]["ours_us_per_state"]:
        lines.append(
            f"{'slope':>11} "
            + " ".join(f"{study['slopes'][kind][a]:>{width}.2f}" for kind, a in names)
            + f"   (log-log, over the {study['fitted_points']} largest m)"
        )
    return lines


def scaling_figure(result, path):
    """Seed 003 Fig. 3 from ``liftoff bench constrained --scaling``: µs per state against the
    number of links, one panel per mechanism, a line per algorithm and Pinocchio's."""
    rows = result["results"]
    mechanisms = list(dict.fromkeys(r["mechanism"] for r in rows))
    study = result.get("constraint_scaling")
    panels = len(mechanisms) + bool(study)
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 3.8), squeeze=False)
    for ax, mechanism in zip(axes[0], mechanisms):
        mine = [r for r in rows if r["mechanism"] == mechanism]
        n = [r["n"] for r in mine]
        for algorithm in result["algorithms"]:
            ax.loglog(n, [r["ours_us_per_state"][algorithm] for r in mine], "o-", label=algorithm)
        ax.loglog(n, [r["pinocchio_us_per_state"] for r in mine], "k--", label="Pinocchio constraintDynamics")
        ax.set_title(f"{mechanism}: constrained dynamics, B = {result['batch']}", fontsize=9)
        ax.set_xlabel("links n")
        ax.set_ylabel("µs per state")
        ax.grid(True, which="both", alpha=0.3)
    axes[0, 0].legend(fontsize=7)
    if study:
        ax = axes[0, -1]
        m = [r["m"] for r in study["rows"]]
        for kind, what, style in (("ours_us_per_state", "", "o-"), ("osim_us_per_state", "OSIM ", "s--")):
            for a in study["rows"][0][kind]:
                slope = study["slopes"][kind].get(a)
                tag = "" if slope is None else f" (slope {slope:.2f})"
                ax.loglog(m, [r[kind][a] for r in study["rows"]], style, label=f"{what}{a}{tag}")
        ax.set_title(f"tree n = {study['n']}: against the constraint dimension", fontsize=9)
        ax.set_xlabel("constraint rows m (3D contacts on leaves)")
        ax.set_ylabel("µs per state")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    save_figure(fig, path)


# ----------------------------------------------------------------------------- seed 000 Fig. 2: iterations against mu

CONVERGENCE_MUS = tuple(float(mu) for mu in np.logspace(-8, 2, 11))
CONVERGENCE_TOL = 1e-10  # on the primal residual |J a - r|_inf (liftoff's default)
CONVERGENCE_MAX_ITER = 1000
CONVERGENCE_STATES = 8
CONVERGENCE_CASES = ("well_posed", "redundant", "inconsistent")
BAUMGARTE = dict(kp=100.0, kd=20.0)  # every contact held towards a target placement
TARGET_OFFSET = np.array([0.0, 0.0, 0.01])  # inconsistent: the duplicated contact's two targets are 2 cm apart


def convergence_contact_sets(model, q, case: ContactCase, kp=BAUMGARTE["kp"], kd=BAUMGARTE["kd"], offset=TARGET_OFFSET):
    """The three contact sets of seed 000 Fig. 2 on the frames of ``case`` at the states ``q``
    (targets with a batch axis), each contact held by Baumgarte gains ``kp, kd`` towards a
    target placement:

    - ``well_posed``: each frame once, its target where it is;
    - ``redundant``: the first frame twice with the same target (rank-deficient, consistent);
    - ``inconsistent``: the first frame twice, its targets ``+offset`` and ``-offset`` (world
      axes) from where it is: the two copies ask for accelerations ``2 kp |offset|`` apart,
      which no motion gives (the least-squares solution holds the frame towards the middle).
    """

    def held(frame, shift=0.0):
        R, p = dynamics.frame_placement(model, q, frame)
        placement = p + shift if case.kind == "3D" else (R, p + shift)
        return dynamics.Contact(frame, case.kind, case.reference, kp=kp, kd=kd, placement=placement)

    well_posed = [held(frame) for frame in case.frames]
    first = case.frames[0]
    return dict(
        well_posed=well_posed,
        redundant=[well_posed[0], *well_posed],
        inconsistent=[held(first, offset), held(first, -offset), *well_posed[1:]],
    )


def _delassus_spectrum(model, q, contacts):
    """The smallest non-zero eigenvalue of ``J M^-1 J^T`` per state, and the rank of ``J``."""
    J = dynamics.contact_jacobian(model, q, contacts)
    D = J @ np.linalg.solve(dynamics.crba(model, q), np.swapaxes(J, -1, -2))
    sigma = np.linalg.eigvalsh(D)
    nonzero = sigma > 1e-9 * sigma[:, -1:]
    return np.where(nonzero, sigma, np.inf).min(axis=1), int(np.median(nonzero.sum(axis=1)))


def model_iterations(e0, sigma_min, mu, tol, max_iter):
    """The iterations seed 000's linear rate predicts: the residual contracts by ``mu / (mu +
    sigma)`` per iteration along each eigenvector of the Delassus matrix, the slowest
    (``sigma_min``) last, from ``|e0|``: ``k = log(tol / |e0|) / log(mu / (mu + sigma_min))``,
    at least 1 and at most ``max_iter``."""
    rate = np.log(mu / (mu + sigma_min))
    k = np.ceil(np.log(np.minimum(tol / e0, 1.0)) / rate)
    return np.clip(k, 1, max_iter)


def _final_residual(sol):
    """Per state: the dual residual where the status is least_squares, else the primal one."""
    return np.where(sol.status == "least_squares", sol.dual_residual, sol.residual)


def convergence_benchmark(
    robots=tuple(CONTACT_CASES),
    mus=CONVERGENCE_MUS,
    states=CONVERGENCE_STATES,
    algorithms=ALGORITHMS,
    cases=CONVERGENCE_CASES,
    tol=CONVERGENCE_TOL,
    max_iter=CONVERGENCE_MAX_ITER,
    seed=0,
    progress=None,
) -> dict:
    """Seed 000 Fig. 2: the proximal iterations each algorithm needs against ``mu``, on the
    contact sets of :func:`convergence_contact_sets` (ANYmal's feet 3D, Talos's soles 6D, as
    ``CONTACT_CASES``) at ``states`` random states away from singular configurations (Delassus
    condition below ``MAX_CONDITION`` with the well-posed set), cold started; a JSON-ready dict.

    A row per (robot, case, algorithm, mu): the median iterations, the count of each status, the
    medians of the final residual (dual for ``least_squares`` states, primal otherwise), of
    the primal, dual and equation-of-motion residuals and of ``|f|_inf``; and the iterations
    :func:`model_iterations` predicts (algorithm-independent).
    """
    require_constrained_dynamics(("Contact", "constrained_dynamics"))
    mus = sorted(set(map(float, mus)))
    say = progress or (lambda line: None)
    rows, sets = [], []
    for robot in robots:
        case = CONTACT_CASES[robot]
        model = dynamics.load(robot)
        q, v, tau = regular_states(model, contacts_of(case), states, seed)
        a_free = dynamics.aba(model, q, v, tau)
        for name, contacts in convergence_contact_sets(model, q, case).items():
            if name not in cases:
                continue
            sigma_min, rank = _delassus_spectrum(model, q, contacts)
            e0 = np.abs(dynamics.contact_acceleration(model, q, v, a_free, contacts)).max(axis=1)
            m = sum(c.dim for c in contacts)
            sets.append(
                dict(
                    robot=robot,
                    case=name,
                    m=m,
                    rank=rank,
                    frames=[c.frame for c in contacts],
                    kind=case.kind,
                    reference=case.reference,
                    sigma_min_median=float(np.median(sigma_min)),
                    initial_residual_median=float(np.median(e0)),
                )
            )
            for algorithm in algorithms:
                say(f"{robot} {name} (m = {m}, rank {rank}): {algorithm} at {len(mus)} values of mu")
                for mu in mus:
                    sol = dynamics.constrained_dynamics(
                        model, q, v, tau, contacts, mu=mu, max_iter=max_iter, tol=tol, algorithm=algorithm
                    )
                    rows.append(
                        dict(
                            robot=robot,
                            case=name,
                            algorithm=algorithm,
                            mu=float(mu),
                            iterations=float(np.median(sol.iterations)),
                            iterations_per_state=sol.iterations.tolist(),
                            statuses={s: int(np.sum(sol.status == s)) for s in STATUSES if np.any(sol.status == s)},
                            final_residual=float(np.median(_final_residual(sol))),
                            residual=float(np.median(sol.residual)),
                            dual_residual=float(np.median(sol.dual_residual)),
                            eom_residual=float(np.median(sol.eom_residual)),
                            force=float(np.median(np.abs(sol[1]).max(axis=1))),
                            model_iterations=float(np.median(model_iterations(e0, sigma_min, mu, tol, max_iter))),
                        )
                    )
    return dict(
        benchmark="constrained convergence (seed 000 Fig. 2)",
        tol=tol,
        tol_on="the primal residual |J a - r|_inf (the dual |J^T (J a - r)|_inf for least_squares)",
        max_iter=max_iter,
        mus=[float(mu) for mu in mus],
        states=states,
        state_selection=f"random, Delassus condition number < {MAX_CONDITION:g} with the well-posed set",
        baumgarte=BAUMGARTE,
        target_offset=TARGET_OFFSET.tolist(),
        algorithms=list(algorithms),
        seed=seed,
        warm_start=None,
        contact_sets=sets,
        results=rows,
    )


_STATUS_LETTERS = dict(converged="c", least_squares="ls", max_iter="max", inaccurate="ina")


def _cell(row) -> str:
    statuses = "+".join(f"{n}{_STATUS_LETTERS[s]}" for s, n in row["statuses"].items())
    return f"{row['iterations']:g} {statuses} {row['final_residual']:.0e}"


def format_convergence_table(result: dict) -> str:
    """A Markdown table: a row per (robot, case, algorithm), a column per mu, each cell the median
    iterations, the status counts and the median final residual."""
    mus, rows = result["mus"], result["results"]
    lines = [
        f"{result['benchmark']}: proximal iterations to |J a - r|_inf <= {result['tol']:g} (max_iter "
        f"{result['max_iter']}, cold start) on {result['states']} random states (seed {result['seed']}, "
        f"{result['state_selection']}); Baumgarte kp {result['baumgarte']['kp']:g}, kd {result['baumgarte']['kd']:g}, "
        f"inconsistent targets {2 * np.linalg.norm(result['target_offset']) * 100:g} cm apart",
        "cell: median iterations, status counts (c converged, ls least_squares, max max_iter, ina inaccurate), median "
        "final residual (dual for least_squares, else primal); model: log(tol/|e0|) / log(mu/(mu + sigma_min)); "
        "force: the largest over mu of the median |f|_inf",
        "",
        "| robot | case | m (rank) | algorithm | " + " | ".join(f"mu {mu:.0e}" for mu in mus) + " | force [N] |",
        "|---|---|---|---|" + "---|" * len(mus) + "---|",
    ]
    for s in result["contact_sets"]:
        mine = [r for r in rows if r["robot"] == s["robot"] and r["case"] == s["case"]]
        head = f"| {s['robot']} | {s['case']} | {s['m']} ({s['rank']}) |"
        for algorithm in result["algorithms"]:
            by_mu = {r["mu"]: r for r in mine if r["algorithm"] == algorithm}
            force = max(r["force"] for r in by_mu.values())
            lines.append(f"{head} {algorithm} | " + " | ".join(_cell(by_mu[mu]) for mu in mus) + f" | {force:.0f} |")
        model = {r["mu"]: r["model_iterations"] for r in mine}
        lines.append(f"{head} model | " + " | ".join(f"{model[mu]:g}" for mu in mus) + " | |")
    return "\n".join(lines)


_STYLES = dict(proxLTL=("o", "-"), proxLTLs=("s", "--"), constrainedABA=("^", "-."), proxPV=("x", ":"))


def convergence_figure(result, path):
    """Seed 000 Fig. 2 from ``liftoff bench constrained --convergence``: median iterations against
    mu (log-log), a row of panels per robot, a panel per contact set, a line per algorithm and
    the model ``log(tol/|e0|) / log(mu/(mu + sigma_min))``; hollow markers where some state
    ended in max_iter or inaccurate."""
    rows = result["results"]
    robots = list(dict.fromkeys(r["robot"] for r in rows))
    cases = list(dict.fromkeys(r["case"] for r in rows))
    fig, axes = plt.subplots(
        len(robots), len(cases), figsize=(4.2 * len(cases), 3.3 * len(robots)), squeeze=False, sharex=True, sharey=True
    )
    sets = {(s["robot"], s["case"]): s for s in result["contact_sets"]}
    for i, robot in enumerate(robots):
        for j, case in enumerate(cases):
            ax = axes[i, j]
            mine = [r for r in rows if r["robot"] == robot and r["case"] == case]
            for algorithm in result["algorithms"]:
                line = [r for r in mine if r["algorithm"] == algorithm]
                mu = np.array([r["mu"] for r in line])
                its = np.array([r["iterations"] for r in line])
                clean = np.array([set(r["statuses"]) <= {"converged", "least_squares"} for r in line])
                marker, style = _STYLES.get(algorithm, ("o", "-"))
                (drawn,) = ax.loglog(mu, its, ls=style, marker=marker, label=algorithm, lw=1.2, ms=5, markevery=[])
                color = drawn.get_color()
                ax.loglog(mu[clean], its[clean], marker, color=color, ms=5, ls="none")
                ax.loglog(mu[~clean], its[~clean], marker, mfc="none", color=color, ms=7, ls="none")
            model = sorted({r["mu"]: r["model_iterations"] for r in mine}.items())
            ax.loglog(*zip(*model), "k", lw=0.8, alpha=0.6, label="model: mu / (mu + σ_min) per iteration")
            ax.axhline(result["max_iter"], color="grey", lw=0.6, ls="--")
            s = sets[(robot, case)]
            ax.set_title(f"{robot}, {case.replace('_', '-')}: m = {s['m']}, rank {s['rank']}", fontsize=9)
            ax.grid(True, which="major", alpha=0.3)
            if i == len(robots) - 1:
                ax.set_xlabel("mu")
            if j == 0:
                ax.set_ylabel(f"iterations to {result['tol']:g} (median)")
    axes[0, 0].legend(fontsize=7, loc="upper left")
    fig.suptitle(
        f"Seed 000 Fig. 2: proximal iterations against mu ({result['states']} states; hollow: some max_iter or "
        f"inaccurate; dashed: max_iter {result['max_iter']})",
        fontsize=9,
    )
    fig.tight_layout()
    save_figure(fig, path)


# ----------------------------------------------------------------------------- Cassie (seed 000 Sec. V-E)

CASSIE_ACTUATED = ("roll-op", "yaw-op", "pitch-op", "knee-op", "foot-op")  # the motors of each leg
CASSIE_PD = dict(kp=300.0, kd=2.0)  # N m/rad, N m s/rad: the standing posture's PD (kd > ~5 with the
# SDF's joint damping is unstable at 1 kHz: the explicit damping of the light crank and foot)
CASSIE_BAUMGARTE = dict(kp=1e4, kd=200.0)  # beta^2, 2 alpha: critically damped at 100 rad/s
CASSIE_PROXIMAL = dict(mu=1e-8, max_iter=30, tol=1e-10)
CASSIE_DURATION, CASSIE_RELEASE, CASSIE_DT = 1.0, 0.5, 1e-3
CASSIE_TIMES = (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)  # the rows of the drift table
CASSIE_FOOT = (np.array([0.01, 0.045, 0.0]), 0.18)  # centre (foot frame) and length of the foot's collision cylinder


def cassie_model():
    """liftoff's Cassie (cassie_v2.sdf of example-robot-data, free-flyer root at the pelvis) with
    ``{side}-toe`` and ``{side}-heel`` frames on each foot, the ends of its 18 cm blade laid
    along the walking direction (world x at ``q = neutral``) through the centre of its collision
    cylinder: a line contact as two 3D points (seed 000 Fig. 9). Returns ``(model, closures,
    springs)``, ``springs = (stiffness, reference)`` per dof (the SDF's knee-shin and heel springs)."""
    model, closures = dynamics.load_sdf("cassie")
    centre, length = CASSIE_FOOT
    for side in ("left", "right"):
        R = dynamics.frame_placement(model, dynamics.neutral(model), f"{side}-foot")[0]
        forward = R.T @ np.array([1.0, 0.0, 0.0])
        for name, sign in (("toe", 1.0), ("heel", -1.0)):
            model = dynamics.add_frame(
                model, f"{side}-{name}", f"{side}-foot", translation=centre + sign * length / 2 * forward
            )
    return model, closures, dynamics.joint_springs("cassie", model)


def cassie_simulation(
    duration=CASSIE_DURATION, release=CASSIE_RELEASE, dt=CASSIE_DT, baumgarte=True, engine="liftoff", proximal=None
) -> dict:
    """Cassie standing, then falling, in liftoff's simulator (seed 000 Sec. V-E, Fig. 9).

    From ``q = neutral`` (every link at its SDF pose: the loops closed, the feet on the ground
    at z = 0), at rest, the feet on the ground: its four loop closures (3D, LOCAL) and the heel and toe of each foot
    held where they start (3D, LOCAL_WORLD_ALIGNED: bilateral, an idealization of the ground;
    the two points of a foot are redundant, m = 24 of rank 22) are the constraints of the
    proximal constrained dynamics (``engine="liftoff"``, proxLTL) or Pinocchio's
    ``constraintDynamics`` on the same model (``engine="pinocchio"``, without Baumgarte).
    The motors hold the posture by a PD until ``release``, then go limp: the robot collapses on
    its feet. Torques: the PD, the SDF's springs, its joint damping. Semi-implicit Euler at
    ``dt``. Baumgarte (``CASSIE_BAUMGARTE``) on every constraint if ``baumgarte``.

    Returns the times, the configurations, the loop-closure gap ``drift`` (largest distance
    between the two points of a closure, m), the feet's ``foot_drift`` (largest distance of a
    heel or toe from its start) and, for liftoff's runs, the proximal iterations, status and
    equation-of-motion residual ``|M a - h - J^T f|_inf`` of each step."""
    import dataclasses

    proximal = dict(CASSIE_PROXIMAL, **(proximal or {}))
    model, closures, (stiffness, spring_reference) = cassie_model()
    gains = CASSIE_BAUMGARTE if baumgarte else dict(kp=0.0, kd=0.0)
    q = dynamics.neutral(model)
    feet = [f"{side}-{point}" for side in ("left", "right") for point in ("toe", "heel")]
    q[2] = -min(dynamics.frame_placement(model, q, f)[1][2] for f in feet)  # the feet on the ground
    v = np.zeros(model.nv)
    start = {f: dynamics.frame_placement(model, q, f)[1] for f in feet}
    loops = [dataclasses.replace(c, **gains) for c in closures]
    contacts = loops + [dynamics.Contact(f, "3D", "LOCAL_WORLD_ALIGNED", placement=start[f], **gains) for f in feet]
    actuated = np.zeros(model.nv, bool)
    for i, name in enumerate(model.joint_names):
        if name.split("-", 1)[-1] in CASSIE_ACTUATED:
            actuated[model.idx_v[i]] = True
    q_ref = q.copy()
    step = _pinocchio_stepper(model, contacts, proximal) if engine == "pinocchio" else None
    if step is not None and baumgarte:
        raise BenchError("the Pinocchio run of the Cassie simulation is without Baumgarte")
    n = int(round(duration / dt))
    qs, drift, foot_drift, iterations, statuses, eom = [q], [0.0], [0.0], [], [], []
    f = None
    for k in range(n):
        dq = dynamics.difference(model, q_ref, q)
        tau = -stiffness * (dq - spring_reference) - model.damping * v
        if k * dt < release:
            tau = tau + np.where(actuated, -CASSIE_PD["kp"] * dq - CASSIE_PD["kd"] * v, 0.0)
        if step is None:
            sol = dynamics.constrained_dynamics(model, q, v, tau, contacts, warm_start=f, **proximal)
            a, f = sol
            iterations.append(int(sol.iterations))
            statuses.append(str(sol.status))
            eom.append(float(sol.eom_residual))
        else:
            a = step(q, v, tau)
        v = v + dt * a
        q = dynamics.integrate(model, q, dt * v)
        if not np.all(np.isfinite(q)):
            raise BenchError(f"the Cassie simulation diverged at t = {(k + 1) * dt:g} s")
        qs.append(q)
        drift.append(max(_gap(model, q, c.frame, c.frame2) for c in closures))
        foot_drift.append(max(np.linalg.norm(dynamics.frame_placement(model, q, f_)[1] - start[f_]) for f_ in feet))
    return dict(
        t=np.arange(n + 1) * dt,
        q=np.array(qs),
        drift=np.array(drift),
        foot_drift=np.array(foot_drift),
        iterations=np.array(iterations),
        statuses=statuses,
        eom_residual=np.array(eom),
        pelvis_height=np.array(qs)[:, 2],
    )


def _gap(model, q, frame1, frame2) -> float:
    return float(
        np.linalg.norm(dynamics.frame_placement(model, q, frame1)[1] - dynamics.frame_placement(model, q, frame2)[1])
    )


def _pinocchio_stepper(model, contacts, proximal):
    """Pinocchio's ``constraintDynamics`` on a copy of ``model`` (joint placements, axes,
    inertias and frames as liftoff's), the contacts as CONTACT_3D constraints: ``a(q, v, tau)``."""
    pin = import_pinocchio()
    pmodel = pin.Model()
    for i in range(model.njoints):
        if model.joint_types[i] == "free_flyer":
            joint = pin.JointModelFreeFlyer()
        elif model.joint_types[i] == "prismatic":
            joint = pin.JointModelPrismaticUnaligned(model.axis[i])
        else:
            joint = pin.JointModelRevoluteUnaligned(model.axis[i])
        placement = pin.SE3(model.joint_rotation[i], model.joint_translation[i])
        j = pmodel.addJoint(int(model.parents[i]) + 1, joint, placement, model.joint_names[i])
        inertia = pin.Inertia(model.body_mass[i], model.body_com[i], model.body_inertia[i])
        pmodel.appendBodyToJoint(j, inertia, pin.SE3.Identity())
    pdata = pmodel.createData()
    cml, cdl = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()

    def anchor(name):
        f = model.frame_id(name)
        return int(model.frame_parent[f]) + 1, pin.SE3(model.frame_rotation[f], model.frame_translation[f])

    for c in contacts:
        if c.frame2 is None:
            cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pmodel, *anchor(c.frame), pin.LOCAL_WORLD_ALIGNED)
        else:
            cm = pin.RigidConstraintModel(
                pin.ContactType.CONTACT_3D, pmodel, *anchor(c.frame), *anchor(c.frame2), pin.LOCAL
            )
        cml.append(cm)
        cdl.append(cm.createData())
    pin.initConstraintDynamics(pmodel, pdata, cml, cdl)
    settings = pin.ProximalSettings(proximal["tol"], proximal["mu"], proximal["max_iter"])
    return lambda q, v, tau: pin.constraintDynamics(pmodel, pdata, q, v, tau, cml, cdl, settings).copy()


def cassie_benchmark(duration=CASSIE_DURATION, release=CASSIE_RELEASE, dt=CASSIE_DT, progress=None) -> dict:
    """Seed 000's Cassie simulation (:func:`cassie_simulation`) with and without Baumgarte, and
    Pinocchio's ``constraintDynamics`` on the same model without: the constraint drift against
    time (``liftoff bench constrained --cassie``)."""
    model, closures, _ = cassie_model()
    runs = {}
    for name, kwargs in (
        ("baumgarte", dict(baumgarte=True)),
        ("none", dict(baumgarte=False)),
        ("pinocchio", dict(baumgarte=False, engine="pinocchio")),
    ):
        if progress:
            progress(f"cassie: {name}")
        runs[name] = cassie_simulation(duration, release, dt, **kwargs)
    t = runs["none"]["t"]
    J = dynamics.contact_jacobian(model, runs["none"]["q"][0], closures)
    times = [x for x in CASSIE_TIMES if x <= duration + 1e-12] or [duration]
    rows = []
    for time in times:
        k = int(round(time / dt))
        rows.append(
            dict(
                t=float(t[k]),
                pelvis_height=float(runs["baumgarte"]["pelvis_height"][k]),
                **{f"drift_{name}": float(run["drift"][k]) for name, run in runs.items()},
                **{f"foot_drift_{name}": float(run["foot_drift"][k]) for name, run in runs.items()},
                q_vs_pinocchio=float(np.abs(runs["none"]["q"][k] - runs["pinocchio"]["q"][k]).max()),
            )
        )
    return dict(
        benchmark="constrained cassie (seed 000 Sec. V-E, Fig. 9)",
        model=f"cassie_v2.sdf: nq {model.nq}, nv {model.nv}, {len(closures)} loop closures (3D, rank "
        f"{np.linalg.matrix_rank(J, 1e-9)} of {J.shape[0]}) + heel and toe of each foot (3D, bilateral): m = 24",
        dt=dt,
        release=release,
        duration=duration,
        pd=CASSIE_PD,
        baumgarte=CASSIE_BAUMGARTE,
        proximal=CASSIE_PROXIMAL,
        iterations={
            name: dict(median=float(np.median(run["iterations"])), max=int(run["iterations"].max()))
            for name, run in runs.items()
            if len(run["iterations"])
        },
        statuses={
            name: {s: run["statuses"].count(s) for s in STATUSES if s in run["statuses"]}
            for name, run in runs.items()
            if run["statuses"]
        },
        max_eom_residual={
            name: float(run["eom_residual"].max()) for name, run in runs.items() if len(run["eom_residual"])
        },
        max_drift={name: float(run["drift"].max()) for name, run in runs.items()},
        rows=rows,
        series=dict(
            t=t.tolist(),
            **{f"drift_{name}": run["drift"].tolist() for name, run in runs.items()},
            **{f"foot_drift_{name}": run["foot_drift"].tolist() for name, run in runs.items()},
            pelvis_height=runs["baumgarte"]["pelvis_height"].tolist(),
        ),
    )


def format_cassie_table(result: dict) -> str:
    """A Markdown table: at each time, the pelvis height and the loop-closure and feet drifts of
    the three runs."""
    lines = [
        f"{result['benchmark']}: {result['model']}; semi-implicit Euler at {result['dt'] * 1e3:g} ms, PD (kp "
        f"{result['pd']['kp']:g}, kd {result['pd']['kd']:g}) until {result['release']:g} s, then limp; Baumgarte kp "
        f"{result['baumgarte']['kp']:g}, kd {result['baumgarte']['kd']:g}; proxLTL mu {result['proximal']['mu']:g}",
        "loop drift: the largest distance between the two points of a loop closure [m]; feet: the largest distance "
        "of a heel or toe from its start [m]; Pinocchio: constraintDynamics on the same model, no Baumgarte",
        "",
        "| t [s] | pelvis z [m] | loop, Baumgarte | loop, none | loop, Pinocchio | feet, Baumgarte | feet, none | "
        "max abs q - q_Pinocchio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['t']:g} | {r['pelvis_height']:.3f} | {r['drift_baumgarte']:.1e} | {r['drift_none']:.1e} | "
            f"{r['drift_pinocchio']:.1e} | {r['foot_drift_baumgarte']:.1e} | {r['foot_drift_none']:.1e} | "
            f"{r['q_vs_pinocchio']:.1e} |"
        )
    its = ", ".join(f"{k} median {v['median']:g} max {v['max']}" for k, v in result["iterations"].items())
    largest = ", ".join(f"{k} {v:.1e}" for k, v in result["max_drift"].items())
    statuses = "; ".join(
        f"{k}: "
        + ", ".join(f"{n} {s}" for s, n in v.items())
        + f" (largest |M a - h - J^T f| {result['max_eom_residual'][k]:.1e})"
        for k, v in result["statuses"].items()
    )
    lines += [
        "",
        f"largest loop drift over the run [m]: {largest}; proximal iterations per step: {its}",
        f"proxLTL statuses over the steps: {statuses}",
    ]
    return "\n".join(lines)


def cassie_figure(result, path):
    """Seed 000's Cassie simulation from ``liftoff bench constrained --cassie``: the loop-closure
    and feet drifts against time (log scale), with and without Baumgarte and Pinocchio's run, and
    the pelvis height."""
    s = result["series"]
    t = np.array(s["t"])
    fig, (ax, low) = plt.subplots(2, 1, figsize=(7.5, 6.0), sharex=True, gridspec_kw=dict(height_ratios=(2.2, 1)))
    for name, label, style in (
        ("baumgarte", "liftoff, Baumgarte", "-"),
        ("none", "liftoff, no Baumgarte", "-"),
        ("pinocchio", "Pinocchio constraintDynamics, no Baumgarte", ":"),
    ):
        (line,) = ax.semilogy(t[1:], np.maximum(s[f"drift_{name}"][1:], 1e-16), style, lw=1.3, label=f"loops: {label}")
        ax.semilogy(
            t[1:],
            np.maximum(s[f"foot_drift_{name}"][1:], 1e-16),
            style,
            color=line.get_color(),
            lw=0.7,
            alpha=0.5,
            label=f"feet: {label}",
        )
    for a in (ax, low):
        a.axvline(result["release"], color="grey", lw=0.8, ls="--")
        a.grid(True, alpha=0.3)
    ax.set_ylabel("constraint drift [m]")
    ax.legend(fontsize=7, loc="lower right")
    low.plot(t, s["pelvis_height"], "k", lw=1.2)
    low.set_ylabel("pelvis z [m]")
    low.set_xlabel("t [s] (dashed: PD released)")
    fig.suptitle(
        f"Seed 000 Sec. V-E: Cassie (cassie_v2.sdf) standing, then falling; 4 loop closures + heel/toe (m = 24), "
        f"{result['dt'] * 1e3:g} ms steps",
        fontsize=9,
    )
    fig.tight_layout()
    save_figure(fig, path)
