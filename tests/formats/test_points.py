"""Foreign point and scalar encodings against the reference encoders."""

import random

import numpy as np

from cuzk.algebra.arrays import g1_from_array, g1_to_array, g2_from_array, g2_to_array
from cuzk.algebra.curves import G1, G2
from cuzk.algebra.encoding import encode_g1, encode_g2
from cuzk.algebra.fields import Q, R
from cuzk.formats import points

rng = random.Random(11)
G1S = [G1.mul(G1.generator, rng.randrange(1, R)) for _ in range(5)] + [None]
G2S = [G2.mul(G2.generator, rng.randrange(1, R)) for _ in range(3)] + [None]


def _lem_g1(ps) -> bytes:
    out = b""
    for p in ps:
        if p is None:
            out += bytes(96)
        else:
            out += b"".join(((c << 384) % Q).to_bytes(48, "little") for c in p)
    return out


def _lem_g2(ps) -> bytes:
    out = b""
    for p in ps:
        if p is None:
            out += bytes(192)
        else:
            cs = (p[0].c0, p[0].c1, p[1].c0, p[1].c1)
            out += b"".join(((c << 384) % Q).to_bytes(48, "little") for c in cs)
    return out


def test_lem_g1_decodes_to_the_same_points():
    raw = np.frombuffer(_lem_g1(G1S), np.uint8)
    dec = points.g1_from_lem(raw)
    assert dec.problem is None
    assert g1_from_array(dec.array) == G1S
    assert list(dec.infinity) == [p is None for p in G1S]


def test_lem_g2_decodes_to_the_same_points():
    dec = points.g2_from_lem(np.frombuffer(_lem_g2(G2S), np.uint8))
    assert dec.problem is None
    assert g2_from_array(dec.array) == G2S


def test_lem_reports_the_first_point_off_the_curve():
    raw = bytearray(_lem_g1(G1S))
    raw[2 * 96 + 50] ^= 1  # y of point 2
    raw[4 * 96 + 3] ^= 1
    dec = points.g1_from_lem(np.frombuffer(bytes(raw), np.uint8))
    assert dec.problem == points.PointProblem(2, "not on the G1 curve")
    raw = bytearray(_lem_g2(G2S))
    raw[192 + 10] ^= 4
    assert points.g2_from_lem(np.frombuffer(bytes(raw), np.uint8)).problem.index == 1


def test_lem_rejects_coordinates_not_below_q():
    raw = bytearray(_lem_g1(G1S[:2]))
    raw[96:144] = Q.to_bytes(48, "little")
    dec = points.g1_from_lem(np.frombuffer(bytes(raw), np.uint8))
    assert dec.problem == points.PointProblem(1, "a coordinate is not below q")


def test_zkey_coefficients_undo_the_double_montgomery_factor():
    vals = [0, 1, 2, R - 1, rng.randrange(R)]
    raw = b"".join((v * points.FR_MONT2 % R).to_bytes(32, "little") for v in vals)
    arr, bad = points.fr_from_mont2(np.frombuffer(raw, np.uint8))
    assert bad is None
    assert [int.from_bytes(r.tobytes(), "little") for r in arr] == vals
    _, bad = points.fr_from_mont2(np.frombuffer(raw + R.to_bytes(32, "little"), np.uint8))
    assert bad == len(vals)


def test_zcash_uncompressed_round_trip_matches_the_reference_encoder():
    finite1 = G1S[:-1]
    ref = b"".join(encode_g1(p, compressed=False) for p in finite1)
    assert points.g1_to_zcash(g1_to_array(finite1)) == ref
    assert g1_from_array(points.g1_from_zcash(np.frombuffer(ref, np.uint8))) == finite1
    finite2 = G2S[:-1]
    ref2 = b"".join(encode_g2(p, compressed=False) for p in finite2)
    assert points.g2_to_zcash(g2_to_array(finite2)) == ref2
    assert g2_from_array(points.g2_from_zcash(np.frombuffer(ref2, np.uint8))) == finite2
    # infinity: the reference's flagged encoding, read back as all-zero limbs
    assert points.g1_to_zcash(g1_to_array([None])) == encode_g1(None, compressed=False)
    assert points.g2_to_zcash(g2_to_array([None])) == encode_g2(None, compressed=False)
    assert g1_from_array(points.g1_from_zcash(np.frombuffer(encode_g1(None, False), np.uint8))) == [
        None
    ]


def test_zcash_flag_problems_name_the_point():
    raw = bytearray(b"".join(encode_g1(p, compressed=False) for p in G1S[:3]))
    assert points.zcash_flag_problem(np.frombuffer(bytes(raw), np.uint8), 96) is None
    raw[96] |= 0x80
    p = points.zcash_flag_problem(np.frombuffer(bytes(raw), np.uint8), 96)
    assert p.index == 1 and "compression" in p.problem
    raw[96] &= 0x1F
    raw[192] |= 0x40
    p = points.zcash_flag_problem(np.frombuffer(bytes(raw), np.uint8), 96)
    assert p.index == 2 and "infinity" in p.problem


def test_fr_noncanonical_index():
    a = np.zeros((4, 4), np.uint64)
    assert points.fr_first_noncanonical(a) is None
    a[2] = np.frombuffer(R.to_bytes(32, "little"), "<u8")
    a[3] = np.frombuffer((R + 5).to_bytes(32, "little"), "<u8")
    assert points.fr_first_noncanonical(a) == 2
