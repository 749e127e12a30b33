"""The public inputs an assignment carries, checked against the ones its proof
will be verified with.

An assignment's row 0 is the constant one and rows ``1 … n`` are the ``n``
public inputs. A witness made from a request's vanilla proofs carries the
inputs those proofs answer; they must be the inputs derived from the request
itself (its challenges and commitments), or the proof would verify against
neither. Every path that makes a witness (on the host, on a device) checks
it here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuzk.algebra.arrays import fr_to_array
from cuzk.errors import InputError


def input_rows(assignment: np.ndarray, n: int) -> np.ndarray:
    """Rows ``1 … n`` of an assignment: the public inputs it carries."""
    return assignment[1 : 1 + n]


def check_public_inputs(got: np.ndarray, inputs: Sequence[int], source: str, field: str) -> None:
    """``got`` (an assignment's :func:`input_rows`, on the host) must be ``inputs``;
    an InputError naming ``source`` and ``field`` (the partition) otherwise."""
    if not np.array_equal(np.asarray(got), fr_to_array(inputs)):
        raise InputError(
            source,
            field,
            "the witness does not carry the request's public inputs: its vanilla proofs "
            "do not answer the challenges and commitments the request names",
        )
