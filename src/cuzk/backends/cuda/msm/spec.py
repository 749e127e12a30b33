"""The groups an MSM runs over: G1 and G2 as the kernels see them (:class:`CurveSpec`).

A spec gives the words of a coordinate, hence of an affine and an XYZZ point,
and the compile flags that build ``kernels/msm.cu`` for its group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuzk.backends.cuda import tuning

_U32 = np.uint32
SCALAR_BITS = 255


@dataclass(frozen=True)
class CurveSpec:
    """What the pipeline needs to know of a group: sizes and compile flags."""

    name: str
    field_words: int  # 32-bit words per coordinate
    defines: tuple[str, ...]

    @property
    def affine_words(self) -> int:
        return 2 * self.field_words

    @property
    def xyzz_words(self) -> int:
        return 4 * self.field_words

    @property
    def affine_bytes(self) -> int:
        return 4 * self.affine_words

    @property
    def xyzz_bytes(self) -> int:
        return 4 * self.xyzz_words


G1_SPEC = CurveSpec("G1", 12, tuning.flags(tuning.MSM_G1))
G2_SPEC = CurveSpec("G2", 24, tuning.flags(tuning.MSM_G2))
# The field-product probe of ``cuzk-bench kernels`` (G1's Fq: no defines).
ARITH_MODULE = ("msm_arith.cu", ())
