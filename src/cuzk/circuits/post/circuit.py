"""The fallback PoSt circuit (WinningPoSt and WindowPoSt), compiled once.

The circuit is a row of sector slots. Per slot, in rust-fil-proofs' synthesis
order (``FallbackPoStCircuit``): allocate ``comm_r_last``, ``comm_c``,
``comm_r``; expose ``comm_r`` as a public input; enforce ``comm_r =
Poseidon2(comm_c, comm_r_last)``; then one Merkle inclusion proof in tree R
per challenge of the slot, rooted at ``comm_r_last``, each exposing its packed
path bits (the challenged leaf index) as a public input.

WindowPoSt: one slot per sector of the partition, 10 challenges each
(missing sectors are the last one repeated). WinningPoSt (as
``winning_post_setup_params`` lays it out): 66 slots of 1 challenge each,
all for the one challenged sector; slot i carries that sector's comm_r and
its vanilla inclusion proof i, whose leaf is derived with challenge index i.

Public inputs per slot: ``comm_r``, then one leaf index per challenge.
Counts for 32GiB (bellperson ``a.len()``, input constraints included):
WinningPoSt 370,723 (66 × (313 + 5,302) = 370,590 constraints, the figure
rust-fil-proofs' circuitinfo prints, plus 133 input constraints); one
WindowPoSt partition 125,305,057 (125,279,217 for 2349 sectors plus 25,840).

The witness of a partition is computed by running the slot synthesis once
over all slots as lanes (:class:`~cuzk.synthesis.witness.LaneCS`).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from cuzk.circuits.post.challenges import leaf_challenge
from cuzk.circuits.post.config import WINNING, PoStConfig
from cuzk.circuits.post.vanilla import FallbackPoStSectorProof
from cuzk.errors import InputError
from cuzk.gadgets.merkle import POSEIDON, por_subcircuit, poseidon_subcircuit, stack_por_hints
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.subcircuit import Subcircuit, call
from cuzk.gadgets.values import LaneValues
from cuzk.hashers.field import OBJECT_FR, FrVectors, limb_fr
from cuzk.r1cs import ONE
from cuzk.synthesis.compile import CompiledCircuit, compile_circuit
from cuzk.synthesis.witness import LaneCS

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
    """One slot of the circuit: no ports; hints
    ``((comm_r_last, comm_c, comm_r), [por hints per challenge])``."""
    key = f"post-sector/{'-'.join(map(str, arities))}/{challenges}"
    return Subcircuit(key, (), _sector_synth(arities, challenges))


def compile_post(config: PoStConfig) -> CompiledCircuit:
    """The partition circuit: ``circuit_sector_count`` copies of the slot subcircuit."""
    sub = sector_subcircuit(config.arities, config.circuit_challenge_count)
    return compile_circuit(config.circuit_id, sub, copies=config.circuit_sector_count)


def _check_sector_count(config: PoStConfig, n: int, what: str) -> None:
    if n == 0:
        raise InputError(what, "", "no sectors given")
    if config.kind == WINNING and n != config.sector_count:
        raise InputError(what, "", f"{n} sectors, WinningPoSt proves exactly {config.sector_count}")
    if n > config.sector_count:
        raise InputError(what, "", f"{n} sectors, a partition holds {config.sector_count}")


def _pad(rows: list[Any], n: int) -> list[Any]:
    """Fill the circuit's slots by repeating the last (rust-fil-proofs pads so)."""
    return rows + [rows[-1]] * (n - len(rows))


def public_inputs(
    config: PoStConfig,
    randomness: bytes,
    sectors: Sequence[tuple[int, int]],
    partition: int = 0,
) -> list[int]:
    """The verifier's inputs for (sector_id, comm_r) pairs of one partition.

    Each sector fills ``slots_per_sector`` consecutive slots (WinningPoSt: its
    one sector 66 times); slot g of the partition (counted across partitions)
    gets ``comm_r`` and its challenges' leaf indices.
    """
    _check_sector_count(config, len(sectors), "public inputs")
    c = config.circuit_challenge_count
    first = partition * config.circuit_sector_count
    rows = []
    for i, (sector_id, comm_r) in enumerate(sectors):
        for j in range(config.slots_per_sector):
            g = first + i * config.slots_per_sector + j
            leaves = [
                leaf_challenge(
                    randomness, sector_id, config.circuit_challenge_index(g, n), config.num_leaves
                )
                for n in range(c)
            ]
            rows.append([comm_r, *leaves])
    out: list[int] = []
    for row in _pad(rows, config.circuit_sector_count):
        out += row
    return out


def slot_hints(config: PoStConfig, proof: FallbackPoStSectorProof) -> list[tuple]:
    """Scalar hints of the circuit slots one vanilla sector proof fills:
    ``((comm_r_last, comm_c, comm_r), [por hints])`` per slot, its inclusion
    proofs taken ``circuit_challenge_count`` at a time."""
    sp = proof.sectors[0]
    header = (sp.comm_r_last, sp.comm_c, proof.comm_r)
    pors = [
        (ip.leaf, [(el.index, list(el.hashes)) for el in ip.path]) for ip in sp.inclusion_proofs
    ]
    c = config.circuit_challenge_count
    return [(header, pors[j * c : (j + 1) * c]) for j in range(config.slots_per_sector)]


def _witness_chunk(config: PoStConfig, part: Sequence[tuple], F: FrVectors, xp: Any) -> tuple:
    """Aux (k, aux per slot, 4) and inputs (k, inputs per slot, 4) of k slots."""
    k = len(part)
    challenges = config.circuit_challenge_count
    por = por_subcircuit(POSEIDON, config.arities)
    # The slot headers, one lane per slot …
    V = LaneValues(k, F, xp)
    head = LaneCS(V)
    comm_r_last = _sector_header(
        head, tuple(F.from_ints([h[0][j] for h in part]) for j in range(3))
    )
    # … then every inclusion proof of these slots as its own lane
    # (lane = slot·challenges + challenge): they are independent.
    W = LaneValues(k * challenges, F, xp)
    pors = LaneCS(W)
    lane_sector = np.repeat(np.arange(k), challenges)
    root = AllocatedNum(comm_r_last.variable, F.take(comm_r_last.value, lane_sector))
    flat = [h[1][i] for h in part for i in range(challenges)]
    por.synth(pors, [root], stack_por_hints(W, flat))
    aux = np.concatenate(
        [head.aux_values(), pors.aux_values().reshape(k, challenges * len(pors.aux), 4)], axis=1
    )
    inputs = np.concatenate(
        [head.input_values(), pors.input_values().reshape(k, challenges * len(pors.inputs), 4)],
        axis=1,
    )
    return aux, inputs


def _chunk_job(args: tuple) -> tuple:
    config, part, backend = args
    F = OBJECT_FR if backend == "object" else limb_fr(np)
    return _witness_chunk(config, part, F, np)


def witness(
    cc: CompiledCircuit,
    config: PoStConfig,
    proofs: Sequence[FallbackPoStSectorProof],
    F: FrVectors = OBJECT_FR,
    xp: Any = np,
    chunk: int = 64,
    processes: int = 1,
) -> np.ndarray:
    """The full assignment ``[ONE, inputs…, aux…]`` as (variables, 4) uint64.

    ``proofs`` are the vanilla sector proofs of the partition (WinningPoSt:
    the one sector's proof, unrolled into the circuit's 66 slots). Slots are
    computed ``chunk`` at a time as lanes of one synthesis pass
    (``processes`` > 1 spreads chunks over worker processes, numpy only);
    padding slots (repeats of the last) are copied, not recomputed.
    """
    for p in proofs:
        if len(p.sectors) != 1 or len(p.sectors[0].inclusion_proofs) != config.challenge_count:
            raise InputError(
                "vanilla proof",
                f"sector {p.sector_id}",
                f"needs 1 sector proof with {config.challenge_count} inclusion proofs",
            )
    _check_sector_count(config, len(proofs), "vanilla proofs")
    n = config.circuit_sector_count
    sub = sector_subcircuit(config.arities, config.circuit_challenge_count)
    t = cc.top
    if cc.copies != n or t.key != sub.key:
        raise ValueError(f"compiled circuit {cc.circuit_id} does not match {config.circuit_id}")
    n_in = cc.num_inputs
    out = np.empty((n_in + cc.num_aux, 4), dtype=np.uint64)
    out[0] = (1, 0, 0, 0)
    inputs = out[1:n_in].reshape(n, t.num_inputs, 4)
    aux = out[n_in:].reshape(n, t.num_aux, 4)
    hints = [h for p in proofs for h in slot_hints(config, p)]
    real = len(hints)
    starts = list(range(0, real, chunk))
    if processes > 1 and len(starts) > 1 and xp is np:
        import concurrent.futures
        import multiprocessing

        jobs = [(config, hints[s : s + chunk], F.name) for s in starts]
        ctx = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(processes, mp_context=ctx) as pool:
            results = pool.map(_chunk_job, jobs)
            for s, (a, i) in zip(starts, results, strict=True):
                aux[s : s + len(a)] = a
                inputs[s : s + len(i)] = i
    else:
        for s in starts:
            a, i = _witness_chunk(config, hints[s : s + chunk], F, xp)
            if a.shape[1:] != aux.shape[1:] or i.shape[1:] != inputs.shape[1:]:
                raise AssertionError("witness pass disagrees with the compiled sector")
            aux[s : s + len(a)] = a
            inputs[s : s + len(i)] = i
            log.debug("witness: slots %d..%d", s, s + len(a))
    if real < n:
        aux[real:] = aux[real - 1]
        inputs[real:] = inputs[real - 1]
    return out


def single_sector_config(config: PoStConfig) -> PoStConfig:
    """The same circuit with one sector per partition (one sector's part; for
    WinningPoSt, whose one sector fills all 66 slots, the whole circuit)."""
    return dataclasses.replace(config, sector_count=1)
