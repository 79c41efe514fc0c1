"""The static start's kernel (ocp/static_terms.py) against Pinocchio: the generalized gravity
and the contact slots' Jacobian rows, in the slots' reference frames, at random configurations
(the SX function run in CasADi's interpreter: the same equations the compiled kernel runs)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import atol, load_pair

from liftoff import dynamics
from liftoff.dynamics import Contact
from liftoff.ocp import symbolic_stages as sym
from liftoff.ocp.problem import OCP, ContactStage
from liftoff.ocp.static_terms import StaticTermsKernel

CONTACTS = {
    "anymal": (Contact("LF_FOOT", "3D", "LOCAL_WORLD_ALIGNED"), Contact("RH_FOOT", "3D", "LOCAL")),
    "talos": (Contact("left_sole_link", "6D", "LOCAL"), Contact("gripper_left_base_link", "6D", "WORLD")),
    "ur5": (Contact("tool0", "3D", "LOCAL_WORLD_ALIGNED"),),
}
PIN_FRAMES = {"LOCAL": pin.LOCAL, "WORLD": pin.WORLD, "LOCAL_WORLD_ALIGNED": pin.LOCAL_WORLD_ALIGNED}


@pytest.mark.parametrize("name", sorted(CONTACTS))
def test_static_terms_are_pinocchios_gravity_and_frame_jacobians(name, rng):
    model, pmodel = load_pair(name)
    pdata = pmodel.createData()
    contacts = CONTACTS[name]
    q0 = dynamics.neutral(model)
    layout = sym.layout(OCP(model, q0, np.zeros(model.nv), (ContactStage(contacts, 0.01),), friction=None))
    kernel = StaticTermsKernel(layout, quiet=True, compile=False)
    for q in dynamics.random_configuration(model, rng, 3):
        gravity, J = kernel(q)
        expected = pin.computeGeneralizedGravity(pmodel, pdata, q)
        np.testing.assert_allclose(gravity, expected, rtol=0, atol=atol(expected))
        pin.computeJointJacobians(pmodel, pdata, q)
        pin.updateFramePlacements(pmodel, pdata)
        for c in contacts:
            slot = layout.slot(c)
            rows = pin.getFrameJacobian(pmodel, pdata, pmodel.getFrameId(c.frame), PIN_FRAMES[c.reference.value])
            expected = rows[list(c.rows)]
            np.testing.assert_allclose(J[slot.offset : slot.offset + slot.dim], expected, rtol=0, atol=atol(expected))
