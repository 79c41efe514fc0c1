"""MuJoCo models generated from the URDF the controller reads, never written by hand.

:func:`build` takes the robot and the options that build liftoff's model (floating base,
locked joints) and makes MuJoCo's model of the same robot:

- the URDF's collision geometry, its meshes found in example-robot-data; the visual elements
  are dropped (MuJoCo cannot read their COLLADA meshes);
- every URDF link a body (``fusestatic="false"``), so that each frame liftoff knows is a body
  of the same name or a fixed offset in one;
- placeholder inertias that MuJoCo rejects replaced in one place, :func:`repair_inertias`;
- the locked joints welded at their values (the body turned about the joint axis, the joint
  removed), as liftoff's reduced model merges them;
- a free joint at the root of a floating base;
- a torque actuator per actuated joint, its control range the URDF's effort limit; with a
  torque filter, MuJoCo's exact first-order actuator dynamics (``filterexact``), whose
  activation is the joint torque the filter delivers (seed 001 eq. 49);
- the joints' damping and friction as the URDF gives them (MuJoCo reads them as ``damping``
  and ``frictionloss``);
- the environment (:class:`Surface`: ground, table, board) and tool geoms (:class:`Tool`: a
  pad held by the robot).

Contacts: the robot's geoms touch the environment, not each other (URDF collision hulls
overlap at rest: Talos's pelvis and torso would push each other apart). The environment's geoms
take precedence (``priority``), so their friction and contact parameters are the contact's.
Those are MuJoCo's defaults unless :class:`ContactSettings` gives ``solref`` and ``solimp``
(MuJoCo's soft-contact time constant and damping ratio, and impedance). A frictionless surface
is a frictionless MuJoCo contact (``condim`` 1): with pyramidal cones, a zero friction
coefficient makes the normal constraint hard, its penetration relaxes to zero and a resting
contact drops out of the solver every few steps.

Conventions (converted in one place, :meth:`MujocoRobot.to_mujoco` and
:meth:`MujocoRobot.from_mujoco`): MuJoCo's free joint stores the quaternion ``(w, x, y, z)``,
its linear velocity in the world frame and its angular velocity in the body frame; liftoff
(Pinocchio) stores ``(x, y, z, w)`` and both velocities in the body frame. Joints are mapped by
name (MuJoCo orders them as its body tree, ANYmal's legs LF, RF, LH, RH; liftoff as Pinocchio,
LF, LH, RF, RH).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from liftoff.dynamics.robots import mesh_path, robot_urdf

READABLE_MESHES = (".stl", ".obj", ".msh")


class PlantError(RuntimeError):
    """A plant that cannot be built (MuJoCo missing, a URDF MuJoCo rejects): one line."""


def import_mujoco():
    try:
        import mujoco
    except ImportError:
        raise PlantError(
            "the MuJoCo plant needs the mujoco package: pip install mujoco (or choose plant.engine: liftoff)"
        ) from None
    return mujoco


@dataclass(frozen=True)
class Surface:
    """A flat piece of the environment: a ``plane`` (the ground) or a ``box`` (table, board)
    of half extents ``half_size``, placed at ``position`` with ``rotation`` (its third column the
    outward normal of its top face); ``friction``: its Coulomb coefficient."""

    name: str
    kind: str
    position: np.ndarray
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    half_size: tuple = (5.0, 5.0, 0.1)
    friction: float = 1.0


@dataclass(frozen=True)
class Tool:
    """A sphere of ``radius`` held by the robot: its centre at ``position`` in the frame
    ``frame`` (a polishing pad)."""

    name: str
    frame: str
    position: np.ndarray
    radius: float


@dataclass(frozen=True)
class ContactSettings:
    """MuJoCo's ``solref`` (time constant [s], damping ratio) and ``solimp`` (d0, d_width,
    width [m], midpoint, power) of the environment's contacts; None: MuJoCo's defaults."""

    solref: tuple | None = None
    solimp: tuple | None = None


@dataclass(frozen=True)
class MujocoRobot:
    """A generated MuJoCo model and its map to liftoff's ``model``: for each configuration
    coordinate and each velocity of liftoff, its index in MuJoCo's ``qpos`` and ``qvel``
    (the free joint's block in MuJoCo's order), the actuator of each actuated joint, the
    geoms of the environment's surfaces and of the tools, and the bodies of liftoff's frames."""

    mj: object
    model: object
    qpos_index: np.ndarray
    dof_index: np.ndarray
    actuators: np.ndarray
    surfaces: dict
    tools: dict
    filtered: bool

    @property
    def free(self) -> bool:
        return self.model.has_free_flyer

    def to_mujoco(self, q, v) -> tuple:
        """``(qpos, qvel)`` of liftoff's state ``(q, v)`` (module docstring)."""
        qpos, qvel = np.zeros(self.mj.nq), np.zeros(self.mj.nv)
        q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
        qpos[self.qpos_index], qvel[self.dof_index] = q, v
        if self.free:
            quat = q[3:7] / np.linalg.norm(q[3:7])
            qpos[3:7] = (quat[3], quat[0], quat[1], quat[2])
            qvel[:3] = _rotation(qpos[3:7]) @ v[:3]
        return qpos, qvel

    def from_mujoco(self, qpos, qvel, qacc=None) -> tuple:
        """``(q, v)``, or ``(q, v, a)`` with MuJoCo's ``qacc``: liftoff's state and acceleration
        (the time derivative of the body-frame velocity) of MuJoCo's."""
        q, v = np.array(qpos[self.qpos_index], dtype=float), np.array(qvel[self.dof_index], dtype=float)
        if not self.free:
            return (q, v) if qacc is None else (q, v, np.array(qacc[self.dof_index], dtype=float))
        w, x, y, z = qpos[3:7]
        q[3:7] = (x, y, z, w)
        R = _rotation(qpos[3:7])
        v[:3] = R[0] * qvel[0] + R[1] * qvel[1] + R[2] * qvel[2]  # R^T qvel[:3], summed as mujoco_steps.c does
        if qacc is None:
            return q, v
        a = np.array(qacc[self.dof_index], dtype=float)
        a[:3] = R.T @ qacc[:3] - np.cross(v[3:6], v[:3])  # d/dt (R^T v_world) = R^T v_world_dot - w x v_body
        return q, v, a


def body_geoms(robot: MujocoRobot, frame) -> list:
    """The geoms of the rigid body that carries liftoff's frame ``frame``: of every MuJoCo body
    welded to the frame's (a foot's sphere, and its leg's adapter that may touch the ground too)."""
    link, _, _ = frame_body(robot.model, frame)
    mj = robot.mj
    weld = mj.body_weldid[mj.body(link).id]
    return [g for g in range(mj.ngeom) if mj.body_weldid[mj.geom_bodyid[g]] == weld]


def lowest_point(robot: MujocoRobot, q, geoms) -> float:
    """The height of the lowest point of ``geoms`` (spheres; others by their bounding sphere) at
    liftoff's configuration ``q``: where the ground is for feet that stand on it."""
    mujoco = import_mujoco()
    data = mujoco.MjData(robot.mj)
    data.qpos[:] = robot.to_mujoco(q, np.zeros(robot.model.nv))[0]
    mujoco.mj_kinematics(robot.mj, data)
    return float(min(data.geom_xpos[g, 2] - robot.mj.geom_rbound[g] for g in geoms))


def _rotation(quat_wxyz) -> np.ndarray:
    """The rotation matrix of MuJoCo's unit quaternion ``(w, x, y, z)`` (MuJoCo's conversion)."""
    R = np.empty(9)
    import_mujoco().mju_quat2Mat(R, np.asarray(quat_wxyz, dtype=float))
    return R.reshape(3, 3)


def repair_inertias(root) -> list:
    """Replace each ``<inertia>`` of the URDF tree ``root`` that MuJoCo rejects (not positive
    definite, or breaking the triangle inequality of principal moments) by its diagonal:
    example-robot-data's placeholder inertias (ANYmal's base: 1e-6 in every entry) are of
    bodies whose mass sits in their fixed children, so the change is of the order of the
    placeholder. Returns the names of the repaired links."""
    repaired = []
    for link in root.iter("link"):
        for inertia in link.iter("inertia"):
            names = (("ixx", "ixy", "ixz"), ("ixy", "iyy", "iyz"), ("ixz", "iyz", "izz"))
            I = np.array([[float(inertia.get(k, 0.0)) for k in row] for row in names])
            w = np.linalg.eigvalsh(I)
            if w.min() > 0 and 2 * w.max() <= w.sum() * (1 + 1e-9):
                continue
            for k in ("ixy", "ixz", "iyz"):
                inertia.set(k, "0")
            for k in ("ixx", "iyy", "izz"):
                inertia.set(k, repr(max(abs(float(inertia.get(k, 0.0))), 1e-9)))
            repaired.append(link.get("name"))
    return repaired


def _urdf_for_mujoco(path: Path) -> str:
    """The URDF text MuJoCo's compiler takes (module docstring)."""
    root = ET.parse(path).getroot()
    for link in root.iter("link"):
        for visual in link.findall("visual"):
            link.remove(visual)
        for collision in link.findall("collision"):
            mesh = collision.find("geometry/mesh")
            if mesh is None:
                continue
            file = mesh_path(mesh.get("filename", ""))
            if file.suffix.lower() in READABLE_MESHES and file.is_file():
                mesh.set("filename", str(file))
            else:  # a mesh MuJoCo cannot read: the link keeps its other collision geometry
                link.remove(collision)
    repair_inertias(root)
    for extension in root.findall("mujoco"):
        root.remove(extension)
    ET.SubElement(ET.SubElement(root, "mujoco"), "compiler", discardvisual="true", fusestatic="false")
    return ET.tostring(root, encoding="unicode")


def build(
    robot,
    model,
    locked=None,
    surfaces=(),
    tools=(),
    timestep=1e-3,
    torque_filter=None,
    contact=ContactSettings(),
    joint_friction=True,
    scaled=None,
) -> MujocoRobot:
    """The MuJoCo model of ``robot`` (a name of :data:`dynamics.ROBOTS`) matching liftoff's
    ``model`` (built with the same floating base and ``locked`` joints ``{name: value}``), with
    the environment's ``surfaces``, the ``tools`` the robot holds, MuJoCo's ``timestep``, the
    actuators' ``torque_filter`` cut-off [Hz] (None: the torques are applied directly), the
    environment's ``contact`` settings, the URDF's joint damping and friction unless
    ``joint_friction`` is False, and ``scaled = (joints, factor)``: the mass and inertia of
    those joints' bodies times ``factor`` (a model mismatch)."""
    mujoco = import_mujoco()
    try:
        spec = mujoco.MjSpec.from_string(_urdf_for_mujoco(robot_urdf(robot)))
    except ValueError as e:
        raise PlantError(f"MuJoCo cannot read the URDF of {robot}: {_one_line(e)}") from None
    locked = dict(locked or {})
    for joint in list(spec.joints):
        if joint.name in locked:
            _weld(mujoco, spec, joint, locked[joint.name])
        elif not joint_friction:
            joint.damping, joint.frictionloss = np.zeros(3), 0.0
    if model.has_free_flyer:
        spec.worldbody.first_body().add_freejoint(name="root_joint")
    for geom in spec.geoms:
        geom.contype, geom.conaffinity = 1, 0
    if scaled is not None:
        _scale_bodies(spec, model, *scaled)
    spec.option.timestep = timestep
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    actuated = model.joint_names[1:] if model.has_free_flyer else model.joint_names
    limits = model.effort_limit[6:] if model.has_free_flyer else model.effort_limit
    for name, limit in zip(actuated, limits):
        actuator = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        actuator.gainprm[0] = 1.0
        if np.isfinite(limit):
            actuator.ctrllimited, actuator.ctrlrange = True, [-limit, limit]
        if torque_filter is not None:
            actuator.dyntype = mujoco.mjtDyn.mjDYN_FILTEREXACT
            actuator.dynprm[0] = 1.0 / (2 * np.pi * torque_filter)
    for tool in tools:
        _add_tool(mujoco, spec, model, tool)
    for surface in surfaces:
        _add_surface(mujoco, spec, surface, contact)
    try:
        mj = spec.compile()
    except ValueError as e:
        raise PlantError(f"MuJoCo cannot compile the model of {robot}: {_one_line(e)}") from None
    return _robot(mujoco, mj, model, surfaces, tools, torque_filter is not None)


def _one_line(error) -> str:
    return " ".join(str(error).split())


def _weld(mujoco, spec, joint, value):
    """Lock a hinge or slide ``joint`` at ``value``: its body moved by the joint's motion, the
    joint removed."""
    body = joint.parent
    axis = np.asarray(joint.axis, dtype=float)
    axis = axis / np.linalg.norm(axis)
    anchor = np.asarray(joint.pos, dtype=float)
    R_body = np.zeros(9)
    mujoco.mju_quat2Mat(R_body, np.asarray(body.quat, dtype=float))
    R_body = R_body.reshape(3, 3)
    if joint.type == mujoco.mjtJoint.mjJNT_SLIDE:
        body.pos = np.asarray(body.pos, dtype=float) + R_body @ (value * axis)
    else:
        turn = np.concatenate(([np.cos(value / 2)], np.sin(value / 2) * axis))
        R_turn = np.zeros(9)
        mujoco.mju_quat2Mat(R_turn, turn)
        body.pos = np.asarray(body.pos, dtype=float) + R_body @ (anchor - R_turn.reshape(3, 3) @ anchor)
        quat = np.zeros(4)
        mujoco.mju_mulQuat(quat, np.asarray(body.quat, dtype=float), turn)
        body.quat = quat
    spec.delete(joint)


def frame_body(model, frame) -> tuple:
    """``(body name, rotation, translation)``: the URDF link that carries ``frame`` in MuJoCo
    and the frame's placement in it (liftoff places frames in their joint's frame, whose body
    is the link named after the joint's child)."""
    f = model.frame_id(frame)
    if model.frame_types[f] == "body":  # a URDF link: a MuJoCo body of its own
        return frame, np.eye(3), np.zeros(3)
    joint = int(model.frame_parent[f])
    Rf, pf = model.frame_rotation[f], model.frame_translation[f]
    link = _joint_link(model, joint)
    fl = model.frame_id(link)
    Rl, pl = model.frame_rotation[fl], model.frame_translation[fl]
    return link, Rl.T @ Rf, Rl.T @ (pf - pl)


def _joint_link(model, joint) -> str:
    """The URDF link a joint moves (the first body frame of the joint), or the root link."""
    for name, kind, parent in zip(model.frame_names, model.frame_types, model.frame_parent):
        if kind == "body" and parent == joint:
            return name
    raise PlantError(f"no link moves with joint {joint} of {model.name}")


def _add_tool(mujoco, spec, model, tool: Tool):
    link, R, p = frame_body(model, tool.frame)
    geom = spec.body(link).add_geom(name=tool.name, type=mujoco.mjtGeom.mjGEOM_SPHERE)
    geom.size = [tool.radius, 0, 0]
    geom.pos = R @ np.asarray(tool.position, dtype=float) + p
    geom.contype, geom.conaffinity = 1, 0
    geom.mass = 0.0


def _add_surface(mujoco, spec, surface: Surface, contact: ContactSettings):
    plane = surface.kind == "plane"
    geom = spec.worldbody.add_geom(
        name=surface.name, type=mujoco.mjtGeom.mjGEOM_PLANE if plane else mujoco.mjtGeom.mjGEOM_BOX
    )
    R = np.asarray(surface.rotation, dtype=float)
    half = np.asarray(surface.half_size, dtype=float)
    geom.size = half if not plane else [half[0], half[1], 0.1]
    geom.pos = np.asarray(surface.position, dtype=float) - (0 if plane else half[2]) * R[:, 2]
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, R.reshape(-1))
    geom.quat = quat
    geom.contype, geom.conaffinity, geom.priority = 0, 1, 1
    geom.friction = [surface.friction, 0.005, 0.0001]
    if surface.friction == 0:
        geom.condim = 1
    if contact.solref is not None:
        geom.solref = list(contact.solref)
    if contact.solimp is not None:
        geom.solimp = list(contact.solimp)


def _scale_bodies(spec, model, joints, factor):
    """Multiply the mass and inertia of the bodies of ``joints`` (each joint's link and the
    links fixed to it) by ``factor``."""
    links = set()
    for name in joints:
        joint = model.joint_id(name)
        links |= {
            frame
            for frame, kind, parent in zip(model.frame_names, model.frame_types, model.frame_parent)
            if kind == "body" and parent == joint
        }
    for body in spec.bodies:
        if body.name in links:
            body.mass = body.mass * factor
            body.inertia = np.asarray(body.inertia, dtype=float) * factor
            body.fullinertia = np.asarray(body.fullinertia, dtype=float) * factor


def _robot(mujoco, mj, model, surfaces, tools, filtered) -> MujocoRobot:
    qpos_index, dof_index = [], []
    for name, nq, nv in zip(model.joint_names, model.nqs, model.nvs):
        joint = mj.joint(name)
        qpos_index += range(int(joint.qposadr[0]), int(joint.qposadr[0]) + int(nq))
        dof_index += range(int(joint.dofadr[0]), int(joint.dofadr[0]) + int(nv))
    actuated = model.joint_names[1:] if model.has_free_flyer else model.joint_names
    return MujocoRobot(
        mj,
        model,
        np.array(qpos_index),
        np.array(dof_index),
        np.array([mj.actuator(name).id for name in actuated]),
        {s.name: mj.geom(s.name).id for s in surfaces},
        {t.name: mj.geom(t.name).id for t in tools},
        filtered,
    )
