"""snarkjs files against snarkjs itself: each side accepts the other's proofs.

Needs node and the pinned snarkjs / circom2 (installed by ``make test``);
circuits are compiled and set up once and cached (see interop_tools).
"""

import json
import struct

import numpy as np
import pytest

from cuzk.algebra.arrays import fr_from_array
from cuzk.algebra.curves import G1
from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import R
from cuzk.backends.cpu import CpuBackend
from cuzk.errors import InputError, VerificationError
from cuzk.formats import snarkjs as sj
from cuzk.formats import snarkjs_json as sjson
from cuzk.formats import zkey_prover
from cuzk.formats.binfile import BinFile, write_binfile
from cuzk.groth16 import verifier
from cuzk.groth16.proof import Proof
from interop_tools import Circuit, bn128_ptau, circuit, snarkjs_verifies

pytestmark = pytest.mark.slow
be = CpuBackend()
NAMES = ("cube_mix", "range_sum")


@pytest.fixture(scope="module", params=NAMES)
def circ(request) -> Circuit:
    return circuit(request.param)


@pytest.fixture(scope="module")
def cube() -> Circuit:
    return circuit("cube_mix")


# --- domain re-indexing -----------------------------------------------------------


@pytest.mark.parametrize("log_m", [1, 3, 8, 16])
def test_snarkjs_domain_positions_name_the_same_points(log_m):
    m = 1 << log_m
    d, d2 = EvaluationDomain(log_m), EvaluationDomain(log_m + 1)
    w_s = pow(sj.SNARKJS_ROOT, 1 << (32 - log_m), R)
    z_s = pow(sj.SNARKJS_ROOT, 1 << (31 - log_m), R)
    rows = sj.snarkjs_row_positions(m)
    odd = sj.snarkjs_odd_coset_positions(m)
    assert sorted(rows) == list(range(m)) and sorted(odd) == list(range(m))
    for c in (0, 1, m // 2, m - 1):
        assert pow(w_s, c, R) == pow(d.omega, int(rows[c]), R)
        assert z_s * pow(w_s, c, R) % R == d2.omega * pow(d.omega, int(odd[c]), R) % R


# --- reading -----------------------------------------------------------------------


def test_r1cs_gets_one_input_constraint_per_public_signal(circ):
    c = sj.read_r1cs(circ.r1cs)
    w = sj.read_wtns(circ.wtns, c.n_vars)
    r1 = c.r1cs
    assert r1.num_inputs == c.n_public + 1
    assert r1.num_constraints == c.n_constraints + c.n_public + 1
    assert r1.is_satisfied(fr_from_array(w))
    # the appended rows: x_i in A, nothing in B or C
    for i in range(c.n_public + 1):
        row = c.n_constraints + i
        lo, hi = r1.a.indptr[row], r1.a.indptr[row + 1]
        assert list(r1.a.indices[lo:hi]) == [i]
        assert r1.b.indptr[row + 1] == r1.b.indptr[row]
        assert r1.c.indptr[row + 1] == r1.c.indptr[row]
    # public.json written by snarkjs = wires 1..nPublic
    assert fr_from_array(w[1 : c.n_public + 1]) == circ.public_values()


def test_zkey_qap_is_the_r1cs_in_cuzk_domain_order(circ):
    c = sj.read_r1cs(circ.r1cs)
    z = sj.read_zkey(circ.zkey)
    assert (z.n_vars, z.n_public) == (c.n_vars, c.n_public)
    assert z.domain_size == EvaluationDomain.for_size(c.r1cs.num_constraints).size
    w = fr_from_array(sj.read_wtns(circ.wtns, c.n_vars))
    rows = sj.snarkjs_row_positions(z.domain_size)
    qa, qb = z.matrices
    for ours, theirs in ((c.r1cs.a, qa), (c.r1cs.b, qb)):
        want = ours.matvec(w) + [0] * (z.domain_size - c.r1cs.num_constraints)
        got = theirs.matvec(w)
        assert [got[rows[i]] for i in range(z.domain_size)] == want


def test_vkey_json_matches_the_zkey(circ):
    z = sj.read_zkey(circ.zkey)
    vk = sjson.read_vk_json(circ.vkey)
    assert vk.ic == z.vk.ic
    assert (vk.alpha_g1, vk.beta_g2, vk.gamma_g2, vk.delta_g2) == (
        z.vk.alpha_g1,
        z.vk.beta_g2,
        z.vk.gamma_g2,
        z.vk.delta_g2,
    )
    assert vk.beta_g1 is None and vk.delta_g1 is None  # not in the JSON
    doc = sjson.vk_to_json(z.vk)
    theirs = json.loads(circ.vkey.read_text())
    for k in ("nPublic", "vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2", "IC"):
        assert doc[k] == theirs[k]


# --- both directions -------------------------------------------------------------


def test_snarkjs_accepts_our_proof_and_we_accept_theirs(circ, tmp_path):
    z = sj.read_zkey(circ.zkey)
    w = sj.read_wtns(circ.wtns, z.n_vars)
    proof = zkey_prover.prove_zkey(zkey_prover.prepare_zkey(z, be), w)
    public = zkey_prover.public_signals(z, w)
    assert public == circ.public_values()
    sjson.write_proof_json(tmp_path / "proof.json", proof)
    sjson.write_public_json(tmp_path / "public.json", public)
    assert snarkjs_verifies(circ.vkey, tmp_path / "public.json", tmp_path / "proof.json")
    # and theirs with ours
    vk = sjson.read_vk_json(circ.vkey)
    theirs = sjson.read_proof_json(circ.proof)
    assert verifier.verify(vk, sjson.read_public_json(circ.public), theirs)


def test_tampered_snarkjs_proofs_are_rejected(circ, tmp_path):
    vk = sjson.read_vk_json(circ.vkey)
    p = sjson.read_proof_json(circ.proof)
    public = circ.public_values()
    bumped = [public[0] + 1, *public[1:]]
    assert not verifier.verify(vk, bumped, p)
    assert not verifier.verify(vk, public, Proof(p.c, p.b, p.a))
    assert not verifier.verify(vk, public, Proof(p.a, p.b, G1.double(p.c)))
    # a byte changed in the JSON: off the curve, refused by the reader
    doc = json.loads(circ.proof.read_text())
    doc["pi_a"][0] = str(int(doc["pi_a"][0]) ^ 1)
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="pi_a: not on the G1 curve"):
        sjson.read_proof_json(tmp_path / "bad.json")
    # snarkjs agrees that the bumped public input fails
    sjson.write_public_json(tmp_path / "bumped.json", bumped)
    assert not snarkjs_verifies(circ.vkey, tmp_path / "bumped.json", circ.proof)


def test_proof_json_round_trip(cube, tmp_path):
    p = sjson.read_proof_json(cube.proof)
    sjson.write_proof_json(tmp_path / "p.json", p)
    assert sjson.read_proof_json(tmp_path / "p.json") == p
    ours = json.loads((tmp_path / "p.json").read_text())
    theirs = json.loads(cube.proof.read_text())
    assert ours == theirs


def test_prover_stage_times_and_fixed_randomness_are_deterministic(cube):
    z = sj.read_zkey(cube.zkey)
    w = sj.read_wtns(cube.wtns, z.n_vars)
    key = zkey_prover.prepare_zkey(z, be)
    times = zkey_prover.StageTimes()
    p1 = zkey_prover.prove_zkey(key, w, r=5, s=7, times=times)
    p2 = zkey_prover.prove_zkey(key, w, r=5, s=7)
    assert p1 == p2
    assert {"spmv", "h_odd_coset", "msm_g1", "msm_g2", "assemble", "verify"} <= set(times.seconds)


def test_wrong_witness_is_never_returned_as_a_proof(cube):
    z = sj.read_zkey(cube.zkey)
    w = sj.read_wtns(cube.wtns, z.n_vars).copy()
    w[-1, 0] ^= 1  # an internal signal off by one bit
    with pytest.raises(VerificationError, match="did not verify"):
        zkey_prover.prove_zkey(zkey_prover.prepare_zkey(z, be), w)


# --- bad input ---------------------------------------------------------------------


def _sections(path):
    f = BinFile(path, path.read_bytes()[:4], 2)
    return f.version, [(s.id, f.data[s.offset : s.offset + s.size].tobytes()) for s in _all(f)]


def _all(f):
    return sorted((s for ss in f.sections.values() for s in ss), key=lambda s: s.offset)


def _rewrite(src, dst, edit):
    version, secs = _sections(src)
    secs = edit(secs)
    write_binfile(dst, src.read_bytes()[:4], version, secs)
    return dst


def test_truncated_zkey(cube, tmp_path):
    data = cube.zkey.read_bytes()
    (tmp_path / "t.zkey").write_bytes(data[: len(data) - 100])
    with pytest.raises(InputError, match="truncated") as e:
        sj.read_zkey(tmp_path / "t.zkey")
    assert "t.zkey" in str(e.value)


def test_wrong_magic(cube, tmp_path):
    (tmp_path / "w.zkey").write_bytes(cube.wtns.read_bytes())
    with pytest.raises(InputError, match="a zkey file starts with b'zkey'"):
        sj.read_zkey(tmp_path / "w.zkey")


def test_reordered_sections_are_valid_and_prove_the_same(cube, tmp_path):
    dst = _rewrite(cube.zkey, tmp_path / "r.zkey", lambda s: list(reversed(s)))
    z0, z1 = sj.read_zkey(cube.zkey), sj.read_zkey(dst)
    w = sj.read_wtns(cube.wtns, z0.n_vars)
    p0 = zkey_prover.prove_zkey(zkey_prover.prepare_zkey(z0, be), w, r=1, s=2)
    p1 = zkey_prover.prove_zkey(zkey_prover.prepare_zkey(z1, be), w, r=1, s=2)
    assert p0 == p1


def test_duplicated_section(cube, tmp_path):
    dst = _rewrite(cube.zkey, tmp_path / "d.zkey", lambda s: [*s, next(x for x in s if x[0] == 9)])
    with pytest.raises(InputError, match=r"section 9 \(H\): appears 2 times"):
        sj.read_zkey(dst)


def test_section_of_the_wrong_size(cube, tmp_path):
    def drop_point(secs):
        return [(i, b[:-96] if i == 8 else b) for i, b in secs]

    with pytest.raises(InputError, match=r"section 8 \(C\).*the header implies"):
        sj.read_zkey(_rewrite(cube.zkey, tmp_path / "s.zkey", drop_point))


def test_point_off_the_curve_names_section_and_index(cube, tmp_path):
    z = sj.read_zkey(cube.zkey)
    finite = int(np.flatnonzero(z.b_g1.reshape(len(z.b_g1), -1).any(axis=1))[0])

    def corrupt(secs):
        out = []
        for i, b in secs:
            if i == 6:
                b = bytearray(b)
                b[finite * 96 + 60] ^= 0x10
                b = bytes(b)
            out.append((i, b))
        return out

    with pytest.raises(InputError) as e:
        sj.read_zkey(_rewrite(cube.zkey, tmp_path / "c.zkey", corrupt))
    assert e.value.field == f"section 6 (B1) point {finite}"
    assert e.value.problem == "not on the G1 curve"


def test_plonk_zkey_is_refused(cube, tmp_path):
    def plonk(secs):
        return [(i, struct.pack("<I", 2) if i == 1 else b) for i, b in secs]

    with pytest.raises(InputError, match="a PLONK key, cuzk proves Groth16"):
        sj.read_zkey(_rewrite(cube.zkey, tmp_path / "p.zkey", plonk))


def test_witness_of_another_circuit(tmp_path):
    cube, other = circuit("cube_mix"), circuit("range_sum")
    z = sj.read_zkey(cube.zkey)
    with pytest.raises(InputError) as e:
        sj.read_wtns(other.wtns, z.n_vars, z.path)
    assert "witness belongs to another circuit" in str(e.value)
    assert str(other.wtns) in str(e.value) and str(cube.zkey) in str(e.value)
    w = sj.read_wtns(other.wtns)
    with pytest.raises(InputError, match="has 7 signals"):
        zkey_prover.prove_zkey(zkey_prover.prepare_zkey(z, be), w)


def test_noncanonical_witness_value(cube, tmp_path):
    def bump(secs):
        return [(i, b[:32] + R.to_bytes(32, "little") + b[64:] if i == 2 else b) for i, b in secs]

    with pytest.raises(InputError, match=r"witness\[1\]: not below r"):
        sj.read_wtns(_rewrite(cube.wtns, tmp_path / "n.wtns", bump))


def test_bn128_files_are_refused_as_the_wrong_curve(tmp_path):
    bn = circuit("cube_mix", prime="bn128")
    assert bn128_ptau().exists()
    with pytest.raises(InputError, match="wrong curve: the prime is bn128's q") as e:
        sj.read_zkey(bn.zkey)
    assert str(bn.zkey) in str(e.value)
    with pytest.raises(InputError, match=r"wrong curve: the prime is bn128.s r.*--prime bls12381"):
        sj.read_r1cs(bn.r1cs)
    with pytest.raises(InputError, match="wrong curve: the prime is bn128's r"):
        sj.read_wtns(bn.wtns)
    with pytest.raises(InputError, match="wrong curve 'bn128'"):
        sjson.read_vk_json(bn.vkey)
    with pytest.raises(InputError, match="wrong curve 'bn128'"):
        sjson.read_proof_json(bn.proof)


def test_json_inputs_are_checked(tmp_path):
    bad = tmp_path / "public.json"
    bad.write_text('["1", "x"]')
    with pytest.raises(InputError, match=r"\[1\]: 'x' is not a decimal integer"):
        sjson.read_public_json(bad)
    bad.write_text(f'["{R}"]')
    with pytest.raises(InputError, match="out of range"):
        sjson.read_public_json(bad)
    bad.write_text("[1,")
    with pytest.raises(InputError, match="not JSON"):
        sjson.read_public_json(bad)


def test_snarkjs_verifies_with_our_key_json(cube, tmp_path):
    """The verification_key.json we write from a zkey is one snarkjs verifies with."""
    z = sj.read_zkey(cube.zkey)
    sjson.write_vk_json(tmp_path / "vk.json", z.vk)
    assert snarkjs_verifies(tmp_path / "vk.json", cube.public, cube.proof)


def test_r1cs_constraint_faults_name_the_constraint(cube, tmp_path):
    c = sj.read_r1cs(cube.r1cs)

    def edit_constraints(fn):
        return lambda secs: [(i, fn(b) if i == 2 else b) for i, b in secs]

    def first_wire(b):
        # constraint 0: the first non-empty LC's first term starts after its count
        pos = 0
        while struct.unpack_from("<I", b, pos)[0] == 0:
            pos += 4
        return b[: pos + 4] + struct.pack("<I", c.n_vars) + b[pos + 8 :]

    with pytest.raises(InputError, match=f"constraint 0: wire {c.n_vars} is not below nVars"):
        sj.read_r1cs(_rewrite(cube.r1cs, tmp_path / "w.r1cs", edit_constraints(first_wire)))
    with pytest.raises(InputError, match="ends inside constraint"):
        sj.read_r1cs(_rewrite(cube.r1cs, tmp_path / "t.r1cs", edit_constraints(lambda b: b[:-40])))
    with pytest.raises(InputError, match="bytes left after"):
        sj.read_r1cs(
            _rewrite(cube.r1cs, tmp_path / "x.r1cs", edit_constraints(lambda b: b + b"\0"))
        )


def test_zkey_prover_is_the_groth16_prover_with_the_snarkjs_reduction(cube):
    """One prover: a zkey proves through groth16.prover.prove's body (its
    stages and MSM phases), its H scalars from h_odd_coset."""
    from cuzk.groth16 import prover

    z = sj.read_zkey(cube.zkey)
    w = sj.read_wtns(cube.wtns, z.n_vars)
    key = zkey_prover.prepare_zkey(z, be)
    assert key.key.reduction is zkey_prover.SNARKJS and len(key.key.matrices) == 2
    times = prover.StageTimes()
    proof = prover.prove(key.key, None, w, r=3, s=4, times=times)
    assert proof == zkey_prover.prove_zkey(key, w, r=3, s=4)
    assert set(times.phases) == {"h", "l", "a", "b_g1", "b_g2"}
    assert {"gather", "msm_h", "msm_l"} <= set(times.detail)
    # The H MSM takes h_odd_coset's m scalars: one per H point of the key.
    a, b = (be.spmv(m, w) for m in z.matrices)
    assert len(be.h_odd_coset(a, b)) == len(z.h) == z.domain_size
