"""The project's exception types.

Every error a user can cause carries enough context to act on: which file
(or request), which field, and what is wrong with it.
"""

from __future__ import annotations


class CuzkError(Exception):
    """Base of every error raised on purpose by cuzk."""


class InputError(CuzkError):
    """Bad input: a file, message or argument that cannot be used as given.

    ``source`` names the file or request, ``field`` the part of it (a JSON
    path, a section and index, an argument name), ``problem`` what is wrong.
    """

    def __init__(self, source: str, field: str, problem: str) -> None:
        self.source = source
        self.field = field
        self.problem = problem
        where = f"{source}: {field}" if field else source
        super().__init__(f"{where}: {problem}")

    def __reduce__(self):  # pickled whole: raised in a synthesis worker process
        return (type(self), (self.source, self.field, self.problem))


class EncodingError(CuzkError):
    """A point or field element whose bytes are not a valid encoding.

    ``reason`` is one of the constants below, so callers and tests can tell
    the classes apart without parsing the message.
    """

    LENGTH = "length"
    FLAGS = "flags"
    NON_CANONICAL = "non-canonical"
    OFF_CURVE = "off-curve"
    NOT_IN_SUBGROUP = "not-in-subgroup"

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.reason, str(self)))


class BadPoint(CuzkError):
    """A point of a stream of key points that a backend refused while loading it.

    ``index`` counts from the first point of the stream (one query of a key),
    ``reason`` is one of :class:`EncodingError`'s reasons; the loader that
    knows the file turns it into an :class:`InputError` naming file and offset.
    """

    def __init__(self, index: int, reason: str, problem: str) -> None:
        self.index = index
        self.reason = reason
        self.problem = problem
        super().__init__(f"point {index}: {problem}")

    def __reduce__(self):
        return (type(self), (self.index, self.reason, self.problem))


class UnsatisfiedError(CuzkError):
    """A witness that does not satisfy its constraint system."""


class SynthesisError(CuzkError):
    """A circuit that cannot be built as asked (missing value, bad shape)."""


class VerificationError(CuzkError):
    """A proof that was produced but did not verify: never returned to a client."""


class ResourceError(CuzkError):
    """A reservation (host memory, VRAM) that cannot fit in its budget."""


class DeviceError(CuzkError):
    """A device that failed (a CUDA error, a lost GPU), as opposed to the work it was
    given: the engine retries that work on another device and takes the device out
    of service until a probe passes. ``ordinal`` names the device."""

    def __init__(self, ordinal: int, problem: str) -> None:
        self.ordinal = ordinal
        self.problem = problem
        super().__init__(f"GPU {ordinal}: {problem}")

    def __reduce__(self):
        return (type(self), (self.ordinal, self.problem))
