"""The Poseidon hash (neptune's), on plain ints and vectorised.

State: ``[domain tag, x_1, …, x_arity]``; the digest is ``state[1]`` after
the permutation. Two plain implementations are kept and tested equal:

- :func:`hash_reference`: the textbook permutation (add round constants,
  S-box x^5 on all elements in full rounds and on element 0 in partial
  rounds, multiply by the MDS matrix);
- :func:`hash_ints`: neptune's optimised form (compressed constants added
  after the S-boxes, a pre-sparse matrix then sparse matrices in the
  partial rounds) — the same schedule the circuit follows.

:func:`hash_vectors` runs the optimised form on n preimages at once with any
:class:`~cuzk.hashers.field.FrVectors` backend (numpy or CuPy limbs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuzk.algebra.fields import R
from cuzk.hashers.field import FrVectors, pow5
from cuzk.hashers.poseidon_constants import (
    STANDARD,
    PoseidonConstants,
    poseidon_constants,
)


def _check(preimage: Sequence[Any], c: PoseidonConstants) -> None:
    if len(preimage) != c.arity:
        raise ValueError(f"Poseidon arity {c.arity} hashes {c.arity} elements, got {len(preimage)}")


def hash_reference(preimage: Sequence[int], c: PoseidonConstants) -> int:
    """The unoptimised permutation (for checking the optimised one)."""
    _check(preimage, c)
    t = c.width
    state = [c.domain_tag] + [x % R for x in preimage]
    rc = iter(c.round_constants)
    mds = c.mds

    def mix(s: list[int]) -> list[int]:
        return [sum(s[i] * mds[i][j] for i in range(t)) % R for j in range(t)]

    def full(s: list[int]) -> list[int]:
        return mix([pow((x + next(rc)) % R, 5, R) for x in s])

    def partial(s: list[int]) -> list[int]:
        s = [(x + next(rc)) % R for x in s]
        s[0] = pow(s[0], 5, R)
        return mix(s)

    for _ in range(c.half_full_rounds):
        state = full(state)
    for _ in range(c.partial_rounds):
        state = partial(state)
    for _ in range(c.half_full_rounds):
        state = full(state)
    return state[1]


class _Schedule:
    """Walks neptune's optimised round schedule for any value type.

    ``ops`` supplies add/mul/pow5 on the state's values; the schedule (which
    constants, which matrix, in which order) is shared by the plain hash and
    the vectorised one.
    """

    def __init__(self, c: PoseidonConstants) -> None:
        self.c = c

    def run(self, state: list[Any], add, mul, sbox) -> list[Any]:
        c = self.c
        t = c.width
        crc = c.compressed_round_constants
        offset = 0
        state = [add(x, k) for x, k in zip(state, crc[:t], strict=True)]
        offset = t
        rnd = 0

        def mds_for(r: int):
            half = c.half_full_rounds
            if r == half - 1:
                return ("dense", c.pre_sparse)
            if half - 1 < r < half + c.partial_rounds:
                return ("sparse", c.sparse[r - half])
            return ("dense", c.mds)

        def product(s: list[Any], r: int) -> list[Any]:
            kind, m = mds_for(r)
            if kind == "dense":
                out = []
                for j in range(t):
                    acc = 0
                    for i in range(t):
                        acc = add(acc, mul(s[i], m[i][j]))
                    out.append(acc)
                return out
            w_hat, v_rest = m
            first = 0
            for i in range(t):
                first = add(first, mul(s[i], w_hat[i]))
            return [first] + [add(s[j], mul(s[0], v_rest[j - 1])) for j in range(1, t)]

        def full(s: list[Any], last: bool) -> list[Any]:
            nonlocal offset, rnd
            if last:
                s = [sbox(x) for x in s]
            else:
                s = [add(sbox(x), k) for x, k in zip(s, crc[offset : offset + t], strict=True)]
                offset += t
            s = product(s, rnd)
            rnd += 1
            return s

        def partial(s: list[Any]) -> list[Any]:
            nonlocal offset, rnd
            s = [add(sbox(s[0]), crc[offset]), *s[1:]]
            offset += 1
            s = product(s, rnd)
            rnd += 1
            return s

        for _ in range(c.half_full_rounds):
            state = full(state, False)
        for _ in range(c.partial_rounds):
            state = partial(state)
        for _ in range(c.half_full_rounds - 1):
            state = full(state, False)
        state = full(state, True)
        assert offset == len(crc)
        return state


def hash_ints(preimage: Sequence[int], c: PoseidonConstants | None = None) -> int:
    """Poseidon of ``arity`` field elements (neptune's optimised schedule)."""
    c = c or poseidon_constants(len(preimage), STANDARD)
    _check(preimage, c)
    state = [c.domain_tag] + [x % R for x in preimage]
    out = _Schedule(c).run(
        state,
        add=lambda a, b: (a + b) % R,
        mul=lambda a, b: a * b % R,
        sbox=lambda x: pow(x, 5, R),
    )
    return out[1]


def hash_vectors(F: FrVectors, preimage: Sequence[Any], c: PoseidonConstants) -> Any:
    """Poseidon of n preimages at once: ``preimage[i]`` is lane vector i."""
    _check(preimage, c)
    n = F.length(preimage[0])
    state = [F.full(n, c.domain_tag), *preimage]
    out = _Schedule(c).run(state, add=F.add, mul=F.mul, sbox=lambda x: pow5(F, x))
    return out[1]


def hash2(a: int, b: int) -> int:
    """Poseidon arity 2 (Filecoin's ``hash2``: comm_r = H(comm_c, comm_r_last))."""
    return hash_ints([a, b], poseidon_constants(2))
