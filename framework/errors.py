"""The minsep exception hierarchy.

Every error minsep raises on purpose derives from :class:`MinsepError`, so callers can catch the
whole family. Configuration problems are also :class:`ValueError` so that generic code that
expects ``ValueError`` for bad arguments keeps working.
"""

from __future__ import annotations


class MinsepError(Exception):
    """Root of every error raised on purpose by minsep."""


class ConfigurationError(MinsepError, ValueError):
    """A parameter is outside its allowed range; raised at construction time.

    The message always names the parameter, the offending value and the allowed range;
    ``parameter`` holds the parameter's name when the raiser knows it (the CLI maps it to its
    option, e.g. ``min_sep`` to ``--min-sep``).
    """

    def __init__(self, message: str = "", *, parameter: str | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter


class InfeasibleError(ConfigurationError):
    """Parameters are individually valid but jointly infeasible (e.g. ``p0 > 1/b``)."""


class NotAccountableError(MinsepError, TypeError):
    """An accountant was asked about a (scheme, strategy) pair it has no route for."""


class CalibrationError(MinsepError):
    """Noise calibration could not certify any candidate noise multiplier."""


class BackendUnavailableError(MinsepError, RuntimeError):
    """The requested array backend (e.g. cupy) is not installed or has no usable device."""


class UnknownNameError(MinsepError, KeyError):
    """A registry lookup failed; the message suggests close names."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if self.args else ""


class CheckpointError(MinsepError):
    """A checkpoint is corrupt, was written for other parameters, or is in use by another run."""


class SchedulerUnreachableError(MinsepError, ConnectionError):
    """The Dask scheduler named by ``scheduler`` / ``--scheduler`` cannot be reached."""


class WorkersLostError(MinsepError, RuntimeError):
    """The workers computing a run were lost (a killed pool worker beyond the retries, a lost
    Dask scheduler); the message says what was tried."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (a batch scheduler's or ``timeout``'s stop), raised in the main thread like
    Ctrl-C's KeyboardInterrupt so that the same code saves the checkpoint (exit status 143)."""
