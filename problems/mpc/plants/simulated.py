"""liftoff's simulator as a plant: spheres of the robot against planes, with unilateral or soft contacts.

:class:`SimulatorPlant` advances liftoff's time-stepping simulator (:mod:`dynamics.simulator`,
seed 002) on the controller's model (or a heavier one: a mass scale), at a fixed step:

- ``contact="unilateral"``: rigid contacts that push and never pull, with Coulomb friction: at
  each step the Signorini-Coulomb problem on the Delassus matrix, solved to the simulator's
  tolerance by projected Gauss-Seidel (Jean and Moreau; Acary and Brogliato 2008; the tasks'
  default) or ADMM (Carpentier, Le Lidec et al. 2024; Tasora et al. 2021: fewer iterations, but
  on the trot's touchdowns it stops above its tolerance, and the trot's MPC then diverges); the
  first step whose solver stops above it warns with its residual
  (:class:`dynamics.simulator.ContactSolverWarning`), the run continues and its measures count
  them (:func:`contact_solver`);
- ``contact="soft"``: a spring-damper on the penetration (no pull) and regularized Coulomb
  friction (:class:`dynamics.simulator.SpringDamper`), applied explicitly: stable only below a
  step that the contact's stiffness, the friction's slip velocity, the load and the effective
  masses set (:meth:`SimulatorPlant.soft_time_step_bound`; the tasks' ``make_plant`` refuse a
  plant step above it at the initial state, one line). A loaded foot's small tangential
  effective mass makes the friction the tighter bound: ANYmal standing at 1 kHz needs a slip
  above 0.13 m/s (0.144 kg under 74.7 N, friction 0.5), and its feet then creep by centimetres
  per second; ``plant.dt`` 5e-5 s keeps the default slip.

The robot's side of a contact is a sphere on one of its frames (ANYmal's feet: the URDF's
collision spheres, :func:`urdf_spheres`; the polishing pad: the tool's sphere), the
environment's a plane (the ground; the table or board through the surface point along its
normal) of the configuration's friction. The joints receive what :class:`.ideal.IdealPlant`
gives them, computed by the same code: the actuators' torques (through the torque filter, if
any), the disturbances' bias, noise and pushes, and the model's joint damping and smoothed
Coulomb friction at the step's start velocity.

The reading of a named contact during a step sums the step's contact impulses of its sphere
divided by ``dt`` (the mean force over the step, world axes); it is active when that force
pushes (a normal impulse > 0). Its position is the contact point on the sphere at the step's
start (force-weighted over the planes it touches), its depth the penetration there, its
velocity that of the robot's material point at the contact after the step, ``J(q) v+``: what
the contact solver holds at zero in a stuck contact. Without contact, the named frame's
position after the step.
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET

import numpy as np

from liftoff import dynamics
from liftoff.dynamics import collision, simulator
from liftoff.dynamics.robots import robot_urdf
from liftoff.problems.mpc.disturbances import Disturbances

from . import ContactReading, Measurement
from .ideal import IdealPlant
from .mujoco_model import PlantError

CONTROLLER_MODEL = "the controller's model"
MODELS = ("unilateral", "soft")  # the simulator's contact models a plant runs (rigid_bilateral: .ideal)
SOLVER_NAMES = {"admm": "ADMM", "pgs": "projected Gauss-Seidel"}


def description(contact, what="", soft=None, solver="pgs") -> str:
    """The one-line description of a simulator plant of ``contact`` (and its ``soft`` settings, its
    unilateral ``solver``)."""
    if contact == "unilateral":
        kind = f"rigid unilateral contacts with Coulomb friction, {SOLVER_NAMES[solver]}"
    else:
        kind = f"soft contacts k = {soft.stiffness:g} N/m, c = {soft.damping:g} N s/m, regularized Coulomb friction"
    return f"liftoff's simulator ({kind}; {what or CONTROLLER_MODEL})"


def contact_solver(plant) -> dict:
    """What a run's measures report of ``plant``'s contact solver: ``{"contact_solver_failures": n}``,
    the steps whose solver stopped above its tolerance (a simulator plant), else nothing."""
    return {"contact_solver_failures": plant.solver_failures} if isinstance(plant, SimulatorPlant) else {}


def urdf_spheres(robot, links) -> dict:
    """``{link: Sphere}``: the collision sphere of each of ``links`` in the URDF of ``robot`` (a
    name of :data:`dynamics.ROBOTS`), centred at its ``<origin xyz>`` in the link's frame (a
    sphere's orientation does not matter). A link without exactly one collision sphere raises
    ``ValueError``. ANYmal's feet: radius 0.031 m, 0.02325 m above the foot frame."""
    root = ET.parse(robot_urdf(robot)).getroot()
    found = {}
    for link in root.iter("link"):
        name = link.get("name")
        if name not in links:
            continue
        spheres = [c for c in link.findall("collision") if c.find("geometry/sphere") is not None]
        if len(spheres) != 1:
            raise ValueError(f"{robot}'s link {name} has {len(spheres)} collision spheres, expected one")
        origin = spheres[0].find("origin")
        offset = [float(x) for x in origin.get("xyz", "0 0 0").split()] if origin is not None else [0.0] * 3
        found[name] = collision.Sphere(name, float(spheres[0].find("geometry/sphere").get("radius")), offset)
    missing = [link for link in links if link not in found]
    if missing:
        raise ValueError(f"{robot}'s URDF has no link {', '.join(missing)}")
    return found


class SimulatorPlant(IdealPlant):
    """``model`` stepped by liftoff's simulator (module docstring): ``spheres``, a dict name ->
    (:class:`dynamics.collision.Sphere`, the frame whose position a reading reports without
    contact); ``planes`` (:class:`dynamics.collision.Plane`); step ``dt``; ``contact`` one of
    :data:`MODELS`; ``soft`` its :class:`dynamics.simulator.SpringDamper`; ``disturbances``,
    ``torque_filter`` and ``friction_width`` as for :class:`.ideal.IdealPlant`, whose torques
    (and torque filter) it shares; ``what``: the plant's description's tail; ``solver``: the
    unilateral contact's, ``pgs`` or ``admm`` (:data:`dynamics.simulator.SOLVERS`)."""

    def __init__(
        self,
        model,
        spheres,
        planes,
        dt=1e-3,
        contact="unilateral",
        soft=simulator.SpringDamper(),
        disturbances=Disturbances(),
        torque_filter=None,
        friction_width=dynamics.joint_friction.DEFAULT_WIDTH,
        what="",
        solver="pgs",
    ):
        if contact not in MODELS:
            raise ValueError(f"a simulator plant's contact is one of {', '.join(MODELS)}, got {contact!r}")
        super().__init__(model, {}, dt, disturbances, torque_filter=torque_filter, friction_width=friction_width)
        spheres = dict(spheres)
        spheres_only = [s for s, _ in spheres.values()]
        self.sim = simulator.SimulatorModel(model, spheres_only, planes, dt, contact, solver, soft=soft)
        self.contact_names = tuple(spheres)
        self.frames = {name: frame for name, (_, frame) in spheres.items()}
        for frame in self.frames.values():
            model.frame_id(frame)  # unknown frames raise here
        self.description = description(contact, what, soft, solver)
        self.contact = contact
        self.data = None
        self.solver_failures = 0

    def soft_time_step_bound(self, q, load) -> tuple:
        """``(bound, why)``: the largest step [s] at which the explicit soft contact stays stable at
        the configuration ``q`` (its touching contacts, their Delassus matrix ``G``), each contact
        pressed by ``load`` [N], and which part of the model sets it: the spring-damper on the
        effective mass ``1 / max eig(G_nn)`` (:func:`dynamics.simulator.soft_time_step_bound`), or
        the regularized friction, a damper of rate ``mu load / slip`` on ``1 / max eig(G_tt)``
        (stable below ``2 slip / (eig mu load)``). ``inf`` without a touching contact."""
        soft, model = self.sim.soft, self.model
        q = np.asarray(q, dtype=float)
        kin = dynamics.kinematics.forward(model, q[None])
        contacts = collision.detect(model, q, self.sim.spheres, self.sim.planes, 1e-6, kin=kin)
        if len(contacts) == 0:
            return np.inf, "no contact"
        J = simulator.contact_rows(model, kin, contacts, self.sim.bases[contacts.plane])
        G = J @ np.linalg.solve(simulator.mass_matrix(model, kin)[0], J.T)
        normal = np.arange(0, len(G), 3)
        mass = 1.0 / np.linalg.eigvalsh(G[np.ix_(normal, normal)]).max()
        bound = simulator.soft_time_step_bound(soft.stiffness, soft.damping, mass)
        why = f"its spring-damper on an effective mass of {mass:.3g} kg"
        mu = float(contacts.friction.max())
        if soft.friction and mu > 0 and load > 0:
            tangent = np.setdiff1d(np.arange(len(G)), normal)
            tangent_mass = 1.0 / np.linalg.eigvalsh(G[np.ix_(tangent, tangent)]).max()
            friction = 2.0 * soft.slip * tangent_mass / (mu * load)
            if friction < bound:
                bound = friction
                why = (
                    f"its regularized friction, slip {soft.slip:g} m/s, under {load:.3g} N on an effective mass "
                    f"of {tangent_mass:.3g} kg"
                )
        return float(bound), why

    def check_time_step(self, q, load) -> None:
        """Raise :class:`.mujoco_model.PlantError` (one line) when the soft contact is unstable at
        the plant's step in the configuration ``q`` under ``load`` (:meth:`soft_time_step_bound`)."""
        if self.contact != "soft":
            return
        bound, why = self.soft_time_step_bound(q, load)
        if self.dt > bound:
            remedy = "plant.contact.slip (a faster creep)" if "friction" in why else "plant.contact.stiffness"
            raise PlantError(
                f"plant.dt {self.dt:g} s is above the stability bound {bound:.3g} s of the soft contact ({why}) at "
                f"the initial state: lower plant.dt, change {remedy}, or use plant.contact: unilateral"
            )

    def reset(self, q, v, tau=None) -> Measurement:
        """Start from ``(q, v)`` and the actuators' torques ``tau`` (with a filter); the readings
        are those of a first step under ``tau`` (zero torques without a filter), not taken."""
        self._rng = np.random.default_rng(self.disturbances.seed)
        self.q, self.v = np.array(q, dtype=float), np.array(v, dtype=float)
        self.tau = None if tau is None else np.array(tau, dtype=float)
        self.data = simulator.make_data(self.sim, self.q, self.v)
        self.solver_failures = 0
        nu = self.model.nv - (6 if self.model.has_free_flyer else 0)
        applied = np.zeros(nu) if self.tau is None else self.tau
        probe = simulator.make_data(self.sim, self.q, self.v)
        simulator.step(self.sim, probe, self.torque(0.0, self.q, self.v, applied, False))
        return self._measure(probe, self.q)

    def step(self, t, command) -> Measurement:
        """One step of the simulator under ``command`` at time ``t`` (module docstring)."""
        if self.filter_gain is None:
            applied = command
        else:
            applied, self.tau = self.tau, self.filter_gain * self.tau + (1 - self.filter_gain) * command
        start = self.data.q
        info = simulator.step(self.sim, self.data, self.torque(t, self.q, self.v, applied))
        if not info.converged:
            self.solver_failures += 1
            if self.solver_failures == 1:
                warnings.warn(
                    f"the contact solver did not converge at t = {t:.4g} s (residual {info.residual:.2e} > tol "
                    f"{self.sim.settings.tol:g}); the run continues (its measures count such steps: "
                    f"contact_solver_failures)",
                    simulator.ContactSolverWarning,
                    stacklevel=2,
                )
        self.q, self.v = self.data.q, self.data.v
        return self._measure(self.data, start)

    def _measure(self, data, start) -> Measurement:
        """The state of ``data`` and each named contact's reading from its last step, taken
        from the configuration ``start`` (module docstring)."""
        contacts, impulse = data.contacts, data.impulse
        force = {name: np.zeros(3) for name in self.contact_names}
        moment = {name: np.zeros(3) for name in self.contact_names}
        sliding = {name: np.zeros(3) for name in self.contact_names}
        weight = dict.fromkeys(self.contact_names, 0.0)
        depth = dict.fromkeys(self.contact_names, 0.0)
        pushing = impulse[:, 0] > 0 if len(contacts) else np.zeros(0, dtype=bool)
        if pushing.any():
            kin = dynamics.kinematics.forward(self.model, np.asarray(start, dtype=float)[None])
            bases = self.sim.bases[contacts.plane]
            u = (simulator.contact_rows(self.model, kin, contacts, bases) @ data.v).reshape(-1, 3)
            for i in np.flatnonzero(pushing):
                name = self.contact_names[contacts.sphere[i]]
                normal = impulse[i, 0] / self.dt
                force[name] += bases[i] @ impulse[i] / self.dt
                moment[name] += normal * contacts.point[i]
                sliding[name] += normal * (bases[i] @ u[i])
                weight[name] += normal
                depth[name] = max(depth[name], float(-contacts.gap[i]))
        readings = {}
        for name in self.contact_names:
            if weight[name] > 0:
                position, velocity = moment[name] / weight[name], sliding[name] / weight[name]
            else:
                position = dynamics.frame_placement(self.model, data.q, self.frames[name])[1]
                velocity = np.zeros(3)
            readings[name] = ContactReading(
                weight[name] > 0, force[name], np.asarray(position, dtype=float), depth[name], velocity
            )
        return Measurement(data.q.copy(), data.v.copy(), None if self.tau is None else self.tau.copy(), readings)
