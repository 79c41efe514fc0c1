"""The static start's terms in one C call: the generalized gravity ``g(q)`` and the Jacobian
``J(q)`` of the velocity rows ``J v`` of every contact slot of a layout
(:class:`ocp.symbolic_stages.Layout`).

The static initial guess (:meth:`ocp.formulation.Formulation.initial_variables`) solves
``S u + J^T f = g(q0)`` for each contact set. An MPC meets contact sets a horizon did not have
before and guesses their variables during an update; the numpy reference
(:meth:`ocp.stages.NumpyStages.static_terms`) costs milliseconds there. This kernel writes the
same equations with :mod:`dynamics.symbolic` (the inverse dynamics at rest, and the derivative
of each slot's velocity rows by ``v``) for the compiled backend
(:meth:`ocp.kernels.CompiledStages.static_terms`).
"""

from __future__ import annotations

import sys

import casadi as ca
import numpy as np

from liftoff.dynamics import codegen
from liftoff.dynamics import symbolic as sx

from .symbolic_stages import contact_key


class StaticTermsKernel:
    """``g(q)`` and ``J(q)`` (module docstring) compiled for the model and the contact slots of
    ``layout``; ``quiet``: no message while compiling. Raises
    :class:`dynamics.codegen.CompileError` without a compiler. ``compile=False`` runs the same
    function in CasADi's interpreter (for checks)."""

    def __init__(self, layout, quiet=False, compile=True):
        model = layout.model
        self.nv, self.m = model.nv, layout.m
        contacts = tuple(s.contact for s in layout.contacts)
        key = {"model": codegen.model_key(model), "contacts": [contact_key(c) for c in contacts]}
        key["source"] = codegen.source_digest(sys.modules[__name__])
        name = f"static_{model.name}"
        if compile:
            kernel = codegen.load(name, key, lambda: _function(model, contacts), quiet)
        else:
            kernel = codegen.Interpreted(_function(model, contacts), name)
        self._x = np.zeros((1, model.nq))
        self._outs = [np.empty((1, n)) for n in kernel.sizes]
        self._call = kernel.bind(self._x, self._outs)

    def __call__(self, q) -> tuple:
        """``(g (nv,), J (m, nv))`` at ``q``: the rows of the slots in the layout's order."""
        self._x[0] = q
        self._call()
        gravity, J = self._outs
        return gravity[0].copy(), J[0].reshape(self.nv, self.m).T.copy()  # J flattened column by column


def _function(model, contacts) -> ca.Function:
    q, v = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv)
    config = sx.configuration(model, q)
    rest = ca.SX.zeros(model.nv)
    gravity = sx.rnea(model, sx.forward(model, config, rest, rest))
    kin = sx.forward(model, config, v, rest)  # the velocity rows read no acceleration
    rows = [sx.contact_rows(model, kin, c, ca.SX.zeros(c.dim)).velocity for c in contacts]
    J = ca.jacobian(ca.vertcat(*rows), v) if rows else ca.SX(0, model.nv)
    return ca.Function("static", [q], [gravity, J])
