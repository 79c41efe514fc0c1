"""The stage backends by name: ``compiled`` kernels (:class:`ocp.kernels.CompiledStages`) or
the ``numpy`` reference (:class:`ocp.stages.NumpyStages`), the one place that knows both."""

from __future__ import annotations

import sys

from liftoff.dynamics.codegen import CompileError

from .kernels import CompiledStages
from .stages import NumpyStages, Stages

BACKENDS = ("compiled", "numpy")


def make_stages(ocp, backend="compiled", nonlifted=False, dynamics_options=None, quiet=False) -> Stages:
    """The stage evaluation of ``ocp`` by ``backend``: ``compiled`` kernels (built or loaded
    from the cache; ``nonlifted`` adds the forward-dynamics kernel; ``quiet``: no message while
    compiling), falling back to ``numpy`` with one warning line on stderr when they cannot be
    compiled; or the ``numpy`` reference."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
    if nonlifted and any(stage.sliding for stage in ocp.stages):
        raise ValueError(
            "sliding friction needs the lifted formulation: the non-lifted one's forward dynamics has no such force"
        )
    if backend == "compiled":
        try:
            return CompiledStages(ocp, forward=nonlifted, quiet=quiet)
        except CompileError as e:
            print(f"liftoff: warning: {e}; using the numpy backend", file=sys.stderr)
    return NumpyStages(ocp, dynamics_options)
