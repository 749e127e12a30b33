"""A circuit's counts: what sizes its proving key and a proof's memory."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Counts:
    """A circuit's counts, as a plan needs them (cuzk.engine.memplan.Shape)."""

    num_constraints: int  # rows of A, B, C, input constraints included
    num_inputs: int  # ONE included
    num_aux: int
    nnz: tuple[int, int, int]
    distinct_coefficients: int
    a_points: int
    b_points: int
    circuit_id: str = ""

    @property
    def num_variables(self) -> int:
        return self.num_inputs + self.num_aux

    @property
    def domain(self) -> int:
        return 1 << max(0, (self.num_constraints - 1).bit_length())

    def points(self, query: str) -> int:
        return {
            "h": self.domain - 1,
            "l": self.num_aux,
            "a": self.a_points,
            "b_g1": self.b_points,
            "b_g2": self.b_points,
        }[query]


def counts_of(r1cs, a_points: int, b_points: int, circuit_id: str = "") -> Counts:
    """The counts of a materialised R1CS (distinct coefficients counted over its
    matrices: for the small circuits built in memory, not the mapped 32GiB ones)."""
    import numpy as np

    mats = (r1cs.a, r1cs.b, r1cs.c)
    distinct = len(
        np.unique(np.concatenate([np.asarray(m.coeffs).reshape(-1, 4) for m in mats]), axis=0)
    )
    return Counts(
        num_constraints=r1cs.num_constraints,
        num_inputs=r1cs.num_inputs,
        num_aux=r1cs.num_aux,
        nnz=tuple(int(m.nnz) for m in mats),
        distinct_coefficients=max(1, distinct),
        a_points=a_points,
        b_points=b_points,
        circuit_id=circuit_id,
    )
