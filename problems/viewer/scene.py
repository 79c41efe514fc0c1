"""The meshcat viewer of a results file: the motion, live in a browser or as one HTML file.

A results file becomes a :class:`Motion` (:func:`load`: a gait solve, a gait MPC run, a
polishing run, on any plant), and the motion a list of meshcat commands (:func:`scene`): the
robot's visual meshes as its URDF names them (from example-robot-data), each placed at every
moment by liftoff's own kinematics; each contact force as an arrow (``FORCE_SCALE`` metres per
newton, from its frame along the force); the friction pyramid of each foot in contact; the
reference points (planned swing feet, a polishing circle); the ground, or the polished
surface. One animation holds the motion at its times (an impulse stage takes no time), played
on a loop at ``speed``.

:func:`export_html` writes the scene as a standalone HTML page (meshcat's viewer script and
the commands, no server); :func:`show` sends it to a meshcat server and prints its address.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path

import meshcat
import meshcat.geometry as g
import numpy as np
import umsgpack
from meshcat.animation import Animation
from meshcat.commands import SetAnimation, SetObject, SetProperty, SetTransform
from meshcat.path import Path as NodePath

from liftoff import dynamics
from liftoff.dynamics.robots import mesh_path, robot_urdf
from liftoff.dynamics.spatial import rotation_about
from liftoff.dynamics.urdf import parse_urdf
from liftoff.problems.files import ReadError, atomic
from liftoff.problems.tasks.config import parse_config
from liftoff.problems.tasks.gaits import foot_plan, initial_state

from .meshes import read_dae

FPS = 100
FORCE_SCALE = 1.0 / 300  # m per N: an ANYmal foot standing (about 100 N) draws a third of a metre
PYRAMID_HEIGHT = 0.12  # m
REPETITIONS = 10_000  # loops of the animation (meshcat has no endless one)
CAMERA = [1.1, 0.6, -1.4]  # position of the default camera in meshcat's y-up frame
MESHES = {".stl": g.StlMeshGeometry, ".obj": g.ObjMeshGeometry}  # and .dae, read into triangles


def _node(*names) -> NodePath:
    return NodePath(("meshcat",) + names)


def _transform(R=np.eye(3), p=np.zeros(3)) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def _material(rgba, **kw):
    r, gr, b, a = rgba if rgba is not None else (0.7, 0.7, 0.7, 1.0)
    color = (int(255 * r) << 16) + (int(255 * gr) << 8) + int(255 * b)
    return g.MeshLambertMaterial(color=color, opacity=float(a), transparent=bool(a < 1), **kw)


def _shape(visual):
    """``(meshcat geometry, its static transform)`` of a URDF visual."""
    if visual.kind == "mesh":
        path = mesh_path(visual.filename)
        suffix = path.suffix.lower()
        if not path.is_file() or suffix not in (*MESHES, ".dae"):
            return None, None
        scale = np.diag([*map(float, visual.size), 1.0])
        if suffix == ".dae":
            vertices, faces = read_dae(path)
            return g.TriangularMeshGeometry(vertices.astype(np.float32), faces.astype(np.uint32)), scale
        return MESHES[suffix].from_file(str(path)), scale
    if visual.kind == "box":
        return g.Box([float(x) for x in visual.size]), np.eye(4)
    if visual.kind == "cylinder":  # meshcat's cylinders lie along y, URDF's along z
        radius, length = visual.size
        return g.Cylinder(float(length), float(radius)), _transform(np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]]))
    return g.Sphere(float(visual.size[0])), np.eye(4)


class _At:
    """What :meth:`meshcat.animation.Animation.at_frame` needs of a visualizer."""

    path = NodePath(("meshcat",))


def _frames(times, speed):
    """Animation frame of each knot; ``None`` for a knot at the time of the one before."""
    frames, last = [], None
    for t in np.asarray(times) / speed:
        frame = int(round(t * FPS))
        frames.append(None if frame == last else frame)
        last = frame
    return frames


@dataclass(frozen=True)
class Motion:
    """What the viewer draws: ``robot`` (a name of :data:`dynamics.ROBOTS`) moving as ``q (K, nq)``
    of ``model`` at ``times (K,)``; per contact ``forces[name] = (frame, force (K, 3))`` drawn
    from the frame's origin (a zero force hides it), with friction pyramids of coefficient
    ``friction`` (None: none); flat ``surfaces`` ``(position, rotation, half size)``; the ground
    at ``ground`` (None: none); reference ``points (n, 3)``; a ``title``."""

    title: str
    robot: str
    model: object
    times: np.ndarray
    q: np.ndarray
    forces: dict
    friction: float | None = None
    ground: float | None = 0.0
    surfaces: tuple = ()
    points: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))


def scene(motion: Motion, speed: float = 1.0, robot: bool = True) -> list:
    """The meshcat commands of ``motion`` (``robot=False``: everything but the robot)."""
    if not (np.isfinite(speed) and speed > 0):
        raise ValueError(f"speed must be a number > 0, got {speed!r}")
    model, q = motion.model, motion.q
    frames = _frames(motion.times, speed)
    animation = Animation(default_framerate=FPS)
    commands = []
    if motion.ground is not None:
        commands.append(SetObject(g.Box([4.0, 4.0, 0.01]), _material((0.55, 0.6, 0.55, 1.0)), _node("ground")))
        commands.append(SetTransform(_transform(p=np.array([0.0, 0.0, motion.ground - 0.005])), _node("ground")))
    for i, (position, rotation, half) in enumerate(motion.surfaces):
        box, node = g.Box([2 * float(x) for x in half]), _node("surfaces", str(i))
        commands.append(SetObject(box, _material((0.6, 0.5, 0.4, 1.0)), node))
        commands.append(SetTransform(_transform(rotation, position - half[2] * rotation[:, 2]), node))

    def animate(node, k, **what):
        if frames[k] is None:
            return
        with animation.at_frame(_At, frames[k]) as frame:
            if "transform" in what:
                frame[node].set_transform(what["transform"])
            if "visible" in what:
                frame[node].set_property("visible", "boolean", bool(what["visible"]))
            if "scale" in what:
                frame[node].set_property("scale", "vector3", [1.0, float(what["scale"]), 1.0])

    for link in parse_urdf(robot_urdf(motion.robot)).links.values() if robot else ():
        if not link.visuals or link.name not in model.frame_names:
            continue
        R, p = dynamics.frame_placement(model, q, link.name)
        for i, visual in enumerate(link.visuals):
            geometry, static = _shape(visual)
            if geometry is None:
                continue
            node = ("robot", link.name, str(i))
            commands += [SetObject(geometry, _material(visual.rgba), _node(*node, "shape"))]
            commands += [SetTransform(static, _node(*node, "shape"))]
            for k in range(len(q)):
                T = _transform(R[k] @ visual.rotation, R[k] @ visual.translation + p[k])
                animate("/".join(node), k, transform=T)

    if motion.friction is not None:
        mu = motion.friction / np.sqrt(2.0)
        h, w = PYRAMID_HEIGHT, mu * PYRAMID_HEIGHT
        corners = np.array([[0, 0, 0], [w, w, h], [-w, w, h], [-w, -w, h], [w, -w, h]], dtype=float)
        faces = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 1]])
    for name, (frame, force) in motion.forces.items():
        _, p = dynamics.frame_placement(model, q[: len(force)], frame)
        commands += [SetObject(g.Cylinder(1.0, 0.008), _material((0.9, 0.2, 0.1, 1.0)), _node("forces", name, "arrow"))]
        commands += [SetTransform(_transform(p=np.array([0.0, 0.5, 0.0])), _node("forces", name, "arrow"))]
        if motion.friction is not None:
            pyramid = g.TriangularMeshGeometry(corners, faces)
            commands += [SetObject(pyramid, _material((0.2, 0.4, 0.9, 0.35)), _node("cones", name))]
        for k in range(len(force)):
            magnitude = float(np.linalg.norm(force[k]))
            on = magnitude > 0
            axis = force[k] / magnitude if on else np.array([0.0, 0.0, 1.0])
            animate(f"forces/{name}", k, transform=_transform(_rotation_from_y(axis), p[k]), visible=on)
            animate(f"forces/{name}", k, scale=max(magnitude * FORCE_SCALE, 1e-6))
            if motion.friction is not None:
                animate(f"cones/{name}", k, transform=_transform(p=p[k]), visible=on)
    if len(motion.points):
        points = np.asarray(motion.points, dtype=float)
        geometry = g.PointsGeometry(points.T, color=np.tile([[1.0], [0.8], [0.0]], len(points)))
        commands.append(SetObject(g.Points(geometry, g.PointsMaterial(size=0.012)), path=_node("references")))
    commands.append(SetProperty("position", CAMERA, NodePath(("Cameras", "default", "rotated", "<object>"))))
    commands.append(SetAnimation(animation, play=True, repetitions=REPETITIONS))
    return commands


def _rotation_from_y(axis):
    """A rotation taking the y axis to the unit ``axis``."""
    v = np.cross([0.0, 1.0, 0.0], axis)
    sin = float(np.linalg.norm(v))
    if sin < 1e-12:  # along y, either way: a half turn about x when opposite
        return np.eye(3) if axis[1] > 0 else np.diag([1.0, -1.0, -1.0])
    return rotation_about(v / sin, float(axis[1]), sin)


def _swing_references(config, model) -> np.ndarray:
    """The planned swing-foot positions ``(n, 3)`` (:func:`problems.tasks.gaits.foot_plan`)."""
    q0, _ = initial_state(config, model)
    start = {f: dynamics.frame_placement(model, q0, f)[1] for f in config.contacts.feet}
    _, swing = foot_plan(config, start)
    return np.array([p for phase in swing for refs in phase.values() for p in refs]).reshape(-1, 3)


def _encoded(commands) -> list:
    return [base64.b64encode(umsgpack.packb(c.lower())).decode("ascii") for c in commands]


_PAGE = """<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>{title}</title>
<style>body {{ margin: 0; }} #viewer {{ width: 100vw; height: 100vh; overflow: hidden; }}</style></head>
<body><div id="viewer"></div>
<script>{viewer}</script>
<script>
var viewer = new MeshCat.Viewer(document.getElementById("viewer"));
for (const command of {commands}) {{
  try {{
    viewer.handle_command_bytearray(Uint8Array.from(atob(command), c => c.charCodeAt(0)));
  }} catch (error) {{
    console.error("liftoff: a scene command failed:", error);
  }}
}}
</script>
</body>
</html>
"""


def html(motion: Motion, speed: float = 1.0, robot: bool = True) -> str:
    """A standalone HTML page of the scene: meshcat's viewer script and the commands."""
    script = (Path(meshcat.__file__).parent / "viewer" / "dist" / "main.min.js").read_text(encoding="utf-8")
    commands = json.dumps(_encoded(scene(motion, speed, robot)))
    return _PAGE.format(title=f"liftoff: {motion.title}", viewer=script, commands=commands)


def export_html(motion: Motion, path, speed: float = 1.0, robot: bool = True) -> Path:
    """Write :func:`html` to ``path`` whole (a temporary file renamed into place)."""
    text = html(motion, speed, robot)
    with atomic(path, "w") as f:
        f.write(text)
    return Path(path)


def show(motion: Motion, speed: float = 1.0):
    """Send the scene to a new meshcat server (its address is printed) and return the
    :class:`meshcat.Visualizer`."""
    visualizer = meshcat.Visualizer()
    for command in scene(motion, speed):
        visualizer.window.send(command)
    return visualizer


def load(path) -> Motion:
    """The :class:`Motion` of a results file: of a gait solve (:func:`problems.studies.runs.load_run`)
    or of an MPC run (:mod:`problems.mpc.results`; a gait or the polishing task, on any plant,
    shown at 50 frames per second of simulated time)."""
    from liftoff.problems.files import check_archive
    from liftoff.problems.mpc.results import load as load_mpc
    from liftoff.problems.studies.runs import load_run

    check_archive(path)
    try:
        run = load_run(path)
    except ReadError as error:
        try:
            mpc = load_mpc(path)
        except ReadError:
            raise error from None  # neither kind of results file: say it as for a solve
        task = mpc["config"].get("task")
        if task not in MPC_MOTIONS or "q" not in mpc or "t" not in mpc:
            raise ReadError(f"{path}: an MPC results file of a task the viewer does not play ({task})") from None
        return _checked(path, MPC_MOTIONS[task], mpc)
    return _checked(path, _solve_motion, run)


def _checked(path, motion_of, data) -> Motion:
    """``motion_of(data)``, a file's content, as a :class:`Motion` with a finite ``q`` of one
    row per time, else :class:`problems.files.ReadError` naming ``path``."""
    try:
        motion = motion_of(data)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:  # a file whose parts do not agree
        why = f"missing {e}" if isinstance(e, KeyError) and not isinstance(e, dynamics.UnknownNameError) else e
        raise ReadError(f"{path}: a results file the viewer cannot play ({why})") from None
    q, times = np.asarray(motion.q), np.asarray(motion.times)
    if q.shape != (len(times), motion.model.nq) or not np.all(np.isfinite(q)) or not np.all(np.isfinite(times)):
        what = f"its motion is not {len(times)} finite configurations of {motion.robot}"
        raise ReadError(f"{path}: a results file the viewer cannot play ({what})")
    return motion


def _solve_motion(run: dict) -> Motion:
    """A gait solve: every knot, the feet's forces at the contact stages, the planned swing feet."""
    config = parse_config(run["config"])
    model = dynamics.load(config.robot)
    contact = run["kinds"] == "contact"
    forces = {foot: (foot, force * contact[:, None]) for foot, force in run["forces"].items()}
    points = _swing_references(config, model)
    return Motion(
        run["summary"].get("name", ""),
        config.robot,
        model,
        run["times"],
        run["q"],
        forces,
        config.contacts.friction,
        0.0,
        (),
        points,
    )


def _every(mpc, period=0.02) -> slice:
    t = mpc["t"]
    return slice(None, None, max(1, int(round(period / (t[1] - t[0])))) if len(t) > 1 else 1)


def _gait_mpc_motion(mpc: dict) -> Motion:
    """A gait MPC run: every 20 ms of the plant's states, each foot's measured force."""
    config = {k: v for k, v in mpc["config"].items() if k not in ("task", "mpc", "plant")}
    gait = parse_config(config)
    every = _every(mpc)
    force = mpc["contact_force"][every]
    forces = {foot: (foot, force[:, i]) for i, foot in enumerate(gait.contacts.feet)}
    ground = float(mpc["measures"].get("ground_m", 0.0))
    return Motion(
        gait.name,
        gait.robot,
        dynamics.load(gait.robot),
        mpc["t"][every],
        mpc["q"][every],
        forces,
        gait.contacts.friction,
        ground,
    )


def _polishing_motion(mpc: dict) -> Motion:
    """A polishing run: every 20 ms of the arm's states, the tool's measured force, the surface
    and the circle."""
    from liftoff.problems.tasks.polishing import TOOL_FRAME, PolishingConfig, make_task

    task = make_task(parse_config(mpc["config"], schema=PolishingConfig))
    every = _every(mpc)
    forces = {"tool": (TOOL_FRAME, mpc["contact_force"][every][:, 0])}
    surface = (task.surface_point(), task.config.surface.axes, np.array([0.3, 0.3, 0.02]))
    circle = task.circle(np.linspace(0.0, 2 * np.pi / max(abs(task.config.circle.angular_velocity), 1e-9), 100))
    name, robot = task.config.name, task.config.robot
    return Motion(name, robot, task.model, mpc["t"][every], mpc["q"][every], forces, None, None, (surface,), circle)


MPC_MOTIONS = {"gait_mpc": _gait_mpc_motion, "polishing": _polishing_motion}
