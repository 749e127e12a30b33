"""Random circuits for the witness-program tests: every value operation of
the gadgets, through ports, hints and deferred calls (shared by the circuits
tests and the CUDA interpreter's)."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from cuzk.algebra.fields import R
from cuzk.gadgets.boolean import AllocatedBit
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.subcircuit import BIT, NUM, Subcircuit, call
from cuzk.gadgets.values import values_of
from cuzk.synthesis.compile import Compiler, compile_circuit
from cuzk.synthesis.plan import WitnessPlan
from cuzk.synthesis.static_plan import StaticPlan

N_BITS, N_NUMS = 6, 4


@dataclass(frozen=True)
class Inner:
    words: list  # uint64 lanes (32-bit words)
    frs: list  # object lanes (Fr)


@dataclass(frozen=True)
class Outer:
    bits: list  # bool lanes: allocated, then ports of the random pass
    nums: list  # object lanes: allocated, then ports
    inner: Inner


def random_ops(cs, bits: list, words: list, frs: list, rng: random.Random, n: int) -> None:
    """n random value operations of every kind, each result allocated (folded
    constants too: the layout must not depend on the values)."""
    V = values_of(cs)
    given = list(frs)  # never constants: safe to invert in both backends

    def fr_operand():
        return rng.randrange(R) if rng.random() < 0.15 else rng.choice(frs)

    def bit_operand():
        return rng.random() < 0.5 if rng.random() < 0.15 else rng.choice(bits)

    for _ in range(n):
        kind = rng.randrange(3)
        if kind == 0:  # a bit
            op = rng.randrange(7)
            if op < 3:
                v = (V.b_and, V.b_xor, V.b_or)[op](bit_operand(), bit_operand())
            elif op == 3:
                v = V.b_not(rng.choice(bits))
            elif op == 4:
                v = V.w_bit(rng.choice(words), rng.randrange(34))
            else:
                v = V.bits_le(rng.choice(frs), 255)[rng.randrange(255)]
            bits.append(v)
            cs.alloc("bit", V.from_bit(v))
        elif kind == 1:  # a word
            op = rng.randrange(6)
            w = V.w_mask(rng.choice(words), 32)
            if op == 0:
                v = V.w_sum([rng.choice(words) for _ in range(rng.randrange(2, 6))])
            elif op == 1:
                v = V.w_rotr(w, rng.randrange(32))
            elif op == 2:
                v = V.w_shr(w, rng.randrange(32))
            elif op == 3:
                v = V.w_xor(w, rng.choice([rng.randrange(1 << 32), *words]))
            elif op == 4:
                v = V.w_from_bits([bit_operand() for _ in range(32)])
            else:
                v = w
            words.append(v)
            cs.alloc("word", v)
        else:  # a field element
            op = rng.randrange(9)
            if op == 0:
                v = V.add(fr_operand(), rng.choice(frs))
            elif op == 1:
                v = V.sub(fr_operand(), fr_operand())
            elif op == 2:
                v = V.mul(rng.choice(frs), fr_operand())
            elif op == 3:
                v = V.square(rng.choice(frs))
            elif op == 4:
                v = V.neg(rng.choice(frs))
            elif op == 5:
                v = V.select(rng.choice(bits), fr_operand(), fr_operand())
            elif op == 6:
                v = V.from_bit(rng.choice(bits))
            elif op == 7:
                v = V.inverse(rng.choice(given))
            else:
                v = V.canonical(V.add(rng.choice(frs), rng.choice(frs)))
            frs.append(v)
            cs.alloc("fr", V.canonical(v))
        if rng.random() < 0.05:
            cs.alloc_input("an input", V.from_bit(rng.choice(bits)))
        if rng.random() < 0.05:
            cs.alloc_input("an Fr input", V.canonical(rng.choice(frs)))


def random_circuit(seed: int, sites: int, n_ops: int):
    inner_ports = (BIT,) * N_BITS + (NUM,) * N_NUMS

    def inner_synth(cs, ports, hints):
        rng = random.Random(seed)
        h = hints or Inner([None] * 4, [None] * 3)
        bits = [p.value for p in ports[:N_BITS]]
        frs = [p.value for p in ports[N_BITS:]] + list(h.frs)
        random_ops(cs, bits, list(h.words), frs, rng, n_ops)
        return []

    inner = Subcircuit(f"random/{seed}", inner_ports, inner_synth)

    def top_synth(cs, ports, hints):
        V = values_of(cs)
        blank = Outer([None] * N_BITS, [None] * N_NUMS, None)
        for s in range(sites):
            h = hints[s] if hints is not None else blank
            bits = [AllocatedBit.alloc(cs, b) for b in h.bits]
            nums = [AllocatedNum.alloc(cs, V.canonical(x)) for x in h.nums]
            call(cs, inner, [*bits, *nums], h.inner)
        return []

    return Subcircuit(f"random-top/{seed}/{sites}", (), top_synth)


def lane(v) -> np.ndarray:
    out = np.empty(1, dtype=object)
    out[0] = v
    return out


def random_hints(rng: random.Random, sites: int) -> list[Outer]:
    def site() -> Outer:
        bits = [np.array([rng.random() < 0.5]) for _ in range(N_BITS)]
        nums = [lane(rng.randrange(R)) for _ in range(N_NUMS)]
        words = [np.array([rng.randrange(1 << 32)], dtype=np.uint64) for _ in range(4)]
        frs = [lane(rng.choice([0, 1, R - 1, rng.randrange(R)])) for _ in range(3)]
        return Outer(bits, nums, Inner(words, frs))

    return [site() for _ in range(sites)]


def random_lookup(caller, callee):
    return (lambda V, ports, hints: []) if callee.startswith("random/") else None


def random_case(rng: random.Random, seed: int, n_ops: int = 300):
    """(static plan, hints, the CPU plan's W) of one random circuit."""
    sites = rng.randrange(1, 5)
    top = random_circuit(seed, sites, n_ops)
    compiler = Compiler()
    cc = compile_circuit(top.key, top, 1, compiler)
    hints = random_hints(rng, sites)
    plan = WitnessPlan(compiler, cc.num_inputs, cc.num_aux, random_lookup)
    plan.run(top, [], hints, 1, np.zeros(1, np.int64), np.ones(1, np.int64))
    plan.drain()
    return StaticPlan.build(cc, top, hints, random_lookup, compiler), hints, plan.W
