"""Is an assignment a solution of an R1CS? Vectorised over all rows.

Same answer as :meth:`cuzk.r1cs.R1CS.first_unsatisfied`, with the row loop
replaced by object-array arithmetic (a few seconds for millions of rows).
"""

from __future__ import annotations

import numpy as np

from cuzk.algebra.arrays import fr_from_array
from cuzk.algebra.fields import R
from cuzk.algebra.sparse import SparseMatrix
from cuzk.r1cs import R1CS
from cuzk.synthesis.compile import CompiledCircuit, entries_for, flatten


def _matvec(m: SparseMatrix, w: np.ndarray) -> np.ndarray:
    out = np.zeros(m.num_rows, dtype=object)
    if m.nnz == 0:
        return out
    coeffs = np.empty(m.nnz, dtype=object)
    coeffs[:] = m.coeff_ints()
    prod = coeffs * w[m.indices]
    starts = m.indptr[:-1]
    nonempty = m.indptr[1:] > starts
    out[nonempty] = np.add.reduceat(prod, starts[nonempty])
    return out


def unsatisfied_rows(r1cs: R1CS, assignment: np.ndarray) -> np.ndarray:
    """Indices of the rows with (A·w)(B·w) ≠ C·w (``assignment`` as (n, 4) limbs)."""
    w = np.empty(len(assignment), dtype=object)
    w[:] = fr_from_array(assignment)
    a, b, c = (_matvec(m, w) for m in (r1cs.a, r1cs.b, r1cs.c))
    return np.nonzero((a * b - c) % R)[0]


def is_satisfied(r1cs: R1CS, assignment: np.ndarray) -> bool:
    return (
        int(assignment[0, 0]) == 1
        and not assignment[0, 1:].any()
        and (len(unsatisfied_rows(r1cs, assignment)) == 0)
    )


# --------------------------------------------------------------------------
# Straight from a compiled circuit (no CSR): per template block, all instances
# --------------------------------------------------------------------------


def assignment_ints(assignment: np.ndarray) -> np.ndarray:
    """(n, 4) limbs → object array of ints (values below 2^64 converted in C)."""
    w = assignment[:, 0].astype(object)
    big = np.nonzero(assignment[:, 1:].any(axis=1))[0]
    if len(big):
        w[big] = fr_from_array(assignment[big])
    return w


def _lc_values(inst, m: int, n_in: int, w: np.ndarray, table: np.ndarray) -> np.ndarray:
    """(instances, block rows) values of matrix m's linear combinations."""
    b = inst.block
    k = len(inst.row_base)
    out = np.zeros((k, b.num_rows), dtype=object)
    if not b.nnz[m]:
        return out
    cols, ids = entries_for(inst, m, n_in)
    prod = table[ids] * w[cols]
    ptr = b.indptr[m]
    starts = ptr[:-1]
    nonempty = ptr[1:] > starts
    out[:, nonempty] = np.add.reduceat(prod, starts[nonempty], axis=1)
    return out


def compiled_unsatisfied_rows(
    compiled: CompiledCircuit, assignment: np.ndarray, max_entries: int = 1 << 23
) -> np.ndarray:
    """Rows of the compiled circuit a full assignment does not satisfy.

    Walks every block of every template for all its instances at once
    (chunked to ``max_entries`` gathered values), so the A, B, C matrices are
    never materialised. Input constraints (x·0 = 0) always hold and are skipped.
    """
    n_in = compiled.num_inputs
    w = assignment_ints(assignment)
    table = np.empty(len(compiled.coefficients.values), dtype=object)
    table[:] = compiled.coefficients.values
    bad: list[np.ndarray] = []
    for inst in flatten(compiled.top, n_in, compiled.copies):
        for part in inst.runs(sum(inst.block.nnz), max_entries):
            a, b, c = (_lc_values(part, m, n_in, w, table) for m in range(3))
            ii, rr = np.nonzero((a * b - c) % R)
            if len(ii):
                bad.append(part.row_base[ii] + rr)
    return np.unique(np.concatenate(bad)) if bad else np.zeros(0, dtype=np.int64)
