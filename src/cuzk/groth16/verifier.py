"""Groth16 verification, one proof at a time or many in one batch.

One proof: e(A, B) = e(α, β) · e(IC₀ + Σ xᵢ·ICᵢ₊₁, γ) · e(C, δ), checked as a
product of four pairings with one final exponentiation.

A batch of n proofs under one key: draw random 128-bit zⱼ and check
Π e(zⱼ·Aⱼ, Bⱼ) = e(α, β)^{Σzⱼ} · e(Σ zⱼ·ICⱼ, γ) · e(Σ zⱼ·Cⱼ, δ): n + 3 pairings,
one final exponentiation. A forged proof passes only with probability 2^−128.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from cuzk.algebra import pairing
from cuzk.algebra.fields import R
from cuzk.errors import InputError
from cuzk.groth16.keys import VerifyingKey
from cuzk.groth16.proof import Proof


def _check_inputs(vk: VerifyingKey, inputs: Sequence[int]) -> None:
    if len(inputs) != vk.num_inputs:
        raise InputError(
            "public inputs", "count", f"{len(inputs)} given, the key expects {vk.num_inputs}"
        )
    for i, x in enumerate(inputs):
        if not 0 <= x < R:
            raise InputError("public inputs", f"[{i}]", "not a canonical Fr element")


def _ic_sum(vk: VerifyingKey, inputs: Sequence[int]):
    """IC₀ + Σ xᵢ·ICᵢ₊₁ as a library point."""
    acc = pairing.g1_to_ark(vk.ic[0])
    if inputs:
        acc = acc + pairing.G1Point.multiexp_unchecked(
            [pairing.g1_to_ark(p) for p in vk.ic[1:]], [pairing.scalar(x) for x in inputs]
        )
    return acc


def verify(vk: VerifyingKey, inputs: Sequence[int], proof: Proof) -> bool:
    _check_inputs(vk, inputs)
    ic = _ic_sum(vk, inputs)
    g1s = [
        pairing.g1_to_ark(proof.a),
        -ic,
        -pairing.g1_to_ark(proof.c),
        -pairing.g1_to_ark(vk.alpha_g1),
    ]
    g2s = [pairing.g2_to_ark(q) for q in (proof.b, vk.gamma_g2, vk.delta_g2, vk.beta_g2)]
    return bool(pairing.ark.GT.pairing_check(g1s, g2s))


def verify_batch(
    vk: VerifyingKey, items: Sequence[tuple[Sequence[int], Proof]], rng_bits: int = 128
) -> bool:
    """True when every (inputs, proof) pair verifies (up to 2^−rng_bits)."""
    if not items:
        return True
    for inputs, _ in items:
        _check_inputs(vk, inputs)
    zs = [secrets.randbits(rng_bits) | 1 for _ in items]
    g1s = []
    g2s = []
    ic_acc = pairing.G1Point.identity()
    c_acc = pairing.G1Point.identity()
    for z, (inputs, proof) in zip(zs, items, strict=True):
        zs_ = pairing.scalar(z)
        g1s.append(pairing.g1_to_ark(proof.a) * zs_)
        g2s.append(pairing.g2_to_ark(proof.b))
        ic_acc = ic_acc + _ic_sum(vk, inputs) * zs_
        c_acc = c_acc + pairing.g1_to_ark(proof.c) * zs_
    z_total = pairing.scalar(sum(zs) % R)
    g1s += [-ic_acc, -c_acc, -(pairing.g1_to_ark(vk.alpha_g1) * z_total)]
    g2s += [pairing.g2_to_ark(q) for q in (vk.gamma_g2, vk.delta_g2, vk.beta_g2)]
    return bool(pairing.ark.GT.pairing_check(g1s, g2s))
