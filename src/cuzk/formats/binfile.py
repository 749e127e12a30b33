"""The iden3 binary container shared by snarkjs's .r1cs, .wtns, .zkey and .ptau.

Layout (all integers little-endian)::

    magic        4 bytes ("r1cs", "wtns", "zkey", "ptau")
    version      u32
    n_sections   u32
    n_sections × { id u32, size u64, body[size] }

Sections are found by their id, not by their position: snarkjs itself reads
them that way, so a file whose sections come in another order is still a valid
file and reads the same. What is not valid, and is reported here with the
file's name: a wrong magic, an unsupported version, a section table that runs
past the end of the file (a truncated file), bytes left over after the last
section, a required section that is missing or appears twice, and a section
whose size differs from what its header implies.

The file is memory-mapped: opening it costs only the section scan, and each
section is a zero-copy ``memoryview``-backed numpy array of bytes.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cuzk.errors import InputError

_HEADER = struct.Struct("<4sII")
_SECTION = struct.Struct("<IQ")


@dataclass(frozen=True)
class Section:
    id: int
    offset: int  # of the body, from the start of the file
    size: int


class BinFile:
    """A parsed section table over a memory-mapped file."""

    def __init__(self, path: str | os.PathLike, magic: bytes, max_version: int) -> None:
        self.path = Path(path)
        self.name = str(path)
        try:
            size = self.path.stat().st_size
        except OSError as e:
            raise InputError(self.name, "", f"cannot be opened: {e.strerror or e}") from e
        if size < _HEADER.size:
            raise InputError(
                self.name, "header", f"{size} bytes: too short to be a {magic.decode()} file"
            )
        self.data = np.memmap(self.path, dtype=np.uint8, mode="r")
        got_magic, version, n_sections = _HEADER.unpack_from(self.data, 0)
        if got_magic != magic:
            raise InputError(
                self.name,
                "magic",
                f"starts with {got_magic!r}, a {magic.decode()} file starts with {magic!r}",
            )
        if not 1 <= version <= max_version:
            raise InputError(
                self.name,
                "version",
                f"format version {version} is not supported (1..{max_version})",
            )
        self.version = version
        self.sections: dict[int, list[Section]] = {}
        pos = _HEADER.size
        for k in range(n_sections):
            if pos + _SECTION.size > size:
                raise InputError(
                    self.name,
                    f"section table entry {k}",
                    f"the file ends at byte {size}, inside the table of {n_sections} "
                    "sections: the file is truncated",
                )
            sid, ssize = _SECTION.unpack_from(self.data, pos)
            pos += _SECTION.size
            if pos + ssize > size:
                raise InputError(
                    self.name,
                    f"section {sid}",
                    f"declares {ssize} bytes at offset {pos} but only {size - pos} remain: "
                    "the file is truncated",
                )
            self.sections.setdefault(sid, []).append(Section(sid, pos, ssize))
            pos += ssize
        if pos != size:
            raise InputError(
                self.name,
                "end",
                f"{size - pos} bytes follow the last of {n_sections} sections "
                "(a corrupted section table)",
            )

    def section(self, sid: int, what: str) -> Section:
        """The one section with this id; ``what`` names it in errors."""
        found = self.sections.get(sid)
        if not found:
            raise InputError(self.name, f"section {sid} ({what})", "missing")
        if len(found) > 1:
            raise InputError(
                self.name, f"section {sid} ({what})", f"appears {len(found)} times, expected once"
            )
        return found[0]

    def body(self, sid: int, what: str, expected_size: int | None = None) -> np.ndarray:
        """The bytes of a section, checked against an expected size when given."""
        s = self.section(sid, what)
        if expected_size is not None and s.size != expected_size:
            raise InputError(
                self.name,
                f"section {sid} ({what})",
                f"{s.size} bytes, the header implies {expected_size}",
            )
        return self.data[s.offset : s.offset + s.size]

    def reader(self, sid: int, what: str) -> SectionReader:
        s = self.section(sid, what)
        return SectionReader(self, s, what)


class SectionReader:
    """Sequential little-endian reads inside one section, bounds-checked."""

    def __init__(self, f: BinFile, s: Section, what: str) -> None:
        self.f = f
        self.s = s
        self.what = what
        self.pos = s.offset
        self.end = s.offset + s.size

    def _take(self, n: int, field: str) -> np.ndarray:
        if self.pos + n > self.end:
            raise InputError(
                self.f.name,
                f"section {self.s.id} ({self.what}): {field}",
                f"needs {n} bytes but the section ends {self.end - self.pos} bytes later",
            )
        out = self.f.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def u32(self, field: str) -> int:
        return int.from_bytes(self._take(4, field).tobytes(), "little")

    def u64(self, field: str) -> int:
        return int.from_bytes(self._take(8, field).tobytes(), "little")

    def integer(self, n8: int, field: str) -> int:
        return int.from_bytes(self._take(n8, field).tobytes(), "little")

    def raw(self, n: int, field: str) -> np.ndarray:
        return self._take(n, field)

    def finish(self) -> None:
        """The section must have been read exactly to its end."""
        if self.pos != self.end:
            raise InputError(
                self.f.name,
                f"section {self.s.id} ({self.what})",
                f"{self.end - self.pos} unexpected bytes after its contents",
            )


def write_binfile(path: str | os.PathLike, magic: bytes, version: int, sections) -> None:
    """Write a container from (id, bytes) pairs, in the given order."""
    with open(path, "wb") as f:
        f.write(_HEADER.pack(magic, version, len(sections)))
        for sid, body in sections:
            body = bytes(body)
            f.write(_SECTION.pack(sid, len(body)))
            f.write(body)
