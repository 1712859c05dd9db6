"""What the service answers instead of a result: still working, not parsed, unusable, or a
parameter naming nothing that exists.  The routes turn them into 202 / 409 / 422 / 400; the CLI
never sees the first two (it waits)."""
from __future__ import annotations


class Pending(Exception):
    """The work is under way: ask again (``progress`` 0..1)."""

    def __init__(self, message: str, progress: float) -> None:
        super().__init__(message)
        self.message, self.progress = message, progress


class NotParsed(Exception):
    """A read-only request named workers that are not parsed yet (nothing was started)."""

    def __init__(self, message: str, workers: list | None = None) -> None:
        super().__init__(message)
        self.message, self.workers = message, workers


class Unusable(Exception):
    """A worker that cannot be compared: discovery or its parse failed (the text says why)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadParameter(ValueError):
    """A request names something that does not exist: a step the worker does not hold, a worker or
    run that is not listed.  The routes answer 400 naming ``parameter`` and the valid ``choices``;
    it is checked before any job starts, so it is never remembered as a job's failure.  (A
    ValueError, so the CLI's handling of bad options keeps showing its text.)"""

    def __init__(self, parameter: str, message: str, choices: list | None = None) -> None:
        super().__init__(message)
        self.parameter, self.message = parameter, message
        self.choices = list(choices) if choices is not None else None
