"""Inputs with an optional leading batch shape.

Every algorithm accepts arrays of shape ``(dim,)`` or ``(..., dim)``; inputs are broadcast
against each other over the leading axes, flattened to ``(B, dim)`` for the computation,
and outputs get the leading shape back (none for unbatched inputs).
"""

from __future__ import annotations

import numpy as np

from .errors import DimensionError


def batch(*specs):
    """``specs``: ``(name, array, dim)`` triples -> (list of ``(B, dim)`` arrays, batch shape)."""
    arrays = [checked_vectors(name, x, dim) for name, x, dim in specs]
    try:
        shape = np.broadcast_shapes(*(x.shape[:-1] for x in arrays))
    except ValueError:
        got = ", ".join(f"{name} {x.shape}" for (name, _, _), x in zip(specs, arrays))
        raise DimensionError(f"batch shapes do not match: {got}") from None
    flat = [np.broadcast_to(x, shape + x.shape[-1:]).reshape(-1, x.shape[-1]) for x in arrays]
    return flat, shape


def checked_vectors(name, x, dim) -> np.ndarray:
    """``x`` as a float array of shape ``(dim,)`` or ``(..., dim)``; :class:`DimensionError`
    (about the input ``name``) otherwise."""
    try:
        x = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise DimensionError(f"{name}: expected an array of {dim} numbers, got {type(x).__name__}") from None
    if x.ndim == 0 or x.shape[-1] != dim:
        raise DimensionError(f"{name}: expected shape ({dim},) or (B, {dim}), got {x.shape}")
    return x


def unbatch(x, shape):
    """Give a ``(B, ...)`` result the leading ``shape`` of the inputs."""
    return x.reshape(shape + x.shape[1:])
