"""The fallback PoSt circuit (WinningPoSt and WindowPoSt), compiled once.

Per sector, in rust-fil-proofs' synthesis order (``FallbackPoStCircuit``):
allocate ``comm_r_last``, ``comm_c``, ``comm_r``; expose ``comm_r`` as a
public input; enforce ``comm_r = Poseidon2(comm_c, comm_r_last)``; then one
Merkle inclusion proof in tree R per challenge, rooted at ``comm_r_last``,
each exposing its packed path bits (the challenged leaf index) as a public
input. A partition is ``sector_count`` such sectors back to back (missing
sectors are the last one repeated).

Public inputs per sector: ``comm_r``, then one leaf index per challenge.
Counts for 32GiB (bellperson ``a.len()``, input constraints included):
WinningPoSt 350,313; one WindowPoSt partition 125,305,057 (the circuit's
125,279,217 constraints — the figure rust-fil-proofs quotes for 2349
sectors — plus 25,840 input constraints).

The witness of a partition is computed by running the sector synthesis
once over all sectors as lanes (:class:`~cuzk.circuits.witness.LaneCS`).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from cuzk.circuits.compile import CompiledCircuit, compile_circuit
from cuzk.circuits.post.challenges import sector_leaf_challenges
from cuzk.circuits.post.config import PoStConfig
from cuzk.circuits.post.vanilla import FallbackPoStSectorProof
from cuzk.circuits.witness import LaneCS
from cuzk.errors import InputError
from cuzk.gadgets.merkle import POSEIDON, por_subcircuit, poseidon_subcircuit, stack_por_hints
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.subcircuit import Subcircuit, call
from cuzk.gadgets.values import LaneValues
from cuzk.hashers.field import OBJECT_FR, FrVectors
from cuzk.r1cs import ONE

log = logging.getLogger(__name__)


def _sector_header(cs: Any, hints: Any) -> AllocatedNum:
    """comm_r_last, comm_c, comm_r; comm_r public; comm_r = H(comm_c, comm_r_last)."""
    comm_r_last_v, comm_c_v, comm_r_v = (None, None, None) if hints is None else hints
    comm_r_last = AllocatedNum.alloc(cs, comm_r_last_v, "comm_r_last")
    comm_c = AllocatedNum.alloc(cs, comm_c_v, "comm_c")
    comm_r = AllocatedNum.alloc(cs, comm_r_v, "comm_r")
    comm_r.inputize(cs)
    hashed = call(cs, poseidon_subcircuit(2), [comm_c, comm_r_last])[0]
    cs.enforce("enforce_comm_c_comm_r_last_hash_comm_r", comm_r.variable, ONE, hashed.variable)
    return comm_r_last


def _sector_synth(arities: tuple[int, ...], challenges: int):
    por = por_subcircuit(POSEIDON, arities)

    def synth(cs: Any, ports: list, hints: Any) -> list:
        header, por_hints = (None, [None] * challenges) if hints is None else hints
        comm_r_last = _sector_header(cs, header)
        for i in range(challenges):
            call(cs, por, [comm_r_last], por_hints[i])
        return []

    return synth


@functools.cache
def sector_subcircuit(arities: tuple[int, ...], challenges: int) -> Subcircuit:
    """One sector's part of the circuit: no ports; hints
    ``((comm_r_last, comm_c, comm_r), [por hints per challenge])``."""
    key = f"post-sector/{'-'.join(map(str, arities))}/{challenges}"
    return Subcircuit(key, (), _sector_synth(arities, challenges))


def compile_post(config: PoStConfig) -> CompiledCircuit:
    """The partition circuit: ``sector_count`` copies of the sector subcircuit."""
    sub = sector_subcircuit(config.arities, config.challenge_count)
    return compile_circuit(config.circuit_id, sub, copies=config.sector_count)


def _pad(items: Sequence[Any], n: int, what: str) -> list[Any]:
    if not items:
        raise InputError(what, "", "no sectors given")
    if len(items) > n:
        raise InputError(what, "", f"{len(items)} sectors, a partition holds {n}")
    return list(items) + [items[-1]] * (n - len(items))


def public_inputs(
    config: PoStConfig,
    randomness: bytes,
    sectors: Sequence[tuple[int, int]],
    partition: int = 0,
) -> list[int]:
    """The verifier's inputs for (sector_id, comm_r) pairs of one partition."""
    out: list[int] = []
    base = partition * config.sector_count
    per_sector = []
    for i, (sector_id, comm_r) in enumerate(sectors):
        per_sector.append(
            [comm_r, *sector_leaf_challenges(config, randomness, sector_id, base + i)]
        )
    for row in _pad(per_sector, config.sector_count, "public inputs"):
        out += row
    return out


def sector_hints(proof: FallbackPoStSectorProof) -> tuple:
    """Scalar hints of one sector's witness from its vanilla proof."""
    sp = proof.sectors[0]
    pors = [
        (ip.leaf, [(el.index, list(el.hashes)) for el in ip.path]) for ip in sp.inclusion_proofs
    ]
    return (sp.comm_r_last, sp.comm_c, proof.comm_r), pors


def witness(
    cc: CompiledCircuit,
    config: PoStConfig,
    proofs: Sequence[FallbackPoStSectorProof],
    F: FrVectors = OBJECT_FR,
    xp: Any = np,
    chunk: int = 128,
) -> np.ndarray:
    """The full assignment ``[ONE, inputs…, aux…]`` as (variables, 4) uint64.

    Sectors are computed ``chunk`` at a time as lanes of one synthesis pass;
    padding sectors (repeats of the last proof) are copied, not recomputed.
    """
    for p in proofs:
        if len(p.sectors) != 1 or len(p.sectors[0].inclusion_proofs) != config.challenge_count:
            raise InputError(
                "vanilla proof",
                f"sector {p.sector_id}",
                f"needs 1 sector proof with {config.challenge_count} inclusion proofs",
            )
    n = config.sector_count
    if not proofs or len(proofs) > n:
        raise InputError("vanilla proofs", "", f"{len(proofs)} sectors for a partition of {n}")
    sub = sector_subcircuit(config.arities, config.challenge_count)
    t = cc.top
    if cc.copies != n or t.key != sub.key:
        raise ValueError(f"compiled circuit {cc.circuit_id} does not match {config.circuit_id}")
    n_in, n_aux_s, n_inp_s = cc.num_inputs, t.num_aux, t.num_inputs
    out = np.zeros((n_in + cc.num_aux, 4), dtype=np.uint64)
    out[0, 0] = 1
    inputs = out[1:n_in].reshape(n, n_inp_s, 4)
    aux = out[n_in:].reshape(n, n_aux_s, 4)
    hints = [sector_hints(p) for p in proofs]
    real = len(proofs)
    challenges = config.challenge_count
    por = por_subcircuit(POSEIDON, config.arities)
    for start in range(0, real, chunk):
        part = hints[start : start + chunk]
        k = len(part)
        # The sector headers, one lane per sector …
        V = LaneValues(k, F, xp)
        head = LaneCS(V)
        comm_r_last = _sector_header(
            head, tuple(F.from_ints([h[0][j] for h in part]) for j in range(3))
        )
        # … then every inclusion proof of these sectors as its own lane
        # (lane = sector·challenges + challenge), since they are independent.
        W = LaneValues(k * challenges, F, xp)
        pors = LaneCS(W)
        root = AllocatedNum(
            comm_r_last.variable, F.take(comm_r_last.value, np.repeat(np.arange(k), challenges))
        )
        flat = [h[1][i] for h in part for i in range(challenges)]
        por.synth(pors, [root], stack_por_hints(W, flat))
        n_head, n_por = len(head.aux), len(pors.aux)
        if (
            n_head + challenges * n_por != n_aux_s
            or len(head.inputs) + challenges * len(pors.inputs) != n_inp_s
        ):
            raise AssertionError("witness pass disagrees with the compiled sector")
        sec_aux = aux[start : start + k]
        sec_aux[:, :n_head] = head.aux_values()
        sec_aux[:, n_head:] = pors.aux_values().reshape(k, challenges * n_por, 4)
        sec_in = inputs[start : start + k]
        sec_in[:, : len(head.inputs)] = head.input_values()
        sec_in[:, len(head.inputs) :] = pors.input_values().reshape(k, -1, 4)
        log.debug("witness: sectors %d..%d", start, start + k)
    if real < n:
        aux[real:] = aux[real - 1]
        inputs[real:] = inputs[real - 1]
    return out


def single_sector_config(config: PoStConfig) -> PoStConfig:
    """The same circuit with one sector per partition (one sector's part)."""
    return dataclasses.replace(config, sector_count=1)
