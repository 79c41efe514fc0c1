"""COLLADA meshes read into triangles: the primitives (triangles, polygons as fans), the node
transforms that hold them (nested, matrix and translate), the unit and the up axis."""

from __future__ import annotations

import numpy as np
import pytest

from liftoff.dynamics.robots import robots_dir
from liftoff.problems.viewer.meshes import read_dae

DAE = """<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit name="millimetre" meter="0.001"/><up_axis>{up}</up_axis></asset>
  <library_geometries>
    <geometry id="shape"><mesh>
      <source id="pos"><float_array id="pos-array" count="15">0 0 0 1 0 0 1 1 0 0 1 0 0 0 1</float_array></source>
      <vertices id="verts"><input semantic="POSITION" source="#pos"/></vertices>
      <triangles count="1"><input semantic="VERTEX" source="#verts" offset="0"/>
        <input semantic="NORMAL" source="#n" offset="1"/><p>0 9 1 9 4 9</p></triangles>
      <polylist count="1"><input semantic="VERTEX" source="#verts" offset="0"/>
        <vcount>4</vcount><p>0 1 2 3</p></polylist>
    </mesh></geometry>
  </library_geometries>
  <library_visual_scenes><visual_scene id="scene">
    <node id="outer"><matrix>2 0 0 0 0 2 0 0 0 0 2 0 0 0 0 1</matrix>
      <node id="inner"><translate>10 0 0</translate><instance_geometry url="#shape"/></node>
    </node>
  </visual_scene></library_visual_scenes>
</COLLADA>
"""


@pytest.mark.parametrize("up", ["Z_UP", "Y_UP"])
def test_a_small_file(tmp_path, up):
    path = tmp_path / "shape.dae"
    path.write_text(DAE.format(up=up))
    vertices, faces = read_dae(path)
    points = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1]], dtype=float)
    expected = 0.001 * 2 * (points + [10, 0, 0])  # millimetres, scaled by the outer node, moved by the inner
    if up == "Y_UP":  # y up becomes z up: (x, y, z) -> (x, -z, y)
        expected = expected[:, [0, 2, 1]] * [1, -1, 1]
    np.testing.assert_allclose(vertices, np.concatenate((expected, expected)), atol=1e-15)
    np.testing.assert_array_equal(faces, [[0, 1, 4], [5, 6, 7], [5, 7, 8]])  # the triangle, then the quad's fan


def test_anymal_foot_is_metres_sized():
    vertices, faces = read_dae(robots_dir() / "anymal_b_simple_description/meshes/foot/anymal_foot.dae")
    assert len(faces) > 1000 and faces.max() < len(vertices)
    size = vertices.max(axis=0) - vertices.min(axis=0)
    assert 0.03 < size.min() and size.max() < 0.5  # a foot and its shank, in metres
