"""``liftoff bench constrained --operations``: the floating-point operations that liftoff's numpy
implementations of the constrained dynamics algorithms (seed 003 Fig. 1: proxLTL, proxLTLs,
constrainedABA, proxPV, three proximal iterations) and of the damped Delassus inverse algorithms
(seed 003 Fig. 5: cABA-OSIM, cABA-OSIMf, proxPV, proxLTL) execute for one state, by phase.

How they are counted. The algorithms run unchanged on one state (batch of one) while, in the
namespaces of the ``dynamics`` modules, ``np`` is a proxy whose functions return a counting
``ndarray`` subclass (:class:`Counted`); every array the algorithms make is then counted, and
numpy's dispatch (``__array_ufunc__``, ``__array_function__``) reports each operation on it:

- elementwise arithmetic ufuncs (``+ - * /``, negation, reciprocal, square, power, sqrt, exp,
  log, trigonometric functions): one operation per output element; their ``reduce`` (``sum``)
  one per element reduced away, ``accumulate`` likewise, ``at`` one per element updated;
- ``matmul`` (``@``) and ``np.dot``: ``m n (2k - 1)`` per ``(m, k) (k, n)`` product;
- ``np.einsum``: what its default (unoptimized) loop executes, ``(operands - 1) T`` products
  and ``T - O`` additions, ``T`` the size of the full index space, ``O`` of the output;
- ``np.linalg``: the textbook counts of the dense factorizations numpy calls (LAPACK):
  Cholesky ``n^3/3 + n^2/2 + n/6`` (``n`` square roots included), LU ``2n^3/3 - n^2/2 - n/6``
  plus ``2n^2 - n`` per right-hand side (``solve``), ``inv`` as LU and ``n`` right-hand sides,
  a 2-norm ``2k`` per output (squares, sums and the square root);
- not counted: comparisons, ``abs``, ``min``/``max``, ``where``, copies, indexing, reshaping,
  concatenation (data movement), integer (index) arithmetic, and operations between arrays
  stored on the model alone (precomputed tables, done before any state is known). Functions
  that compute but have no count (``pinv``, ``eigvalsh``, ...) are listed under ``uncounted``;
  they only occur in the stopping tests' least-squares branch.

Numpy executes the products with the tree's 0/1 tables (``tree_sum``: ``support``, ``owner``,
``descendants``) densely, ``O(n^2)`` each, and so are they counted (``total``, ``phases``). A
second count (``total_sparse_tables``, ``phases_sparse_tables``) takes those products by the
tables' nonzeros, the additions left once ``x * 1`` and ``x * 0`` are folded away (as the
paper's CasADi counts do); the support table's prefix sums still cost ``O(n d)`` there.

Phases (the bars of the figure), from the functions an operation runs in (the innermost named):
``kinematics`` (``forward``, ``contact_rows``), ``RNEA`` (the bias forces ``h``), ``H^A`` (the
articulated inertias and bias forces: ``articulated_inertias``, ``backward_sweep``, the
inertia and force augmentation of constrainedABA), ``M^-1`` (CRBA and the sparse ``U D U^T``
factorization of ``M``), ``M_mu^-1`` (the same for ``M + J^T J / mu``), ``Λ`` (the Delassus
matrix ``J M^-1 J^T``, by the constraint rows' elimination in ``U D U^T`` (counted as the
factorization with the rows minus the one without) or by the Popov-Vereshchagin sweep, and its
damped inverse), ``prox`` (the proximal iterations' updates), ``rest`` (the forward sweeps,
substitutions and what the algorithm's top level does itself), and ``checks`` (not part of the
algorithm: the stopping tests between iterations and the residuals recomputed for the report,
plus the RNEA for constrainedABA and proxPV, which only that report uses). Totals leave
``checks`` out. The iterations run exactly ``max_iter`` times (``tol`` is ``1e-300``).
"""

from __future__ import annotations

import contextlib
import functools
import math
import sys
from dataclasses import dataclass

import numpy as np

from liftoff import dynamics
from liftoff.dynamics import constrained as _constrained
from liftoff.dynamics import sample_models
from liftoff.dynamics.robots import robots_dir

from .common import BenchError

CONSTRAINED_ALGORITHMS = ("constrainedABA", "proxPV", "proxLTLs", "proxLTL")
OSIM_ALGORITHMS = ("cABA-OSIMf", "cABA-OSIM", "proxPV", "proxLTL")
PHASES = ("kinematics", "RNEA", "H^A", "M^-1", "M_mu^-1", "Λ", "prox", "rest", "checks")
ALGORITHM_PHASES = PHASES[:-1]  # what the totals add up
MU, ITERATIONS, TOL = 1e-4, 3, 1e-300
CHAIN_SIZES = (8, 16, 32, 64, 128)
SLOPE_POINTS = 3
GO1_URDF = "go1_description/urdf/go1.urdf"


@dataclass(frozen=True)
class Case:
    """A robot with a set of contacts: ``(frame, kind)`` pairs, in LOCAL."""

    robot: str
    label: str
    contacts: tuple


_GO1_FEET = ("FL_foot", "FR_foot", "RL_foot", "RR_foot")
_SOLES = (("left_sole_link", "6D"), ("right_sole_link", "6D"))
_HANDS = (("gripper_left_base_link", "6D"), ("gripper_right_base_link", "6D"))
CASES = (
    Case("go1", "F3^2", tuple((f, "3D") for f in _GO1_FEET[:2])),
    Case("go1", "F3^4", tuple((f, "3D") for f in _GO1_FEET)),
    Case("talos", "F6^2", _SOLES),
    Case("talos", "F6^2 H6^2", _SOLES + _HANDS),
    Case("talos_full", "F6^2", _SOLES),
    Case("talos_full", "F6^2 H6^2", _SOLES + _HANDS),
)


# ----------------------------------------------------------------------------- the counter


class _Tally:
    """Operations per phase; ``labels`` is the stack of the phases entered (a sticky phase
    keeps the phases inside it)."""

    def __init__(self):
        self.counts = dict.fromkeys(PHASES, 0)
        self.sparse = dict.fromkeys(PHASES, 0)  # with the 0/1 tree tables' products by their nonzeros
        self.labels = [("rest", False)]
        self.uncounted = set()
        self.paused = 0

    def add(self, n, sparse=None):
        if not self.paused:
            self.counts[self.labels[-1][0]] += int(n)
            self.sparse[self.labels[-1][0]] += int(n if sparse is None else sparse)

    def snapshot(self):
        return dict(self.counts), dict(self.sparse)

    def restore(self, snapshot):
        self.counts, self.sparse = dict(snapshot[0]), dict(snapshot[1])

    @contextlib.contextmanager
    def phase(self, name, sticky=False):
        if self.labels[-1][1]:
            name, sticky = self.labels[-1]
        self.labels.append((name, sticky))
        try:
            yield
        finally:
            self.labels.pop()


_TALLY = None  # the active tally, while counting

_ELEMENTWISE = {
    np.add,
    np.subtract,
    np.multiply,
    np.divide,
    np.true_divide,
    np.negative,
    np.positive,
    np.reciprocal,
    np.square,
    np.power,
    np.float_power,
    np.sqrt,
    np.cbrt,
    np.exp,
    np.expm1,
    np.log,
    np.log1p,
    np.sin,
    np.cos,
    np.tan,
    np.arcsin,
    np.arccos,
    np.arctan,
    np.arctan2,
    np.sinh,
    np.cosh,
    np.tanh,
    np.hypot,
    np.fmod,
    np.remainder,
}
_REDUCING = {np.add, np.subtract, np.multiply, np.divide, np.true_divide}


def _is_float(x):
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"


def _plain(x):
    if isinstance(x, Counted):
        return x.view(np.ndarray)
    if isinstance(x, (tuple, list)):
        return type(x)(_plain(y) for y in x)
    return x


def _counted(x):
    if isinstance(x, np.ndarray) and not isinstance(x, Counted):
        return x.view(Counted)
    if isinstance(x, tuple) and type(x) is tuple:
        return tuple(_counted(y) for y in x)
    if isinstance(x, list):
        return [_counted(y) for y in x]
    return x


def matmul_operations(a_shape, b_shape):
    """``m n (2k - 1)`` per product of ``(..., m, k) (..., k, n)`` (vectors as numpy reads them)."""
    a, b = tuple(a_shape), tuple(b_shape)
    va, vb = len(a) == 1, len(b) == 1
    a = (1,) + a if va else a
    b = b + (1,) if vb else b
    stack = np.broadcast_shapes(a[:-2], b[:-2])
    m, k, n = a[-2], a[-1], b[-1]
    return math.prod(stack) * m * n * (2 * k - 1) if k else 0


def einsum_operations(subscripts, *shapes):
    """What numpy's unoptimized einsum loop executes: ``(operands - 1) T + (T - O)``."""
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum {subscripts!r}: {len(shapes)} operands")
    ellipsis_dims = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if "..." in t), default=0)
    sizes, ell = {}, []
    for t, shape in zip(terms, shapes):
        letters = list(t.replace("...", ""))
        if "..." in t:
            k = len(shape) - len(letters)
            before = t.index("...")
            head, tail = shape[:before], shape[before + k :]
            mid = shape[before : before + k]
            for i, d in enumerate(mid):
                pos = ellipsis_dims - k + i
                while len(ell) <= pos:
                    ell.append(1)
                ell[pos] = max(ell[pos], d)
            dims = list(head) + list(tail)
        else:
            dims = list(shape)
        for letter, d in zip(letters, dims):
            sizes[letter] = max(sizes.get(letter, 1), d)
    while len(ell) < ellipsis_dims:
        ell.append(1)
    if not arrow:
        counts = {c: inputs.count(c) for c in sizes}
        output = "".join(sorted(c for c, k in counts.items() if k == 1))
        output = ("..." if ellipsis_dims else "") + output
    total = math.prod(sizes.values()) * math.prod(ell)
    out = math.prod(sizes[c] for c in output.replace("...", "")) * (math.prod(ell) if "..." in output else 1)
    return (len(shapes) - 1) * total + (total - out)


def _lu(n):
    """Exact LU count ``sum_k (n - k) + 2 (n - k)^2``."""
    return sum((n - k) + 2 * (n - k) ** 2 for k in range(1, n))


def _cholesky(n):
    """Exact Cholesky count: per column ``j`` a square root after ``2 j`` (dot product), then
    ``n - j - 1`` entries of ``2 j`` operations and a division each."""
    return sum(1 + 2 * j + (n - j - 1) * (2 * j + 1) for j in range(n))


def _solve_rhs(n):
    return 2 * n * n - n


def _stack(shape, core):
    return math.prod(shape[:-core]) if len(shape) > core else 1


def _linalg_solve(a, b):
    n = a.shape[-1]
    rhs = b.shape[-1] if b.ndim == a.ndim else 1
    stack = math.prod(np.broadcast_shapes(a.shape[:-2], b.shape[: b.ndim - (2 if b.ndim == a.ndim else 1)]))
    return stack * (_lu(n) + rhs * _solve_rhs(n))


def _norm(x, ord=None, axis=None, keepdims=False):
    """The 2-norm (or Frobenius): ``k`` squares, ``k - 1`` additions and a square root per output."""
    if ord not in (None, 2, "fro") or (ord == 2 and not isinstance(axis, int)):
        return None
    return 2 * x.size


_FUNCTION_COUNTS = {
    np.einsum: lambda subscripts, *ops, **kw: einsum_operations(subscripts, *(np.shape(o) for o in ops)),
    np.dot: lambda a, b, out=None: (
        matmul_operations(np.shape(a), np.shape(b)) if np.ndim(a) <= 2 and np.ndim(b) <= 2 else None
    ),
    np.matmul: lambda a, b, **kw: matmul_operations(np.shape(a), np.shape(b)),
    np.linalg.solve: _linalg_solve,
    np.linalg.cholesky: lambda a, **kw: _stack(a.shape, 2) * _cholesky(a.shape[-1]),
    np.linalg.inv: lambda a: _stack(a.shape, 2) * (_lu(a.shape[-1]) + a.shape[-1] * _solve_rhs(a.shape[-1])),
    np.linalg.norm: _norm,
}
_UNCOUNTED_LINALG = {
    getattr(np.linalg, name)
    for name in (
        "pinv",
        "matrix_rank",
        "eigvalsh",
        "eigh",
        "eig",
        "svd",
        "det",
        "slogdet",
        "lstsq",
        "qr",
        "tensorsolve",
    )
}


class Counted(np.ndarray):
    """An array whose floating-point operations are added to the active tally (module docstring)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_plain(o) for o in out)
        args = [_plain(x) for x in inputs]
        result = getattr(ufunc, method)(*args, **kwargs)
        if _TALLY is not None:
            n = _ufunc_operations(ufunc, method, args, result, kwargs)
            _TALLY.add(n, _table_operations(inputs, result) if ufunc is np.matmul and method == "__call__" else n)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _counted(result)

    def __array_function__(self, func, types, args, kwargs):
        plain_args, plain_kwargs = _plain(args), {k: _plain(v) for k, v in kwargs.items()}
        if func in _FUNCTION_COUNTS:
            result = func(*plain_args, **plain_kwargs)
            n = _FUNCTION_COUNTS[func](*plain_args, **plain_kwargs)
            if _TALLY is not None:
                if n is None:
                    _TALLY.uncounted.add(func.__name__)
                else:
                    _TALLY.add(n)
            return _counted(result)
        if func in _UNCOUNTED_LINALG:
            if _TALLY is not None and not _TALLY.paused:
                _TALLY.uncounted.add(func.__name__)
            return _counted(func(*plain_args, **plain_kwargs))
        return _counted(super().__array_function__(func, (np.ndarray,), args, kwargs))


def _ufunc_operations(ufunc, method, args, result, kwargs):
    first = result[0] if isinstance(result, tuple) else result
    if method == "at":
        a, index = args[0], args[1]
        if a.dtype.kind not in "fc" or ufunc not in _ELEMENTWISE:
            return 0
        target = a[index]
        return target.size if len(args) < 3 else np.broadcast(target, args[2]).size
    if ufunc is np.matmul and method == "__call__":
        return matmul_operations(np.shape(args[0]), np.shape(args[1])) if np.result_type(*args).kind in "fc" else 0
    if ufunc not in _ELEMENTWISE or np.result_type(first).kind not in "fc":
        return 0
    if method == "__call__":
        return np.size(first) if isinstance(first, np.ndarray) else 1
    if method == "outer":
        return np.size(first)
    if method in ("reduce", "accumulate") and ufunc in _REDUCING:
        x = np.asarray(args[0])
        axis = kwargs.get("axis", 0)
        axes = range(x.ndim) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
        length = math.prod(x.shape[a] for a in axes)
        rest = x.size // length if length else 0
        return (length - 1) * rest if length else 0
    return 0


def _table_operations(inputs, result):
    """The additions of ``table @ x`` for a 0/1 table stored on the model (``tree_sum``) done
    by its nonzeros, as constant folding would (``x * 1 = x``, ``x * 0`` dropped); else the
    product's count."""
    table, x = inputs[0], inputs[1]
    n = matmul_operations(np.shape(table), np.shape(x))
    if isinstance(table, Counted) or not isinstance(table, np.ndarray) or table.ndim != 2 or np.ndim(x) < 2:
        return n
    if table.dtype.kind not in "biuf" or not np.isin(table, (0, 1)).all():
        return n
    per_column = int(np.maximum(np.count_nonzero(table, axis=1) - 1, 0).sum())
    return per_column * (np.size(result) // table.shape[0])


class _NumpyProxy:
    """numpy, with the results of its functions as :class:`Counted` arrays."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        value = getattr(self._module, name)
        if isinstance(value, type(np)):  # np.linalg, np.random
            return _NumpyProxy(value)
        if callable(value) and not isinstance(value, (type, np.ufunc)):

            @functools.wraps(value)
            def call(*args, **kwargs):
                return _counted(value(*args, **kwargs))

            return call
        return value


def _dynamics_modules():
    return [m for name, m in sorted(sys.modules.items()) if name.startswith("liftoff.dynamics.") and m is not None]


@contextlib.contextmanager
def _patched(patches):
    """Set ``(owner, name, value)`` attributes, restore them on exit."""
    saved = [(owner, name, owner.__dict__[name]) for owner, name, _ in patches]
    try:
        for owner, name, value in patches:
            setattr(owner, name, value)
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


@contextlib.contextmanager
def counting():
    """Count the operations of the ``dynamics`` modules inside the block: yields the tally
    (its ``counts`` per phase all in ``rest`` unless phases are entered)."""
    global _TALLY
    if _TALLY is not None:
        raise RuntimeError("counting() is not reentrant")
    tally = _TALLY = _Tally()
    proxies = [(m, "np", _NumpyProxy(np)) for m in _dynamics_modules() if m.__dict__.get("np") is np]
    try:
        with _patched(proxies):
            yield tally
    finally:
        _TALLY = None


def count(fn, *args, **kwargs):
    """``(result, operations)`` of ``fn(*args, **kwargs)`` with its arrays counted."""
    with counting() as tally:
        result = fn(*[_counted(np.asarray(a)) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
    return result, sum(tally.counts.values())


# ----------------------------------------------------------------------------- phases


def _labelled(fn, name, sticky=False):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        with _TALLY.phase(name, sticky):
            return fn(*args, **kwargs)

    return call


def _udu_split(fn, without, with_rows):
    """``_udu`` with the factorization of ``A`` in phase ``without`` and the constraint rows'
    elimination (the Delassus matrix) in ``with_rows``: the count with rows minus without."""

    @functools.wraps(fn)
    def call(A, chains, C=None):
        start = _TALLY.snapshot()
        with _TALLY.phase(without):
            fn(A, chains)
        alone = _TALLY.snapshot()
        _TALLY.restore(start)
        with _TALLY.phase(with_rows):
            out = fn(A, chains, C)
        if not _TALLY.labels[-1][1]:  # outside a sticky phase: the factorization of A apart
            for tally, before, after in zip((_TALLY.counts, _TALLY.sparse), start, alone):
                for k in PHASES:
                    tally[k] += after[k] - before[k]
                    tally[with_rows] -= after[k] - before[k]
        return out

    return call


def _iterate_labelled(fn):
    @functools.wraps(fn)
    def call(update, *args, **kwargs):
        with _TALLY.phase("checks"):
            return fn(_labelled(update, "prox"), *args, **kwargs)

    return call


def _phase_patches(algorithm):
    c, ls = _constrained, _constrained._LeastSquares
    aba_based = algorithm in ("constrainedABA", "proxPV")
    patches = [
        (c, "forward", _labelled(c.forward, "kinematics")),
        (c, "contact_rows", _labelled(c.contact_rows, "kinematics")),
        (c, "rnea", _labelled(c.rnea, "checks" if aba_based else "RNEA")),
        (c, "articulated_inertias", _labelled(c.articulated_inertias, "H^A")),
        (c, "backward_sweep", _labelled(c.backward_sweep, "H^A")),
        (c, "forward_sweep", _labelled(c.forward_sweep, "rest")),
        (c, "propagate_forces", _labelled(c.propagate_forces, "rest")),
        (c, "_body_rows", _labelled(c._body_rows, "Λ")),
        (c, "_pv_sweep", _labelled(c._pv_sweep, "Λ")),
        (c, "_spd_inverse", _labelled(c._spd_inverse, "Λ")),
        (c, "_iterate", _iterate_labelled(c._iterate)),
        (c, "_solution", _labelled(c._solution, "checks", sticky=True)),
        (c._CABA, "__init__", _labelled(c._CABA.__init__, "H^A")),
        (c._CABA, "solve", _labelled(c._CABA.solve, "H^A")),
        (c._PV, "__init__", _labelled(c._PV.__init__, "H^A")),
        (c._PV, "solve", _labelled(c._PV.solve, "rest")),
        (c._PV, "rollout", _labelled(c._PV.rollout, "rest")),
        (ls, "range", _labelled(ls.range, "checks")),
        (ls, "dual", _labelled(ls.dual, "checks")),
        (ls, "least_norm", _labelled(ls.least_norm, "checks")),
    ]
    if algorithm == "proxLTLs":
        patches += [
            (c, "mass_matrix", _labelled(c.mass_matrix, "checks")),  # only the report's residual needs M
            (c, "_augmented_mass_matrix", _labelled(c._augmented_mass_matrix, "M_mu^-1")),
            (c, "_udu", _labelled(c._udu, "M_mu^-1")),
        ]
    else:
        patches += [
            (c, "mass_matrix", _labelled(c.mass_matrix, "M^-1")),
            (c, "_udu", _udu_split(c._udu, "M^-1", "Λ")),
        ]
    return patches


def phase_counts(fn, algorithm, *args, **kwargs):
    """``(result, counts per phase, uncounted functions)`` of ``fn(*args, **kwargs)``, a
    ``dynamics`` function running ``algorithm``."""
    with counting() as tally, _patched(_phase_patches(algorithm)):
        result = fn(*args, **kwargs)
    return result, (dict(tally.counts), dict(tally.sparse)), sorted(tally.uncounted)


def constrained_operations(model, q, v, tau, contacts, algorithm, mu=MU, max_iter=ITERATIONS):
    """Operations per phase of ``constrained_dynamics`` for one state, and its iterations."""
    sol, counts, uncounted = phase_counts(
        dynamics.constrained_dynamics, algorithm, model, q, v, tau, contacts, mu, max_iter, TOL, algorithm
    )
    if int(sol.iterations) != max_iter:
        raise BenchError(f"{algorithm} stopped after {int(sol.iterations)} of {max_iter} iterations")
    return _entry(counts, uncounted)


def osim_operations(model, q, contacts, algorithm, mu=MU):
    """Operations per phase of ``damped_osim`` for one state."""
    _, counts, uncounted = phase_counts(dynamics.damped_osim, algorithm, model, q, contacts, mu, algorithm)
    return _entry(counts, uncounted)


def _entry(counts, uncounted):
    counts, sparse = counts
    return {
        "total": sum(counts[p] for p in ALGORITHM_PHASES),
        "phases": {p: counts[p] for p in PHASES if counts[p]},
        "total_sparse_tables": sum(sparse[p] for p in ALGORITHM_PHASES),
        "phases_sparse_tables": {p: sparse[p] for p in PHASES if sparse[p]},
        "uncounted": uncounted,
    }


# ----------------------------------------------------------------------------- the study


def load_robot(name):
    if name == "go1":
        return dynamics.load(robots_dir() / GO1_URDF, floating_base=True)
    return dynamics.load(name)


def _state(model, seed):
    rng = np.random.default_rng(seed)
    q = dynamics.random_configuration(model, rng)
    return q, rng.standard_normal(model.nv), rng.standard_normal(model.nv)


def contacts_of(case):
    return [dynamics.Contact(frame, kind=kind, reference="LOCAL") for frame, kind in case.contacts]


def case_operations(case, model=None, seed=0, mu=MU, max_iter=ITERATIONS):
    """The operations of every algorithm on one :class:`Case`."""
    model = load_robot(case.robot) if model is None else model
    q, v, tau = _state(model, seed)
    contacts = contacts_of(case)
    m = sum(3 if kind == "3D" else 6 for _, kind in case.contacts)
    return {
        "robot": case.robot,
        "contacts": case.label,
        "nv": model.nv,
        "m": m,
        "constrained": {
            a: constrained_operations(model, q, v, tau, contacts, a, mu, max_iter) for a in CONSTRAINED_ALGORITHMS
        },
        "osim": {a: osim_operations(model, q, contacts, a, mu) for a in OSIM_ALGORITHMS},
    }


def _slope(n, y, points=SLOPE_POINTS):
    """The log-log slope of ``y`` against ``n`` over the ``points`` largest ``n``."""
    return float(np.polyfit(np.log(n[-points:]), np.log(y[-points:]), 1)[0])


def chain_operations(sizes=CHAIN_SIZES, seed=0, mu=MU, max_iter=ITERATIONS):
    """Operations on serial chains with a 6D contact on the end effector (seed 003 Fig. 3a-b):
    per algorithm the totals and phases against n, and their log-log slopes over the
    ``SLOPE_POINTS`` largest chains."""
    entries = {a: [] for a in CONSTRAINED_ALGORITHMS}
    for n in sizes:
        model = sample_models.serial_chain(n)
        q, v, tau = _state(model, seed)
        contacts = [dynamics.Contact("end_effector", kind="6D", reference="LOCAL")]
        for a in CONSTRAINED_ALGORITHMS:
            entries[a].append(constrained_operations(model, q, v, tau, contacts, a, mu, max_iter))
    out = {"sizes": list(sizes), "algorithms": {}}
    for a, rows in entries.items():
        total = [e["total"] for e in rows]
        sparse = [e["total_sparse_tables"] for e in rows]
        bare = [e["total"] - e["phases"].get("kinematics", 0) for e in rows]
        phases = {p: [e["phases"].get(p, 0) for e in rows] for p in ALGORITHM_PHASES if rows[-1]["phases"].get(p)}
        phases_sparse = {p: [e["phases_sparse_tables"].get(p, 0) for e in rows] for p in phases}
        out["algorithms"][a] = {
            "total": total,
            "slope": _slope(sizes, total),
            "slope_without_kinematics": _slope(sizes, bare),
            "total_sparse_tables": sparse,
            "slope_sparse_tables": _slope(sizes, sparse),
            "phases": phases,
            "phase_slopes": {p: _slope(sizes, c) for p, c in phases.items() if all(c)},
            "phase_slopes_sparse_tables": {p: _slope(sizes, c) for p, c in phases_sparse.items() if all(c)},
        }
    return out


def operations_benchmark(cases=CASES, chain_sizes=CHAIN_SIZES, seed=0, progress=None) -> dict:
    """Seed 003 Fig. 1 and 5 in operations: every case, then the chains' scaling."""
    models, rows = {}, []
    for case in cases:
        if progress:
            progress(f"operations: {case.robot} {case.label}")
        if case.robot not in models:
            models[case.robot] = load_robot(case.robot)
        rows.append(case_operations(case, models[case.robot], seed))
    if progress:
        progress("operations: serial chains")
    return {
        "benchmark": "constrained_operations",
        "settings": {"mu": MU, "iterations": ITERATIONS, "batch": 1, "seed": seed},
        "phases": list(PHASES),
        "cases": rows,
        "chains": chain_operations(chain_sizes, seed) if chain_sizes else None,
    }


def _k(n):
    return f"{n / 1000:.1f}k"


def _row_head(row):
    return f"{row['robot']:<11} {row['contacts']:<10} {row['nv']:>3} {row['m']:>3}  "


def format_operations_table(result: dict) -> str:
    s = result["settings"]
    head = f"{'robot':<11} {'contacts':<10} {'nv':>3} {'m':>3}  "
    lines = [
        f"floating-point operations per state (numpy, as executed; in brackets with the 0/1 tree tables' products "
        f"by their nonzeros), mu {s['mu']:g}, {s['iterations']} proximal iterations",
        "",
        head + "  ".join(f"{a:>17}" for a in CONSTRAINED_ALGORITHMS) + "   prox/iteration",
    ]
    for row in result["cases"]:
        entries = [row["constrained"][a] for a in CONSTRAINED_ALGORITHMS]
        cells = [f"{_k(e['total']) + ' (' + _k(e['total_sparse_tables']) + ')':>17}" for e in entries]
        per_it = "/".join(_k(e["phases"].get("prox", 0) / s["iterations"]) for e in entries)
        lines.append(_row_head(row) + "  ".join(cells) + f"   {per_it}")
    lines += ["", "damped Delassus inverse (seed 003 Fig. 5)", ""]
    lines.append(head + "  ".join(f"{a:>17}" for a in OSIM_ALGORITHMS))
    for row in result["cases"]:
        entries = [row["osim"][a] for a in OSIM_ALGORITHMS]
        cells = [f"{_k(e['total']) + ' (' + _k(e['total_sparse_tables']) + ')':>17}" for e in entries]
        lines.append(_row_head(row) + "  ".join(cells))
    chains = result.get("chains")
    if chains:
        lines += [
            "",
            f"serial chains, 6D contact on the end effector, n = {', '.join(map(str, chains['sizes']))}; log-log "
            f"slopes over the {SLOPE_POINTS} largest (with sparse tables), per phase",
            "",
        ]
        for a, c in chains["algorithms"].items():
            phases = ", ".join(
                f"{p} {c['phase_slopes'][p]:.2f} ({c['phase_slopes_sparse_tables'][p]:.2f})"
                for p in c["phase_slopes"]
                if p in c["phase_slopes_sparse_tables"]
            )
            lines.append(
                f"{a:<15} {'  '.join(_k(t) for t in c['total'])}   slope {c['slope']:.2f} "
                f"({c['slope_sparse_tables']:.2f}); {phases}"
            )
    return "\n".join(lines)


def _tex(label):
    """``F6^2 H6^2`` as ``$F_6^2 H_6^2$``."""
    return "$" + " ".join(w[0] + "_" + w[1:] for w in label.split()) + "$"


_COLORS = {
    "kinematics": "#bbbbbb",
    "RNEA": "#8c564b",
    "H^A": "#1f77b4",
    "M^-1": "#ff7f0e",
    "M_mu^-1": "#ffbb78",
    "Λ": "#2ca02c",
    "prox": "#d62728",
    "rest": "#9467bd",
}
_TEX = {"H^A": "$H^A$", "M^-1": "$M^{-1}$", "M_mu^-1": "$M_\\mu^{-1}$", "Λ": "$\\Lambda$"}


def operations_figure(result, path):
    """Stacked bars per phase: the constrained dynamics algorithms per case (Fig. 1), then the
    damped Delassus inverse algorithms (Fig. 5)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from liftoff.problems.files import save_figure

    cases = result["cases"]
    fig, axes = plt.subplots(2, len(cases), figsize=(2.6 * len(cases), 7.5), squeeze=False)
    for row_axes, key, algorithms in (
        (axes[0], "constrained", CONSTRAINED_ALGORITHMS),
        (axes[1], "osim", OSIM_ALGORITHMS),
    ):
        for ax, case in zip(row_axes, cases):
            bottom = np.zeros(len(algorithms))
            for phase in ALGORITHM_PHASES:
                h = np.array([case[key][a]["phases"].get(phase, 0) for a in algorithms]) / 1000
                if h.any():
                    ax.bar(range(len(algorithms)), h, bottom=bottom, color=_COLORS[phase], label=_TEX.get(phase, phase))
                bottom += h
            ax.set_xticks(range(len(algorithms)), algorithms, rotation=45, ha="right", fontsize=8)
            ax.set_title(f"{case['robot']} {_tex(case['contacts'])}", fontsize=9)
            ax.tick_params(axis="y", labelsize=8)
        row_axes[0].set_ylabel(
            ("constrained dynamics" if key == "constrained" else "damped Delassus inverse") + "\nk operations"
        )
    handles = {}
    for ax in axes.ravel():
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(handles.values(), handles.keys(), loc="upper center", ncol=len(handles), fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    save_figure(fig, path)
    plt.close(fig)
