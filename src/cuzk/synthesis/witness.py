"""Vectorised witnesses: one synthesis pass computes many instances at once.

:class:`LaneCS` is a constraint system whose values are lane vectors
(:class:`~cuzk.gadgets.values.LaneValues`): running a subcircuit's
synthesis on it with hints stacked over n instances computes the aux and
input values of all n instances in one pass — the allocations happen in
the same order as for one instance, each carrying n values. Constraints
are not recorded (the compiled circuit already has them).

The Python cost is per variable of the subcircuit, not per instance, and
the field arithmetic runs on arrays (numpy object ints on the CPU, or the
limb backend on numpy/CuPy).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from cuzk.errors import SynthesisError
from cuzk.gadgets.values import LaneValues
from cuzk.r1cs import Variable
from cuzk.r1cs.builder import AUX, INPUT


class LaneCS:
    """Collects the values of every allocation, for ``values.lanes`` lanes."""

    def __init__(self, values: LaneValues) -> None:
        self.values = values
        self.aux: list[Any] = []
        self.inputs: list[Any] = []

    def _check(self, name: str, value: Any) -> Any:
        if value is None:
            raise SynthesisError(f"no value for {name} in a witness pass")
        return value

    def alloc(self, name: str, value: Any = None) -> Variable:
        self.aux.append(self._check(name, value))
        return Variable(AUX, len(self.aux) - 1)

    def alloc_input(self, name: str, value: Any = None) -> Variable:
        self.inputs.append(self._check(name, value))
        return Variable(INPUT, len(self.inputs))

    def enforce(self, name: str, a: Any, b: Any, c: Any) -> None:
        pass

    @contextlib.contextmanager
    def namespace(self, name: str) -> Iterator[LaneCS]:
        yield self

    # --- results ------------------------------------------------------------
    def _matrix(self, values: list[Any]) -> np.ndarray:
        """(lanes, len(values), 4) uint64: lane-major, standard form."""
        F, n = self.values.F, self.values.lanes
        cols = [F.full(n, v) if isinstance(v, int) else v for v in values]
        if not cols:
            return np.zeros((n, 0, 4), dtype=np.uint64)
        flat = F.to_array(F.concat(cols))  # variable-major
        return flat.reshape(len(cols), n, 4).transpose(1, 0, 2)

    def aux_values(self) -> np.ndarray:
        return self._matrix(self.aux)

    def input_values(self) -> np.ndarray:
        return self._matrix(self.inputs)
