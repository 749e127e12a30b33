"""Lean proofs (the H step's evaluations made lazily, MSMs in shared passes):
the same proof bytes as whole ones, on the CPU reference and on the GPU with
every key part streamed from pinned host memory."""

from __future__ import annotations

import threading

import pytest

from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.fields import R
from cuzk.backends.cpu import CpuBackend
from cuzk.circuits.demo import DemoCircuit
from cuzk.errors import InputError
from cuzk.groth16 import deferred, prover, setup, verifier
from cuzk.r1cs import ConstraintSystem
from thread_branch import ThreadBranch


def _demo(rounds: int = 30, words: int = 2, seeds=((77, (5, 6)),)):
    circuit = DemoCircuit(rounds=rounds, words=words)
    cs0 = ConstraintSystem(witness=False)
    circuit.synthesize(cs0, None, None)
    r1cs = cs0.r1cs()
    pk = setup.setup(r1cs, seed=rounds)
    out = []
    for x, ws in seeds:
        cs = ConstraintSystem()
        circuit.synthesize(cs, x, list(ws))
        out.append(cs)
    return r1cs, pk, out


class Lazy(CpuBackend):
    """The CPU backend, noting the order in which the H step's inputs are made
    and the scalar sets each MSM pass takes."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []
        self.passes: list[int] = []

    def spmv(self, m, w, rows=None):
        self.events.append(f"spmv rows={rows}")
        return super().spmv(m, w, rows)

    def h_poly(self, a, b, c):
        self.events.append("h_poly " + "".join("t" if callable(x) else "a" for x in (a, b, c)))
        return super().h_poly(a, b, c)

    def msm_g1_many(self, bases, scalar_sets, phases=None):
        self.passes.append(len(scalar_sets))
        return super().msm_g1_many(bases, scalar_sets, phases)

    def msm_g2_many(self, bases, scalar_sets, phases=None):
        self.passes.append(len(scalar_sets))
        return super().msm_g2_many(bases, scalar_sets, phases)


def test_a_lean_proof_is_the_whole_proof() -> None:
    r1cs, pk, (cs,) = _demo()
    be = Lazy()
    key = prover.prepare(pk, r1cs, be)
    w = fr_to_array(cs.assignment())
    r, s = 0xABCDEF % R, R - 11
    whole = prover.prove(key, r1cs, w, r=r, s=s)
    lean = prover.prove(key, r1cs, w, r=r, s=s, lean=True)
    assert lean.to_bytes() == whole.to_bytes()
    assert verifier.verify(pk.vk, cs.public_inputs(), lean)
    # the lean proof's evaluations were thunks, each padded to the domain when made
    m = 1 << (r1cs.num_constraints - 1).bit_length()
    lean_events = be.events[be.events.index("h_poly aaa") + 1 :]
    assert lean_events == ["h_poly ttt"] + [f"spmv rows={m}"] * 3
    assert be.passes == [1] * 5  # h, l, a, b_g1, b_g2: one pass each


def test_prove_many_shares_each_pass_and_equals_one_proof_each() -> None:
    seeds = ((77, (5, 6)), (78, (1, 2)), (2**40, (9, 2**63)))
    r1cs, pk, css = _demo(seeds=seeds)
    be = Lazy()
    key = prover.prepare(pk, r1cs, be)
    ws = [fr_to_array(cs.assignment()) for cs in css]
    rs, ss = [3, 5, 7], [11, 13, R - 1]
    many = prover.prove_many(key, r1cs, ws, rs, ss)
    assert be.passes == [3] * 5  # every query's pass serves the three proofs
    for w, r, s, proof, cs in zip(ws, rs, ss, many, css, strict=True):
        assert proof.to_bytes() == prover.prove(key, r1cs, w, r=r, s=s).to_bytes()
        assert verifier.verify(pk.vk, cs.public_inputs(), proof)
    assert prover.prove_many(key, r1cs, []) == []
    with pytest.raises(ValueError, match="3 assignments"):
        prover.prove_many(key, r1cs, ws, rs[:2], ss)
    with pytest.raises(InputError, match="length"):
        prover.prove_many(key, r1cs, [ws[0], ws[1][:-1]])


def test_prove_many_draws_its_randomness_per_proof() -> None:
    seeds = ((77, (5, 6)), (77, (5, 6)))
    r1cs, pk, css = _demo(seeds=seeds)
    key = prover.prepare(pk, r1cs, CpuBackend())
    w = fr_to_array(css[0].assignment())
    a, b = prover.prove_many(key, r1cs, [w, w])
    assert a.to_bytes() != b.to_bytes()  # the same witness, two random (r, s)
    assert all(verifier.verify(pk.vk, css[0].public_inputs(), p) for p in (a, b))


def test_compact_sets_share_each_side_pass_one_assignment_at_a_time() -> None:
    """prove_many with compact L, A and B: each assignment's H step and H MSM in
    turn (one assignment on the backend at a time), its compact sets made
    once (B's for both of its queries), then one pass a query for all the
    proofs: the proof bytes of one at a time, verified; a part of the side
    queries compact, the rest per assignment while it lives."""
    from cuzk.backends.base import Compact

    seeds = ((77, (5, 6)), (78, (1, 2)), (2**40, (9, 2**63)))
    r1cs, pk, css = _demo(seeds=seeds)
    ws = [fr_to_array(cs.assignment()) for cs in css]
    rs, ss = [3, 5, 7], [11, 13, R - 1]
    alone = prover.prepare(pk, r1cs, CpuBackend())
    want = [
        prover.prove(alone, r1cs, w, r=r, s=s).to_bytes()
        for w, r, s in zip(ws, rs, ss, strict=True)
    ]

    class Noting(Lazy):
        def __init__(self) -> None:
            super().__init__()
            self.made: list[tuple] = []
            self.kinds: list[str] = []

        def compact(self, a, idx=None, start=0):
            self.made.append((idx is None, start))
            return super().compact(a, idx, start)

        def msm_g1_many(self, bases, scalar_sets, phases=None):
            self.kinds.append("".join("c" if isinstance(x, Compact) else "d" for x in scalar_sets))
            return super().msm_g1_many(bases, scalar_sets, phases)

        def msm_g2_many(self, bases, scalar_sets, phases=None):
            self.kinds.append("".join("c" if isinstance(x, Compact) else "d" for x in scalar_sets))
            return super().msm_g2_many(bases, scalar_sets, phases)

    be = Noting()
    key = prover.prepare(pk, r1cs, be)
    times = prover.StageTimes()
    everything = ("l", "a", "b_g1", "b_g2")
    got = deferred.prove_compact(key, r1cs, ws, rs, ss, times, everything)
    assert [p.to_bytes() for p in got] == want
    for cs, proof in zip(css, got, strict=True):
        assert verifier.verify(pk.vk, cs.public_inputs(), proof)
    assert be.passes == [1, 1, 1, 3, 3, 3, 3]  # H per assignment, then one pass a side query
    assert be.kinds == ["d", "d", "d", "ccc", "ccc", "ccc", "ccc"]
    ni = r1cs.num_inputs
    assert be.made == [(True, ni), (False, 0), (False, 0)] * 3  # L, A, then B once
    assert times.detail["compact"] > 0 and {"msm_h", "msm_l", "msm_b_g1"} <= set(times.detail)
    # L and B_G2 compact; A and B_G1 per assignment while it lives
    be.passes.clear()
    be.kinds.clear()
    got = deferred.prove_compact(key, r1cs, ws, rs, ss, None, {"l", "b_g2"})
    assert [p.to_bytes() for p in got] == want
    assert be.kinds == ["d", "d", "d"] * 3 + ["ccc", "ccc"]
    with pytest.raises(ValueError, match="not \\['h'\\]"):
        deferred.prove_compact(key, r1cs, ws, rs, ss, None, {"h"})


def test_deferred_parts_are_finished_together() -> None:
    """prove_deferred one assignment at a time (each part holding its sums
    and compact sets, the assignment not kept), finish_deferred with the
    parts of several calls: one pass a compact query for them all, the
    proofs of one at a time; a part lacking a sum is refused."""
    seeds = ((77, (5, 6)), (78, (1, 2)))
    r1cs, pk, css = _demo(seeds=seeds)
    ws = [fr_to_array(cs.assignment()) for cs in css]
    alone = prover.prepare(pk, r1cs, CpuBackend())
    want = [prover.prove(alone, r1cs, w, r=3 + j, s=9 + j).to_bytes() for j, w in enumerate(ws)]
    be = Lazy()
    key = prover.prepare(pk, r1cs, be)
    both = ("a", "b_g1", "b_g2")
    parts = [
        deferred.prove_deferred(key, r1cs, w.copy(), both, r=3 + j, s=9 + j)
        for j, w in enumerate(ws)
    ]
    for d in parts:
        assert set(d.points) == {"h", "l"} and set(d.sets) == set(both)
        assert d.sets["b_g1"] is d.sets["b_g2"]  # B's one set for both of its queries
        assert d.host_bytes == d.sets["a"].nbytes + d.sets["b_g1"].nbytes > 0
    assert be.passes == [1, 1] * 2
    be.passes.clear()
    assert [p.to_bytes() for p in deferred.finish_deferred(key, parts)] == want
    assert be.passes == [2, 2, 2]  # A, B_G1, B_G2: one pass for both parts
    assert deferred.finish_deferred(key, []) == []
    lacking = deferred.Deferred(1, 2, {"h": None}, {})
    with pytest.raises(ValueError, match="part 0 lacks"):
        deferred.finish_deferred(key, [lacking])
    with pytest.raises(ValueError, match="compact takes"):
        deferred.prove_deferred(key, r1cs, ws[0], {"h"})


class Forking(Lazy):
    """The lazy CPU backend with the fork capability: the branch runs in a thread
    of its own (as the CUDA backend's does); each pass notes its thread and
    whether its scalar sets were gathered ones."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.forks: list[tuple] = []
        self.where: list[tuple[str, bool]] = []  # (thread, gathered sets) a pass
        self.fail = fail

    def fork(self, domain_size: int, num_variables: int, share: int | None = None):
        self.forks.append((domain_size, num_variables, share))
        return ThreadBranch()

    def _note(self, scalar_sets) -> None:
        from cuzk.backends.base import Gathered

        gathered = {isinstance(x, Gathered) for x in scalar_sets}
        assert len(gathered) == 1
        self.where.append((threading.current_thread().name, gathered.pop()))
        if self.fail and threading.current_thread().name == "side":
            raise RuntimeError("side MSM failed")

    def msm_g1_many(self, bases, scalar_sets, phases=None):
        self._note(scalar_sets)
        return super().msm_g1_many(bases, scalar_sets, phases)

    def msm_g2_many(self, bases, scalar_sets, phases=None):
        self._note(scalar_sets)
        return super().msm_g2_many(bases, scalar_sets, phases)


def test_a_lean_proof_with_a_side_branch_is_the_proof_in_turn() -> None:
    """With a fork share the lean prover runs L, A and B (G1 and G2) on the
    branch beside H's MSM, their a and b scalars as gathered sets (the
    backend gathers them, a chunk at a time where the bases stream): the
    same proof bytes as in turn, and the whole proof's."""
    seeds = ((77, (5, 6)), (78, (1, 2)))
    r1cs, pk, css = _demo(seeds=seeds)
    ws = [fr_to_array(cs.assignment()) for cs in css]
    r, s = 0x5EED % R, R - 3
    whole = prover.prove(prover.prepare(pk, r1cs, CpuBackend()), r1cs, ws[0], r=r, s=s)
    be = Forking()
    key = prover.prepare(pk, r1cs, be)
    times = prover.StageTimes()
    lean = prover.prove(key, r1cs, ws[0], r=r, s=s, times=times, lean=True, fork_share=3 << 20)
    assert lean.to_bytes() == whole.to_bytes()
    assert verifier.verify(pk.vk, css[0].public_inputs(), lean)
    m = 1 << (r1cs.num_constraints - 1).bit_length()
    assert be.forks == [(m, r1cs.num_variables, 3 << 20)]
    me = threading.current_thread().name
    # H here; L (the assignment's tail), then A, B in G1 and G2 gathered, on the branch
    assert [g for t, g in be.where if t == me] == [False]
    assert [g for t, g in be.where if t == "side"] == [False, True, True, True]
    assert {"msm_h", "msm_l", "msm_a", "msm_b_g1", "side_wait"} <= set(times.detail)
    # no share: no branch, the same passes in turn on this thread
    be.where.clear()
    for share in (None, 0):
        assert prover.prove(key, r1cs, ws[0], r=r, s=s, lean=True, fork_share=share) == lean
    assert len(be.forks) == 1 and {t for t, _ in be.where} == {me}
    # several proofs: each pass on the branch serves them all
    be.passes.clear()
    many = prover.prove_many(key, r1cs, ws, [r, 5], [s, 9], fork_share=1 << 20)
    assert be.passes == [2] * 5 and len(be.forks) == 2
    assert many[0].to_bytes() == whole.to_bytes()
    assert many[1].to_bytes() == prover.prove(key, r1cs, ws[1], r=5, s=9).to_bytes()


def test_a_failed_side_msm_fails_the_lean_proof_after_the_join() -> None:
    r1cs, pk, (cs,) = _demo()
    key = prover.prepare(pk, r1cs, Forking(fail=True))
    with pytest.raises(RuntimeError, match="side MSM failed"):
        prover.prove(key, r1cs, fr_to_array(cs.assignment()), lean=True, fork_share=1 << 20)
    assert all(t.name != "side" for t in threading.enumerate())  # joined, not left running


class Meeting(Forking):
    """A forking backend whose H MSM on the calling thread meets the branch's
    work: it notes that it began and waits (bounded) for the branch to have
    begun too, so that the two are shown to overlap by events."""

    def __init__(self, fail_h: bool = False) -> None:
        super().__init__()
        self.h_began, self.side_began = threading.Event(), threading.Event()
        self.met = False
        self.fail_h = fail_h

    def msm_g1_many(self, bases, scalar_sets, phases=None):
        if threading.current_thread().name != "side" and bases is self.h_bases:
            self.h_began.set()
            self.met = self.side_began.wait(5)
            if self.fail_h:
                raise RuntimeError("H MSM failed")
        return super().msm_g1_many(bases, scalar_sets, phases)


def test_an_earlier_groups_finish_runs_beside_the_next_parts_h_msm() -> None:
    """prove_deferred(beside=…): the finish of parts made before runs on the
    side branch (the share asked of fork) while this part's H MSM runs, and is
    joined before it returns; every proof the one made alone. No branch (no
    share, or a backend that does not fork): the work is not run there."""
    seeds = ((77, (5, 6)), (78, (1, 2)), (79, (3, 4)))
    r1cs, pk, css = _demo(seeds=seeds)
    ws = [fr_to_array(cs.assignment()) for cs in css]
    alone = prover.prepare(pk, r1cs, CpuBackend())
    want = [prover.prove(alone, r1cs, w, r=3 + j, s=9 + j).to_bytes() for j, w in enumerate(ws)]
    be = Meeting()
    key = prover.prepare(pk, r1cs, be)
    be.h_bases = key.h
    queries = prover.SIDE_QUERIES
    group = [deferred.prove_deferred(key, r1cs, ws[j], queries, r=3 + j, s=9 + j) for j in (0, 1)]
    be.forks.clear()
    be.where.clear()
    done: dict = {}

    def finish(ending) -> None:
        be.side_began.set()
        done["met"] = be.h_began.wait(5)
        done["proofs"] = deferred.finish_deferred(key, group)

    times = prover.StageTimes()
    part = deferred.prove_deferred(
        key, r1cs, ws[2], queries, r=5, s=11, times=times, beside=finish, fork_share=2 << 20
    )
    assert be.met and done["met"]  # each saw the other begun: they overlapped
    m = 1 << (r1cs.num_constraints - 1).bit_length()
    assert be.forks == [(m, r1cs.num_variables, 2 << 20)]
    # the group's passes (L, A, B in G1 and G2) on the branch, H's here
    assert [t for t, _ in be.where].count("side") == 4
    assert "beside_wait" in times.detail and all(t.name != "side" for t in threading.enumerate())
    assert [p.to_bytes() for p in done["proofs"]] == want[:2]
    for cs, p in zip(css, done["proofs"], strict=False):
        assert verifier.verify(pk.vk, cs.public_inputs(), p)
    (third,) = deferred.finish_deferred(key, [part])
    assert third.to_bytes() == prover.prove(alone, r1cs, ws[2], r=5, s=11).to_bytes()
    # no share, or no fork: not run beside (the caller runs it in turn)
    ran = []
    deferred.prove_deferred(key, r1cs, ws[2], queries, beside=ran.append, fork_share=0)
    plain = prover.prepare(pk, r1cs, Lazy())
    deferred.prove_deferred(plain, r1cs, ws[2], queries, beside=ran.append, fork_share=9)
    assert ran == [] and len(be.forks) == 1


def test_the_shared_passes_run_a_pass_at_a_time_under_any_loaded_key() -> None:
    """Finishing: a pass a step (A, then B in G1 and G2, here under two keys
    of the circuit in turn: the sums do not depend on which), the proofs
    those of finish_deferred; proofs asked for before the last pass are
    refused."""
    seeds = ((77, (5, 6)), (78, (1, 2)))
    r1cs, pk, css = _demo(seeds=seeds)
    ws = [fr_to_array(cs.assignment()) for cs in css]
    be = Lazy()
    keys = [prover.prepare(pk, r1cs, be), prover.prepare(pk, r1cs, CpuBackend())]
    both = ("a", "b_g1", "b_g2")
    parts = [
        deferred.prove_deferred(keys[0], r1cs, w.copy(), both, r=3 + j, s=9 + j)
        for j, w in enumerate(ws)
    ]
    want = [p.to_bytes() for p in deferred.finish_deferred(keys[0], parts)]
    be.passes.clear()
    passes = deferred.Finishing(parts)
    assert passes.left == list(both)
    passes.step(keys[0])
    assert passes.left == ["b_g1", "b_g2"] and be.passes == [2]
    with pytest.raises(ValueError, match="still to run"):
        passes.proofs(keys[0])
    passes.step(keys[1])
    passes.step(keys[0])
    assert passes.done and [p.to_bytes() for p in passes.proofs(keys[1])] == want


def test_a_failed_h_msm_joins_the_work_beside_it_first() -> None:
    """H's MSM fails (or is cancelled: a stopping worker) while the branch's
    work runs: the branch is joined before the error comes out, its work
    done, no branch thread left running."""
    r1cs, pk, (cs,) = _demo()
    be = Meeting(fail_h=True)
    key = prover.prepare(pk, r1cs, be)
    be.h_bases = key.h
    w = fr_to_array(cs.assignment())
    ended = []

    def beside(ending) -> None:
        be.side_began.set()
        be.h_began.wait(5)
        ended.append(True)

    with pytest.raises(RuntimeError, match="H MSM failed"):
        deferred.prove_deferred(key, r1cs, w, ("l",), beside=beside, fork_share=1 << 20)
    assert ended == [True] and all(t.name != "side" for t in threading.enumerate())


# --- on the GPU -------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("resident", [True, False], ids=["resident", "streamed"])
def test_gpu_lean_proofs_over_streamed_key_parts_equal_the_cpu(resident: bool) -> None:
    """Every key part streamed from pinned host memory (bases and matrices), the
    H step lean and two proofs sharing each pass: the CPU's proof bytes."""
    from cuzk.backends.cuda import CudaBackend

    seeds = ((987654321, tuple(range(1, 13))), (5, tuple(range(40, 52))))
    r1cs, pk, css = _demo(rounds=1500, words=12, seeds=seeds)
    ws = [fr_to_array(cs.assignment()) for cs in css]
    rs, ss = [0x1234567, 99], [R - 5, 7]
    cpu_key = prover.prepare(pk, r1cs, CpuBackend())
    want = [prover.prove(cpu_key, r1cs, w, r=r, s=s) for w, r, s in zip(ws, rs, ss, strict=True)]
    gpu = CudaBackend()
    where = {p: resident for p in (*prover.MATRICES, "h", "l", "a", "b_g1", "b_g2")}
    key = prover.prepare(pk, r1cs, gpu, resident=where)
    assert all(getattr(key, q).resident == resident for q in ("h", "l", "a", "b_g1", "b_g2"))
    got = prover.prove_many(key, None, ws, rs, ss)
    assert [p.to_bytes() for p in got] == [p.to_bytes() for p in want]
    for cs, proof in zip(css, got, strict=True):
        assert verifier.verify(pk.vk, cs.public_inputs(), proof)
    key.close()


@pytest.mark.gpu
@pytest.mark.parametrize("resident", [True, False], ids=["resident", "streamed"])
def test_gpu_lean_proofs_with_a_side_branch_equal_the_cpu(resident: bool) -> None:
    """L, A and B on the CUDA backend's branch beside H's MSM, within a lean
    room split as the plan splits it (the branch's passes within its share,
    H's within the rest; the a and b scalars gathered a chunk at a time where
    the bases stream, whole where resident): the CPU's proof bytes, verified."""
    from cuzk.backends.cuda import CudaBackend

    seeds = ((987654321, tuple(range(1, 13))), (5, tuple(range(40, 52))))
    r1cs, pk, css = _demo(rounds=1500, words=12, seeds=seeds)
    ws = [fr_to_array(cs.assignment()) for cs in css]
    rs, ss = [0x1234567, 99], [R - 5, 7]
    cpu_key = prover.prepare(pk, r1cs, CpuBackend())
    want = [prover.prove(cpu_key, r1cs, w, r=r, s=s) for w, r, s in zip(ws, rs, ss, strict=True)]
    gpu = CudaBackend()
    where = {p: resident for p in (*prover.MATRICES, "h", "l", "a", "b_g1", "b_g2")}
    key = prover.prepare(pk, r1cs, gpu, resident=where)
    budget = gpu.ctx.budget
    room, share = 96 << 20, 32 << 20
    times = prover.StageTimes()
    with gpu.work_stream("prove"), budget.sized_within(room):
        got = prover.prove_many(key, None, ws, rs, ss, times, fork_share=share)
        assert budget.free_bytes == room  # the room back whole after the join
    assert [p.to_bytes() for p in got] == [p.to_bytes() for p in want]
    for cs, proof in zip(css, got, strict=True):
        assert verifier.verify(pk.vk, cs.public_inputs(), proof)
    assert "side_wait" in times.detail
    # only the branch runs a G2 MSM: its holds stayed within its share
    peak = budget.peak_by_operation
    g2 = ("msm_g2 streamed",) if not resident else ("msm_g2 scalars", "msm_g2 workspace")
    assert 0 < sum(peak.get(k, 0) for k in g2) <= share
    if not resident:
        assert 0 < peak["msm_g1 streamed"] <= room - share
    assert budget.overdrawn_by_operation == {}
    key.close()


@pytest.mark.gpu
@pytest.mark.parametrize("resident", [True, False], ids=["resident", "streamed"])
def test_gpu_compact_side_passes_equal_the_cpu(resident: bool) -> None:
    """Every key part resident or streamed, L, A and B as compact sets in
    pinned host memory (classified on the device), one assignment on the
    device at a time, one pass a side query for both proofs: the CPU's proof
    bytes, verified, within the budget."""
    from cuzk.backends.cuda import CudaBackend

    seeds = ((987654321, tuple(range(1, 13))), (5, tuple(range(40, 52))))
    r1cs, pk, css = _demo(rounds=1500, words=12, seeds=seeds)
    ws = [fr_to_array(cs.assignment()) for cs in css]
    rs, ss = [0x1234567, 99], [R - 5, 7]
    cpu_key = prover.prepare(pk, r1cs, CpuBackend())
    want = [prover.prove(cpu_key, r1cs, w, r=r, s=s) for w, r, s in zip(ws, rs, ss, strict=True)]
    gpu = CudaBackend()
    where = {p: resident for p in (*prover.MATRICES, "h", "l", "a", "b_g1", "b_g2")}
    key = prover.prepare(pk, r1cs, gpu, resident=where)
    got = deferred.prove_compact(key, None, ws, rs, ss, None, prover.SIDE_QUERIES)
    assert [p.to_bytes() for p in got] == [p.to_bytes() for p in want]
    for cs, proof in zip(css, got, strict=True):
        assert verifier.verify(pk.vk, cs.public_inputs(), proof)
    assert gpu.ctx.budget.overdrawn_by_operation == {}
    key.close()


@pytest.mark.gpu
def test_gpu_shared_passes_beside_the_next_parts_h_msm_equal_the_cpu() -> None:
    """Every key part streamed: two parts' compact passes run a pass at a time
    on the side branch beside a third part's H MSM (within a share of the
    MSM room the caller sizes within), the rest in turn: the CPU's proof
    bytes for all three, verified, no overdraw."""
    from cuzk.backends.cuda import CudaBackend

    seeds = ((987654321, tuple(range(1, 13))), (5, tuple(range(40, 52))), (7, tuple(range(9, 21))))
    r1cs, pk, css = _demo(rounds=1500, words=12, seeds=seeds)
    ws = [fr_to_array(cs.assignment()) for cs in css]
    rs, ss = [0x1234567, 99, 3], [R - 5, 7, 11]
    cpu_key = prover.prepare(pk, r1cs, CpuBackend())
    want = [prover.prove(cpu_key, r1cs, w, r=r, s=s) for w, r, s in zip(ws, rs, ss, strict=True)]
    gpu = CudaBackend()
    where = {p: False for p in (*prover.MATRICES, "h", "l", "a", "b_g1", "b_g2")}
    key = prover.prepare(pk, r1cs, gpu, resident=where)
    q = prover.SIDE_QUERIES
    group = [deferred.prove_deferred(key, None, ws[j], q, rs[j], ss[j]) for j in (0, 1)]
    passes = deferred.Finishing(group)
    ran = []

    def beside(ending) -> None:
        while not passes.done:
            passes.step(key)
            ran.append(ending())
            if ending():
                break

    room = 512 << 20
    with gpu.ctx.budget.sized_within(room):
        third = deferred.prove_deferred(
            key, None, ws[2], q, rs[2], ss[2], beside=beside, fork_share=room // 3
        )
    assert ran  # at least one pass ran on the branch
    while not passes.done:
        passes.step(key)
    got = passes.proofs(key) + deferred.finish_deferred(key, [third])
    assert [p.to_bytes() for p in got] == [p.to_bytes() for p in want]
    for cs, proof in zip(css, got, strict=True):
        assert verifier.verify(pk.vk, cs.public_inputs(), proof)
    assert gpu.ctx.budget.overdrawn_by_operation == {}
    key.close()
