"""The constant inputs of a horizon's groups gathered from its plan, once per horizon structure.

A legged builder's horizon numbers are copies of its plan's numbers: each group's cost terms
stack the references of its stages (the state, the swing feet, the CoM), its contacts the
footholds, its time steps the plan's; the rest (weights, gains, neutral slots) is fixed by the
structure. The compiled kernels' constant inputs made of them
(:meth:`ocp.kernels.CompiledStages.static_inputs`, the terminal cost's
:meth:`~ocp.kernels.CompiledStages.terminal_constants`) are then, entry by entry, a constant, a
number of the plan, or one plus a constant (a touchdown's reference: the foothold lowered). A
:class:`RowGather` finds which, for one structure, from those inputs at three plans:

- zero: the constants ``c``;
- the numbers ``+-1, +-2, ...`` (signs alternating, one per number of the plan): an entry that
  moved by the ``j``-th of them is ``c`` plus the plan's ``j``-th number;
- a horizon's own plan: every entry of the gather equals the inputs made the general way, bit
  for bit, or there is no gather (an input that is not a copy: a torque filter's gain, a weight
  scaled by the time step).

Each update of a structure that has one then writes its inputs with one gather for all its
groups (:meth:`RowGather.__call__`) instead of making its numbers' cost terms and their columns. A
copy whose constant is zero is written as the number itself (not ``0 + x``: the sign of a zero
is kept); one with a constant as ``c + x``, which is what the general way computes (``x - d``
is ``x + (-d)`` in floating point). The numbers of the plan are the horizon's; a disturbance is
not one of them: numbers with a disturbance take the general way."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class _Entries:
    """One block of inputs ``shape``: its ``constant`` entries (flat), the entries ``copied``
    from the plan's numbers ``sources``, and those ``shifted`` (the constant plus the plan's
    ``shifted_sources``)."""

    shape: tuple
    constant: np.ndarray
    copied: np.ndarray
    sources: np.ndarray
    shifted: np.ndarray
    shifted_sources: np.ndarray


class RowGather:
    """Per group of ``groups`` (of the formulation ``stages``), then the terminal cost, the
    :class:`_Entries` of its constant inputs (module docstring), kept as the entries of all of
    them one after the other."""

    def __init__(self, blocks):
        ends = np.cumsum([b.constant.size for b in blocks]).tolist()
        self._spans = [(end - b.constant.size, end, b.shape) for b, end in zip(blocks, ends)]
        starts = [start for start, _, _ in self._spans]
        self._constant = np.concatenate([b.constant for b in blocks])
        self._copied = np.concatenate([b.copied + start for b, start in zip(blocks, starts)])
        self._sources = np.concatenate([b.sources for b in blocks])
        self._shifted = np.concatenate([b.shifted + start for b, start in zip(blocks, starts)])
        self._shifted_sources = np.concatenate([b.shifted_sources for b in blocks])

    @classmethod
    def of(cls, stages, groups, numbers, own) -> RowGather | None:
        """The gather of the horizons of the structure of ``numbers``
        (:class:`.aligned.HorizonNumbers`, their plan and ``numbers_of``), grouped in ``groups``
        by the kernels of ``stages`` (a :class:`ocp.kernels.CompiledStages`), ``own`` the
        constant inputs of ``numbers`` made the general way (:func:`inputs`); None where the
        inputs are not copies of the plan (module docstring)."""
        n = numbers.plan.size
        tags = np.arange(1.0, n + 1) * np.where(np.arange(n) % 2, -1.0, 1.0)
        try:
            with np.errstate(all="ignore"):  # a probe's numbers that no horizon has: no gather, not an error
                zero, tagged = (inputs(stages, groups, numbers, p) for p in (np.zeros(n), tags))
        except (ValueError, ArithmeticError):  # numbers refused (a weight scaled by a negative time step)
            return None
        blocks = []
        for c, t in zip(zero, tagged):
            moved = np.flatnonzero(c != t)
            d = np.abs(t.ravel()[moved] - c.ravel()[moved])
            if not np.isfinite(d).all():
                return None
            j = d.round().astype(int) - 1
            if ((j < 0) | (j >= n)).any() or not np.array_equal(c.ravel()[moved] + tags[j], t.ravel()[moved]):
                return None
            constant = c.ravel().copy()
            copy = constant[moved] == 0.0
            blocks.append(_Entries(c.shape, constant, moved[copy], j[copy], moved[~copy], j[~copy]))
        gather = cls(tuple(blocks))
        if any(not np.array_equal(a, b) for a, b in zip(gather(numbers.plan), own)):
            return None
        return gather

    def __call__(self, plan) -> list:
        """The constant inputs of each group, then of the terminal cost ``(1, n)``, of the plan
        ``plan``: views of one array."""
        out = self._constant.copy()
        out[self._copied] = plan[self._sources]
        out[self._shifted] += plan[self._shifted_sources]
        return [out[start:end].reshape(shape) for start, end, shape in self._spans]


def inputs(stages, groups, numbers, plan=None) -> list:
    """The constant inputs of ``groups`` and of the terminal cost ``(1, n)`` of ``numbers``
    (those of ``plan``, if given) made the general way."""
    own, terminal = numbers.numbers_of(plan) if plan is not None else (numbers.groups, numbers.terminal)
    rows = [stages.static_inputs(group, g, numbers.disturbance) for group, g in zip(groups, own, strict=True)]
    return rows + [stages.terminal_constants(terminal)[None]]
