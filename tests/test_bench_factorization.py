"""``liftoff bench constrained --factorization`` (seed 000 Figs. 4-7) on ANYmal and a few states:
every factorization of ``K_mu`` solves as numpy's dense solve, the OSIM and its inverse taken
from liftoff's agree with Pinocchio's and with the dense Delassus matrix, the study refuses a
wrong solve, and the command refuses conflicting options (the benchmark itself is a command)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg

from liftoff import dynamics
from liftoff.dynamics.constrained import _chains
from liftoff.problems.bench import factorization as bench
from liftoff.problems.bench.common import BenchError, import_pinocchio, pinocchio_model, regular_states
from liftoff.problems.bench.constrained import contacts_of
from liftoff.problems.cli import main

ROBOT = "anymal"
CASE = bench.FACTORIZATION_ROBOTS[ROBOT][2]  # two feet, m = 6


@pytest.fixture(scope="module")
def anymal():
    model = dynamics.load(ROBOT)
    contacts = contacts_of(CASE)
    q = regular_states(model, contacts, 3, seed=1)[0]
    M = dynamics.crba(model, q)
    J = dynamics.contact_jacobian(model, q, contacts)
    return model, contacts, q, M, J


@pytest.fixture(scope="module")
def tiny():
    """The study on ANYmal, two states, one short timed run per method."""
    return bench.factorization_benchmark(robots=(ROBOT,), batches=(1, 2), repeat=1, run_seconds=1e-3)


def test_every_factorization_solves_as_numpy(anymal):
    model, _, _, M, J = anymal
    K = bench.kkt_matrix(M, J)
    m = J.shape[1]
    assert K.shape == (3, m + model.nv, m + model.nv) and m == 6
    b = np.random.default_rng(0).standard_normal((len(K), len(K[0]), 1))
    x = np.linalg.solve(K, b)
    chains = _chains(model)
    solutions = {
        "liftoff": bench.liftoff_solve(bench.liftoff_factor(M, J, chains), chains, b),
        "numpy": bench.numpy_solve(bench.numpy_factor(M, J), b),
        "scipy_cholesky": np.stack(
            [bench.scipy_cholesky_solve(bench.scipy_cholesky_factor(Mi, Ji), bi) for Mi, Ji, bi in zip(M, J, b)]
        ),
        "scipy_ldl": np.stack([bench.ldl_solve(scipy.linalg.ldl(Ki), bi) for Ki, bi in zip(K, b)]),
        "splu": np.stack([scipy.sparse.linalg.splu(scipy.sparse.csc_matrix(Ki)).solve(bi) for Ki, bi in zip(K, b)]),
    }
    for name, sol in solutions.items():
        np.testing.assert_allclose(sol, x, rtol=0, atol=1e-10 * np.abs(x).max(), err_msg=name)


def test_without_constraints_the_factorization_is_the_mass_matrix(anymal):
    model, _, _, M, J = anymal
    chains = _chains(model)
    none = J[:, :0]
    factors = bench.liftoff_factor(M, none, chains)
    A, D, _, L = factors
    assert L.shape == (3, 0, 0)
    U = np.triu(A, 1) + np.eye(model.nv)  # the factor is kept above the diagonal
    np.testing.assert_allclose(U @ (D[:, :, None] * np.swapaxes(U, 1, 2)), M, atol=1e-12 * np.abs(M).max())
    b = np.random.default_rng(1).standard_normal((3, model.nv, 2))
    np.testing.assert_allclose(bench.liftoff_solve(factors, chains, b), np.linalg.solve(M, b), atol=1e-10)


def test_the_osim_and_its_inverse_agree_with_pinocchio_and_the_delassus_matrix(anymal):
    model, contacts, q, M, J = anymal
    factors = bench.liftoff_factor(M, J, _chains(model))
    inverse, osim = bench.liftoff_inverse_osim(factors), bench.liftoff_osim(factors)
    delassus = J @ np.linalg.solve(M, np.swapaxes(J, 1, 2)) + bench.MU * np.eye(J.shape[1])
    np.testing.assert_allclose(inverse, delassus, atol=1e-10 * np.abs(delassus).max())
    np.testing.assert_allclose(osim, np.linalg.inv(delassus), atol=1e-10 * np.abs(osim).max())
    np.testing.assert_allclose(
        osim, dynamics.delassus(model, q, contacts, bench.MU)[1], atol=1e-10 * np.abs(osim).max()
    )
    pin = import_pinocchio()
    pinchol = bench.PinCholesky(pin, pinocchio_model(pin, model, ROBOT), CASE, q)
    np.testing.assert_allclose(pinchol.stack("matrix"), bench.kkt_matrix(M, J), atol=1e-10)
    pin_inverse = pinchol.stack("getInverseOperationalSpaceInertiaMatrix")
    pin_osim = pinchol.stack("getOperationalSpaceInertiaMatrix")
    np.testing.assert_allclose(inverse, pin_inverse, atol=1e-10 * np.abs(pin_inverse).max())
    np.testing.assert_allclose(osim, pin_osim, atol=1e-10 * np.abs(pin_osim).max())


def test_the_result_has_a_row_per_contact_set_and_a_time_per_method(tiny, tmp_path):
    rows = tiny["rows"]
    assert [(r["robot"], r["m"]) for r in rows] == [(ROBOT, m) for m in (0, 3, 6, 9, 12)]
    factorizations = {"liftoff[B=1]", "liftoff[B=2]", "numpy[B=1]", "numpy[B=2]", *bench.PER_STATE}
    for r in rows:
        assert set(r["factorization_us"]) == factorizations
        assert all(t > 0 for t in r["factorization_us"].values())
        osims = {"liftoff[B=1]", "liftoff[B=2]", "pinocchio", "splu"} if r["m"] else set()
        assert set(r["osim_us"]) == set(r["inverse_osim_us"]) == osims
        assert max(e for name, e in r["errors"].items() if name.startswith("solve[")) <= 1e-10
        assert r["size"] == r["nv"] + r["m"] and r["nnz"] < r["size"] ** 2  # the tree leaves zeros in K_mu
    json.dumps(tiny)
    table = bench.format_factorization_table(tiny)
    assert table.count(f"| {ROBOT} | 18 | 12 |") == 3 and table.count(f"| {ROBOT} | 18 | 0 |") == 1
    bench.factorization_figure(tiny, tmp_path / "fig.png")
    assert (tmp_path / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_wrong_solve_is_refused_before_timing(monkeypatch):
    right = bench.liftoff_solve
    monkeypatch.setattr(bench, "liftoff_solve", lambda *args: right(*args) * (1 + 1e-7))
    with pytest.raises(BenchError, match=r"solve\[liftoff\] is off by"):
        bench.factorization_benchmark(robots=("ur5",), batches=(2,), repeat=1, run_seconds=1e-3)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--factorization", "--cassie"], "--cassie and --factorization are separate studies"),
        (["--factorization", "--algorithm", "proxLTL"], "--algorithm: not an option of --factorization"),
        (["--factorization", "--mu", "1e-4"], "--mu is an option of --convergence"),
        (["--factorization", "--robot", "hyq"], "--robot: unknown 'hyq'"),
    ],
)
def test_the_command_refuses_in_one_line(capsys, argv, message):
    assert main(["bench", "constrained", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("liftoff: error:") and err.count("\n") == 1
    assert message in err
