"""The iden3 container: every structural fault is a named error, section order is free."""

import struct

import pytest

from cuzk.errors import InputError
from cuzk.formats.binfile import BinFile, write_binfile


def _file(tmp_path, sections, magic=b"wtns", version=2, name="f.bin"):
    p = tmp_path / name
    write_binfile(p, magic, version, sections)
    return p


def test_sections_are_found_by_id_in_any_order(tmp_path):
    a = BinFile(_file(tmp_path, [(1, b"one"), (2, b"second")]), b"wtns", 2)
    b = BinFile(_file(tmp_path, [(2, b"second"), (1, b"one")], name="g.bin"), b"wtns", 2)
    for f in (a, b):
        assert f.body(1, "h").tobytes() == b"one"
        assert f.body(2, "w").tobytes() == b"second"


def test_reader_reads_little_endian_fields(tmp_path):
    body = struct.pack("<IQ", 7, 2**40) + (12345).to_bytes(32, "little")
    f = BinFile(_file(tmp_path, [(1, body)]), b"wtns", 2)
    r = f.reader(1, "header")
    assert (r.u32("a"), r.u64("b"), r.integer(32, "c")) == (7, 2**40, 12345)
    r.finish()


@pytest.mark.parametrize(
    ("mutate", "field", "words"),
    [
        (lambda d: b"zkey" + d[4:], "magic", "starts with b'zkey'"),
        (lambda d: d[:4] + struct.pack("<I", 9) + d[8:], "version", "not supported"),
        (lambda d: d[:-3], "section 2", "truncated"),
        (lambda d: d[:14], "section table entry 0", "truncated"),
        (lambda d: d + b"xx", "end", "2 bytes follow"),
        (lambda d: d[:6], "header", "too short"),
    ],
)
def test_structural_faults_are_named(tmp_path, mutate, field, words):
    p = _file(tmp_path, [(1, b"one"), (2, b"second")])
    p.write_bytes(mutate(p.read_bytes()))
    with pytest.raises(InputError) as e:
        BinFile(p, b"wtns", 2)
    assert e.value.field.startswith(field)
    assert words in e.value.problem
    assert str(p) in str(e.value)


def test_missing_duplicate_and_wrongly_sized_sections(tmp_path):
    f = BinFile(_file(tmp_path, [(1, b"one"), (1, b"two")]), b"wtns", 2)
    with pytest.raises(InputError, match="appears 2 times"):
        f.section(1, "header")
    with pytest.raises(InputError, match=r"section 2 \(witness\): missing"):
        f.section(2, "witness")
    g = BinFile(_file(tmp_path, [(2, b"abc")], name="g.bin"), b"wtns", 2)
    with pytest.raises(InputError, match="3 bytes, the header implies 64"):
        g.body(2, "witness", expected_size=64)


def test_reads_past_a_section_end_are_refused(tmp_path):
    f = BinFile(_file(tmp_path, [(1, b"\x01\x00")]), b"wtns", 2)
    r = f.reader(1, "header")
    with pytest.raises(InputError, match="needs 4 bytes"):
        r.u32("n8")


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="cannot be opened"):
        BinFile(tmp_path / "nope.zkey", b"zkey", 2)
