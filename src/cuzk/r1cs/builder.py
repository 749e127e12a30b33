"""Build an R1CS the way bellperson's circuits do.

:class:`ConstraintSystem` has bellperson's semantics: ``ONE`` is input 0 and
allocated first; ``alloc`` makes an aux variable, ``alloc_input`` a public
input; ``enforce(name, a, b, c)`` adds the constraint a·b = c between linear
combinations; names nest with ``namespace``; finishing appends one input
constraint ``x_i · 0 = 0`` per input (ONE included), as bellperson's prover and
parameter generator both do, so rows and variables come out in exactly the
order bellperson would produce them.

This builder is for circuits of up to a few million constraints (tests,
demo circuits, gadget counts). Filecoin-sized circuits are compiled once and
cached, with their witnesses computed by vectorised code (``circuits/``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from cuzk.algebra.fields import R
from cuzk.algebra.sparse import SparseMatrix
from cuzk.errors import SynthesisError
from cuzk.r1cs.system import R1CS

INPUT = 0
AUX = 1


@dataclass(frozen=True, slots=True)
class Variable:
    kind: int  # INPUT or AUX
    index: int

    def __repr__(self) -> str:
        return f"{'Input' if self.kind == INPUT else 'Aux'}({self.index})"

    def __add__(self, other: LCLike) -> LinearCombination:
        return LinearCombination.of(self) + other

    def __sub__(self, other: LCLike) -> LinearCombination:
        return LinearCombination.of(self) - other

    def __rmul__(self, coeff: int) -> LinearCombination:
        return LinearCombination({self: coeff % R})

    def __neg__(self) -> LinearCombination:
        return LinearCombination({self: R - 1})


ONE = Variable(INPUT, 0)


class LinearCombination:
    """Σ coeff·variable, with repeated variables merged (as bellperson does)."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict[Variable, int] | None = None) -> None:
        self.terms: dict[Variable, int] = dict(terms) if terms else {}

    @staticmethod
    def zero() -> LinearCombination:
        return LinearCombination()

    @staticmethod
    def of(x: LCLike) -> LinearCombination:
        if isinstance(x, LinearCombination):
            return x
        if isinstance(x, Variable):
            return LinearCombination({x: 1})
        if isinstance(x, int):
            return LinearCombination({ONE: x % R}) if x % R else LinearCombination()
        raise TypeError(f"cannot make a linear combination of {type(x).__name__}")

    @staticmethod
    def from_terms(terms: Iterable[tuple[int, Variable]]) -> LinearCombination:
        lc = LinearCombination()
        for coeff, var in terms:
            lc.add_term(var, coeff)
        return lc

    def add_term(self, var: Variable, coeff: int = 1) -> LinearCombination:
        """In place: self += coeff·var. Returns self, for chaining."""
        t = self.terms
        t[var] = (t.get(var, 0) + coeff) % R
        return self

    def copy(self) -> LinearCombination:
        return LinearCombination(self.terms)

    def __add__(self, other: LCLike) -> LinearCombination:
        out = self.copy()
        for var, coeff in LinearCombination.of(other).terms.items():
            out.add_term(var, coeff)
        return out

    __radd__ = __add__

    def __sub__(self, other: LCLike) -> LinearCombination:
        out = self.copy()
        for var, coeff in LinearCombination.of(other).terms.items():
            out.add_term(var, R - coeff)
        return out

    def __rsub__(self, other: LCLike) -> LinearCombination:
        return LinearCombination.of(other) - self

    def __mul__(self, coeff: int) -> LinearCombination:
        c = coeff % R
        return LinearCombination({v: k * c % R for v, k in self.terms.items()})

    __rmul__ = __mul__

    def __neg__(self) -> LinearCombination:
        return self * (R - 1)

    def evaluate(self, value_of: Callable[[Variable], int]) -> int:
        return sum(k * value_of(v) for v, k in self.terms.items()) % R

    def __repr__(self) -> str:
        return " + ".join(f"{k}·{v}" for v, k in self.terms.items()) or "0"


LCLike = LinearCombination | Variable | int
Value = int | Callable[[], int] | None


class ConstraintSystem:
    """Collects variables, constraints and (optionally) the witness.

    ``witness=False`` is the parameter-generation mode: values are ignored
    and may be None. ``keep_names=False`` drops constraint names (saves
    memory on large circuits; errors then report row numbers).
    """

    def __init__(self, witness: bool = True, keep_names: bool = True) -> None:
        self.witness = witness
        self.keep_names = keep_names
        self._inputs: list[int] = [1]
        self._aux: list[int] = []
        self._rows: tuple[list, list, list] = ([], [], [])
        self._names: list[str] = []
        self._path: list[str] = []
        self._finished = False

    # --- names ----------------------------------------------------------
    @contextmanager
    def namespace(self, name: str) -> Iterator[ConstraintSystem]:
        self._path.append(name)
        try:
            yield self
        finally:
            self._path.pop()

    def path(self, name: str) -> str:
        return "/".join([*self._path, name])

    # --- variables ------------------------------------------------------
    def _value(self, name: str, value: Value) -> int:
        if not self.witness:
            return 0
        if callable(value):
            value = value()
        if value is None:
            raise SynthesisError(f"no value for {self.path(name)}")
        return int(value) % R

    def alloc(self, name: str, value: Value = None) -> Variable:
        self._check_open()
        self._aux.append(self._value(name, value))
        return Variable(AUX, len(self._aux) - 1)

    def alloc_input(self, name: str, value: Value = None) -> Variable:
        self._check_open()
        self._inputs.append(self._value(name, value))
        return Variable(INPUT, len(self._inputs) - 1)

    def value(self, var: Variable) -> int:
        """The value assigned to a variable (witness mode only)."""
        if not self.witness:
            raise SynthesisError("values are not tracked in parameter-generation mode")
        return self._inputs[var.index] if var.kind == INPUT else self._aux[var.index]

    def eval(self, lc: LCLike) -> int:
        return LinearCombination.of(lc).evaluate(self.value)

    # --- constraints ----------------------------------------------------
    def enforce(self, name: str, a: LCLike, b: LCLike, c: LCLike) -> None:
        self._check_open()
        for rows, lc in zip(self._rows, (a, b, c), strict=True):
            rows.append(dict(LinearCombination.of(lc).terms))
        if self.keep_names:
            self._names.append(self.path(name))

    @property
    def num_constraints(self) -> int:
        """Constraints enforced so far (input constraints not included)."""
        return len(self._rows[0])

    @property
    def num_inputs(self) -> int:
        return len(self._inputs)

    @property
    def num_aux(self) -> int:
        return len(self._aux)

    def _check_open(self) -> None:
        if self._finished:
            raise SynthesisError("the constraint system is finished")

    def finish(self) -> None:
        """Append the input constraints x_i · 0 = 0 (bellperson's last step)."""
        if self._finished:
            return
        for i in range(len(self._inputs)):
            self.enforce(f"input {i}", Variable(INPUT, i), 0, 0)
        self._finished = True

    # --- results --------------------------------------------------------
    def r1cs(self) -> R1CS:
        """The finished constraint system as CSR matrices."""
        self.finish()
        n_in = len(self._inputs)
        num_cols = n_in + len(self._aux)

        def column(v: Variable) -> int:
            return v.index if v.kind == INPUT else n_in + v.index

        mats = [
            SparseMatrix.from_rows(
                [[(column(v), k) for v, k in row.items() if k] for row in rows], num_cols
            )
            for rows in self._rows
        ]
        return R1CS(
            num_inputs=n_in,
            num_aux=len(self._aux),
            a=mats[0],
            b=mats[1],
            c=mats[2],
            constraint_names=tuple(self._names) if self.keep_names else None,
        )

    def assignment(self) -> list[int]:
        """The full assignment [ONE, inputs..., aux...]."""
        if not self.witness:
            raise SynthesisError("no witness in parameter-generation mode")
        return self._inputs + self._aux

    def public_inputs(self) -> list[int]:
        """The public inputs without ONE (what a verifier is given)."""
        return self._inputs[1:]
