"""User-facing layer of liftoff: command line and benchmarks (YAML problems, MPC and viewer to come).

Nothing imports ``problems``; it imports the layers below it (``dynamics`` for now).
"""
