"""Errors a user can cause when building or querying a model."""


class ModelError(ValueError):
    """A robot description that cannot be loaded (unknown robot, malformed URDF, bad lock)."""


class DimensionError(ValueError):
    """An array whose shape does not match the model."""


class UnknownNameError(KeyError):
    """A frame or joint name the model does not have."""

    def __str__(self):  # KeyError quotes its message; show it as written
        return str(self.args[0])
