"""Reading COLLADA (``.dae``) meshes into triangles, for the viewer.

meshcat hands ``.dae`` files to three.js's loader, which fails on files whose parts disagree
on texture coordinates (ANYmal's), and embeds textures it cannot reach from a standalone
page. The viewer draws triangles instead: :func:`read_dae` collects the ``<triangles>`` and
``<polylist>`` of every geometry instanced in the visual scene, moved by the matrices of the
nodes that hold them, in metres (``<unit meter>``) and z up.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from liftoff.dynamics.spatial import rotation_about


def read_dae(path) -> tuple:
    """``(vertices (n, 3), faces (m, 3))`` of the COLLADA file ``path``."""
    root = ET.parse(path).getroot()
    ns = {"c": root.tag.split("}")[0][1:]} if root.tag.startswith("{") else {"c": ""}

    def find(elem, query):
        return elem.find(query, ns)

    unit = find(root, "c:asset/c:unit")
    scale = float(unit.attrib.get("meter", 1.0)) if unit is not None else 1.0
    up = find(root, "c:asset/c:up_axis")
    up_axis = np.eye(4) if up is None or up.text.strip() == "Z_UP" else _Y_UP_TO_Z_UP
    geometries = {g.attrib.get("id"): g for g in root.iter(f"{{{ns['c']}}}geometry")}
    vertices, faces, count = [], [], 0
    scene = find(root, "c:library_visual_scenes/c:visual_scene")
    for node, matrix in _nodes(scene, up_axis @ np.diag([scale, scale, scale, 1.0]), ns):
        for instance in node.findall("c:instance_geometry", ns):
            geometry = geometries.get(instance.attrib.get("url", "").lstrip("#"))
            if geometry is None:
                continue
            for points, triangles in _triangles(geometry, ns):
                moved = points @ matrix[:3, :3].T + matrix[:3, 3]
                vertices.append(moved)
                faces.append(triangles + count)
                count += len(points)
    if not vertices:
        return np.zeros((0, 3)), np.zeros((0, 3), dtype=int)
    return np.concatenate(vertices), np.concatenate(faces)


_Y_UP_TO_Z_UP = np.array([[1.0, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]])


def _nodes(parent, matrix, ns):
    """Every node below ``parent`` with its placement (its ancestors' matrices times its own)."""
    if parent is None:
        return
    for node in parent.findall("c:node", ns):
        placement = matrix @ _node_matrix(node, ns)
        yield node, placement
        yield from _nodes(node, placement, ns)


def _node_matrix(node, ns):
    out = np.eye(4)
    for elem in node:
        tag = elem.tag.split("}")[-1]
        values = np.array(elem.text.split(), dtype=float) if elem.text else np.zeros(0)
        if tag == "matrix":
            out = out @ values.reshape(4, 4)
        elif tag == "translate":
            out = out @ np.block([[np.eye(3), values[:3, None]], [np.zeros((1, 3)), np.ones((1, 1))]])
        elif tag == "scale":
            out = out @ np.diag([*values[:3], 1.0])
        elif tag == "rotate":
            angle = np.radians(values[3])
            R = rotation_about(values[:3] / np.linalg.norm(values[:3]), np.cos(angle), np.sin(angle))
            out = out @ np.block([[R, np.zeros((3, 1))], [np.zeros((1, 3)), np.ones((1, 1))]])
    return out


def _triangles(geometry, ns):
    """``(points (n, 3), triangles (m, 3))`` of each primitive of a geometry's mesh."""
    mesh = geometry.find("c:mesh", ns)
    if mesh is None:
        return
    sources = {s.attrib["id"]: s for s in mesh.findall("c:source", ns)}
    positions = {}
    for vertices in mesh.findall("c:vertices", ns):
        for inp in vertices.findall("c:input", ns):
            if inp.attrib.get("semantic") == "POSITION":
                array = sources[inp.attrib["source"].lstrip("#")].find("c:float_array", ns)
                text = array.text if array is not None and array.text else ""
                positions[vertices.attrib["id"]] = np.array(text.split(), dtype=float)
    for primitive in list(mesh):
        kind = primitive.tag.split("}")[-1]
        if kind not in ("triangles", "polylist"):
            continue
        inputs = primitive.findall("c:input", ns)
        stride = 1 + max(int(i.attrib.get("offset", 0)) for i in inputs)
        vertex = next((i for i in inputs if i.attrib.get("semantic") == "VERTEX"), None)
        p = primitive.find("c:p", ns)
        if vertex is None or p is None or not p.text:
            continue
        points = positions[vertex.attrib["source"].lstrip("#")].reshape(-1, 3)
        indices = np.array(p.text.split(), dtype=int).reshape(-1, stride)[:, int(vertex.attrib.get("offset", 0))]
        if kind == "triangles":
            triangles = indices.reshape(-1, 3)
        else:  # polygons as fans
            counts = np.array(primitive.find("c:vcount", ns).text.split(), dtype=int)
            starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
            triangles = np.array(
                [
                    [indices[s], indices[s + j], indices[s + j + 1]]
                    for s, n in zip(starts, counts)
                    for j in range(1, n - 1)
                ]
            )
        yield points, triangles.reshape(-1, 3)
