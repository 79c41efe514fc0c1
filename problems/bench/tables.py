"""``liftoff bench constrained --tables``: seed 003 Tables II and III and Fig. 2 on this machine;
``--whiskers``: seed 003 Fig. 4.

- Table II: µs per constrained-dynamics solve with exactly three proximal iterations, per
  algorithm, and the ratio to Pinocchio's ``constraintDynamics`` with the same settings;
- Fig. 2 (:func:`tables_figure`): the same times as bars, each split into the part outside the
  proximal iterations and the cost of three proximal iterations. The split is measured: each
  solve is also timed with one iteration (``t1``) beside three (``t3``); the two differ by two
  iterations, so three cost ``prox = 1.5 (t3 - t1)`` and the rest is ``t3 - prox = 1.5 t1 - 0.5
  t3`` (factorizations, sweeps, the final residuals); the parts sum to ``t3``. The two are timed
  in alternation (:func:`paired_us_per_state`);
- Table III: µs per damped OSIM (the damped Delassus inverse, ``mu = 1e-4``) by
  ``dynamics.damped_osim``'s algorithms, and the ratio to Pinocchio's: the OSIM of its
  contact Cholesky factorization (the paper's LTL-OSIM; :func:`_pin_osim` says how it is
  timed). Pinocchio's own cABA-OSIM,
  ``computeDampedDelassusMatrixInverse``, cannot serve: its Python binding has no
  ``initPvDelassus`` to allocate its workspace and returns wrong values.

Rows (``TABLE_CASES``): a robot and a contact set, as the paper's (H: hand, F: feet, T:
fingertips; 3: a 3D point contact, 6: a 6D weld; the power: how many). example-robot-data's
closest robots: panda for the Iiwa (H3, H6 on ``panda_hand``), solo12 (F3^2 on its front feet,
F3^4), talos_full, the 50-dof Talos (F6^2 on the soles, F6^2 H6^2 with the hands held), and
for the Atlas with two Shadow hands (84 dofs, five fingers a hand) the Unitree G1 with its
three-fingered Dex3 hands (``g1_hands``, 49 dofs; the only humanoid of example-robot-data
whose fingers have mass): F6^2 on the ankle-roll links, F6^2 T3^3 with the fingertip links
of the left hand (thumb, index, middle), F6^2 T3^6 with both hands'. 3D contacts on feet and
fingertips are in LOCAL_WORLD_ALIGNED, the others in LOCAL.

States: random, away from singular configurations (Delassus condition number below
``MAX_CONDITION``; the G1's light ankle and finger links put every state above it, so its
rows keep those below ``CONDITION[robot]``). Every algorithm is first checked against
Pinocchio at convergence with ``mu = 1e-2`` (the augmented-Lagrangian algorithms' rounding
grows like ``1/mu``, and Solo's links are light), to ``1e-8 (1 + |pin|)`` entry by entry; on
the G1, whose 20 g finger links reach accelerations of 1e5 under random torques, relative to
the largest entry, and its damped OSIMs at ``mu = 1e-2`` (cABA-OSIM's rounding grows like
``1/mu``). liftoff runs one batched call over ``B``
states, Pinocchio a Python loop, in the same run.

Fig. 4 (:func:`whiskers_benchmark`): the constraint residual ``|J a - r|_inf`` after each of
10 proximal iterations, per algorithm, over random states of Talos (talos_full) held by a
redundant set: both soles (6D), the left hand (6D, ``arm_left_7_link``) and a 3D point on the
same arm's elbow (``arm_left_4_link``), m = 21 (the paper counts 24 for the same set), of rank
20 at every state; ``q`` uniform within the joint limits, ``tau`` standard normal, ``v``
standard normal projected on the null space of ``J`` (the contacts held, ``J v = 0``: with a
rank-deficient ``J``, a ``v`` that moves the contacts makes the acceleration constraints
inconsistent, the residual stalls at its least-squares value), not filtered. The paper's
``mu = 1e6`` is the augmented-Lagrangian penalty of seed 003, liftoff's ``mu`` is its inverse
(the proximal damping, see ``dynamics/constrained.py``): ``mu = 1e-6``. The residual after
``k`` iterations is that of a cold-started solve with ``max_iter = k`` (the iterations are
deterministic, so it is the ``k``-th iterate of a longer solve).
"""

from __future__ import annotations

import re
import timeit

import numpy as np

from liftoff import dynamics
from liftoff.problems.files import save_figure

from .common import (
    MAX_CONDITION,
    check_against_pinocchio,
    import_pinocchio,
    pinocchio_model,
    random_states,
    regular_states,
    run_facts,
)
from .constrained import (
    _STYLES,
    ALGORITHMS,
    ContactCase,
    PinConstrained,
    as_arrays,
    contacts_of,
    ours_constrained_kernels,
    require_constrained_dynamics,
    seconds_per_state,
)

_PANDA = ("panda_hand",)
_SOLO = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
_TALOS_SOLES = ("left_sole_link", "right_sole_link")
_TALOS_HANDS = ("arm_left_7_link", "arm_right_7_link")
_G1_FEET = ("left_ankle_roll_link", "right_ankle_roll_link")
_G1_TIPS = {
    side: tuple(f"{side}_hand_{tip}_link" for tip in ("thumb_2", "index_1", "middle_1")) for side in ("left", "right")
}
_LWA = "LOCAL_WORLD_ALIGNED"

# (robot, contact set) -> ContactCases, in order; the set's name as the paper writes it
TABLE_CASES = {
    ("panda", "H3"): (ContactCase(_PANDA, "3D", "LOCAL"),),
    ("panda", "H6"): (ContactCase(_PANDA, "6D", "LOCAL"),),
    ("solo12", "F3^2"): (ContactCase(_SOLO[:2], "3D", _LWA),),
    ("solo12", "F3^4"): (ContactCase(_SOLO, "3D", _LWA),),
    ("talos_full", "F6^2"): (ContactCase(_TALOS_SOLES, "6D", "LOCAL"),),
    ("talos_full", "F6^2 H6^2"): (ContactCase(_TALOS_SOLES + _TALOS_HANDS, "6D", "LOCAL"),),
    ("g1_hands", "F6^2"): (ContactCase(_G1_FEET, "6D", "LOCAL"),),
    ("g1_hands", "F6^2 T3^3"): (ContactCase(_G1_FEET, "6D", "LOCAL"), ContactCase(_G1_TIPS["left"], "3D", _LWA)),
    ("g1_hands", "F6^2 T3^6"): (
        ContactCase(_G1_FEET, "6D", "LOCAL"),
        ContactCase(_G1_TIPS["left"] + _G1_TIPS["right"], "3D", _LWA),
    ),
}
CONDITION = {"g1_hands": 1e6}  # the Delassus condition number below which a state is kept (others: MAX_CONDITION)
THREE_ITERATIONS = dict(mu=1e-4, max_iter=3, tol=1e-300)  # never met: every state takes three
ONE_ITERATION = dict(THREE_ITERATIONS, max_iter=1)
OSIM_MU = 1e-4
CHECK = dict(mu=1e-2, max_iter=2000, tol=1e-10)  # the augmented-Lagrangian rounding (~1/mu) small on light robots


def set_dimension(cases) -> int:
    """The rows of a contact set: 3 per 3D contact, 6 per 6D."""
    return sum(len(c.frames) * int(c.kind[0]) for c in cases)


def _pin_osim(pin, reference: PinConstrained, q, mu=OSIM_MU):
    """A kernel looping over the states ``q``: Pinocchio's damped OSIM of each, stacked. Its
    Python bindings prepare the constraint data in ``constraintDynamics`` (one proximal
    iteration), after which a ``ContactCholeskyDecomposition`` is computed and inverted: the
    time counts that factorization twice, an overestimate of Pinocchio's OSIM alone."""
    settings = pin.ProximalSettings(1e-12, mu, 1)
    model, data, models, datas = reference.pmodel, reference.data, reference.models, reference.datas
    zeros = np.zeros(model.nv)
    chol = pin.ContactCholeskyDecomposition(model, data, models, datas)
    states = [np.ascontiguousarray(x) for x in q]

    def kernel():
        out = []
        for qi in states:
            pin.constraintDynamics(model, data, qi, zeros, zeros, models, datas, settings)
            chol.compute(model, data, models, datas, mu)
            out.append(chol.getOperationalSpaceInertiaMatrix())
        return np.stack(out)

    return kernel


def paired_us_per_state(one, three, repeat, B) -> tuple:
    """µs per state of ``one`` and ``three`` (calls on ``B`` states with one and three proximal
    iterations), timed in alternation, best of ``10 repeat`` short runs each (``n`` calls, ``n``
    set so that a run of ``three`` lasts about 0.02 s): a change of the machine's load biases
    neither, and the best of many short runs finds the quiet moments of a shared machine."""
    timers = timeit.Timer(one), timeit.Timer(three)
    number, _ = timers[1].autorange()  # >= 0.2 s
    number = max(1, number // 10)
    best = [np.inf, np.inf]
    for _ in range(10 * repeat):
        for i, timer in enumerate(timers):
            best[i] = min(best[i], timer.timeit(number))
    return tuple(t / number / B * 1e6 for t in best)


def _split(t1, t3) -> dict:
    """Fig. 2's parts of a three-iteration time ``t3`` from the one-iteration time ``t1``."""
    prox = 1.5 * (t3 - t1)
    return dict(outside_us=t3 - prox, prox_us=prox)


def split_times(pin, pmodel, parts, model, states, repeat, algorithms=ALGORITHMS) -> list:
    """Table II and Fig. 2 at the states ``(q, v, tau)``: per algorithm and Pinocchio's
    ``constraintDynamics``, µs per state with three proximal iterations (``ours_us``) and one,
    the split of :func:`_split` and the ratio to Pinocchio's three iterations."""
    B = len(states[0])
    contacts = contacts_of(parts)
    kernels = {
        algorithm: [
            ours_constrained_kernels(model, contacts, *states, algorithm, settings)["constrained_dynamics"]
            for settings in (ONE_ITERATION, THREE_ITERATIONS)
        ]
        for algorithm in algorithms
    }
    kernels["pinocchio"] = [
        PinConstrained(pin, pmodel, parts, settings).kernels(*states)["constrained_dynamics"]
        for settings in (ONE_ITERATION, THREE_ITERATIONS)
    ]
    times = {algorithm: paired_us_per_state(*pair, repeat, B) for algorithm, pair in kernels.items()}
    t_pin = times["pinocchio"][1]
    return [
        dict(
            algorithm=algorithm,
            ours_us=t3,
            one_iteration_us=t1,
            **_split(t1, t3),
            pinocchio_us=t_pin,
            ratio=t3 / t_pin,
        )
        for algorithm, (t1, t3) in times.items()
    ]


def check_case(pin, pmodel, model, robot, name, states) -> dict:
    """Every algorithm of Table II (at ``CHECK``) and of Table III against Pinocchio on the row
    ``(robot, name)`` of ``TABLE_CASES`` at the states ``(q, v, tau)`` (module docstring); the
    largest errors, or :class:`BenchError`."""
    q, v, tau = states
    parts = TABLE_CASES[(robot, name)]
    contacts = contacts_of(parts)
    pins = PinConstrained(pin, pmodel, parts, CHECK).values(q, v, tau, derivatives=False)
    errors, per_entry = {}, robot not in CONDITION
    for algorithm in ALGORITHMS:
        ours = ours_constrained_kernels(model, contacts, q, v, tau, algorithm, CHECK)
        what = f" ({robot} {name}, {algorithm})"
        err = check_against_pinocchio(as_arrays(ours), pins, ("constrained_dynamics",), what, per_entry)
        errors[algorithm] = err["constrained_dynamics"]
    osim_mu = OSIM_MU if per_entry else CHECK["mu"]  # cABA-OSIM cancels digits like 1 / (mu |OSIM|)
    osim_pin = (_pin_osim(pin, PinConstrained(pin, pmodel, parts), q, osim_mu)(),)
    osims = [a for a in dynamics.OSIM_ALGORITHMS if model.has_free_flyer or a != "cABA-OSIMf"]  # floating bases
    for algorithm in osims:
        kernel = {"osim": lambda a=algorithm: dynamics.damped_osim(model, q, contacts, osim_mu, a)}
        what = f" ({robot} {name}, {algorithm})"
        err = check_against_pinocchio(kernel, {"osim": osim_pin}, ("osim",), what, per_entry)
        errors[f"osim[{algorithm}]"] = err["osim"]
    return errors


def tables_benchmark(batches=(1, 128), repeat=5, seed=0, cases=tuple(TABLE_CASES), progress=None) -> dict:
    """Tables II and III and Fig. 2's split (module docstring) for the rows ``cases`` (keys of
    ``TABLE_CASES``); a JSON-ready dict."""
    pin = import_pinocchio()
    say = progress or (lambda line: None)
    table2, table3, rows = [], [], []
    models = {}
    for robot, name in cases:
        parts = TABLE_CASES[(robot, name)]
        if robot not in models:
            model = dynamics.load(robot)
            models[robot] = model, pinocchio_model(pin, model, robot)
        model, pmodel = models[robot]
        contacts = contacts_of(parts)
        q, v, tau = regular_states(model, contacts, max(batches), seed, CONDITION.get(robot, MAX_CONDITION))
        say(f"checking {robot} {name} against Pinocchio {pin.__version__} on {len(q)} states")
        errors = check_case(pin, pmodel, model, robot, name, (q, v, tau))
        per_entry = robot not in CONDITION
        osims = [a for a in dynamics.OSIM_ALGORITHMS if model.has_free_flyer or a != "cABA-OSIMf"]  # floating bases
        rows.append(
            dict(
                robot=robot,
                contacts=name,
                nv=model.nv,
                m=sum(c.dim for c in contacts),
                sets=[dict(frames=list(c.frames), kind=c.kind, reference=c.reference) for c in parts],
                max_abs_error_vs_pinocchio=errors,
                tolerance_relative_to="each entry" if per_entry else "the largest entry",
            )
        )
        for B in batches:
            first = (q[:B], v[:B], tau[:B])
            say(f"timing {robot} {name}, B = {B}")
            for row in split_times(pin, pmodel, parts, model, first, repeat):
                table2.append(dict(robot=robot, contacts=name, batch=B, **row))
            t_pin = seconds_per_state(_pin_osim(pin, PinConstrained(pin, pmodel, parts), q[:B]), repeat, B)
            for algorithm in osims:
                t = seconds_per_state(
                    lambda a=algorithm: dynamics.damped_osim(model, q[:B], contacts, OSIM_MU, a), repeat, B
                )
                table3.append(
                    dict(
                        robot=robot,
                        contacts=name,
                        algorithm=algorithm,
                        batch=B,
                        ours_us=t,
                        pinocchio_us=t_pin,
                        ratio=t / t_pin,
                    )
                )
    return dict(
        benchmark="seed 003 tables",
        three_iterations=dict(mu=THREE_ITERATIONS["mu"], max_iter=3),
        split="prox = 1.5 (t3 - t1), outside = t3 - prox (t1, t3: times with one and three proximal iterations)",
        osim_mu=OSIM_MU,
        checked_with=CHECK,
        seed=seed,
        **run_facts(pin, repeat),
        cases=rows,
        table2=table2,
        table3=table3,
    )


def format_tables(result: dict) -> str:
    version = result["versions"]["pinocchio"]
    lines = [f"seed 003 tables: µs per state, ratio ours / Pinocchio (same run); Pinocchio {version}"]
    for case in result["cases"]:
        worst = max(case["max_abs_error_vs_pinocchio"].values())
        sets = "; ".join(
            f"{len(s['frames'])} x {s['kind']} {s['reference']} on {', '.join(s['frames'])}" for s in case["sets"]
        )
        lines.append(
            f"{case['robot']} {case['contacts']} (nv {case['nv']}, m {case['m']}): {sets}; every algorithm checked "
            f"against Pinocchio (max |ours - pin| {worst:.1e}, within {result['tolerance']:g} (1 + |pin|), |pin| "
            f"of {case['tolerance_relative_to']})"
        )
    for title, key, algorithms in (
        ("Table II: constrained dynamics, three proximal iterations", "table2", ALGORITHMS),
        (f"Table III: damped OSIM (mu {result['osim_mu']:g})", "table3", dynamics.OSIM_ALGORITHMS),
    ):
        lines += ["", title, _header(algorithms) + f" {'pinocchio':>10}"]
        for (robot, name, B), cells in _by_row(result[key]).items():
            text = " ".join(
                f"{cells[a]['ours_us']:>11.1f} ({cells[a]['ratio']:>5.2f}x)" if a in cells else f"{'-':>20}"
                for a in algorithms
            )
            lines.append(f"{robot:<10} {name:<10} {B:>4} {text} {next(iter(cells.values()))['pinocchio_us']:>10.1f}")
    algorithms = (*ALGORITHMS, "pinocchio")
    lines += [
        "",
        "Fig. 2: the three-iteration time split, outside + three proximal iterations (µs per state; "
        f"{result['split']})",
        _header(algorithms),
    ]
    for (robot, name, B), cells in _by_row(result["table2"]).items():
        text = " ".join(
            f"{cells[a]['outside_us']:>10.1f} + {cells[a]['prox_us']:>7.1f}" if a in cells else f"{'-':>20}"
            for a in algorithms
        )
        lines.append(f"{robot:<10} {name:<10} {B:>4} {text}")
    return "\n".join(lines)


def _header(algorithms) -> str:
    return f"{'robot':<10} {'contacts':<10} {'B':>4} " + " ".join(f"{a:>20}" for a in algorithms)


def _by_row(rows) -> dict:
    """``{(robot, contacts, batch): {algorithm: row}}`` in the order of ``rows``."""
    out = {}
    for r in rows:
        out.setdefault((r["robot"], r["contacts"], r["batch"]), {})[r["algorithm"]] = r
    return out


def tables_figure(result, path, batch=None):
    """Seed 003 Fig. 2 from ``liftoff bench constrained --tables``: a panel per robot, a group of
    bars per contact set, a bar per algorithm (and Pinocchio's ``constraintDynamics``): µs per
    state at ``batch`` (default: the largest timed), the part outside the proximal iterations
    solid, three proximal iterations hatched on top (drawn as 0 where the measured difference is
    negative: iterations cheaper than the timer's noise)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    rows = result["table2"]
    batch = max(r["batch"] for r in rows) if batch is None else batch
    rows = [r for r in rows if r["batch"] == batch]
    robots = list(dict.fromkeys(r["robot"] for r in rows))
    algorithms = list(dict.fromkeys(r["algorithm"] for r in rows))
    colors = {a: f"C{i}" for i, a in enumerate(algorithms)}
    cols = min(2, len(robots))
    fig, axes = plt.subplots(
        -(-len(robots) // cols), cols, figsize=(6.0 * cols, 3.4 * -(-len(robots) // cols)), squeeze=False
    )
    width = 0.8 / len(algorithms)
    for ax, robot in zip(axes.flat, robots):
        mine = _by_row([r for r in rows if r["robot"] == robot])
        for i, ((_, name, _), cells) in enumerate(mine.items()):
            for j, a in enumerate(algorithms):
                x = i - 0.4 + (j + 0.5) * width
                r = cells[a]
                outside = min(r["outside_us"], r["ours_us"])  # a part measured below 0 (noise) drawn as 0
                ax.bar(x, outside, width, color=colors[a], label=a if i == 0 else None)
                ax.bar(x, r["ours_us"] - outside, width, bottom=outside, color=colors[a], alpha=0.45, hatch="///")
        ax.set_xticks(range(len(mine)), [_math(name) for _, name, _ in mine])
        ax.set_title(f"{robot} (nv {next(c['nv'] for c in result['cases'] if c['robot'] == robot)})", fontsize=9)
        ax.set_ylabel("µs per state")
        ax.set_ylim(0, 1.1 * max(c["ours_us"] for cells in mine.values() for c in cells.values()))
        ax.grid(True, axis="y", alpha=0.3)
    for ax in axes.flat[len(robots) :]:
        ax.set_visible(False)
    handles = [Patch(color=colors[a], label=a) for a in algorithms]
    handles.append(Patch(facecolor="white", edgecolor="k", hatch="///", label="three proximal iterations"))
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=8, bbox_to_anchor=(0.5, 0.95))
    fig.suptitle(
        f"Seed 003 Fig. 2: three proximal iterations (mu {result['three_iterations']['mu']:g}), B = {batch} states "
        "per call; hatched: the three proximal iterations, 1.5 (t3 - t1)",
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    save_figure(fig, path)


def _math(name) -> str:
    """``F6^2 T3^3`` as mathtext: the paper's F with subscript 6 and superscript 2, ..."""
    return " ".join(re.sub(r"^([A-Z])(\d)(?:\^(\d+))?$", r"$\1_{\2}^{\3}$", part) for part in name.split())


# ----------------------------------------------------------------------------- seed 003 Fig. 4: convergence whiskers

WHISKER_ROBOT = "talos_full"
WHISKER_CASES = (
    ContactCase(_TALOS_SOLES + ("arm_left_7_link",), "6D", "LOCAL"),
    ContactCase(("arm_left_4_link",), "3D", _LWA),
)
WHISKER_MU = 1e-6  # the paper's penalty 1e6, inverted (liftoff's mu is the proximal damping)
WHISKER_ITERATIONS = 10
WHISKER_STATES = 1000  # as the paper; about 30 s


def whiskers_benchmark(
    states=WHISKER_STATES, iterations=WHISKER_ITERATIONS, mu=WHISKER_MU, algorithms=ALGORITHMS, seed=0, progress=None
) -> dict:
    """Seed 003 Fig. 4 (module docstring): per algorithm, the constraint residual of each state
    after each of ``iterations`` proximal iterations, and its quartiles; a JSON-ready dict."""
    require_constrained_dynamics(("Contact", "constrained_dynamics"))
    say = progress or (lambda line: None)
    model = dynamics.load(WHISKER_ROBOT)
    contacts = contacts_of(WHISKER_CASES)
    q, v, _, tau = random_states(model, states, seed)
    J = dynamics.contact_jacobian(model, q, contacts)
    v = v - np.einsum("bij,bj->bi", np.linalg.pinv(J), np.einsum("bij,bj->bi", J, v))  # J v = 0: consistent
    singular = np.linalg.svd(J, compute_uv=False)
    ranks = np.sum(singular > 1e-9 * singular[:, :1], axis=1)
    residuals, quartiles = {}, {}
    for algorithm in algorithms:
        say(f"whiskers: {algorithm}, {iterations} iterations on {states} states")
        per = [
            dynamics.constrained_dynamics(
                model, q, v, tau, contacts, mu=mu, max_iter=k, tol=1e-300, algorithm=algorithm
            ).residual
            for k in range(1, iterations + 1)
        ]
        residuals[algorithm] = np.array(per).tolist()
        quartiles[algorithm] = [dict(zip(("q1", "median", "q3"), np.percentile(r, (25, 50, 75)).tolist())) for r in per]
    return dict(
        benchmark="constrained whiskers (seed 003 Fig. 4)",
        robot=WHISKER_ROBOT,
        nv=model.nv,
        sets=[dict(frames=list(c.frames), kind=c.kind, reference=c.reference) for c in WHISKER_CASES],
        m=sum(c.dim for c in contacts),
        rank=dict(median=float(np.median(ranks)), min=int(ranks.min()), max=int(ranks.max())),
        smallest_singular_value_median=float(np.median(singular[:, -1])),
        mu=mu,
        iterations=iterations,
        states=states,
        state_selection="q uniform within the joint limits, tau standard normal, v standard normal projected on the "
        "null space of J (J v = 0), not filtered",
        seed=seed,
        residual="|J a - r|_inf after k iterations (a cold-started solve with max_iter = k)",
        algorithms=list(algorithms),
        quartiles=quartiles,
        residuals=residuals,
    )


def format_whiskers_table(result: dict) -> str:
    """A Markdown table: per iteration, the median and quartiles of the residual per algorithm."""
    sets = "; ".join(f"{s['kind']} {s['reference']} on {', '.join(s['frames'])}" for s in result["sets"])
    rank = result["rank"]
    lines = [
        f"{result['benchmark']}: {result['robot']} (nv {result['nv']}), {sets}: m = {result['m']}, rank "
        f"{rank['median']:g} (median; {rank['min']} to {rank['max']}); {result['states']} random states "
        f"(seed {result['seed']}), mu {result['mu']:g}",
        f"cell: median [q1, q3] of {result['residual']}",
        "",
        "| iteration | " + " | ".join(result["algorithms"]) + " |",
        "|---|" + "---|" * len(result["algorithms"]),
    ]
    for k in range(result["iterations"]):
        cells = []
        for a in result["algorithms"]:
            s = result["quartiles"][a][k]
            cells.append(f"{s['median']:.1e} [{s['q1']:.1e}, {s['q3']:.1e}]")
        lines.append(f"| {k + 1} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def whiskers_figure(result, path):
    """Seed 003 Fig. 4 from ``liftoff bench constrained --whiskers``: box and whiskers (5th to
    95th percentile, the rest as points) of the residual after each iteration, a box per
    algorithm side by side, log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    algorithms = result["algorithms"]
    fig, ax = plt.subplots(figsize=(9.0, 4.2))
    width = 0.8 / len(algorithms)
    floor = 1e-17
    for j, a in enumerate(algorithms):
        data = np.maximum(np.array(result["residuals"][a]), floor)
        x = np.arange(1, result["iterations"] + 1) - 0.4 + (j + 0.5) * width
        color = f"C{j}"
        ax.boxplot(
            list(data),
            positions=x,
            widths=width * 0.85,
            whis=(5, 95),
            patch_artist=True,
            boxprops=dict(facecolor=color, alpha=0.5, edgecolor=color),
            medianprops=dict(color="k", lw=1),
            whiskerprops=dict(color=color),
            capprops=dict(color=color),
            flierprops=dict(marker=_STYLES.get(a, ("o",))[0], ms=2, markeredgecolor=color, alpha=0.4),
        )
        ax.plot([], [], "s", color=color, alpha=0.5, label=a)
    ax.set_yscale("log")
    ax.set_xticks(range(1, result["iterations"] + 1), [str(k) for k in range(1, result["iterations"] + 1)])
    ax.set_xlabel("proximal iterations")
    ax.set_ylabel("constraint residual |J a - r|_inf")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    rank = result["rank"]
    ax.set_title(
        f"Seed 003 Fig. 4: {result['robot']}, soles and left hand 6D, left elbow 3D (m = {result['m']}, rank "
        f"{rank['median']:g}), mu {result['mu']:g}, {result['states']} random states",
        fontsize=9,
    )
    fig.tight_layout()
    save_figure(fig, path)
