"""The built-in demo circuit: a keyed hash chain with bit-level checks.

It mixes the two kinds of witness a Filecoin circuit has: full-field values
(a MiMC-style cube chain, x ← (x + kᵢ)³) and booleans (a secret 64-bit
word decomposed into bits, range-checked and xor-ed with a public mask).

Public inputs: ``x`` (the chain's start) and ``out``; the secret is the word
``v``. Statement: out = chain(x) + pack(bits(v) xor bits(mask)), where
mask is a fixed constant of the circuit.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from cuzk.algebra.fields import R
from cuzk.r1cs import ONE, ConstraintSystem, LinearCombination

WORD_BITS = 64


def _round_constant(i: int) -> int:
    return int.from_bytes(hashlib.sha256(b"cuzk demo round %d" % i).digest(), "little") % R


MASK = int.from_bytes(hashlib.sha256(b"cuzk demo mask").digest()[:8], "little")


@dataclass(frozen=True)
class DemoCircuit:
    """``rounds`` cube rounds (2 constraints each) and ``words`` 64-bit words.

    Each word costs 64 boolean constraints, 64 xor constraints and 1 packing
    constraint.
    """

    rounds: int = 1000
    words: int = 8

    @staticmethod
    def with_constraints(n: int) -> DemoCircuit:
        """A demo circuit of about n constraints (half chain, half bits)."""
        words = max(1, n // (2 * 129))
        rounds = max(1, (n - words * 129 - 3) // 2)
        return DemoCircuit(rounds=rounds, words=words)

    def evaluate(self, x: int, secrets: list[int]) -> int:
        """The public output for inputs, computed outside the circuit."""
        acc = x % R
        for i in range(self.rounds):
            acc = pow(acc + _round_constant(i), 3, R)
        return (acc + sum(v ^ MASK for v in secrets)) % R

    def synthesize(self, cs: ConstraintSystem, x: int | None, secrets: list[int] | None) -> None:
        if secrets is not None and len(secrets) != self.words:
            raise ValueError(f"the demo circuit takes {self.words} secret words")
        w = cs.witness
        x_in = cs.alloc_input("x", x)
        acc = LinearCombination.of(x_in)
        acc_val = x if w else None
        with cs.namespace("chain"):
            for i in range(self.rounds):
                k = _round_constant(i)
                t = acc + k  # an int joins a combination as k·ONE
                tv = (acc_val + k) % R if w else None
                sq = cs.alloc(f"sq {i}", (tv * tv % R) if w else None)
                cs.enforce(f"square {i}", t, t, sq)
                cube = cs.alloc(f"cube {i}", (cs.value(sq) * tv % R) if w else None)
                cs.enforce(f"cube {i}", sq, t, cube)
                acc = LinearCombination.of(cube)
                acc_val = cs.value(cube) if w else None
        total = acc
        total_val = acc_val
        with cs.namespace("words"):
            for j in range(self.words):
                v = secrets[j] if w else None
                word = cs.alloc(f"word {j}", v)
                packed = LinearCombination()
                xored = LinearCombination()
                for b in range(WORD_BITS):
                    bit_val = (v >> b) & 1 if w else None
                    bit = cs.alloc(f"word {j} bit {b}", bit_val)
                    cs.enforce(f"word {j} bit {b} boolean", bit, bit, bit)
                    packed.add_term(bit, 1 << b)
                    # xor with a constant bit: b itself, or 1 − b.
                    m = (MASK >> b) & 1
                    out_val = (bit_val ^ m) if w else None
                    out = cs.alloc(f"word {j} xor {b}", out_val)
                    lc = (ONE - bit) if m else LinearCombination.of(bit)
                    cs.enforce(f"word {j} xor {b}", lc, ONE, out)
                    xored.add_term(out, 1 << b)
                cs.enforce(f"word {j} packing", packed, ONE, word)
                total = total + xored
                if w:
                    total_val = (total_val + (v ^ MASK)) % R
        out = cs.alloc_input("out", total_val)
        cs.enforce("output", total, ONE, out)
