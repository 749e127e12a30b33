"""Client identities: who a call comes from, by the bearer token it carries.

``[daemon] auth_token_file`` holds either one token (the whole file, as
before: every client is the one anonymous client, who sees every job) or
several named entries, one a line::

    # name   token                              role
    curio-a  4c1d0e6a3b0f4e0f9a9d1c2b3a4f5e6d
    curio-b  9f8e7d6c5b4a39281706f5e4d3c2b1a0
    ops      0a1b2c3d4e5f60718293a4b5c6d7e8f9   admin

A named client sees, awaits and cancels its own jobs only, and its request
ids are its own (``cuzk.engine.jobs``); an ``admin`` entry sees and cancels
every job. Calls on a unix socket (guarded by its file permissions, no
token) act as an admin. Tokens are compared in constant time, against every
entry.
"""

from __future__ import annotations

import hmac
import re
from dataclasses import dataclass

from cuzk.errors import InputError

MIN_TOKEN = 16
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class Identity:
    name: str  # "": the anonymous client (one token, or none)
    admin: bool = False

    @property
    def sees(self) -> str | None:
        """Whose jobs it may see and cancel: its own name, or None for every job."""
        return None if self.admin else self.name


# Without named entries every call is this one: it sees every job, as before.
ANONYMOUS = Identity("", admin=True)


@dataclass(frozen=True)
class Tokens:
    entries: tuple[tuple[bytes, Identity], ...]

    @property
    def named(self) -> bool:
        return any(ident.name for _, ident in self.entries)

    def match(self, authorization: str | None) -> Identity | None:
        """The identity an ``authorization`` value (``Bearer <token>``) names; None
        when it names none. Every entry is compared, each in constant time."""
        if authorization is None:
            return None
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() != "bearer":
            return None
        sent = value.strip().encode()
        found = None
        for token, ident in self.entries:
            if hmac.compare_digest(sent, token) and found is None:
                found = ident
        return found


def parse_tokens(text: str, source: str = "auth_token_file") -> Tokens:
    """The tokens of a token file's text: one token, or named entries (see above).
    InputError naming the line for a malformed entry, a short or repeated token."""
    whole = text.strip()
    if whole and not any(ch.isspace() for ch in whole):  # one token: as before
        if len(whole) < MIN_TOKEN:
            raise InputError(
                source, "auth_token_file", f"the token must be at least {MIN_TOKEN} characters"
            )
        return Tokens(((whole.encode(), ANONYMOUS),))
    entries: list[tuple[bytes, Identity]] = []
    names: set[str] = set()
    tokens: set[bytes] = set()
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        where = f"auth_token_file line {n}"
        if len(fields) not in (2, 3) or (len(fields) == 3 and fields[2] != "admin"):
            raise InputError(source, where, "expected: NAME TOKEN, or NAME TOKEN admin")
        name, token = fields[0], fields[1]
        if not _NAME.fullmatch(name):
            raise InputError(
                source, where, f"{name[:40]!r} is not a name (letters, digits, . _ -; 64 at most)"
            )
        if len(token) < MIN_TOKEN:
            raise InputError(source, where, f"the token must be at least {MIN_TOKEN} characters")
        if name in names:
            raise InputError(source, where, f"{name} is named twice")
        if token.encode() in tokens:
            raise InputError(source, where, "the same token as an earlier entry")
        names.add(name)
        tokens.add(token.encode())
        entries.append((token.encode(), Identity(name, admin=len(fields) == 3)))
    if not entries:
        raise InputError(source, "auth_token_file", "holds no token")
    return Tokens(tuple(entries))
