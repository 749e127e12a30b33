"""snarkjs's JSON files: ``proof.json``, ``public.json``, ``verification_key.json``.

**JSON** (snarkjs's ``proof.json``, ``public.json``, ``verification_key.json``):
decimal strings; G1 points ``[x, y, z]``, G2 ``[[x.c0, x.c1], [y.c0, y.c1],
[z.c0, z.c1]]`` in Jacobian coordinates (z = 1 for affine, z = 0 for
infinity). The verification key JSON carries no β₁ or δ₁ (the verifier does
not need them): keys read from it have those two points set to ``None``.

Points read from JSON are checked: on their curve and in the r-order subgroup;
numbers are decimal strings below their field's modulus.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cuzk.algebra import pairing
from cuzk.algebra.curves import G1, G2, Affine
from cuzk.algebra.fields import Fq2, Q, R
from cuzk.errors import InputError
from cuzk.groth16.keys import VerifyingKey
from cuzk.groth16.proof import Proof

CURVE_NAME = "bls12381"  # snarkjs's name for BLS12-381


def _dec(x: int) -> str:
    return str(int(x))


def g1_to_json(p: Affine) -> list[str]:
    if p is None:
        return ["0", "1", "0"]
    return [_dec(p[0]), _dec(p[1]), "1"]


def g2_to_json(p: Affine) -> list[list[str]]:
    if p is None:
        return [["0", "0"], ["1", "0"], ["0", "0"]]
    x, y = p
    return [[_dec(x.c0), _dec(x.c1)], [_dec(y.c0), _dec(y.c1)], ["1", "0"]]


def _json_int(source: str, field: str, v: Any, modulus: int) -> int:
    if isinstance(v, bool) or not isinstance(v, str | int):
        raise InputError(source, field, f"expected a decimal string, found {type(v).__name__}")
    try:
        n = int(v, 10) if isinstance(v, str) else v
    except ValueError as e:
        raise InputError(source, field, f"{v!r} is not a decimal integer") from e
    if not 0 <= n < modulus:
        raise InputError(source, field, "out of range for its field")
    return n


def _check_point(source: str, field: str, p: Affine, group: str) -> Affine:
    curve = G1 if group == "G1" else G2
    if not curve.is_on_curve(p):
        raise InputError(source, field, f"not on the {group} curve")
    ok = pairing.g1_in_subgroup(p) if group == "G1" else pairing.g2_in_subgroup(p)
    if not ok:
        raise InputError(source, field, "not in the r-order subgroup")
    return p


def g1_from_json(source: str, field: str, v: Any) -> Affine:
    if not isinstance(v, list) or len(v) not in (2, 3):
        raise InputError(source, field, "a G1 point is a list [x, y, z] of decimal strings")
    x, y = (_json_int(source, f"{field}[{i}]", v[i], Q) for i in range(2))
    z = _json_int(source, f"{field}[2]", v[2], Q) if len(v) == 3 else 1
    if z == 0:
        return None
    if z != 1:  # Jacobian (x / z², y / z³)
        zi = pow(z, -1, Q)
        x, y = x * zi * zi % Q, y * zi * zi * zi % Q
    return _check_point(source, field, (x, y), "G1")


def _fq2_json(source: str, field: str, v: Any) -> Fq2:
    if not isinstance(v, list) or len(v) != 2:
        raise InputError(source, field, "an Fq2 element is a pair [c0, c1] of decimal strings")
    return Fq2(_json_int(source, f"{field}[0]", v[0], Q), _json_int(source, f"{field}[1]", v[1], Q))


def g2_from_json(source: str, field: str, v: Any) -> Affine:
    if not isinstance(v, list) or len(v) not in (2, 3):
        raise InputError(source, field, "a G2 point is a list [x, y, z] of Fq2 pairs")
    x = _fq2_json(source, f"{field}[0]", v[0])
    y = _fq2_json(source, f"{field}[1]", v[1])
    z = _fq2_json(source, f"{field}[2]", v[2]) if len(v) == 3 else Fq2.one()
    if z.is_zero():
        return None
    if z != Fq2.one():
        zi = z.inverse()
        zi2 = zi * zi
        x, y = x * zi2, y * zi2 * zi
    return _check_point(source, field, (x, y), "G2")


def _load_json(path: str | os.PathLike) -> Any:
    name = str(path)
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise InputError(name, "", f"cannot be read: {e.strerror or e}") from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(name, f"line {e.lineno} column {e.colno}", f"not JSON: {e.msg}") from e


def _check_header(name: str, doc: dict) -> None:
    protocol = doc.get("protocol", "groth16")
    if protocol != "groth16":
        raise InputError(name, "protocol", f"{protocol!r}: cuzk verifies Groth16 only")
    curve = doc.get("curve", CURVE_NAME)
    if curve != CURVE_NAME:
        raise InputError(name, "curve", f"wrong curve {curve!r}: cuzk works over {CURVE_NAME}")


def _write_json(path: str | os.PathLike, doc: Any) -> None:
    # snarkjs writes one-space indentation; match it so diffs stay readable.
    Path(path).write_text(json.dumps(doc, indent=1))


def proof_to_json(proof: Proof) -> dict:
    return {
        "pi_a": g1_to_json(proof.a),
        "pi_b": g2_to_json(proof.b),
        "pi_c": g1_to_json(proof.c),
        "protocol": "groth16",
        "curve": CURVE_NAME,
    }


def write_proof_json(path: str | os.PathLike, proof: Proof) -> None:
    _write_json(path, proof_to_json(proof))


def proof_from_json(doc: Any, name: str = "proof.json") -> Proof:
    if not isinstance(doc, dict):
        raise InputError(name, "", "a proof is a JSON object with pi_a, pi_b, pi_c")
    _check_header(name, doc)
    for k in ("pi_a", "pi_b", "pi_c"):
        if k not in doc:
            raise InputError(name, k, "missing")
    return Proof(
        a=g1_from_json(name, "pi_a", doc["pi_a"]),
        b=g2_from_json(name, "pi_b", doc["pi_b"]),
        c=g1_from_json(name, "pi_c", doc["pi_c"]),
    )


def read_proof_json(path: str | os.PathLike) -> Proof:
    return proof_from_json(_load_json(path), str(path))


def write_public_json(path: str | os.PathLike, inputs: list[int]) -> None:
    _write_json(path, [_dec(x) for x in inputs])


def public_from_json(doc: Any, name: str = "public.json") -> list[int]:
    if not isinstance(doc, list):
        raise InputError(name, "", "public signals are a JSON list of decimal strings")
    return [_json_int(name, f"[{i}]", v, R) for i, v in enumerate(doc)]


def read_public_json(path: str | os.PathLike) -> list[int]:
    return public_from_json(_load_json(path), str(path))


def vk_to_json(vk: VerifyingKey) -> dict:
    """snarkjs's verification_key.json (without vk_alphabeta_12, which its verifier ignores)."""
    return {
        "protocol": "groth16",
        "curve": CURVE_NAME,
        "nPublic": vk.num_inputs,
        "vk_alpha_1": g1_to_json(vk.alpha_g1),
        "vk_beta_2": g2_to_json(vk.beta_g2),
        "vk_gamma_2": g2_to_json(vk.gamma_g2),
        "vk_delta_2": g2_to_json(vk.delta_g2),
        "IC": [g1_to_json(p) for p in vk.ic],
    }


def write_vk_json(path: str | os.PathLike, vk: VerifyingKey) -> None:
    _write_json(path, vk_to_json(vk))


def vk_from_json(doc: Any, name: str = "verification_key.json") -> VerifyingKey:
    if not isinstance(doc, dict):
        raise InputError(name, "", "a verification key is a JSON object")
    _check_header(name, doc)
    for k in ("vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2", "IC"):
        if k not in doc:
            raise InputError(name, k, "missing")
    ic_doc = doc["IC"]
    if not isinstance(ic_doc, list) or not ic_doc:
        raise InputError(name, "IC", "must be a non-empty list of G1 points")
    n_public = doc.get("nPublic", len(ic_doc) - 1)
    if n_public != len(ic_doc) - 1:
        raise InputError(
            name, "nPublic", f"{n_public}, but IC has {len(ic_doc)} points (nPublic + 1 expected)"
        )
    return VerifyingKey(
        alpha_g1=g1_from_json(name, "vk_alpha_1", doc["vk_alpha_1"]),
        beta_g1=None,
        beta_g2=g2_from_json(name, "vk_beta_2", doc["vk_beta_2"]),
        gamma_g2=g2_from_json(name, "vk_gamma_2", doc["vk_gamma_2"]),
        delta_g1=None,
        delta_g2=g2_from_json(name, "vk_delta_2", doc["vk_delta_2"]),
        ic=tuple(g1_from_json(name, f"IC[{i}]", p) for i, p in enumerate(ic_doc)),
    )


def read_vk_json(path: str | os.PathLike) -> VerifyingKey:
    return vk_from_json(_load_json(path), str(path))
