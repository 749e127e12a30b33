"""Rank-1 constraint systems: the data (CSR), a builder, and satisfiability."""

from cuzk.r1cs.builder import ONE, ConstraintSystem, LinearCombination, Variable
from cuzk.r1cs.system import R1CS

__all__ = ["ONE", "R1CS", "ConstraintSystem", "LinearCombination", "Variable"]
