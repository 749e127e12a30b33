"""One partition proven: the path the daemon's GPU workers and ``cuzk-bench
prove-c1`` share.

:func:`prove_partition` takes a prepared key, the partition's circuit and its
witness input — a full assignment made on the host (checked where it was
made, by the kind's synthesis), or a :class:`DeviceWitness`: a hint table
that the circuit's static plan turns into the assignment on the proving
device, whose public inputs are then copied back and checked
(:func:`cuzk.r1cs.inputs.check_public_inputs`) — and proves it, verifying the
proof when given the verifying key. It returns a :class:`PartitionProof`:
the proof, its prover stage times and the seconds of each step.

Where the memory comes from is the caller's: :class:`Scopes` says which
context the witness and the proof each run in. The bench proves with
nothing around them (:data:`HERE`); the daemon's GPU workers draw the
backend's temporaries from the partition's reservations, on the stream of
its priority (:class:`cuzk.engine.pipeline.gpu.LeaseScopes`), and verify in
their epilogue stage with :func:`verify_partition`, so that the device goes
on to the next partition meanwhile.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from cuzk.groth16 import deferred, prover, verifier
from cuzk.groth16.keys import VerifyingKey
from cuzk.groth16.proof import Proof
from cuzk.r1cs.inputs import check_public_inputs, input_rows


@dataclass
class DeviceWitness:
    """A partition's assignment to be made on the proving device: ``plan`` (the
    circuit's static witness plan, uploaded to ``maker``, the device's witness
    maker) run on ``hints`` (the partition's hint table)."""

    plan: Any
    maker: Any
    hints: Any


class Scopes:
    """Where a partition's witness and proof run: the contexts entered around
    each (none here). :meth:`proving` is told whether the witness was just made
    on the device (a caller may then take the rest of the proof's memory)."""

    def mode(self) -> dict[str, Any]:
        """prover.prove's keywords for this proof (lean, fork_share)."""
        return {}

    def witness(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def proving(
        self, times: prover.StageTimes, after_device_witness: bool
    ) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()


HERE = Scopes()


@dataclass
class PartitionProof:
    proof: Proof | None  # None while ``deferred`` waits for finish_partitions
    times: prover.StageTimes
    witness_s: float = 0.0  # the assignment made on the device and its inputs copied back
    prove_s: float = 0.0  # the Groth16 proof (within its scope)
    verify_s: float = 0.0
    verified: bool | None = None  # None: not verified here (the caller verifies)
    deferred: deferred.Deferred | None = None  # its part, its shared side queries to come


def prove_partition(
    key: prover.PreparedKey,
    circuit: Any,
    witness: Any,
    inputs: Sequence[int],
    *,
    source: str,
    partition: int,
    scopes: Scopes = HERE,
    times: prover.StageTimes | None = None,
    verify_with: VerifyingKey | None = None,
    defer: Collection[str] = (),
    beside: Callable[[Callable[[], bool]], Any] | None = None,
    fork_share: int = 0,
) -> PartitionProof:
    """Partition ``partition`` of a request (``source``) proven under ``key``:
    ``witness`` is its full assignment or a :class:`DeviceWitness`;
    ``inputs`` the public inputs it is verified with; ``circuit`` the R1CS its
    assignment is evaluated on (None: the key's own matrices). A device
    witness that does not carry ``inputs`` is an InputError naming the
    partition. With ``verify_with``, the proof is verified before it is
    returned (``verified``). With ``defer`` (side queries: the residency's
    ``shared_queries``) the partition's part is made instead of its proof
    (:func:`cuzk.groth16.deferred.prove_deferred`: those queries' scalars as
    compact sets in host memory) and returned as ``deferred``, for
    :func:`finish_partitions` to complete with other partitions'. With
    ``defer``, ``beside`` runs on a side branch of ``fork_share`` bytes beside
    the partition's H MSM where the backend forks (``prove_deferred``'s: an
    earlier group's :meth:`SharedPasses.run`, told when H's MSM is done),
    joined before this returns."""
    if defer and verify_with is not None:
        raise ValueError("prove_partition: a deferred partition is verified once finished")
    times = times if times is not None else prover.StageTimes()

    def run(w: Any) -> tuple[Proof | None, deferred.Deferred | None]:
        if defer:
            part = deferred.prove_deferred(
                key, circuit, w, defer, times=times, beside=beside, fork_share=fork_share
            )
            return None, part
        return prover.prove(key, circuit, w, times=times, **scopes.mode()), None

    out_witness = 0.0
    if isinstance(witness, DeviceWitness):
        t = time.perf_counter()
        with scopes.witness():
            W = witness.plan.run_table(witness.maker, witness.hints)
        try:
            with scopes.witness():
                got = key.backend.to_host(input_rows(W, len(inputs)))
            out_witness = time.perf_counter() - t  # synchronised by the copy
            times.detail["witness"] = out_witness
            check_public_inputs(got, inputs, source, f"partition {partition}")
            t = time.perf_counter()
            with scopes.proving(times, after_device_witness=True):
                proof, part = run(W)
        finally:
            witness.maker.free(W)
    else:
        t = time.perf_counter()
        with scopes.proving(times, after_device_witness=False):
            proof, part = run(witness)
    done = PartitionProof(proof, times, witness_s=out_witness, prove_s=time.perf_counter() - t)
    done.deferred = part
    if verify_with is not None:
        t = time.perf_counter()
        done.verified = verify_partition(verify_with, inputs, proof)
        done.verify_s = time.perf_counter() - t
    return done


def finish_partitions(
    key: prover.PreparedKey,
    parts: Sequence[PartitionProof],
    scopes: Scopes = HERE,
    times: prover.StageTimes | None = None,
    passes: SharedPasses | None = None,
) -> float:
    """The proofs of partitions :func:`prove_partition` deferred under ``key``:
    their shared side queries' MSMs in one pass a query for them all
    (:func:`cuzk.groth16.deferred.finish_deferred`), within ``scopes``'s
    proving context; each part gets its ``proof``. ``passes``: the group's
    passes begun elsewhere (beside earlier partitions' H MSMs), the rest run
    here. Returns the seconds taken."""
    if not parts:
        return 0.0
    passes = passes if passes is not None else SharedPasses(parts, times)
    t = time.perf_counter()
    with scopes.proving(passes.times, after_device_witness=False):
        passes.run(key)
    return time.perf_counter() - t


class SharedPasses:
    """A group's shared passes (:class:`cuzk.groth16.deferred.Finishing`), run
    whole (:func:`finish_partitions`) or a pass at a time on side branches
    beside later partitions' H MSMs (``prove_partition(beside=…)``: the
    branch already draws from the carrier's reservation and sizes within its
    share); each part gets its ``proof`` once the last pass is done."""

    def __init__(self, parts: Sequence[PartitionProof], times: prover.StageTimes | None = None):
        self.parts = list(parts)
        self.times = times if times is not None else prover.StageTimes()
        self.finishing = deferred.Finishing([p.deferred for p in self.parts], self.times)
        self.took = 0.0  # seconds its passes ran, on whichever line

    @property
    def done(self) -> bool:
        return self.parts[0].deferred is None

    def run(self, key: prover.PreparedKey, ending: Callable[[], bool] | None = None) -> bool:
        """Passes under ``key`` until none is left, or (with ``ending``) until
        ``ending()`` holds after one (at least one runs); then the proofs.
        Returns whether the group is done."""
        t = time.perf_counter()
        try:
            f = self.finishing
            while not f.done:
                f.step(key)
                if ending is not None and ending():
                    break
            if f.done and not self.done:
                proofs = f.proofs(key)
                took = self.took + time.perf_counter() - t
                for p, proof in zip(self.parts, proofs, strict=True):
                    p.proof, p.deferred = proof, None
                    p.prove_s += took / len(self.parts)
        finally:
            self.took += time.perf_counter() - t
        return self.done


def verify_partition(vk: VerifyingKey, inputs: Sequence[int], proof: Proof) -> bool:
    """Whether a partition's proof verifies against its public inputs."""
    return verifier.verify(vk, list(inputs), proof)
