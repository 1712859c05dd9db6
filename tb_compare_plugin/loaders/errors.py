"""The one exception loaders raise: a problem with a named file, phrased for a user."""
from __future__ import annotations


class LoadError(Exception):
    """``LoadError(path, problem)`` prints as "<path>: <problem>"."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")

    def __reduce__(self):  # survives the trip back from a parser process
        return (type(self), (self.path, self.problem))
