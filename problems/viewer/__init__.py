"""A results file in meshcat: served live, or exported as one standalone HTML page.

- :mod:`.scene`: the robot, forces, cones and plans of a run as meshcat commands;
- :mod:`.meshes`: the COLLADA meshes of the robots, read into triangles.

Reads the results files of :mod:`liftoff.problems.studies.runs` and
:mod:`liftoff.problems.mpc.results`; imports the floors below.
"""

from .scene import export_html, html, load, show
