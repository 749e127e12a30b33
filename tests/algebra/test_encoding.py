import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk.algebra import pairing
from cuzk.algebra.curves import G1, G2
from cuzk.algebra.encoding import decode_g1, decode_g2, encode_g1, encode_g2
from cuzk.algebra.fields import Fq2, Q, R, fq_sqrt
from cuzk.errors import EncodingError

scalars = st.integers(min_value=0, max_value=R - 1)

# Known zcash encodings of the generators (compressed).
G1_GEN_COMPRESSED = bytes.fromhex(
    "97f1d3a73197d7942695638c4fa9ac0fc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb"
)
G2_GEN_COMPRESSED = bytes.fromhex(
    "93e02b6052719f607dacd3a088274f65596bd0d09920b61ab5da61bbdc7f5049334cf11213945d57e5ac7d055d042b7e"
    "024aa2b2f08f0a91260805272dc51051c6e47ad4fa403b02b4510b647ae3d1770bac0326a805bbefd48056c8c121bdb8"
)


def test_generator_encodings_are_the_zcash_ones():
    assert encode_g1(G1.generator) == G1_GEN_COMPRESSED
    assert encode_g2(G2.generator) == G2_GEN_COMPRESSED
    assert pairing.g1_to_ark(G1.generator).to_compressed_bytes() == G1_GEN_COMPRESSED
    assert pairing.g2_to_ark(G2.generator).to_compressed_bytes() == G2_GEN_COMPRESSED


@settings(max_examples=30, deadline=None)
@given(scalars)
def test_g1_round_trips_and_matches_the_library(k):
    p = pairing.g1_mul(G1.generator, k)
    for compressed in (True, False):
        assert decode_g1(encode_g1(p, compressed)) == p
    assert encode_g1(p) == pairing.g1_to_ark(p).to_compressed_bytes()


@settings(max_examples=15, deadline=None)
@given(scalars)
def test_g2_round_trips_and_matches_the_library(k):
    p = pairing.g2_mul(G2.generator, k)
    for compressed in (True, False):
        assert decode_g2(encode_g2(p, compressed)) == p
    assert encode_g2(p) == pairing.g2_to_ark(p).to_compressed_bytes()


def test_infinity_round_trips():
    for compressed in (True, False):
        assert decode_g1(encode_g1(None, compressed)) is None
        assert decode_g2(encode_g2(None, compressed)) is None
    assert encode_g1(None)[0] == 0xC0 and encode_g1(None, False)[0] == 0x40


def _reason(fn, data):
    with pytest.raises(EncodingError) as e:
        fn(data)
    return e.value.reason


def _off_subgroup_g1():
    """A point on y² = x³ + 4 outside the r-order subgroup (the cofactor is not 1)."""
    x = 1
    while True:
        y = fq_sqrt((x**3 + 4) % Q)
        if y is not None and not G1.is_in_subgroup((x, y)):
            return (x, y)
        x += 1


def _off_subgroup_g2():
    x = Fq2(1, 0)
    while True:
        y = (x * x * x + G2.b).sqrt()
        if y is not None and not pairing.g2_in_subgroup((x, y)):
            return (x, y)
        x = x + Fq2(1, 0)


@pytest.mark.parametrize(
    ("decode", "encode", "point"),
    [(decode_g1, encode_g1, G1.generator), (decode_g2, encode_g2, G2.generator)],
    ids=["G1", "G2"],
)
def test_every_malformed_class_is_rejected_with_its_reason(decode, encode, point):
    comp = encode(point, True)
    unc = encode(point, False)
    # wrong length
    assert _reason(decode, comp[:-1]) == EncodingError.LENGTH
    assert _reason(decode, comp + b"\0") == EncodingError.LENGTH
    # flags: compression bit cleared on a compressed-length encoding, and set on an uncompressed one
    assert _reason(decode, bytes([comp[0] & 0x7F]) + comp[1:]) == EncodingError.FLAGS
    assert _reason(decode, bytes([unc[0] | 0x80]) + unc[1:]) == EncodingError.FLAGS
    # flags: sign bit on an uncompressed encoding
    assert _reason(decode, bytes([unc[0] | 0x20]) + unc[1:]) == EncodingError.FLAGS
    # flags: infinity with other bits set
    inf = encode(None, True)
    assert _reason(decode, inf[:-1] + b"\x01") == EncodingError.FLAGS
    assert _reason(decode, bytes([inf[0] | 0x20]) + inf[1:]) == EncodingError.FLAGS
    # non-canonical: x (its first 48-byte limb) replaced by q + something
    big = (Q + 5).to_bytes(48, "big")
    bad = bytes([big[0] | 0x80]) + big[1:] + comp[48:]
    assert _reason(decode, bad) == EncodingError.NON_CANONICAL
    # off the curve: perturb y of the uncompressed form
    off = bytearray(unc)
    off[-1] ^= 1
    assert _reason(decode, bytes(off)) == EncodingError.OFF_CURVE


def test_compressed_x_without_a_curve_point_is_rejected():
    x = 0
    while fq_sqrt((x**3 + 4) % Q) is not None:
        x += 1
    data = bytes([0x80 | x.to_bytes(48, "big")[0]]) + x.to_bytes(48, "big")[1:]
    assert _reason(decode_g1, data) == EncodingError.OFF_CURVE


def test_points_outside_the_subgroup_are_rejected():
    p1 = _off_subgroup_g1()
    assert G1.is_on_curve(p1)
    for compressed in (True, False):
        assert _reason(decode_g1, encode_g1(p1, compressed)) == EncodingError.NOT_IN_SUBGROUP
        assert decode_g1(encode_g1(p1, compressed), subgroup_check=False) == p1
    p2 = _off_subgroup_g2()
    assert G2.is_on_curve(p2) and not G2.is_in_subgroup(p2)
    for compressed in (True, False):
        assert _reason(decode_g2, encode_g2(p2, compressed)) == EncodingError.NOT_IN_SUBGROUP


def test_sign_flag_selects_the_root():
    rng = random.Random(5)
    p = pairing.g1_mul(G1.generator, rng.randrange(R))
    enc = bytearray(encode_g1(p))
    enc[0] ^= 0x20
    assert decode_g1(bytes(enc)) == G1.neg(p)
