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

import numpy as np

from cuzk.algebra.curves import Affine


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
