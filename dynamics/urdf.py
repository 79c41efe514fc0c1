"""Reading URDF files into plain link and joint records (no dynamics here)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import ModelError
from .spatial import rpy_to_rotation

SUPPORTED_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed")


@dataclass(frozen=True)
class Visual:
    """A visual element of a link, placed at ``(rotation, translation)`` in the link frame:
    ``kind`` ``mesh`` (``filename`` as written, ``size`` the scale), ``box`` (``size``),
    ``cylinder`` (``size = (radius, length)``) or ``sphere`` (``size = (radius,)``); ``rgba``
    its colour if the URDF gives one."""

    kind: str
    rotation: np.ndarray
    translation: np.ndarray
    size: tuple
    filename: str = ""
    rgba: tuple | None = None


@dataclass(frozen=True)
class Link:
    name: str
    mass: float
    com: np.ndarray  # (3,) in the link frame
    inertia: np.ndarray  # (3, 3) about the centre of mass, link axes
    visuals: tuple = ()


@dataclass(frozen=True)
class Joint:
    name: str
    type: str
    parent: str
    child: str
    rotation: np.ndarray  # placement of the joint frame in the parent link frame
    translation: np.ndarray
    axis: np.ndarray
    lower: float
    upper: float
    velocity: float
    effort: float
    damping: float = 0.0  # <dynamics damping>: N m s/rad (N s/m)
    friction: float = 0.0  # <dynamics friction>: Coulomb friction, N m (N)


@dataclass(frozen=True)
class Urdf:
    name: str
    links: dict[str, Link]
    joints: dict[str, Joint]
    root: str
    children: dict[str, list[str]] = field(default_factory=dict)  # link -> child joint names


def floats(text, n, where):
    """The ``n`` finite numbers of ``text`` (a whitespace-separated list), else
    :class:`ModelError` naming ``where`` (the URDF and SDF loaders' reading of numbers)."""
    try:
        values = [float(x) for x in (text or "").split()]
    except ValueError:
        raise ModelError(f"{where}: expected {n} numbers, got {text!r}") from None
    if len(values) != n or not np.all(np.isfinite(values)):
        raise ModelError(f"{where}: expected {n} finite numbers, got {text!r}")
    return np.array(values)


def _number(attributes, key, default, where, finite=True, low=-np.inf) -> float:
    """The number of the attribute ``key`` (``default`` if absent): not NaN, finite if
    ``finite``, at least ``low``; else :class:`ModelError`."""
    text = attributes.get(key)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = np.nan
    if np.isnan(value) or (finite and not np.isfinite(value)) or value < low:
        expected = "a finite number" if finite else "a number"
        raise ModelError(f"{where}@{key}: expected {expected}{f' >= {low:g}' if low > -np.inf else ''}, got {text!r}")
    return value


def _origin(elem, where):
    origin = elem.find("origin")
    xyz = np.zeros(3)
    rpy = np.zeros(3)
    if origin is not None:
        if "xyz" in origin.attrib:
            xyz = floats(origin.attrib["xyz"], 3, f"{where}/origin@xyz")
        if "rpy" in origin.attrib:
            rpy = floats(origin.attrib["rpy"], 3, f"{where}/origin@rpy")
    return rpy_to_rotation(rpy), xyz


def _visual(elem, where, colors) -> Visual | None:
    """The visual ``elem`` (``None`` for a geometry the viewer does not draw)."""
    R, p = _origin(elem, where)
    geometry = elem.find("geometry")
    shape = next(iter(geometry), None) if geometry is not None else None
    material = elem.find("material")
    rgba = None
    if material is not None:
        color = material.find("color")
        rgba = (
            tuple(floats(color.attrib["rgba"], 4, f"{where}/color"))
            if color is not None
            else colors.get(material.attrib.get("name"))
        )
    if shape is None:
        return None
    a = shape.attrib
    if shape.tag == "mesh":
        scale = tuple(floats(a["scale"], 3, f"{where}/mesh@scale")) if "scale" in a else (1.0, 1.0, 1.0)
        return Visual("mesh", R, p, scale, a["filename"], rgba)
    if shape.tag == "box":
        return Visual("box", R, p, tuple(floats(a["size"], 3, f"{where}/box@size")), rgba=rgba)
    if shape.tag == "cylinder":
        return Visual("cylinder", R, p, (float(a["radius"]), float(a["length"])), rgba=rgba)
    if shape.tag == "sphere":
        return Visual("sphere", R, p, (float(a["radius"]),), rgba=rgba)
    return None


def _link(elem, colors=None) -> Link:
    """A link: no inertial is no mass; a mass is finite and >= 0, an inertia's entries finite."""
    name = elem.attrib.get("name")
    if not name:
        raise ModelError("a <link> without a name")
    visuals = tuple(v for v in (_visual(e, f"link {name}/visual", colors or {}) for e in elem.findall("visual")) if v)
    inertial = elem.find("inertial")
    if inertial is None:
        return Link(name, 0.0, np.zeros(3), np.zeros((3, 3)), visuals)
    where = f"link {name}/inertial"
    R, com = _origin(inertial, where)
    mass_elem = inertial.find("mass")
    mass = _number(mass_elem.attrib, "value", 0.0, f"{where}/mass", low=0.0) if mass_elem is not None else 0.0
    I = np.zeros((3, 3))
    inertia = inertial.find("inertia")
    if inertia is not None:
        a = {k: _number(inertia.attrib, k, 0.0, f"{where}/inertia") for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        I = np.array([[a["ixx"], a["ixy"], a["ixz"]], [a["ixy"], a["iyy"], a["iyz"]], [a["ixz"], a["iyz"], a["izz"]]])
    return Link(name, mass, com, R @ I @ R.T, visuals)


def _joint(elem) -> Joint:
    name = elem.attrib.get("name")
    kind = elem.attrib.get("type")
    if not name:
        raise ModelError(f"a <joint> without a name (type {kind!r})")
    where = f"joint {name}"
    if kind not in SUPPORTED_JOINT_TYPES:
        raise ModelError(
            f"{where}: joint type {kind!r} is not supported (supported: {', '.join(SUPPORTED_JOINT_TYPES)})"
        )
    parent, child = elem.find("parent"), elem.find("child")
    if parent is None or child is None:
        raise ModelError(f"{where}: needs <parent link=...> and <child link=...>")
    R, p = _origin(elem, where)
    axis_elem = elem.find("axis")
    axis = floats(axis_elem.attrib["xyz"], 3, f"{where}/axis") if axis_elem is not None else np.array([1.0, 0, 0])
    if kind != "fixed":
        norm = np.linalg.norm(axis)
        if norm == 0:
            raise ModelError(f"{where}: zero joint axis")
        axis = axis / norm
    limit = elem.find("limit")
    lim = limit.attrib if limit is not None else {}
    inf = np.inf
    lower = _number(lim, "lower", -inf if kind == "continuous" else 0.0, f"{where}/limit", finite=False)
    upper = _number(lim, "upper", inf if kind == "continuous" else 0.0, f"{where}/limit", finite=False)
    velocity, effort = (_number(lim, k, inf, f"{where}/limit", finite=False) for k in ("velocity", "effort"))
    dyn = elem.find("dynamics")
    damping, friction = (float(dyn.attrib.get(k, 0.0)) if dyn is not None else 0.0 for k in ("damping", "friction"))
    if not (np.isfinite(damping) and damping >= 0 and np.isfinite(friction) and friction >= 0):
        raise ModelError(f"{where}/dynamics: damping and friction must be finite and >= 0, got {damping}, {friction}")
    return Joint(
        name=name,
        type=kind,
        parent=parent.attrib["link"],
        child=child.attrib["link"],
        rotation=R,
        translation=p,
        axis=axis,
        lower=lower,
        upper=upper,
        velocity=velocity,
        effort=effort,
        damping=damping,
        friction=friction,
    )


def parse_urdf(path: str | Path) -> Urdf:
    """Parse a URDF file; raise :class:`ModelError` on anything malformed."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"URDF file not found: {path}")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as err:
        raise ModelError(f"malformed URDF {path}: {err}") from None
    return _robot(root, path)


def parse_urdf_string(text: str) -> Urdf:
    """Parse URDF text (an XML string)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise ModelError(f"malformed URDF text: {err}") from None
    return _robot(root, Path("<string>"))


def _robot(root, path: Path) -> Urdf:
    if root.tag != "robot":
        raise ModelError(f"malformed URDF {path}: root element is <{root.tag}>, expected <robot>")
    colors = {}  # named materials defined at the top level
    try:
        for m in root.findall("material"):
            color = m.find("color")
            if color is not None and "name" in m.attrib:
                colors[m.attrib["name"]] = tuple(floats(color.attrib["rgba"], 4, f"material {m.attrib['name']}"))
        links = _unique([_link(e, colors) for e in root.findall("link")], "link")
        joints = _unique([_joint(e) for e in root.findall("joint")], "joint")
    except ModelError as err:
        raise ModelError(f"malformed URDF {path}: {err}") from None
    except (KeyError, ValueError) as err:  # an attribute missing, a number that is not one
        what = f"missing attribute {err}" if isinstance(err, KeyError) else str(err)
        raise ModelError(f"malformed URDF {path}: {what}") from None
    if not links:
        raise ModelError(f"malformed URDF {path}: no <link>")
    children: dict[str, list[str]] = {name: [] for name in links}
    child_links = set()
    # urdfdom (hence Pinocchio) visits the child joints of a link in the order of their names
    for jname in sorted(joints):
        j = joints[jname]
        for lname in (j.parent, j.child):
            if lname not in links:
                raise ModelError(f"malformed URDF {path}: joint {jname} refers to unknown link {lname!r}")
        if j.child in child_links:
            raise ModelError(f"malformed URDF {path}: link {j.child!r} has two parent joints")
        child_links.add(j.child)
        children[j.parent].append(jname)
    roots = [name for name in links if name not in child_links]
    if len(roots) != 1:
        raise ModelError(f"malformed URDF {path}: expected one root link, found {roots}")
    reached, todo = {roots[0]}, [roots[0]]
    while todo:
        for jname in children[todo.pop()]:
            reached.add(joints[jname].child)
            todo.append(joints[jname].child)
    if len(reached) != len(links):
        apart = ", ".join(name for name in links if name not in reached)
        raise ModelError(f"malformed URDF {path}: links {apart} do not hang from the root link {roots[0]!r} (a cycle)")
    return Urdf(root.attrib.get("name", path.stem), links, joints, roots[0], children)


def _unique(items, what) -> dict:
    """``items`` (links or joints) by name; :class:`ModelError` for a name given twice."""
    out = {}
    for item in items:
        if item.name in out:
            raise ModelError(f"two {what}s named {item.name!r}")
        out[item.name] = item
    return out
