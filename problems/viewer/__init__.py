"""A results file in meshcat: served live, or exported as one standalone HTML page.

- :mod:`.scene`: the robot, forces, cones and plans of a run as meshcat commands;
- :mod:`.meshes`: the COLLADA meshes of the robots, read into triangles.

Imports :mod:`liftoff.problems.studies.runs` and :mod:`liftoff.problems.mpc.results` (whose
results files it reads), :mod:`liftoff.problems.tasks` and the layers below.
"""

from .scene import export_html, html, load, show
