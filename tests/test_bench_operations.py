"""``liftoff bench constrained --operations``: the operation counter's exact counts on known
operations, the counts of the algorithms (positive, independent of the state, growing with the
contacts, the results unchanged by counting), their growth on serial chains, and the command's
refusals."""

from __future__ import annotations

import numpy as np
import pytest

from liftoff import dynamics
from liftoff.dynamics import spatial
from liftoff.problems.bench import operations as ops
from liftoff.problems.cli import main


def _count(fn, *args):
    return ops.count(fn, *args)[1]


@pytest.mark.parametrize(
    "fn, args, expected",
    [
        (np.matmul, (np.ones((3, 4)), np.ones((4, 5))), 3 * 5 * (2 * 4 - 1)),
        (lambda a, b: a @ b, (np.ones((2, 3, 4)), np.ones((4, 1))), 2 * 3 * (2 * 4 - 1)),
        (lambda a, b: np.einsum("ij,jk->ik", a, b), (np.ones((3, 4)), np.ones((4, 5))), 60 + (60 - 15)),
        (lambda a: np.einsum("i...,i...->...", a, a), (np.ones((6, 5, 2)),), 60 + (60 - 10)),
        (
            lambda a, b, c: np.einsum("rcb,r,rdb->cdb", a, b, c),
            (np.ones((3, 6, 1)), np.ones(3), np.ones((3, 6, 1))),
            2 * 108 + (108 - 36),
        ),
        (np.linalg.solve, (4 * np.eye(4), np.ones(4)), (3 + 18) + (2 + 8) + (1 + 2) + (2 * 16 - 4)),
        (np.linalg.cholesky, (4 * np.eye(4),), 4**3 // 3 + 4**2 // 2 + 1),  # n^3/3 + n^2/2 + n/6 = 30
        (lambda a: (a + 1.0).sum(), (np.ones((3, 4)),), 12 + 11),
        (lambda a: np.add.at(a, [0, 0, 1], 1.0), (np.ones(3),), 3),
        (spatial.cross, (np.ones((3, 7)), np.ones((3, 7))), 3 * 21),
        (lambda a: (np.abs(a) > 0) | (np.maximum(a, 0.0) < 1), (np.ones(5),), 0),  # comparisons and copies: free
        (lambda a: np.concatenate((a, a))[::2].copy(), (np.ones(5),), 0),
    ],
)
def test_the_counter_counts_known_operations_exactly(fn, args, expected):
    assert _count(fn, *args) == expected


def test_the_counter_counts_the_arrays_made_inside_the_dynamics_modules():
    # eye(3, like) makes its arrays with np.eye and np.ones inside dynamics.spatial: one product of 3 x 3 x 4
    assert _count(spatial.eye, 3, np.ones((1, 4))) == 36
    assert _count(np.multiply, np.ones(3), np.ones(3)) == 3
    assert spatial.np is np and type(spatial.eye(3, np.ones((1, 4)))) is np.ndarray  # nothing left patched


@pytest.fixture(scope="module")
def go1():
    return ops.load_robot("go1")


def _cases(robot):
    return [case for case in ops.CASES if case.robot == robot]


def test_counts_are_positive_equal_between_states_and_grow_with_the_contacts(go1):
    two, four = (ops.contacts_of(case) for case in _cases("go1"))
    counts = {}
    for seed in (0, 1):
        q, v, tau = ops._state(go1, seed)
        for contacts, name in ((two, "F3^2"), (four, "F3^4")):
            for a in ops.CONSTRAINED_ALGORITHMS:
                entry = ops.constrained_operations(go1, q, v, tau, contacts, a)
                assert entry["uncounted"] == [] and entry["total"] > 0 and entry["phases"]["prox"] > 0
                counts[seed, name, a] = entry["total"], entry["phases"]
            for a in ops.OSIM_ALGORITHMS:
                entry = ops.osim_operations(go1, q, contacts, a)
                assert entry["uncounted"] == [] and entry["total"] > 0
                counts[seed, name, a + " osim"] = entry["total"], entry["phases"]
    for (seed, name, a), value in counts.items():
        if seed == 1:
            assert value == counts[0, name, a], (name, a)
        if name == "F3^2":
            assert counts[seed, "F3^4", a][0] > value[0], a


def _uncounted_arrays(name, x, depth=0):
    """Names of the float arrays in ``x`` (its attributes, tuples, lists) that are not counted."""
    if isinstance(x, np.ndarray):
        return [name] if x.dtype.kind == "f" and not isinstance(x, ops.Counted) else []
    if isinstance(x, (tuple, list)):
        return [n for i, y in enumerate(x) for n in _uncounted_arrays(f"{name}[{i}]", y, depth)]
    if isinstance(x, dict):
        return [n for k, y in x.items() for n in _uncounted_arrays(f"{name}[{k}]", y, depth)]
    if hasattr(x, "__dict__") and depth < 2:
        return [n for k, y in vars(x).items() if k != "model" for n in _uncounted_arrays(f"{name}.{k}", y, depth + 1)]
    return []


def test_every_array_the_algorithms_compute_is_counted(go1):
    from liftoff.dynamics import constrained as c

    q, v, tau = ops._state(go1, 0)
    contacts = ops.contacts_of(_cases("go1")[1])
    with ops.counting():
        (q, v, tau), _ = c._inputs(go1, q, v, tau)
        system = c._System(go1, q, v, contacts)
        kin = c.forward(go1, q, v, np.zeros_like(v), gravity=True)
        pv = c._PV(system, kin, v, tau, 1e-4)
        parts = [system, system.M, system.rows, kin, c._CABA(system, kin, v, tau, 1e-4), pv, pv.sweep, pv.KS]
        parts += [c._LTL(system, 1e-4), c._LTLs(system, 1e-4), c.forward_sweep(go1, kin, pv.sweep)]
        assert [n for i, x in enumerate(parts) for n in _uncounted_arrays(str(i), x)] == []


def test_counting_leaves_the_results_unchanged(go1):
    q, v, tau = ops._state(go1, 3)
    contacts = ops.contacts_of(_cases("go1")[1])
    for a in ops.CONSTRAINED_ALGORITHMS:
        args = (go1, q, v, tau, contacts, 1e-4, 3, 1e-300, a)
        counted, _, _ = ops.phase_counts(dynamics.constrained_dynamics, a, *args)
        plain = dynamics.constrained_dynamics(*args)
        np.testing.assert_allclose(np.asarray(counted[0]), plain[0], rtol=0, atol=0)
        np.testing.assert_allclose(np.asarray(counted[1]), plain[1], rtol=0, atol=0)
    counted, _, _ = ops.phase_counts(dynamics.damped_osim, "cABA-OSIM", go1, q, contacts, 1e-4, "cABA-OSIM")
    np.testing.assert_allclose(np.asarray(counted), dynamics.damped_osim(go1, q, contacts, 1e-4), rtol=0, atol=0)


def test_the_proximal_iterations_cost_the_same_each_after_the_first(go1):
    q, v, tau = ops._state(go1, 0)
    contacts = ops.contacts_of(_cases("go1")[1])
    for a in ops.CONSTRAINED_ALGORITHMS:
        prox = [
            ops.constrained_operations(go1, q, v, tau, contacts, a, max_iter=k)["phases"]["prox"] for k in (2, 3, 4)
        ]
        assert prox[1] - prox[0] == prox[2] - prox[1] > 0, a


def test_chains_constrained_aba_grows_linearly_and_prox_ltl_faster():
    chains = ops.chain_operations((8, 16, 32, 64))["algorithms"]
    caba, pv, ltl = chains["constrainedABA"], chains["proxPV"], chains["proxLTL"]
    # the articulated-body phases are linear in n (with the tree tables' products by their nonzeros)
    for phase in ("H^A", "prox", "rest"):
        assert abs(caba["phase_slopes_sparse_tables"][phase] - 1.0) < 0.15, phase
    assert abs(pv["phase_slopes_sparse_tables"]["Λ"] - 1.0) < 0.15
    # proxLTL's factorization along the chain is superlinear, and so is its total, more than constrainedABA's
    assert ltl["phase_slopes"]["M^-1"] > 2.0
    assert ltl["slope"] > caba["slope"] + 0.2
    assert ltl["slope_sparse_tables"] > caba["slope_sparse_tables"] + 0.4
    assert caba["slope_sparse_tables"] < 1.35


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--operations", "--robot", "talos"], "--robot: not an option of --operations"),
        (["--operations", "--scaling"], "--scaling and --operations are separate studies"),
    ],
)
def test_the_command_refuses_in_one_line(capsys, argv, message):
    assert main(["bench", "constrained", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("liftoff: error:") and err.count("\n") == 1
    assert message in err
