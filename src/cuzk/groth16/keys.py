"""Groth16 keys in bellperson's layout.

The proving key holds five queries of affine points (numpy arrays, see
:mod:`cuzk.algebra.arrays`):

- ``h``: m − 1 points τ^i·Z(τ)/δ·G1 (m the evaluation domain size);
- ``l``: one point per aux variable, (β·A_j(τ) + α·B_j(τ) + C_j(τ))/δ·G1;
- ``a``: A_j(τ)·G1 for every input, then for each aux variable that occurs in A;
- ``b_g1`` / ``b_g2``: B_j(τ)·G1 / ·G2 for each input, then each aux
  variable, that occurs in B.

Dropping the variables absent from A or B (whose points would be at
infinity) is what bellperson's parameter files do; the prover selects the
matching scalars with the same density masks, computed from the R1CS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cuzk.algebra.arrays import to_zcash
from cuzk.algebra.curves import Affine
from cuzk.backends.base import PointReader

# The five queries of a proving key, in bellperson's file order.
QUERIES = ("h", "l", "a", "b_g1", "b_g2")


def query_group(query: str) -> str:
    return "G2" if query == "b_g2" else "G1"


def point_bytes(query: str) -> int:
    """Bytes of one uncompressed point of the query (96 in G1, 192 in G2)."""
    return 192 if query == "b_g2" else 96


@dataclass(frozen=True)
class VerifyingKey:
    alpha_g1: Affine
    beta_g1: Affine
    beta_g2: Affine
    gamma_g2: Affine
    delta_g1: Affine
    delta_g2: Affine
    ic: tuple[Affine, ...]  # one per input, ONE included

    @property
    def num_inputs(self) -> int:
        """Public inputs a proof is verified against (ONE not counted)."""
        return len(self.ic) - 1


@dataclass(frozen=True, eq=False)
class ProvingKey:
    vk: VerifyingKey
    h: np.ndarray  # (m - 1, 2, 6)
    l: np.ndarray  # (num_aux, 2, 6)
    a: np.ndarray  # (inputs + A-dense aux, 2, 6)
    b_g1: np.ndarray  # (B-dense inputs + B-dense aux, 2, 6)
    b_g2: np.ndarray  # (same count, 2, 2, 6)

    @property
    def domain_size(self) -> int:
        return len(self.h) + 1

    def nbytes(self) -> int:
        return sum(x.nbytes for x in (self.h, self.l, self.a, self.b_g1, self.b_g2))


class KeySource(Protocol):
    """A proving key as five streams of points: a bellperson ``.params`` file
    (:class:`cuzk.formats.bellperson.MappedParams`), a development key made as
    it is read (:class:`cuzk.groth16.setup.DevParams`), or arrays in memory
    (:class:`ArraySource`). :func:`cuzk.groth16.prover.load` prepares a key
    from any of them, a chunk at a time, so no key is ever whole in host
    memory on its way to a device.
    """

    name: str  # what the key is, for messages: its file, or "development key …"
    vk: VerifyingKey

    def count(self, query: str) -> int:
        """Points in one query."""
        ...

    def reader(self, query: str) -> PointReader:
        """The query's points, a chunk at a time."""
        ...

    def where(self, query: str, index: int) -> str:
        """Where point ``index`` of a query lives, for a message ("byte offset 4096")."""
        ...


class ArraySource:
    """A :class:`ProvingKey` in memory as a :class:`KeySource` (tests, benchmarks,
    and writing a key as a .params file)."""

    def __init__(self, pk: ProvingKey, name: str = "proving key") -> None:
        self.pk = pk
        self.name = name
        self.vk = pk.vk

    def count(self, query: str) -> int:
        return len(getattr(self.pk, query))

    def reader(self, query: str) -> PointReader:
        arr = getattr(self.pk, query)
        group = query_group(query)

        def read(lo: int, hi: int, out: np.ndarray) -> None:
            out[...] = to_zcash(arr[lo:hi], group)

        return read

    def where(self, query: str, index: int) -> str:
        return f"point {index} of the in-memory {query} query"
