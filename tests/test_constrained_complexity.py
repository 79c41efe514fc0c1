"""The papers' complexities: proxPV and cABA-OSIM(f) carry at each body only
the constraint rows it supports (seed 003 Alg. 4-5), and give what the dense sweep did (every
row at every body, ``O(n m^2)``), to round-off: the dense sweep is kept here as the reference.
Trees with contacts on different branches, an interior body constrained under constrained
descendants, a floating base, duplicated contacts and a loop closure."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import load_pair, regular_configurations
from test_constrained_behaviour import closure, four_bar

from liftoff import dynamics
from liftoff.dynamics import Contact, constrained, sample_models
from liftoff.dynamics.forward_dynamics import Sweep, articulated_inertias, backward_sweep, forward_sweep
from liftoff.dynamics.kinematics import forward
from liftoff.dynamics.manifold import neutral

TIGHT = 1e-12


# ----------------------------------------------------------------------------- the dense reference


def dense_rows(system, kin):
    """Every row at every body: ``KA (m, 6, n, B)``, zero outside the row's bodies."""
    KA = np.zeros((system.m, 6, system.model.njoints, kin.batch_size))
    for rc, rows in zip(system.resolved, system.rows):
        for j, K in rows.bodies:
            KA[rc.slice, :, j] += K
    return KA


def dense_pv_sweep(model, sweep, KA, first_depth=0):
    """The Popov-Vereshchagin sweep of the rows of every body over every joint (the dense reference)."""
    m, B = KA.shape[0], KA.shape[-1]
    K0, L0, l0, KS_levels = np.zeros((m, 6, B)), np.zeros((m, m, B)), np.zeros((m, B)), []
    c = sweep.c
    for depth in range(len(sweep.levels) - 1, first_depth - 1, -1):
        J, SJ, U, D, u = sweep.levels[depth]
        if depth == 0 and model.tree.free_flyer:
            KS = np.einsum("rcb,cdb->rdb", KA[:, :, 0], SJ)
            KSD = np.einsum("rdb,deb->reb", KS, np.linalg.inv(D.transpose(2, 0, 1)).transpose(1, 2, 0))
            K_up = KA[:, :, 0] - np.einsum("reb,ceb->rcb", KSD, U)
            L0 += np.einsum("reb,seb->rsb", KSD, KS)
            l0 += np.einsum("rcb,cb->rb", K_up, c[:, 0]) + np.einsum("reb,eb->rb", KSD, u)
            K0 += K_up
            KS_levels.append(KS)
            continue
        KS = np.einsum("rcjb,cjb->rjb", KA[:, :, J], SJ)
        K_up = KA[:, :, J] - KS[:, None] * (U / D)[None]
        L0 += np.einsum("rjb,sjb->rsb", KS / D, KS)
        l0 += np.einsum("rcjb,cjb->rb", K_up, c[:, J]) + np.einsum("rjb,jb->rb", KS, u / D)
        KS_levels.append(KS)
        if depth == 0:
            K0 += K_up.sum(axis=2)
        else:
            np.add.at(KA, (slice(None), slice(None), model.parents[J]), K_up)
    return K0, L0, l0, KS_levels[::-1]


def dense_proxpv(model, q, v, tau, contacts, f):
    """The dense proxPV's Delassus matrix, free constraint accelerations and roll-out under ``f``."""
    system = constrained._System(model, q, v, contacts)
    kin = forward(model, q, v, np.zeros_like(v), gravity=True)
    IA, pA, c = articulated_inertias(model, kin, v)
    sweep = backward_sweep(model, kin, IA, pA, c, tau)
    K0, L0, l0, KS = dense_pv_sweep(model, sweep, dense_rows(system, kin))
    free = np.einsum("rcb,cb->br", K0, kin.a0[:, 0] * np.ones((1, len(q)))) + l0.T
    levels = tuple((J, SJ, U, D, u + np.einsum("rjb,br->jb", K, f)) for (J, SJ, U, D, u), K in zip(sweep.levels, KS))
    return L0.transpose(2, 0, 1), free, forward_sweep(model, kin, Sweep(levels, sweep.c))[0].T


def dense_osim(model, q, contacts, mu, algorithm):
    """cABA-OSIM and cABA-OSIMf as they were: the dense sweep on the augmented inertias."""
    zeros = np.zeros((len(q), model.nv))
    system = constrained._System(model, q, zeros, contacts)
    kin, rho = system.kin, np.full(system.m, 1.0 / mu)
    IA, pA, c = articulated_inertias(model, kin, zeros)
    KA = dense_rows(system, kin)
    IA += np.einsum("rcjb,r,rdjb->cdjb", KA, rho, KA)
    sweep = backward_sweep(model, kin, IA, np.zeros_like(pA), np.zeros_like(c), zeros)
    if algorithm == "cABA-OSIM":
        L = dense_pv_sweep(model, sweep, KA)[1]
    else:  # every branch's rows over the tree below the base, then the base's rank-6 update
        L = dense_pv_sweep(model, sweep, KA, first_depth=1)[1]
        base = np.zeros_like(KA)
        base[:, :, 0] = KA[:, :, 0]
        L = L + dense_pv_sweep(model, Sweep(sweep.levels[:1], sweep.c), base)[1]
    return np.diag(rho) - rho[:, None] * rho * L.transpose(2, 0, 1)


# ----------------------------------------------------------------------------- the cases


def tree_case(rng):
    """A binary tree of 45 links, 3D contacts on leaves of both halves and a 6D contact on an
    interior body whose subtree holds a constrained leaf (rows of a body and of its descendants)."""
    model = sample_models.binary_tree(45)
    leaves = sample_models.leaf_frames(model)
    contacts = [Contact(f, "3D", "LOCAL_WORLD_ALIGNED") for f in (leaves[0], leaves[3], leaves[-1])]
    body = model.parents[model.parents[model.frame_parent[model.frame_id(leaves[-1])]]]
    contacts.append(Contact(_frame_on(model, body), "6D", "LOCAL"))
    return model, dynamics.random_configuration(model, rng, 3), contacts


def _frame_on(model, joint):
    return model.frame_names[int(np.flatnonzero(model.frame_parent == joint)[0])]


def anymal_case(rng):
    """A floating base with its four feet and the base itself in contact."""
    model = load_pair("anymal")[0]
    contacts = [Contact(f, "3D", "LOCAL_WORLD_ALIGNED") for f in ("LF_FOOT", "RH_FOOT", "LH_FOOT", "RF_FOOT")]
    contacts.append(Contact("base", "6D", "LOCAL"))
    return model, dynamics.random_configuration(model, rng, 3), contacts


def talos_duplicated_case(rng):
    """Talos with its soles and left wrist, each listed twice: rows repeated at one body."""
    model = load_pair("talos")[0]
    contacts = [Contact(f, "6D", "LOCAL") for f in ("left_sole_link", "right_sole_link", "arm_left_7_link")]
    return model, dynamics.random_configuration(model, rng, 2), [c for c in contacts for _ in range(2)]


CASES = {"binary tree": tree_case, "anymal": anymal_case, "talos duplicated": talos_duplicated_case}


def close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=0, atol=TIGHT * max(1.0, np.abs(expected).max()))


@pytest.mark.parametrize("case", CASES)
def test_proxpv_carries_the_supported_rows_as_the_dense_sweep(case, rng):
    model, q, contacts = CASES[case](rng)
    v, tau = rng.standard_normal((2, len(q), model.nv))
    m = constrained.dimension(constrained.resolve(model, contacts))
    same_as_the_dense_sweep(model, q, v, tau, contacts, 10 * rng.standard_normal((len(q), m)))


def test_proxpv_of_a_loop_closure_as_the_dense_sweep(rng):
    model, fa, fb, _ = four_bar()
    held = closure(fa, fb)
    q = regular_configurations(model, rng, 3, held)
    v, tau = rng.standard_normal((2, len(q), model.nv))
    same_as_the_dense_sweep(model, q, v, tau, held, rng.standard_normal((len(q), 2)))


def same_as_the_dense_sweep(model, q, v, tau, contacts, f):
    """proxPV's Delassus matrix, free constraint accelerations and rollout under ``f`` equal
    to the dense sweep's."""
    L, free, qdd = dense_proxpv(model, q, v, tau, contacts, f)
    system = constrained._System(model, q, v, contacts)
    pv = constrained._PV(system, forward(model, q, v, np.zeros_like(v), gravity=True), v, tau, 1e-4)
    close(pv.delassus, L)
    close(pv.free[..., 0], free)
    close(pv.rollout(f)[..., 0], qdd)


OSIM_CASES = [(case, "cABA-OSIM") for case in CASES] + [(case, "cABA-OSIMf") for case in ("anymal", "talos duplicated")]


@pytest.mark.parametrize(("case", "algorithm"), OSIM_CASES)
def test_caba_osim_carries_the_supported_rows_as_the_dense_sweep(case, algorithm, rng):
    """cABA-OSIMf (floating bases): the branches' block-diagonal terms and the base's update."""
    model, q, contacts = CASES[case](rng)
    mu = 1e-2
    close(dynamics.damped_osim(model, q, contacts, mu, algorithm), dense_osim(model, q, contacts, mu, algorithm))


def test_a_body_carries_only_the_rows_of_its_subtree():
    """Contacts on two leaves of different halves of a binary tree: each row is carried by its
    leaf's ancestors only (``m d`` pairs, not ``m n``), and the Delassus terms of a joint couple
    only its own rows (``sum_j m_j^2 <= m^2 d``)."""
    model = sample_models.binary_tree(93)
    leaves = sample_models.leaf_frames(model)
    contacts = [Contact(leaves[0], "3D", "LOCAL"), Contact(leaves[-1], "3D", "LOCAL")]
    system = constrained._System(model, neutral(model)[None], np.zeros((1, model.nv)), contacts)
    support, _, _ = constrained._body_rows(system, system.kin)
    chains = [_chain(model, rows.bodies[0][0]) for rows in system.rows]
    expected_pairs = sum(3 * len(chain) for chain in chains)
    assert sum(len(rows) for rows in support.rows) == expected_pairs
    for d, (rows, pos) in enumerate(zip(support.rows, support.pos)):
        joints = model.tree.levels[d][pos]
        for r, j in zip(rows, joints):
            assert j in chains[r // 3]
    shared = len(set(chains[0]) & set(chains[1]))  # the common ancestors carry all 6 rows
    assert sum(len(a) for a in support.a) == shared * 36 + 2 * (len(chains[0]) - shared) * 9
    assert shared < len(chains[0]) < model.njoints


def _chain(model, joint):
    chain = []
    while joint >= 0:
        chain.append(int(joint))
        joint = model.parents[joint]
    return chain


@pytest.mark.parametrize("case", ("binary tree", "anymal"))
def test_augmented_mass_matrix_is_the_crba_of_augmented_inertias(case, rng):
    """Seed 003 eq. 24: the CRBA on inertias augmented by ``K^T diag(rho) K`` gives the dense
    ``M + J^T diag(rho) J`` that proxLTLs factored before (per-row weights, Remark 2)."""
    model, q, contacts = CASES[case](rng)
    system = constrained._System(model, q, rng.standard_normal((len(q), model.nv)), contacts)
    rho = 1.0 / np.geomspace(1e-4, 1e-2, system.m)
    dense = system.M + np.swapaxes(system.J, 1, 2) @ (rho[:, None] * system.J)
    close(constrained._augmented_mass_matrix(system, rho), dense)


@pytest.mark.parametrize("case", ("binary tree", "anymal"))
def test_reduced_sweeps_visit_the_supporting_bodies_as_the_full_ones(case, rng):
    """Seed 003 Alg. 2: the force propagation and the roll-out of constrainedABA's iterations
    over the bodies that support a contact give the full sweeps' accelerations of those bodies
    (two contacts: some bodies support none)."""
    model, q, contacts = CASES[case](rng)
    contacts = contacts[:2]
    v, tau = rng.standard_normal((2, len(q), model.nv))
    system = constrained._System(model, q, v, contacts)
    kin = forward(model, q, v, np.zeros_like(v), gravity=True)
    caba = constrained._CABA(system, kin, v, tau, 1e-3)
    sweep = backward_sweep(model, kin, caba.IA.copy(), caba.pA.copy(), caba.c, tau)
    forces = caba._forces(rng.standard_normal((len(q), system.m, 1)))
    support = constrained._supporting(model, [j for j, *_ in caba.blocks])
    bodies = np.concatenate([J[p] for J, p in zip(model.tree.levels, support)])
    assert len(bodies) < model.njoints
    for dpA in (None, forces):
        full_dpA = None if dpA is None else constrained.propagate_forces(model, sweep, dpA)
        reduced_dpA = None if dpA is None else constrained._propagate_supported(model, sweep, dpA, support)
        if dpA is not None:
            close(reduced_dpA[:, bodies], full_dpA[:, bodies])
        full = forward_sweep(model, kin, sweep, full_dpA)[1]
        close(constrained._accelerations_supported(model, kin, sweep, reduced_dpA, support)[:, bodies], full[:, bodies])
