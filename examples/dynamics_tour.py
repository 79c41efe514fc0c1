"""A first look at the dynamics layer: load ANYmal, place a foot, batched inverse dynamics.

python examples/dynamics_tour.py
"""

import numpy as np

from liftoff import dynamics

np.set_printoptions(precision=3, suppress=True)
model = dynamics.load("anymal")  # floating base: q = (x, y, z, qx, qy, qz, qw, 12 joints)
print(model, f"mass {model.mass:.2f} kg")

q0 = dynamics.neutral(model)
R, p = dynamics.frame_placement(model, q0, "LF_FOOT")
print("LF_FOOT at the neutral configuration:", p)

# 100 random states in one call: every array gets a leading batch axis.
rng = np.random.default_rng(0)
q = dynamics.random_configuration(model, rng, size=100)
v = rng.standard_normal((100, model.nv))
a = rng.standard_normal((100, model.nv))
tau = dynamics.rnea(model, q, v, a)
print("tau:", tau.shape, f"max |tau| = {np.abs(tau).max():.1f}")

# The same torques from M a + h, with the joint-space inertia of every state.
M = dynamics.crba(model, q)
h = dynamics.nonlinear_effects(model, q, v)
print(f"max |M a + h - tau| = {np.abs(np.einsum('bij,bj->bi', M, a) + h - tau).max():.1e}")

com = dynamics.center_of_mass(model, q0)
print("centre of mass at the neutral configuration:", com)
print("gravity on the base (force, torque) at rest:", dynamics.generalized_gravity(model, q0)[:6])
