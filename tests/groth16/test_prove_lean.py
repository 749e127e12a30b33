"""Lean proofs (the H step's evaluations made lazily, MSMs in shared passes):
the same proof bytes as whole ones, on the CPU reference and on the GPU with
every key part streamed from pinned host memory."""

from __future__ import annotations

import pytest

from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.fields import R
from cuzk.backends.cpu import CpuBackend
from cuzk.circuits.demo import DemoCircuit
from cuzk.errors import InputError
from cuzk.groth16 import prover, setup, verifier
from cuzk.r1cs import ConstraintSystem


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
