"""``liftoff bench constrained --factorization``: seed 000 Figs. 4-7 on this machine.

The relaxed KKT matrix of seed 000 eq. 18,

    K_mu = [[-mu 1, J], [J^T, M]]      ((m + nv) x (m + nv), M the joint-space inertia),

factored, given ``M`` and ``J``, by:

- ``liftoff``: seed 000 Alg. 1 as proxLTL runs it (``dynamics.constrained._udu``): the sparse
  ``M = U D U^T`` along the joints' ancestor chains with the constraint rows eliminated
  alongside, which accumulates the Schur complement ``J M^-1 J^T``, then a dense Cholesky
  ``L L^T`` of the damped Delassus matrix ``J M^-1 J^T + mu 1`` (the upper-left block of seed
  000 eq. 24); one batched call on ``B`` states, for each ``B`` of ``batches``;
- ``numpy``: the same block factorization dense and batched (Cholesky of ``M``, a solve for
  ``L_M^-1 J^T``, Cholesky of the Delassus matrix), the tree's sparsity left unused;
- ``pinocchio``: Pinocchio's ``ContactCholeskyDecomposition.compute``, the paper's own C++
  Alg. 1, one call per state from Python;
- ``scipy_ldl``: ``scipy.linalg.ldl`` of the dense ``K_mu`` (LAPACK's Bunch-Kaufman ``LDL^T``,
  with pivoting, as the paper's Eigen ``LDLT``), one call per state;
- ``scipy_cholesky``: the block factorization with ``scipy.linalg.cho_factor`` and
  ``solve_triangular``, one state per call;
- ``splu``: ``scipy.sparse.linalg.splu`` of ``K_mu`` in CSC (SuperLU, default ordering and
  pivoting: a general sparse LU, where the paper has Eigen's ``SimplicialLDLT``).

Then the damped OSIM ``Lambda_mu = (J M^-1 J^T + mu 1)^-1`` (Fig. 7) and its inverse, the
damped Delassus matrix (Fig. 6), extracted from a factorization: liftoff's from the Cholesky
factor of its last block (``L L^T``, and ``L^-T L^-1``), Pinocchio's
``getInverseOperationalSpaceInertiaMatrix`` and ``getOperationalSpaceInertiaMatrix``, and
SuperLU's as ``-(K_mu^-1)[:m, :m]`` by ``m`` solves (its inverse by ``numpy.linalg.inv``).

Robots and contacts as in seed 000 Sec. V-A: UR5 without constraints, then a 3D and a 6D
constraint on its tool (Fig. 4); Solo (solo12), ANYmal with 3D contacts added foot by foot,
iCub and Talos with 6D contacts added on the soles and then the hands (Fig. 5); all at random
states away from singular configurations (Delassus condition number below 1e4 with all the
contacts). Before anything is timed, ``K_mu`` is checked equal to Pinocchio's, every
factorization's solution of ``K_mu x = b`` equal to ``numpy.linalg.solve``'s to
``SOLVE_TOLERANCE`` relative to ``|x|_inf`` (or to ``eps cond(K_mu)``, what any backward-stable
solve can promise, where that is larger: iCub's head, about 1e-8 kg m^2 around its neck yaw
axis, gives ``M`` condition numbers near 3e8), and every OSIM and inverse equal to the dense
ones of the same ``K_mu`` (to ``TOLERANCE``) and to Pinocchio's: to ``TOLERANCE``, or to twice
the gap between the dense OSIMs of liftoff's and Pinocchio's ``K_mu`` where that is larger
(their ``M`` differ by rounding, which iCub's condition number amplifies to ~1e-8). Timings
are CPU time (``time.process_time``), one BLAS thread, the best of ``repeat`` runs of ``n``
calls, the methods of a row run in turn in each round (:func:`cpu_seconds_per_call`); a
per-state method's call loops over all the states.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import time
import timeit

import matplotlib.pyplot as plt
import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg

from liftoff import dynamics
from liftoff.dynamics.constrained import _back, _chains, _forth, _udu
from liftoff.problems.files import save_figure

from .common import (
    TOLERANCE,
    BenchError,
    import_pinocchio,
    one_blas_thread,
    pinocchio_model,
    regular_states,
    run_facts,
)
from .constrained import ContactCase, PinConstrained, contacts_of

MU = 1e-4  # the proximal damping of K_mu
SOLVE_TOLERANCE = 1e-10  # |x - x_numpy|_inf <= max(SOLVE_TOLERANCE, eps cond(K_mu)) |x_numpy|_inf
RUN_SECONDS = 0.05  # a timed run lasts at least this (CPU time): short runs, the best of many, on a shared machine
BATCHED = ("liftoff", "numpy")
PER_STATE = ("pinocchio", "scipy_ldl", "scipy_cholesky", "splu")
LABELS = {
    "liftoff": "liftoff sparse UDU^T (Alg. 1)",
    "numpy": "numpy dense block Cholesky",
    "pinocchio": "Pinocchio ContactCholesky (C++)",
    "scipy_ldl": "scipy dense LDL^T (ldl)",
    "scipy_cholesky": "scipy dense block Cholesky (cho_factor)",
    "splu": "scipy.sparse splu (SuperLU)",
}


def _added(frames, kind, reference):
    """The contact sets of seed 000 Sec. V-A: none, then the frames added one by one."""
    return tuple(ContactCase(frames[:k], kind, reference) for k in range(len(frames) + 1))


FACTORIZATION_ROBOTS = {
    "ur5": (
        ContactCase((), "3D", "LOCAL"),
        ContactCase(("tool0",), "3D", "LOCAL"),
        ContactCase(("tool0",), "6D", "LOCAL"),
    ),
    "solo12": _added(("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"), "3D", "LOCAL_WORLD_ALIGNED"),
    "anymal": _added(("LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT"), "3D", "LOCAL_WORLD_ALIGNED"),
    "icub": _added(("l_sole", "r_sole", "l_hand", "r_hand"), "6D", "LOCAL"),
    "talos": _added(("left_sole_link", "right_sole_link", "arm_left_7_link", "arm_right_7_link"), "6D", "LOCAL"),
}


# ----------------------------------------------------------------------------- the factorizations


def kkt_matrix(M, J, mu=MU):
    """``K_mu (B, m + nv, m + nv)`` of seed 000 eq. 18 from ``M (B, nv, nv)`` and ``J (B, m, nv)``."""
    B, m, _ = J.shape
    top = np.concatenate((np.broadcast_to(-mu * np.eye(m), (B, m, m)), J), axis=2)
    return np.concatenate((top, np.concatenate((np.swapaxes(J, 1, 2), M), axis=2)), axis=1)


def liftoff_factor(M, J, chains, mu=MU):
    """``(U, D, Y, L)``: seed 000 Alg. 1 (``M = U D U^T`` sparse, ``Y = J U^-T D^-1``) and the
    Cholesky factor ``L`` of ``J M^-1 J^T + mu 1``, batched."""
    m = J.shape[1]
    U, D, Y, schur = _udu(M, chains, J if m else None)
    L = np.linalg.cholesky(schur + mu * np.eye(m)) if m else np.zeros((len(M), 0, 0))
    return U, D, Y, L


def liftoff_solve(factors, chains, b):
    """``K_mu^-1 b`` for ``b (B, m + nv, c)`` from :func:`liftoff_factor`: ``(J M^-1 J^T + mu) y
    = J M^-1 h - r`` and ``x = M^-1 (h - J^T y)`` for ``b = (r, h)``."""
    U, D, Y, L = factors
    m = L.shape[-1]
    r, h = b[:, :m], b[:, m:]
    w = _back(U, h, chains) / D[:, :, None]  # D^-1 U^-1 h
    y = r[:, :0]
    if m:
        s = Y @ (w * D[:, :, None]) - r  # J M^-1 h - r
        y = np.linalg.solve(np.swapaxes(L, 1, 2), np.linalg.solve(L, s))
        w = w - np.swapaxes(Y, 1, 2) @ y
    return np.concatenate((y, _forth(U, w, chains)), axis=1)


def liftoff_inverse_osim(factors):
    """``Lambda_mu^-1 = J M^-1 J^T + mu 1 = L L^T`` from the factorization."""
    L = factors[3]
    return L @ np.swapaxes(L, 1, 2)


def liftoff_osim(factors):
    """``Lambda_mu = L^-T L^-1`` from the factorization."""
    Linv = np.linalg.inv(factors[3])
    return np.swapaxes(Linv, 1, 2) @ Linv


def numpy_factor(M, J, mu=MU):
    """``(L_M, X, L)``: dense Cholesky ``M = L_M L_M^T``, ``X = L_M^-1 J^T``, and the Cholesky
    factor ``L`` of ``X^T X + mu 1 = J M^-1 J^T + mu 1``, batched."""
    LM = np.linalg.cholesky(M)
    m = J.shape[1]
    if not m:
        return LM, None, None
    X = np.linalg.solve(LM, np.swapaxes(J, 1, 2))
    return LM, X, np.linalg.cholesky(np.swapaxes(X, 1, 2) @ X + mu * np.eye(m))


def numpy_solve(factors, b):
    LM, X, L = factors
    m = 0 if L is None else L.shape[-1]
    r, h = b[:, :m], b[:, m:]
    z = np.linalg.solve(LM, h)
    y = r[:, :0]
    if m:
        s = np.swapaxes(X, 1, 2) @ z - r
        y = np.linalg.solve(np.swapaxes(L, 1, 2), np.linalg.solve(L, s))
        z = z - X @ y
    return np.concatenate((y, np.linalg.solve(np.swapaxes(LM, 1, 2), z)), axis=1)


def scipy_cholesky_factor(Mi, Ji, mu=MU):
    """One state's block factorization with ``cho_factor``: ``(L_M, X, L)`` as :func:`numpy_factor`."""
    LM = scipy.linalg.cho_factor(Mi, lower=True, check_finite=False)[0]
    if not len(Ji):
        return LM, None, None
    X = scipy.linalg.solve_triangular(LM, Ji.T, lower=True, check_finite=False)
    L = scipy.linalg.cho_factor(X.T @ X + mu * np.eye(len(Ji)), lower=True, check_finite=False)[0]
    return LM, X, L


def scipy_cholesky_solve(factors, bi):
    LM, X, L = factors
    m = 0 if L is None else len(L)
    tri = lambda A, x, trans=0: scipy.linalg.solve_triangular(A, x, trans=trans, lower=True)  # noqa: E731
    r, h = bi[:m], bi[m:]
    z = tri(LM, h)
    y = r[:0]
    if m:
        y = tri(L, tri(L, X.T @ z - r), trans=1)
        z = z - X @ y
    return np.concatenate((y, tri(LM, z, trans=1)))


def ldl_solve(factors, bi):
    """``K^-1 b`` from ``scipy.linalg.ldl``'s ``(lu, d, perm)``: ``K = lu d lu^T`` with ``lu[perm]``
    lower triangular."""
    lu, d, perm = factors
    L = lu[perm]
    y = scipy.linalg.solve_triangular(L, bi[perm], lower=True, unit_diagonal=True)
    z = scipy.linalg.solve_triangular(L.T, np.linalg.solve(d, y), lower=False, unit_diagonal=True)
    x = np.empty_like(z)
    x[perm] = z
    return x


class PinCholesky:
    """Pinocchio's ``ContactCholeskyDecomposition`` of each state's ``K_mu``: one Data per state,
    its kinematics and ``M`` filled by ``constraintDynamics``, then ``compute`` repeated."""

    def __init__(self, pin, pmodel, case: ContactCase, q, mu=MU):
        ref = PinConstrained(pin, pmodel, case)
        self.pmodel, self.models, self.mu = pmodel, ref.models, mu
        settings = pin.ProximalSettings(1e-12, mu, 1)
        zeros = np.zeros(pmodel.nv)
        self.items = []
        for qi in q:
            data = pmodel.createData()
            datas = pin.StdVec_RigidConstraintData([c.createData() for c in ref.models])
            pin.initConstraintDynamics(pmodel, data, ref.models, datas)
            pin.constraintDynamics(pmodel, data, np.ascontiguousarray(qi), zeros, zeros, ref.models, datas, settings)
            chol = pin.ContactCholeskyDecomposition(pmodel, data, ref.models, datas)
            chol.compute(pmodel, data, ref.models, datas, mu)
            self.items.append((chol, data, datas))

    def factor(self):
        pmodel, models, mu = self.pmodel, self.models, self.mu
        for chol, data, datas in self.items:
            chol.compute(pmodel, data, models, datas, mu)

    def stack(self, method, *args):
        return np.stack([getattr(chol, method)(*(a[i] for a in args)) for i, (chol, _, _) in enumerate(self.items)])

    def inverse_osim(self):
        for chol, _, _ in self.items:
            chol.getInverseOperationalSpaceInertiaMatrix()

    def osim(self):
        for chol, _, _ in self.items:
            chol.getOperationalSpaceInertiaMatrix()


# ----------------------------------------------------------------------------- timing


def cpu_seconds_per_call(kernels: dict, repeat, run_seconds=RUN_SECONDS) -> dict:
    """CPU seconds per call of each ``kernels[name]``: ``n`` calls per run, ``n`` doubled until a
    run lasts ``run_seconds``, then ``repeat`` rounds of one run of every kernel in turn (so that
    all meet the same load of a shared machine), the best run of each kept."""
    timers, numbers = {}, {}
    for name, fn in kernels.items():
        timers[name] = timeit.Timer(fn, timer=time.process_time)
        numbers[name] = 1
        while timers[name].timeit(numbers[name]) < run_seconds:
            numbers[name] *= 2
    best = dict.fromkeys(kernels, np.inf)
    for _ in range(repeat):
        for name, timer in timers.items():
            best[name] = min(best[name], timer.timeit(numbers[name]) / numbers[name])
    return best


def _relative(x, reference) -> float:
    """``|x - reference|_inf / |reference|_inf``."""
    return float(np.max(np.abs(x - reference)) / max(np.max(np.abs(reference)), 1e-300))


def _per_entry(x, pin) -> float:
    """``max |x - pin| / (1 + |pin|)``, entry by entry: the criterion of every check against Pinocchio."""
    return float(np.max(np.abs(x - pin) / (1.0 + np.abs(pin)), initial=0.0))


def _dense_osims(M, J, mu=MU):
    """The damped Delassus matrix ``J M^-1 J^T + mu 1`` and its inverse, by numpy's dense solves."""
    delassus = J @ np.linalg.solve(M, np.swapaxes(J, 1, 2)) + mu * np.eye(J.shape[1])
    return delassus, np.linalg.inv(delassus)


def _check(errors, name, err, tolerance, what):
    errors[name] = err
    if not err <= tolerance:  # also NaN
        raise BenchError(f"{what}: {name} is off by {err:.3g} (relative), beyond {tolerance:g}; refusing to time it")


def _case(pin, model, pmodel, robot, case, q, batches, repeat, run_seconds, seed):
    """One row: the checks, then the timings, of one robot and contact set at the states ``q``."""
    contacts = contacts_of(case)
    S, nv = len(q), model.nv
    M = dynamics.crba(model, q)
    J = dynamics.contact_jacobian(model, q, contacts) if contacts else np.zeros((S, 0, nv))
    m = J.shape[1]
    K = kkt_matrix(M, J)
    chains = _chains(model)
    pinchol = PinCholesky(pin, pmodel, case, q)
    what = f"{robot}, m = {m}"
    errors = {}
    pin_K = pinchol.stack("matrix")
    _check(errors, "K_mu vs pinocchio", _per_entry(K, pin_K), TOLERANCE, what)

    # each factorization solves K_mu x = b as numpy's dense solve
    b = np.random.default_rng(seed).standard_normal((S, m + nv, 1))
    x = np.linalg.solve(K, b)
    csc = [scipy.sparse.csc_matrix(Ki) for Ki in K]
    solutions = {
        "liftoff": liftoff_solve(liftoff_factor(M, J, chains), chains, b),
        "numpy": numpy_solve(numpy_factor(M, J), b),
        "pinocchio": pinchol.stack("solve", b[..., 0])[..., None],
        "scipy_ldl": np.stack([ldl_solve(scipy.linalg.ldl(Ki), bi) for Ki, bi in zip(K, b)]),
        "scipy_cholesky": np.stack(
            [scipy_cholesky_solve(scipy_cholesky_factor(*s), bi) for s, bi in zip(zip(M, J), b)]
        ),
        "splu": np.stack([scipy.sparse.linalg.splu(Ki).solve(bi) for Ki, bi in zip(csc, b)]),
    }
    condition = np.linalg.cond(K)
    allowed = np.maximum(SOLVE_TOLERANCE, np.finfo(float).eps * condition)  # a backward-stable solve's accuracy
    x_pin = np.linalg.solve(pin_K, b)  # Pinocchio solves its own K_mu, equal to ours up to rounding
    for name, sol in solutions.items():
        ref = x_pin if name == "pinocchio" else x
        err = np.max(np.abs(sol - ref), axis=(1, 2)) / np.max(np.abs(ref), axis=(1, 2))
        worst = int(np.argmax(np.nan_to_num(err / allowed, nan=np.inf)))  # the state nearest its tolerance
        _check(errors, f"solve[{name}]", float(err[worst]), float(allowed[worst]), what)

    # the OSIM and its inverse against the dense ones of the same K_mu, and against Pinocchio's
    if m:
        factors = liftoff_factor(M, J, chains)
        unit = np.eye(m + nv)[:, :m]
        splu_osim = np.stack([-scipy.sparse.linalg.splu(Ki).solve(unit)[:m] for Ki in csc])
        osims = {
            "liftoff": (liftoff_inverse_osim(factors), liftoff_osim(factors)),
            "splu": (np.linalg.inv(splu_osim), splu_osim),
        }
        pins = (
            pinchol.stack("getInverseOperationalSpaceInertiaMatrix"),
            pinchol.stack("getOperationalSpaceInertiaMatrix"),
        )
        dense, dense_pin = _dense_osims(M, J), _dense_osims(pin_K[:, m:, m:], pin_K[:, :m, m:])
        for i, quantity in enumerate(("inverse_osim", "osim")):
            _check(errors, f"{quantity}[pinocchio] vs dense", _relative(pins[i], dense_pin[i]), TOLERANCE, what)
            gap = errors[f"{quantity}: liftoff's K_mu vs pinocchio's"] = _relative(dense[i], dense_pin[i])
            for name, pair in osims.items():
                _check(errors, f"{quantity}[{name}] vs dense", _relative(pair[i], dense[i]), TOLERANCE, what)
                _check(
                    errors,
                    f"{quantity}[{name}] vs pinocchio",
                    _relative(pair[i], pins[i]),
                    max(TOLERANCE, 2 * gap),
                    what,
                )

    # timings: µs per state, every kernel of the row in the same rounds
    kernels, states = {}, {}  # (group, column) -> kernel, states per call
    for B in batches:
        MB, JB = M[:B], J[:B]
        kernels["factorization", f"liftoff[B={B}]"] = lambda MB=MB, JB=JB: liftoff_factor(MB, JB, chains)
        kernels["factorization", f"numpy[B={B}]"] = lambda MB=MB, JB=JB: numpy_factor(MB, JB)
        states.update({("factorization", f"liftoff[B={B}]"): B, ("factorization", f"numpy[B={B}]"): B})
        if m:
            fB = liftoff_factor(MB, JB, chains)
            kernels["inverse_osim", f"liftoff[B={B}]"] = lambda fB=fB: liftoff_inverse_osim(fB)
            kernels["osim", f"liftoff[B={B}]"] = lambda fB=fB: liftoff_osim(fB)
            states.update({("inverse_osim", f"liftoff[B={B}]"): B, ("osim", f"liftoff[B={B}]"): B})
    kernels["factorization", "pinocchio"] = pinchol.factor
    kernels["factorization", "scipy_ldl"] = lambda: [scipy.linalg.ldl(Ki, check_finite=False) for Ki in K]
    kernels["factorization", "scipy_cholesky"] = lambda: [scipy_cholesky_factor(Mi, Ji) for Mi, Ji in zip(M, J)]
    kernels["factorization", "splu"] = lambda: [scipy.sparse.linalg.splu(Ki) for Ki in csc]
    if m:
        lus = [scipy.sparse.linalg.splu(Ki) for Ki in csc]
        kernels["inverse_osim", "pinocchio"] = pinchol.inverse_osim
        kernels["osim", "pinocchio"] = pinchol.osim
        kernels["inverse_osim", "splu"] = lambda: [np.linalg.inv(-lu.solve(unit)[:m]) for lu in lus]
        kernels["osim", "splu"] = lambda: [-lu.solve(unit)[:m] for lu in lus]
    seconds = cpu_seconds_per_call(kernels, repeat, run_seconds)
    times = {group: {} for group in ("factorization", "inverse_osim", "osim")}
    for (group, column), t in seconds.items():
        times[group][column] = t / states.get((group, column), S) * 1e6
    return dict(
        robot=robot,
        nv=nv,
        m=m,
        frames=list(case.frames),
        kind=case.kind if m else None,
        reference=case.reference if m else None,
        condition_max=float(np.max(condition)),
        solve_tolerance_max=float(np.max(allowed)),
        nnz=int(np.count_nonzero(K[0])),
        size=m + nv,
        errors=errors,
        factorization_us=times["factorization"],
        inverse_osim_us=times["inverse_osim"],
        osim_us=times["osim"],
    )


def factorization_benchmark(
    robots=tuple(FACTORIZATION_ROBOTS),
    batches=(1, 128),
    repeat=5,
    seed=0,
    run_seconds=RUN_SECONDS,
    progress=None,
) -> dict:
    """Seed 000 Figs. 4-7 (module docstring) on ``max(batches)`` states per robot; a JSON-ready dict."""
    pin = import_pinocchio()
    say = progress or (lambda line: None)
    unknown = [r for r in robots if r not in FACTORIZATION_ROBOTS]
    if unknown:
        raise BenchError(f"no contact sets for {', '.join(unknown)}; known: {', '.join(FACTORIZATION_ROBOTS)}")
    S, rows = max(batches), []
    retained = dynamics.retain_freed_memory()  # as the liftoff command does
    with one_blas_thread():
        for robot in robots:
            model = dynamics.load(robot)
            pmodel = pinocchio_model(pin, model, robot)
            cases = FACTORIZATION_ROBOTS[robot]
            q = regular_states(model, contacts_of(cases[-1]), S, seed)[0]
            for case in cases:
                say(f"{robot}: {len(case.frames)} x {case.kind} contacts, checking then timing on {S} states")
                rows.append(_case(pin, model, pmodel, robot, case, q, batches, repeat, run_seconds, seed))
    facts = run_facts(pin, repeat, retained)
    facts["timer"] = (
        f"CPU time (time.process_time), one BLAS thread: n calls per run, n doubled until a run lasts "
        f"{run_seconds:g} s; `repeat` rounds of one run of every method of a row in turn, the best run of each "
        "kept; µs per state = time per call / states in the call"
    )
    facts["versions"]["scipy"] = scipy.__version__
    return dict(
        benchmark="seed 000 Figs. 4-7",
        mu=MU,
        states=S,
        batches=list(batches),
        solve_tolerance=SOLVE_TOLERANCE,
        labels=LABELS,
        **facts,
        rows=rows,
    )


# ----------------------------------------------------------------------------- table and figure


def _columns(result, key):
    """The timing columns of ``key`` present in the rows, in a fixed order."""
    batched = [f"{name}[B={B}]" for name in BATCHED for B in result["batches"]]
    present = {c for r in result["rows"] for c in r[key]}
    return [c for c in (*batched, *PER_STATE) if c in present]


def format_factorization_table(result: dict) -> str:
    """Markdown tables: µs per state per method, a row per robot and contact set."""
    versions = result["versions"]

    def worst(part):
        errors = [e for r in result["rows"] for name, e in r["errors"].items() if part in name]
        return f"{max(errors, default=0.0):.1e}"

    lines = [
        f"seed 000 Figs. 4-7: µs per state (CPU time, one BLAS thread, best of {result['repeat']}), "
        f"mu {result['mu']:g}, {result['states']} states per robot; [B=n]: a batched call on n states; "
        f"Pinocchio {versions['pinocchio']}, scipy {versions['scipy']}",
        f"checked first: every factorization solves K_mu x = b as numpy.linalg.solve (worst relative error "
        f"{worst('solve[')}, within max({result['solve_tolerance']:g}, eps cond(K_mu))); every OSIM and inverse "
        f"as the dense ones and Pinocchio's (worst relative error {worst('osim')}, within 1e-8 or twice the gap "
        "between the dense OSIMs of liftoff's and Pinocchio's K_mu)",
    ]
    for title, key in (
        ("Figs. 4-5: factorization of K_mu", "factorization_us"),
        ("Fig. 6: inverse OSIM (J M^-1 J^T + mu 1) from the factorization", "inverse_osim_us"),
        ("Fig. 7: OSIM (J M^-1 J^T + mu 1)^-1 from the factorization", "osim_us"),
    ):
        columns = _columns(result, key)
        rows = [r for r in result["rows"] if r[key]]
        lines += ["", title, "", "| robot | nv | m | " + " | ".join(columns) + " |", "|---" * (3 + len(columns)) + "|"]
        for r in rows:
            cells = " | ".join(f"{r[key][c]:.3g}" if c in r[key] else "-" for c in columns)
            lines.append(f"| {r['robot']} | {r['nv']} | {r['m']} | {cells} |")
    return "\n".join(lines)


_COLORS = {"liftoff": 0, "numpy": 2, "pinocchio": 4, "scipy_ldl": 10, "scipy_cholesky": 12, "splu": 14}  # tab20


def _style(result, column):
    """Color and legend label of a timing column: one hue per method, the largest batch darker."""
    method, _, batch = column.partition("[")
    light = bool(batch) and batch != f"B={max(result['batches'])}]"
    color = plt.get_cmap("tab20")(_COLORS[method] + light)
    return color, LABELS[method] + (f" [{batch}" if batch else "")


def _bars(ax, result, rows, key, labels):
    columns = _columns(result, key)
    width = 0.8 / len(columns)
    x = np.arange(len(rows))
    for i, column in enumerate(columns):
        color, label = _style(result, column)
        times = [r[key].get(column, np.nan) for r in rows]
        ax.bar(x + (i - (len(columns) - 1) / 2) * width, times, width, color=color, label=label)
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("µs per state", fontsize=8)
    ax.grid(True, axis="y", which="major", alpha=0.3)


def factorization_figure(result, path):
    """Seed 000 Figs. 4-7 from ``liftoff bench constrained --factorization``: bars of µs per state
    (log scale) per method; a panel per robot for the factorization (Figs. 4-5, grouped by m),
    then the inverse OSIM (Fig. 6) and the OSIM (Fig. 7) for every robot and m."""
    rows = result["rows"]
    robots = list(dict.fromkeys(r["robot"] for r in rows))
    fig = plt.figure(figsize=(max(12, 3.4 * len(robots)), 10.5))
    grid = fig.add_gridspec(3, len(robots))
    for j, robot in enumerate(robots):
        ax = fig.add_subplot(grid[0, j])
        mine = [r for r in rows if r["robot"] == robot]
        _bars(ax, result, mine, "factorization_us", [f"m={r['m']}" for r in mine])
        fig_no = "Fig. 4" if robot == "ur5" else "Fig. 5"
        ax.set_title(f"{fig_no}: {robot} (nv {mine[0]['nv']}), K_mu factorization", fontsize=8)
    handles, labels = fig.axes[0].get_legend_handles_labels()
    for i, (key, title) in enumerate(
        (
            ("inverse_osim_us", "Fig. 6: inverse OSIM J M^-1 J^T + mu 1 from the factorization"),
            ("osim_us", "Fig. 7: OSIM (J M^-1 J^T + mu 1)^-1 from the factorization"),
        )
    ):
        ax = fig.add_subplot(grid[1 + i, :])
        mine = [r for r in rows if r[key]]
        if mine:
            _bars(ax, result, mine, key, [f"{r['robot']}\nm={r['m']}" for r in mine])
        ax.set_title(title, fontsize=8)
    fig.suptitle(
        f"Seed 000 Figs. 4-7 on this machine: µs per state, CPU time, one BLAS thread, best of {result['repeat']}; "
        f"mu {result['mu']:g}, {result['states']} states; [B=n]: one batched call on n states, else one call per state",
        fontsize=9,
    )
    fig.legend(handles, labels, loc="upper center", ncol=4, fontsize=7, bbox_to_anchor=(0.5, 0.965))
    fig.tight_layout(rect=(0, 0, 1, 0.955))
    save_figure(fig, path)
