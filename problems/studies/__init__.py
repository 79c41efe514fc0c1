"""Offline studies of gait configurations: one solve and its results file, the baselines,
comparisons of formulations and methods, parameter sweeps, and their figures.

- :mod:`.runs`: solve a configuration, its summary and its results file;
- :mod:`.baselines`: FDDP, iLQR, Ipopt and the SQP on a configuration;
- :mod:`.compare`: every method on every configuration and barrier, and the report;
- :mod:`.sweep_spec`, :mod:`.sweep`: a sweep's cases, run on local processes or Dask;
- :mod:`.figures`: the comparison's and the sweep's figures.

Imports :mod:`liftoff.problems.tasks`, :mod:`liftoff.problems.files` and the layers below.
"""
