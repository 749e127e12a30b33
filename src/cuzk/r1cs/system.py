"""An R1CS as data: the matrices A, B, C and the shape of the assignment.

The assignment vector is ``[ONE, public inputs..., aux...]``: ``num_inputs``
counts ONE. A satisfying assignment w has (A·w) ∘ (B·w) = C·w row by row.
As in bellperson, the last ``num_inputs`` rows are the input constraints
``x_i · 0 = 0``, which make every input appear in A.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuzk.algebra.arrays import fr_from_array
from cuzk.algebra.fields import R
from cuzk.algebra.sparse import SparseMatrix
from cuzk.errors import UnsatisfiedError


@dataclass(frozen=True, eq=False)
class R1CS:
    num_inputs: int  # ONE included
    num_aux: int
    a: SparseMatrix
    b: SparseMatrix
    c: SparseMatrix
    constraint_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        rows = {self.a.num_rows, self.b.num_rows, self.c.num_rows}
        if len(rows) != 1:
            raise ValueError(f"A, B, C have different row counts {sorted(rows)}")
        for m in (self.a, self.b, self.c):
            if m.num_cols != self.num_variables:
                raise ValueError(
                    f"a matrix has {m.num_cols} columns, expected {self.num_variables}"
                )
        if self.constraint_names is not None and len(self.constraint_names) != self.num_constraints:
            raise ValueError("one name per constraint")

    @property
    def num_constraints(self) -> int:
        """All rows, the input constraints included (bellperson's ``a.len()``)."""
        return self.a.num_rows

    @property
    def num_variables(self) -> int:
        return self.num_inputs + self.num_aux

    def constraint_name(self, i: int) -> str:
        if self.constraint_names is not None:
            return self.constraint_names[i]
        return f"constraint {i}"

    def tiled(self, k: int) -> R1CS:
        """k copies of this system side by side, sharing its public inputs.

        Copy t's aux variables are renumbered by t·num_aux; every row is
        repeated (the input constraints too). A benchmark device: it makes a
        circuit of k× the constraints whose witness is :meth:`tile_assignment`.
        """
        if k < 1:
            raise ValueError("tile count must be at least 1")
        ni, na = self.num_inputs, self.num_aux
        mats = []
        for m in (self.a, self.b, self.c):
            indices = np.concatenate(
                [np.where(m.indices < ni, m.indices, m.indices + t * na) for t in range(k)]
            )
            indptr = np.concatenate(
                [m.indptr[:-1] + t * m.nnz for t in range(k)] + [np.array([k * m.nnz])]
            )
            mats.append(SparseMatrix(indptr, indices, np.tile(m.coeffs, (k, 1)), ni + k * na))
        return R1CS(ni, k * na, *mats)

    def tile_assignment(self, assignment: np.ndarray, k: int) -> np.ndarray:
        """The assignment of :meth:`tiled`: the inputs once, the aux k times."""
        ni = self.num_inputs
        return np.concatenate([assignment[:ni], *([assignment[ni:]] * k)])

    def a_aux_density(self) -> np.ndarray:
        """Aux variables that occur in A (their A-query points are non-zero)."""
        return self.a.column_mask()[self.num_inputs :]

    def first_unsatisfied(self, assignment: list[int]) -> int | None:
        """Index of the first row with (A·w)(B·w) ≠ C·w, or None."""
        if len(assignment) != self.num_variables:
            raise ValueError(
                f"assignment has {len(assignment)} values, the R1CS {self.num_variables} variables"
            )
        if assignment[0] != 1:
            return 0 if self.num_constraints else None
        av, bv, cv = (m.matvec(assignment) for m in (self.a, self.b, self.c))
        for i, (x, y, z) in enumerate(zip(av, bv, cv, strict=True)):
            if x * y % R != z:
                return i
        return None

    def is_satisfied(self, assignment: list[int] | np.ndarray) -> bool:
        if isinstance(assignment, np.ndarray):
            assignment = fr_from_array(assignment)
        return self.first_unsatisfied(assignment) is None

    def check_satisfied(self, assignment: list[int] | np.ndarray) -> None:
        """Raise :class:`UnsatisfiedError` naming the first failing constraint."""
        if isinstance(assignment, np.ndarray):
            assignment = fr_from_array(assignment)
        if assignment and assignment[0] != 1:
            raise UnsatisfiedError("the assignment's first entry (ONE) is not 1")
        i = self.first_unsatisfied(assignment)
        if i is not None:
            raise UnsatisfiedError(f"unsatisfied: {self.constraint_name(i)} (row {i})")
