"""Repeated pieces of a circuit, declared so they can be compiled once.

A :class:`Subcircuit` is a gadget with a fixed shape: a key naming that
shape, the kinds of its ports (the variables it takes from its caller),
and a synthesis function ``synth(cs, ports, hints) -> outputs``. ``hints``
carries the witness data it needs that is not a variable (a Merkle path's
sibling values, an index); it is ``None`` when only the structure is built.

:func:`call` runs a subcircuit. On an ordinary constraint system it simply
runs ``synth`` inline, so the result is exactly bellperson's layout. A
compiling constraint system (``cuzk.synthesis.compile``) instead records one
reference to the subcircuit's compiled form, which is then replicated with
array operations for every call — the same variables and constraints, in
the same order, without synthesizing each copy in Python.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

NUM = "num"
BIT = "bit"


@dataclass(frozen=True)
class Subcircuit:
    key: str  # names the shape: same key ⇒ same constraints and variables
    ports: tuple[str, ...]  # NUM or BIT per port
    synth: Callable[[Any, list, Any], list]

    def __repr__(self) -> str:
        return f"Subcircuit({self.key})"


def call(cs: Any, sub: Subcircuit, ports: Sequence[Any], hints: Any = None) -> list:
    """Synthesize ``sub`` with these port gadgets (AllocatedNum / AllocatedBit)."""
    if len(ports) != len(sub.ports):
        raise ValueError(f"{sub.key} takes {len(sub.ports)} ports, got {len(ports)}")
    hook = getattr(cs, "call_subcircuit", None)
    if hook is None:
        return sub.synth(cs, list(ports), hints)
    return hook(sub, list(ports), hints)
