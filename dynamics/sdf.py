"""Loading SDF robots whose links form closed kinematic loops (Cassie's legs).

An SDF model is a graph: a link may have several parent joints. As Pinocchio's SDF parser
does, one parent joint of each such link builds the kinematic tree (the first of them named
in ``parent_guidance``, else the first in the file) and every other one closes a loop. The
tree goes into a :class:`Model` like a URDF's (joints depth first in the order of the file);
each loop-closing joint comes back as a :class:`Contact` with ``frame2`` between two frames
placed at the joint, one on each of its links:

- ``ball``: a 3D contact (the two points coincide, rotations free; seed 000 Fig. 9:
  "two 3D kinematic loop constraints" per leg of Cassie);
- ``fixed``: a 6D contact.

Pinocchio (``buildModelsFromSdf``) keeps the loop-closing joint in the tree instead: it
copies the child link (half of its inertia on each copy), hangs the copy on a spherical
joint and welds the copies with a 6D constraint. Same motion, three more degrees of freedom
per ball joint; liftoff has no spherical joint, so the ball becomes the 3D constraint.

Frames and placements follow Pinocchio's SDF parser (SDF <= 1.6 poses): link poses in the
model frame, a joint's pose in its child link's frame; the joint frame is that placement of
the child link, the link's body frame sits at the inverse of the joint pose in it, the root
link's frame is the root joint's. Joint limits that the file omits are infinite.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .contacts import Contact
from .errors import ModelError
from .model import Model, _frozen, add_frame, build_model
from .robots import SDF_ROBOTS, robots_dir
from .spatial import rpy_to_rotation
from .urdf import Joint, Link, Urdf, floats

TREE_JOINT_TYPES = ("revolute", "prismatic", "fixed")
CLOSURE_KINDS = {"ball": "3D", "fixed": "6D"}  # loop-closing joint type -> contact kind


@dataclass(frozen=True)
class SdfJoint:
    """A joint of the file: its pose in the child link, axis (in the joint frame unless
    ``axis_in_model``) and ``<axis>`` data."""

    name: str
    type: str
    parent: str
    child: str
    rotation: np.ndarray
    translation: np.ndarray
    axis: np.ndarray
    lower: float
    upper: float
    velocity: float
    effort: float
    damping: float
    friction: float
    spring_stiffness: float
    spring_reference: float
    axis_in_model: bool = False  # ``axis`` in the model frame (``use_parent_model_frame``)


@dataclass(frozen=True)
class SdfRobot:
    """A parsed SDF model: links (poses in the model frame), joints, and the tree it chose."""

    name: str
    links: dict  # name -> Link (inertia in the link frame)
    poses: dict  # link name -> (R, p) in the model frame
    joints: dict  # name -> SdfJoint, in the file's order
    root: str
    tree_joints: tuple  # names of the joints that build the tree
    closures: tuple  # names of the loop-closing joints


def _pose(elem, where):
    """``(R, p)`` of the ``<pose>`` child of ``elem`` (identity if absent)."""
    pose = elem.find("pose") if elem is not None else None
    if pose is None or not (pose.text or "").strip():
        return np.eye(3), np.zeros(3)
    if pose.attrib.get("relative_to") or pose.attrib.get("frame"):
        raise ModelError(f"{where}/pose: poses relative to other frames are not supported")
    values = floats(pose.text, 6, f"{where}/pose")
    return rpy_to_rotation(values[3:]), values[:3]


def _value(elem, path, default, where):
    node = elem.find(path) if elem is not None else None
    if node is None or not (node.text or "").strip():
        return default
    return float(floats(node.text, 1, f"{where}/{path}")[0])


def _link(elem) -> tuple:
    name = elem.attrib.get("name")
    if not name:
        raise ModelError("a <link> without a name")
    where = f"link {name}"
    inertial = elem.find("inertial")
    if inertial is None:
        link = Link(name, 0.0, np.zeros(3), np.zeros((3, 3)))
    else:
        R, com = _pose(inertial, f"{where}/inertial")
        mass = _value(inertial, "mass", 0.0, f"{where}/inertial")
        if mass < 0:
            raise ModelError(f"{where}/inertial/mass: expected a mass >= 0, got {mass}")
        i = {k: _value(inertial, f"inertia/{k}", 0.0, f"{where}/inertial") for k in ("ixx", "ixy", "ixz", "iyy", "iyz")}
        i["izz"] = _value(inertial, "inertia/izz", 0.0, f"{where}/inertial")
        I = np.array([[i["ixx"], i["ixy"], i["ixz"]], [i["ixy"], i["iyy"], i["iyz"]], [i["ixz"], i["iyz"], i["izz"]]])
        link = Link(name, mass, com, R @ I @ R.T)
    return link, _pose(elem, where)


def _joint(elem) -> SdfJoint:
    name, kind = elem.attrib.get("name"), elem.attrib.get("type")
    if not name:
        raise ModelError(f"a <joint> without a name (type {kind!r})")
    where = f"joint {name}"
    parent, child = (elem.findtext(tag, "").strip() for tag in ("parent", "child"))
    if not parent or not child:
        raise ModelError(f"{where}: needs <parent> and <child> links")
    R, p = _pose(elem, where)
    axis_elem = elem.find("axis")
    axis = np.array([1.0, 0.0, 0.0])
    in_model = False
    if axis_elem is not None and axis_elem.find("xyz") is not None:
        xyz = axis_elem.find("xyz")
        axis = floats(xyz.text, 3, f"{where}/axis/xyz")
        expressed_in = xyz.attrib.get("expressed_in", "")
        if expressed_in not in ("", "__model__"):
            raise ModelError(f"{where}/axis: axes expressed in {expressed_in!r} are not supported")
        in_model = expressed_in == "__model__"
        in_model |= (axis_elem.findtext("use_parent_model_frame") or "").strip() in ("1", "true")
    if kind in ("revolute", "prismatic"):
        norm = np.linalg.norm(axis)
        if axis_elem is None or norm == 0:
            raise ModelError(f"{where}: a {kind} joint needs a nonzero <axis><xyz>")
        axis = axis / norm
    inf = np.inf
    return SdfJoint(
        name=name,
        type=kind,
        parent=parent,
        child=child,
        rotation=R,
        translation=p,
        axis=axis,
        lower=_value(axis_elem, "limit/lower", -inf, where),
        upper=_value(axis_elem, "limit/upper", inf, where),
        velocity=_value(axis_elem, "limit/velocity", inf, where),
        effort=_value(axis_elem, "limit/effort", inf, where),
        damping=_value(axis_elem, "dynamics/damping", 0.0, where),
        friction=_value(axis_elem, "dynamics/friction", 0.0, where),
        spring_stiffness=_value(axis_elem, "dynamics/spring_stiffness", 0.0, where),
        spring_reference=_value(axis_elem, "dynamics/spring_reference", 0.0, where),
        axis_in_model=in_model,
    )


def parse_sdf(path, root: str | None = None, parent_guidance=()) -> SdfRobot:
    """Parse the first ``<model>`` of an SDF file and choose its spanning tree (see the module
    docstring). ``root``: the root link (default: the one link without a parent joint)."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"SDF file not found: {path}")
    try:
        model = ET.parse(path).getroot().find("model")
    except ET.ParseError as err:
        raise ModelError(f"malformed SDF {path}: {err}") from None
    if model is None:
        raise ModelError(f"malformed SDF {path}: no <model>")
    links, poses = {}, {}
    for elem in model.findall("link"):
        link, pose = _link(elem)
        if link.name in links:
            raise ModelError(f"malformed SDF {path}: two links named {link.name!r}")
        links[link.name], poses[link.name] = link, pose
    joints = {}
    for elem in model.findall("joint"):
        j = _joint(elem)
        if j.name in joints:
            raise ModelError(f"malformed SDF {path}: two joints named {j.name!r}")
        for link in (j.parent, j.child):
            if link not in links:
                raise ModelError(f"malformed SDF {path}: joint {j.name} refers to unknown link {link!r}")
        joints[j.name] = j
    parents = {name: [j.name for j in joints.values() if j.child == name] for name in links}
    if root is None:
        roots = [name for name, p in parents.items() if not p]
        if len(roots) != 1:
            raise ModelError(f"malformed SDF {path}: expected one link without a parent joint, found {roots}")
        root = roots[0]
    elif root not in links:
        raise ModelError(f"SDF {path}: unknown root link {root!r}")
    chain = {}  # link -> the parent joint that builds the tree
    for name, p in parents.items():
        if p:
            chain[name] = next((j for j in p if j in parent_guidance), p[0])
    tree, closures, todo, reached = [], [], [root], {root}
    children = {name: [j for j in joints.values() if j.parent == name] for name in links}

    def visit(link):
        for j in children[link]:
            if chain.get(j.child) != j.name or j.child == root:
                closures.append(j.name)
                continue
            if j.type not in TREE_JOINT_TYPES:
                raise ModelError(f"SDF {path}: joint {j.name} of type {j.type!r} in the tree is not supported")
            tree.append(j.name)
            reached.add(j.child)
            visit(j.child)

    visit(todo[0])
    if len(reached) != len(links):
        apart = ", ".join(name for name in links if name not in reached)
        raise ModelError(f"SDF {path}: links {apart} do not hang from the root link {root!r}")
    for name in closures:
        if joints[name].type not in CLOSURE_KINDS:
            raise ModelError(
                f"SDF {path}: loop-closing joint {name} of type {joints[name].type!r} is not supported "
                f"(supported: {', '.join(CLOSURE_KINDS)})"
            )
    return SdfRobot(model.attrib.get("name", path.stem), links, poses, joints, root, tuple(tree), tuple(closures))


def _compose(a, b):
    return a[0] @ b[0], a[0] @ b[1] + a[1]


def _inverse(a):
    return a[0].T, -a[0].T @ a[1]


def _resolve(path, root):
    """``(path, root)`` of an SDF file, or of a robot of ``SDF_ROBOTS`` by name (``"cassie"``)."""
    if str(path) in SDF_ROBOTS:
        inner, default_root = SDF_ROBOTS[str(path)]
        return robots_dir() / inner, root or default_root
    return path, root


def load_sdf(path, root: str | None = None, floating_base: bool = True, parent_guidance=(), name=None):
    """``(model, closures)`` of an SDF robot (a path, or a name of ``dynamics.robots.SDF_ROBOTS``:
    ``"cassie"``, example-robot-data's cassie_v2.sdf rooted at its pelvis): the tree as a
    :class:`Model` (a free-flyer root if ``floating_base``) and its loop closures, a list of
    :class:`Contact` with ``frame2`` (no Baumgarte gains: ``dataclasses.replace(c, kp=..., kd=...)`` adds them), held at
    ``q = neutral``, where every link is at its pose of the file.

    Each closure of a joint ``J`` from link ``A`` to link ``B`` holds the frame ``J`` (on
    ``A``) on the frame ``B_J`` (on ``B``, Pinocchio's name for its copy of ``B``), both at
    the pose of ``J``; rows in LOCAL (of ``J``).
    """
    name = name or (str(path) if str(path) in SDF_ROBOTS else None)
    path, root = _resolve(path, root)
    sdf = parse_sdf(path, root, parent_guidance)
    joint_pose = {sdf.joints[j].child: (sdf.joints[j].rotation, sdf.joints[j].translation) for j in sdf.tree_joints}
    identity = (np.eye(3), np.zeros(3))
    # the frame of each link's joint in the model frame: the link's pose times the joint's pose
    frame = {link: _compose(sdf.poses[link], joint_pose.get(link, identity)) for link in sdf.links}
    links = {}
    for link_name, link in sdf.links.items():  # inertias in the joint frames
        R, p = _compose(_inverse(frame[link_name]), sdf.poses[link_name])
        links[link_name] = Link(link_name, link.mass, R @ link.com + p, R @ link.inertia @ R.T)
    joints, children = {}, {link: [] for link in sdf.links}
    for jname in sdf.tree_joints:
        j = sdf.joints[jname]
        R, p = _compose(_inverse(frame[j.parent]), frame[j.child])
        axis = frame[j.child][0].T @ j.axis if j.axis_in_model else j.axis
        joints[jname] = Joint(
            jname,
            j.type,
            j.parent,
            j.child,
            R,
            p,
            axis,
            j.lower,
            j.upper,
            j.velocity,
            j.effort,
            j.damping,
            j.friction,
        )
        children[j.parent].append(jname)
    model = build_model(Urdf(sdf.name, links, joints, sdf.root, children), floating_base, name=name)
    model = _body_frames(model, {link: _inverse(pose) for link, pose in joint_pose.items()})
    closures = []
    for jname in sdf.closures:
        j = sdf.joints[jname]
        on_child = (j.rotation, j.translation)
        on_parent = _compose(_compose(_inverse(sdf.poses[j.parent]), sdf.poses[j.child]), on_child)
        second = f"{j.child}_{jname}"
        model = add_frame(model, jname, j.parent, *on_parent)
        model = add_frame(model, second, j.child, *on_child)
        closures.append(Contact(jname, CLOSURE_KINDS[j.type], "LOCAL", frame2=second))
    return model, closures


def _body_frames(model: Model, offsets: dict) -> Model:
    """``model`` with each body frame ``link`` of ``offsets`` moved by ``offsets[link]``
    (the link's placement in its joint frame)."""
    R, p = np.array(model.frame_rotation), np.array(model.frame_translation)
    for f, (name, kind) in enumerate(zip(model.frame_names, model.frame_types)):
        if kind == "body" and name in offsets:
            R[f], p[f] = _compose((R[f], p[f]), offsets[name])
    return replace(model, frame_rotation=_frozen(R), frame_translation=_frozen(p))


def joint_springs(path, model: Model, root: str | None = None, parent_guidance=()):
    """The ``<dynamics>`` springs of the file's tree joints: ``(stiffness (nv,), reference
    (nv,))``, zero for joints without one (the passive torque is ``-stiffness (q - reference)``
    on each 1-dof joint). liftoff's algorithms leave springs out; a simulation adds them."""
    sdf = parse_sdf(*_resolve(path, root), parent_guidance)
    stiffness, reference = np.zeros(model.nv), np.zeros(model.nv)
    for i, name in enumerate(model.joint_names):
        j = sdf.joints.get(name)
        if j is not None and model.nvs[i] == 1:
            stiffness[model.idx_v[i]], reference[model.idx_v[i]] = j.spring_stiffness, j.spring_reference
    return stiffness, reference
