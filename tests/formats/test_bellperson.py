"""bellperson files: .vk, .params and proofs, written by our setup and read back."""

import os
import struct

import numpy as np
import pytest

from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.curves import G1
from cuzk.algebra.encoding import encode_g1
from cuzk.algebra.fields import Q, fq_sqrt
from cuzk.backends.cpu import CpuBackend
from cuzk.circuits.demo import DemoCircuit
from cuzk.errors import InputError
from cuzk.formats import bellperson as bp
from cuzk.groth16 import prover, setup, verifier
from cuzk.groth16.proof import Proof
from cuzk.r1cs import ConstraintSystem

be = CpuBackend()
CIRCUIT = DemoCircuit(rounds=12, words=1)
VK_BYTES = 3 * 96 + 3 * 192 + 4


@pytest.fixture(scope="module")
def demo():
    cs0 = ConstraintSystem(witness=False)
    CIRCUIT.synthesize(cs0, None, None)
    r1 = cs0.r1cs()
    pk = setup.setup(r1, seed=21)
    cs = ConstraintSystem()
    CIRCUIT.synthesize(cs, 99, [0x0123456789ABCDEF])
    return r1, pk, fr_to_array(cs.assignment()), cs.public_inputs()


@pytest.fixture()
def params_file(demo, tmp_path):
    path = tmp_path / "demo.params"
    bp.write_params(path, demo[1])
    return path


def _section_offset(path, name):
    return bp.MappedParams(path).sections[name].offset


def test_vk_round_trip_and_layout(demo, tmp_path):
    vk = demo[1].vk
    data = bp.vk_to_bytes(vk)
    assert len(data) == VK_BYTES + 96 * len(vk.ic)
    assert data[:96] == encode_g1(vk.alpha_g1, compressed=False)
    assert struct.unpack(">I", data[VK_BYTES - 4 : VK_BYTES])[0] == len(vk.ic)
    bp.write_vk(tmp_path / "k.vk", vk)
    assert bp.read_vk(tmp_path / "k.vk") == vk
    with pytest.raises(InputError, match="3 points need 288 bytes, 278 remain"):
        bp.vk_from_bytes(data[:-10], "k.vk")
    with pytest.raises(InputError, match=r"vk.beta_g2: needs 192 bytes"):
        bp.vk_from_bytes(data[:200], "k.vk")
    with pytest.raises(InputError, match="follow the verifying key"):
        bp.vk_from_bytes(data + b"\0", "k.vk")


def test_params_write_read_prove_verify(demo, params_file):
    r1, pk, w, public = demo
    mp = bp.MappedParams(params_file)
    assert mp.vk == pk.vk
    assert {n: s.count for n, s in mp.sections.items()} == {
        n: len(getattr(pk, n)) for n in bp.SECTIONS
    }
    back = mp.proving_key()
    for n in bp.SECTIONS:
        assert np.array_equal(getattr(back, n), getattr(pk, n)), n
    assert mp.check() is None
    proof = prover.prove(prover.prepare(back, r1, be), r1, w)
    assert verifier.verify(mp.vk, public, proof)


def test_params_layout_is_vk_then_length_prefixed_vectors(demo, params_file):
    pk = demo[1]
    data = params_file.read_bytes()
    pos = len(bp.vk_to_bytes(pk.vk))
    for name in bp.SECTIONS:
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        assert n == len(getattr(pk, name))
        pos += 4 + n * (192 if name == "b_g2" else 96)
    assert pos == len(data)


def test_proofs_round_trip_and_refuse_infinity(demo, tmp_path):
    r1, pk, w, _ = demo
    key = prover.prepare(pk, r1, be)
    proofs = [prover.prove(key, r1, w), prover.prove(key, r1, w)]
    bp.write_proofs(tmp_path / "p.bin", proofs)
    assert (tmp_path / "p.bin").stat().st_size == 384
    assert bp.read_proofs(tmp_path / "p.bin") == proofs
    inf = Proof(proofs[0].a, proofs[0].b, None).to_bytes()
    with pytest.raises(InputError, match="partition 1 C: point at infinity"):
        bp.proofs_from_bytes(proofs[0].to_bytes() + inf, "p.bin")
    (tmp_path / "short.bin").write_bytes(proofs[0].to_bytes()[:-1])
    with pytest.raises(InputError, match="191 bytes is not a whole number"):
        bp.read_proofs(tmp_path / "short.bin")


def test_opening_is_lazy_even_for_a_47_gib_file(demo, tmp_path):
    """A sparse file sized like a 32 GiB PoRep key opens without reading its points."""
    vk = demo[1].vk
    counts = {"h": 2**27 - 1, "l": 130_169_893, "a": 129_000_000, "b_g1": 60_000_000}
    counts["b_g2"] = counts["b_g1"]
    path = tmp_path / "huge.params"
    head = bp.vk_to_bytes(vk)
    with open(path, "wb") as f:
        f.write(head)
        pos = len(head)
        for name in bp.SECTIONS:
            f.seek(pos)
            f.write(struct.pack(">I", counts[name]))
            pos += 4 + counts[name] * (192 if name == "b_g2" else 96)
        f.truncate(pos)
    assert os.path.getsize(path) > 47 * 2**30 * 0.95
    mp = bp.MappedParams(path)
    assert mp.domain_size == 2**27
    raw = mp.raw("b_g2")
    assert raw.shape == (counts["b_g2"], 192)
    # a view of the file's mapping, not a copy: opening read only the section headers
    assert isinstance(raw.base, np.memmap) or isinstance(raw, np.memmap)
    assert not raw.flags.owndata
    # the holes read as zeros: the check stops at the first point, (0, 0) is off the curve
    assert mp.check() == bp.ParamsProblem("h", 0, "not on the G1 curve")


def _corrupt(path, name, index, byte, mask, group_size=96):
    off = _section_offset(path, name) + index * group_size + byte
    data = bytearray(path.read_bytes())
    data[off] ^= mask
    path.write_bytes(bytes(data))


def test_check_reports_the_first_point_off_the_curve(params_file):
    _corrupt(params_file, "b_g2", 1, 150, 0x01, 192)
    _corrupt(params_file, "b_g2", 2, 150, 0x01, 192)
    assert bp.MappedParams(params_file).check() == bp.ParamsProblem(
        "b_g2", 1, "not on the G2 curve"
    )


def test_check_reports_points_outside_the_subgroup(params_file):
    x = 1
    while fq_sqrt((x**3 + 4) % Q) is None:
        x += 1
    p = (x, fq_sqrt((x**3 + 4) % Q))
    assert not G1.is_in_subgroup(p)
    data = bytearray(params_file.read_bytes())
    off = _section_offset(params_file, "l") + 2 * 96
    data[off : off + 96] = encode_g1(p, compressed=False)
    params_file.write_bytes(bytes(data))
    assert bp.MappedParams(params_file).check(jobs=2) == bp.ParamsProblem(
        "l", 2, "not in the r-order subgroup"
    )


def test_check_reports_flags_and_non_canonical_coordinates(params_file, tmp_path):
    _corrupt(params_file, "a", 3, 0, 0x80)
    assert bp.MappedParams(params_file).check().problem.startswith("compression flag")
    _corrupt(params_file, "a", 3, 0, 0x80)  # undo
    data = bytearray(params_file.read_bytes())
    off = _section_offset(params_file, "h") + 96 * 4
    data[off : off + 48] = (Q + 1).to_bytes(48, "big")
    params_file.write_bytes(bytes(data))
    assert bp.MappedParams(params_file).check() == bp.ParamsProblem(
        "h", 4, "a coordinate is not below q"
    )
    # loading for proving refuses flagged points too (it does not run the curve checks)
    _corrupt(params_file, "l", 0, 0, 0x40)
    with pytest.raises(InputError, match=r"l\[0\]: point at infinity"):
        bp.MappedParams(params_file).proving_key()


def test_truncated_and_trailing_bytes(params_file, tmp_path):
    data = params_file.read_bytes()
    (tmp_path / "t.params").write_bytes(data[:-50])
    with pytest.raises(InputError, match=r"b_g2: .*truncated") as e:
        bp.MappedParams(tmp_path / "t.params")
    assert "t.params" in str(e.value)
    (tmp_path / "x.params").write_bytes(data + b"\0" * 8)
    with pytest.raises(InputError, match="8 bytes follow the b_g2 section"):
        bp.MappedParams(tmp_path / "x.params")
    (tmp_path / "v.params").write_bytes(data[:500])
    with pytest.raises(InputError, match="vk"):
        bp.MappedParams(tmp_path / "v.params")


def test_sections_out_of_order_are_detected(demo, tmp_path):
    pk = demo[1]
    swapped = type(pk)(vk=pk.vk, h=pk.l, l=pk.h, a=pk.a, b_g1=pk.b_g1, b_g2=pk.b_g2)
    bp.write_params(tmp_path / "s.params", swapped)
    with pytest.raises(InputError, match="sections out of order"):
        bp.MappedParams(tmp_path / "s.params")
    swapped = type(pk)(vk=pk.vk, h=pk.h, l=pk.l, a=pk.a, b_g1=pk.a, b_g2=pk.b_g2)
    bp.write_params(tmp_path / "b.params", swapped)
    with pytest.raises(InputError, match=r"b_g2: .*same density"):
        bp.MappedParams(tmp_path / "b.params")


def test_writer_refuses_points_at_infinity(demo, tmp_path):
    pk = demo[1]
    h = pk.h.copy()
    h[3] = 0
    bad = type(pk)(vk=pk.vk, h=h, l=pk.l, a=pk.a, b_g1=pk.b_g1, b_g2=pk.b_g2)
    with pytest.raises(ValueError, match=r"h\[3\] is the point at infinity"):
        bp.write_params(tmp_path / "i.params", bad)
