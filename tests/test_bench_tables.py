"""The states of ``liftoff bench constrained --tables`` (the benchmark itself is a command)."""

from __future__ import annotations

import numpy as np

from liftoff import dynamics
from liftoff.problems.bench.common import MAX_CONDITION, regular_states
from liftoff.problems.bench.constrained import contacts_of
from liftoff.problems.bench.tables import TABLE_CASES


def test_regular_states_are_away_from_singular_configurations():
    model = dynamics.load("panda")
    contacts = contacts_of(TABLE_CASES["panda"])
    q, v, tau = regular_states(model, contacts, 12, seed=0)
    assert q.shape == (12, model.nq) and v.shape == tau.shape == (12, model.nv)
    condition = np.linalg.cond(dynamics.delassus(model, q, contacts)[0])
    assert np.all(condition < MAX_CONDITION)
    again = regular_states(model, contacts, 12, seed=0)
    np.testing.assert_array_equal(again[0], q)  # reproducible from the seed
