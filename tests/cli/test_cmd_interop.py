"""``cuzk prove / verify / params-check / setup / export-vkey``: exit codes and messages."""

import json

import pytest

from cuzk.algebra.curves import G1
from cuzk.algebra.encoding import encode_g1
from cuzk.cli.main import main
from interop_tools import circuit, snarkjs_verifies

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cube():
    return circuit("cube_mix")


@pytest.fixture(scope="module")
def other():
    return circuit("range_sum")


def test_prove_with_a_zkey_then_both_verifiers_agree(cube, tmp_path, capsys):
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    args = ["prove", "--zkey", str(cube.zkey), "--wtns", str(cube.wtns)]
    assert main([*args, "--proof", str(proof), "--public", str(public), "--backend", "cpu"]) == 0
    assert "(verified)" in capsys.readouterr().out
    assert json.loads(public.read_text()) == [str(x) for x in cube.public_values()]
    assert snarkjs_verifies(cube.vkey, public, proof)
    v = ["verify", "--vkey", str(cube.vkey), "--proof", str(proof), "--public", str(public)]
    assert main(v) == 0
    assert "OK: 1 proof(s) verified" in capsys.readouterr().out


def test_verify_exit_codes(cube, other, tmp_path, capsys):
    base = ["verify", "--vkey", str(cube.vkey), "--proof", str(cube.proof)]
    assert main([*base, "--public", str(cube.public)]) == 0
    bumped = tmp_path / "bumped.json"
    vals = cube.public_values()
    bumped.write_text(json.dumps([str(vals[0] + 1), *map(str, vals[1:])]))
    assert main([*base, "--public", str(bumped)]) == 1
    assert "NOT VERIFIED" in capsys.readouterr().err
    # another circuit's key: a count mismatch is bad input, named
    assert main(["verify", "--vkey", str(other.vkey), "--proof", str(cube.proof),
                 "--public", str(cube.public)]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "2 public signals" in err and "expects 5" in err
    assert main([*base, "--public", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err


def test_prove_bad_input_exit_2_names_the_files(cube, other, tmp_path, capsys):
    out = str(tmp_path / "p.json")
    assert main(["prove", "--zkey", str(cube.zkey), "--wtns", str(other.wtns), "--proof", out]) == 2
    err = capsys.readouterr().err
    assert str(other.wtns) in err and "another circuit" in err
    assert main(["prove", "--params", "x.params", "--wtns", str(cube.wtns), "--proof", out]) == 2
    assert "needs --r1cs" in capsys.readouterr().err
    junk = tmp_path / "junk.zkey"
    junk.write_bytes(b"not a zkey at all")
    assert main(["prove", "--zkey", str(junk), "--wtns", str(cube.wtns), "--proof", out]) == 2
    assert "junk.zkey: magic" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["prove", "--zkey", str(cube.zkey), "--proof", out])
    assert e.value.code == 2


def test_bellperson_flow_setup_prove_verify_check(cube, tmp_path, capsys):
    params, vk, vkey = tmp_path / "c.params", tmp_path / "c.vk", tmp_path / "vk.json"
    assert main(["setup", "--r1cs", str(cube.r1cs), "--params", str(params), "--vk", str(vk),
                 "--vkey", str(vkey), "--seed", "5"]) == 0  # fmt: skip
    assert "INSECURE" in capsys.readouterr().out
    binproof, public = tmp_path / "p.bin", tmp_path / "public.json"
    prove = ["prove", "--params", str(params), "--r1cs", str(cube.r1cs), "--wtns", str(cube.wtns)]
    assert main([*prove, "--proof", str(binproof), "--public", str(public)]) == 0
    assert binproof.stat().st_size == 192
    assert main(["verify", "--vk", str(vk), "--proof", str(binproof), "--public", str(public)]) == 0
    assert main(["verify", "--params", str(params), "--check", "--proof", str(binproof),
                 "--public", str(public)]) == 0  # fmt: skip
    # the same key, proof as JSON: snarkjs verifies a proof made with bellperson parameters
    jproof = tmp_path / "p.json"
    assert main([*prove, "--proof", str(jproof)]) == 0
    assert snarkjs_verifies(vkey, public, jproof)
    exported = tmp_path / "exported.json"
    assert main(["export-vkey", "--params", str(params), "--vkey", str(exported)]) == 0
    assert json.loads(exported.read_text()) == json.loads(vkey.read_text())
    # two partitions in one binary proof, public inputs as a list of lists
    two = tmp_path / "two.bin"
    two.write_bytes(binproof.read_bytes() * 2)
    pubs = tmp_path / "pubs.json"
    pubs.write_text(json.dumps([json.loads(public.read_text())] * 2))
    assert main(["verify", "--vk", str(vk), "--proof", str(two), "--public", str(pubs)]) == 0
    assert "2 proof(s) verified" in capsys.readouterr().out


def test_params_check_reports_section_and_index(cube, tmp_path, capsys):
    params = tmp_path / "c.params"
    assert main(["setup", "--r1cs", str(cube.r1cs), "--params", str(params), "--seed", "6"]) == 0
    assert main(["params-check", str(params), "--jobs", "1"]) == 0
    assert "every point" in capsys.readouterr().out
    from cuzk.formats.bellperson import MappedParams

    off = MappedParams(params).sections["l"].offset + 96 + 70
    data = bytearray(params.read_bytes())
    data[off] ^= 2
    params.write_bytes(bytes(data))
    assert main(["params-check", str(params), "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{params}: l[1]: not on the G1 curve" in err
    assert "h     [####" in err  # the progress bar of the section before
    # proving with it is refused as bad input, naming the point and its offset
    prove = ["prove", "--params", str(params), "--r1cs", str(cube.r1cs), "--wtns", str(cube.wtns)]
    assert main([*prove, "--proof", str(tmp_path / "x.bin")]) == 2
    assert f"l[1]: not on the G1 curve (byte offset {off - 70})" in capsys.readouterr().err
    # a valid point in the wrong place: the proof does not verify and is never written
    data[off - 70 : off - 70 + 96] = encode_g1(G1.generator, compressed=False)
    params.write_bytes(bytes(data))
    assert main(["params-check", str(params), "--jobs", "1"]) == 0
    assert main([*prove, "--proof", str(tmp_path / "x.bin")]) == 1
    assert "did not verify" in capsys.readouterr().err
    assert not (tmp_path / "x.bin").exists()


def test_setup_writes_a_zkey_we_and_snarkjs_prove_with(cube, tmp_path, capsys):
    zkey, vkey = tmp_path / "dev.zkey", tmp_path / "vk.json"
    assert main(["setup", "--r1cs", str(cube.r1cs), "--zkey", str(zkey), "--vkey", str(vkey)]) == 0
    proof, public = tmp_path / "p.json", tmp_path / "pub.json"
    assert main(["prove", "--zkey", str(zkey), "--wtns", str(cube.wtns), "--proof", str(proof),
                 "--public", str(public)]) == 0  # fmt: skip
    assert snarkjs_verifies(vkey, public, proof)
    assert main(["setup", "--r1cs", str(cube.r1cs)]) == 2
    assert "give one output key" in capsys.readouterr().err


def test_params_of_another_circuit_are_bad_input(cube, other, tmp_path, capsys):
    params = tmp_path / "other.params"
    assert main(["setup", "--r1cs", str(other.r1cs), "--params", str(params), "--seed", "2"]) == 0
    prove = ["prove", "--params", str(params), "--r1cs", str(cube.r1cs), "--wtns", str(cube.wtns)]
    assert main([*prove, "--proof", str(tmp_path / "x.bin")]) == 2
    err = capsys.readouterr().err
    assert str(params) in err and "key and circuit differ" in err


def test_unsatisfied_witness_names_the_constraint(cube, tmp_path, capsys):
    params = tmp_path / "c.params"
    assert main(["setup", "--r1cs", str(cube.r1cs), "--params", str(params), "--seed", "3"]) == 0
    data = bytearray(cube.wtns.read_bytes())
    data[-32] ^= 1  # the last signal, off by one
    bad = tmp_path / "bad.wtns"
    bad.write_bytes(bytes(data))
    prove = ["prove", "--params", str(params), "--r1cs", str(cube.r1cs), "--wtns", str(bad)]
    assert main([*prove, "--proof", str(tmp_path / "x.bin")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: constraint" in err and "not satisfied" in err
    # with a zkey the circuit's C is not at hand: the proof fails verification, exit 1
    zprove = [
        "prove",
        "--zkey",
        str(cube.zkey),
        "--wtns",
        str(bad),
        "--proof",
        str(tmp_path / "y.json"),
    ]
    assert main(zprove) == 1
    assert "did not verify" in capsys.readouterr().err
