"""Neptune's Poseidon circuit (the "legacy" circuit Filecoin's keys were made with).

State elements are either allocated numbers or linear combinations
(:class:`~cuzk.gadgets.num.Num`): MDS products stay linear combinations, and
an element is allocated (one ``lc · 1 = v`` constraint) only when an S-box
needs it. Per S-box: ``l² , l⁴`` and ``l⁴·l + k`` (the first round adds its
pre-round constant inside the squaring). The domain tag's first S-box is a
constant. Counts: arity 2 / 4 / 8 / 11 → 311 / 377 / 505 / 598 constraints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuzk.algebra.fields import R
from cuzk.gadgets.num import AllocatedNum, Num
from cuzk.gadgets.values import values_of
from cuzk.hashers.poseidon_constants import PoseidonConstants
from cuzk.r1cs import ONE, LinearCombination

Elt = AllocatedNum | Num


def _num(e: Elt) -> Num:
    return Num.of(e) if isinstance(e, AllocatedNum) else e


def _ensure_allocated(cs: Any, e: Elt) -> AllocatedNum:
    """An S-box input: allocate a linear combination with lc·1 = v."""
    if isinstance(e, AllocatedNum):
        return e
    # Linear combinations may carry unreduced lane values; reduce once here.
    v = AllocatedNum.alloc(cs, values_of(cs).canonical(e.value), "allocate for Elt::Num")
    cs.enforce("enforce num allocation preserves lc", e.lc(), ONE, v.variable)
    return v


def _square_sum(cs: Any, to_add: int, num: AllocatedNum) -> AllocatedNum:
    """(num + k)²."""
    V = values_of(cs)
    value = V.square(V.add(num.value, to_add))
    res = AllocatedNum.alloc(cs, value, "squared sum")
    lc = LinearCombination({num.variable: 1, ONE: to_add % R})
    cs.enforce("squared sum constraint", lc, lc, res.variable)
    return res


def _mul_sum(
    cs: Any, a: AllocatedNum, b: AllocatedNum, pre: int | None, post: int | None
) -> AllocatedNum:
    """a·(b + pre) + post."""
    V = values_of(cs)
    x = b.value if pre is None else V.add(b.value, pre)
    value = V.mul(x, a.value)
    if post is not None:
        value = V.add(value, post)
    res = AllocatedNum.alloc(cs, value, "mul_sum")
    left = LinearCombination({b.variable: 1})
    if pre is not None:
        left.add_term(ONE, pre)
    right = LinearCombination({res.variable: 1})
    if post is not None:
        right.add_term(ONE, R - post % R)
    cs.enforce("mul sum constraint", left, a.variable, right)
    return res


def _sbox(cs: Any, e: Elt, post: int | None) -> AllocatedNum:
    l = _ensure_allocated(cs, e)
    l2 = l.square(cs)
    l4 = l2.square(cs)
    return _mul_sum(cs, l4, l, None, post)


def _sbox_pre_add(cs: Any, e: Elt, pre: int, post: int) -> AllocatedNum:
    l = _ensure_allocated(cs, e)
    l2 = _square_sum(cs, pre, l)
    l4 = l2.square(cs)
    return _mul_sum(cs, l4, l, pre, post)


def _scalar_product(V: Any, elts: Sequence[Elt], scalars: Sequence[int]) -> Num:
    acc = Num.zero()
    for e, s in zip(elts, scalars, strict=True):
        acc = acc.add(V, _num(e).scale(V, s))
    return acc


class _PoseidonCircuit:
    def __init__(self, cs: Any, elements: list[Elt], c: PoseidonConstants) -> None:
        self.cs = cs
        self.V = values_of(cs)
        self.c = c
        self.elements = elements
        self.offset = 0
        self.round = 0

    def hash(self) -> AllocatedNum:
        c, cs = self.c, self.cs
        self.full_round(first=True, last=False)
        for i in range(1, c.half_full_rounds):
            with cs.namespace(f"initial full round {i}"):
                self.full_round(first=False, last=False)
        for i in range(c.partial_rounds):
            with cs.namespace(f"partial round {i}"):
                self.partial_round()
        for i in range(c.half_full_rounds - 1):
            with cs.namespace(f"final full round {i}"):
                self.full_round(first=False, last=False)
        self.full_round(first=False, last=True)
        return _ensure_allocated(cs, self.elements[1])

    def full_round(self, first: bool, last: bool) -> None:
        c, t = self.c, self.c.width
        crc = c.compressed_round_constants
        pre = list(crc[self.offset : self.offset + t]) if first else []
        self.offset += len(pre)
        post = list(crc[self.offset : self.offset + t]) if (first or not last) else []
        self.offset += len(post)
        for i in range(t):
            post_key = post[i] if post else None
            if first:
                if i == 0:
                    # The tag's first S-box is a constant.
                    tag = self.elements[0].value
                    x = pow((tag + pre[0]) % R, 5, R)
                    self.elements[0] = Num(
                        LinearCombination({ONE: (x + post[0]) % R}), (x + post[0]) % R
                    )
                else:
                    self.elements[i] = _sbox_pre_add(self.cs, self.elements[i], pre[i], post_key)
            else:
                self.elements[i] = _sbox(self.cs, self.elements[i], post_key)
        self.product_mds()

    def partial_round(self) -> None:
        key = self.c.compressed_round_constants[self.offset]
        self.offset += 1
        self.elements[0] = _sbox(self.cs, self.elements[0], key)
        self.product_mds()

    def product_mds(self) -> None:
        c, V, t = self.c, self.V, self.c.width
        half = c.half_full_rounds
        r = self.round
        if r == half - 1:
            m = c.pre_sparse
        elif half - 1 < r < half + c.partial_rounds:
            w_hat, v_rest = c.sparse[r - half]
            first = _scalar_product(V, self.elements, w_hat)
            e0 = _num(self.elements[0])
            rest = [_num(self.elements[j]).add(V, e0.scale(V, v_rest[j - 1])) for j in range(1, t)]
            self.elements = [first, *rest]
            self.round += 1
            return
        else:
            m = c.mds
        self.elements = [
            _scalar_product(V, self.elements, [m[i][j] for i in range(t)]) for j in range(t)
        ]
        self.round += 1


def poseidon_hash(cs: Any, preimage: Sequence[AllocatedNum], c: PoseidonConstants) -> AllocatedNum:
    """Poseidon of ``arity`` allocated numbers (Merkle-tree domain tag)."""
    if len(preimage) != c.arity:
        raise ValueError(f"Poseidon arity {c.arity} hashes {c.arity} elements, not {len(preimage)}")
    tag = Num(LinearCombination({ONE: c.domain_tag}), c.domain_tag)
    return _PoseidonCircuit(cs, [tag, *preimage], c).hash()
