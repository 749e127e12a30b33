"""``SealCommitPhase1Output`` JSON and Curio's ``c1.json`` envelope, read and written.

The C1 output is serde JSON (rust-filecoin-proofs-api ``seal.rs``): struct
fields in declaration order, no whitespace, every 32-byte value an array of
32 integers, enums externally tagged (``{"Single": …}``), ``PhantomData``
written as ``null`` (the ``_h`` of a column). :func:`dumps_c1` writes exactly
that layout, so a C1 output produced by rust-fil-proofs survives
``dumps_c1(loads_c1(raw)) == raw`` byte for byte (the property Curio's Go
mirror of these types is tested for).

Curio hands a C2 prover ``{"SectorNum": n, "Phase1Out": "<base64>",
"SectorSize": n}`` (Go's ``json.Marshal`` of a ``[]byte`` is standard base64
with padding).

Every error is an :class:`~cuzk.errors.InputError` whose ``field`` is the
JSON path of the offending value, e.g.
``vanilla_proofs.StackedDrg2KiBV1[0][1].comm_d_proofs.data.Single.leaf``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from cuzk.algebra.fields import R
from cuzk.circuits import jsondoc
from cuzk.circuits.porep.params import REGISTERED_SEAL_PROOFS
from cuzk.circuits.porep.types import (
    SINGLE,
    SUB,
    TOP,
    C1Wrapper,
    ChallengeProof,
    Column,
    ColumnProof,
    LabelingProof,
    MerkleProof,
    PathElement,
    ReplicaColumnProof,
    SealCommitPhase1Output,
)
from cuzk.errors import InputError

U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1


class _Reader:
    """Walks decoded JSON, naming the path of anything that is not as expected."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, problem: str) -> InputError:
        return InputError(self.source, path or "(top level)", problem)

    def obj(self, v: Any, path: str, keys: tuple[str, ...]) -> dict:
        if not isinstance(v, dict):
            raise self.fail(path, f"expected an object with {', '.join(keys)}, got {_kind(v)}")
        for k in keys:
            if k not in v:
                raise self.fail(path, f"missing field {k!r}")
        extra = [k for k in v if k not in keys]
        if extra:
            raise self.fail(path, f"unknown field {extra[0]!r} (expected {', '.join(keys)})")
        return v

    def array(self, v: Any, path: str, length: int | None = None) -> list:
        if not isinstance(v, list):
            raise self.fail(path, f"expected an array, got {_kind(v)}")
        if length is not None and len(v) != length:
            raise self.fail(path, f"expected {length} entries, got {len(v)}")
        return v

    def uint(self, v: Any, path: str, maximum: int) -> int:
        if type(v) is not int or not 0 <= v <= maximum:
            raise self.fail(path, f"expected an integer in [0, {maximum}], got {_short(v)}")
        return v

    def raw32(self, v: Any, path: str) -> bytes:
        """32 bytes written as an array of 32 integers (a seed or ticket)."""
        if not isinstance(v, list) or len(v) != 32:
            raise self.fail(path, f"expected an array of 32 bytes, got {_kind(v)}")
        try:
            if set(map(type, v)) == {int}:  # (bools are ints to bytes())
                return bytes(v)
        except ValueError:
            pass
        bad = next(i for i, x in enumerate(v) if type(x) is not int or not 0 <= x <= 255)
        raise self.fail(f"{path}[{bad}]", f"expected a byte (0..255), got {_short(v[bad])}")

    def domain(self, v: Any, path: str) -> bytes:
        """A domain value: 32 bytes that must encode an Fr element below r."""
        b = self.raw32(v, path)
        if b[31] >= 0x73 and int.from_bytes(b, "little") >= R:
            raise self.fail(path, "not a field element: the value is not below the modulus r")
        return b

    def domains(self, v: Any, path: str, length: int | None = None) -> tuple[bytes, ...]:
        return tuple(
            self.domain(x, f"{path}[{i}]") for i, x in enumerate(self.array(v, path, length))
        )

    # --- nested types -----------------------------------------------------
    def inclusion_path(self, v: Any, path: str) -> tuple[PathElement, ...]:
        o = self.obj(v, path, ("path",))
        elements = []
        for i, e in enumerate(self.array(o["path"], f"{path}.path")):
            p = f"{path}.path[{i}]"
            eo = self.obj(e, p, ("hashes", "index"))
            hashes = self.domains(eo["hashes"], f"{p}.hashes")
            index = self.uint(eo["index"], f"{p}.index", U64_MAX)
            if index > len(hashes):
                raise self.fail(
                    f"{p}.index", f"position {index} in a node of arity {len(hashes) + 1}"
                )
            elements.append(PathElement(hashes, index))
        return tuple(elements)

    def merkle_proof(self, v: Any, path: str) -> MerkleProof:
        o = self.obj(v, path, ("data",))
        data = o["data"]
        p = f"{path}.data"
        if not isinstance(data, dict) or len(data) != 1:
            raise self.fail(p, "expected exactly one of Single, Sub, Top")
        ((kind, body),) = data.items()
        p = f"{p}.{kind}"
        if kind == SINGLE:
            b = self.obj(body, p, ("root", "leaf", "path"))
            base, sub, top = self.inclusion_path(b["path"], f"{p}.path"), (), ()
        elif kind == SUB:
            b = self.obj(body, p, ("base_proof", "sub_proof", "root", "leaf"))
            base = self.inclusion_path(b["base_proof"], f"{p}.base_proof")
            sub = self.inclusion_path(b["sub_proof"], f"{p}.sub_proof")
            top = ()
        elif kind == TOP:
            b = self.obj(body, p, ("base_proof", "sub_proof", "top_proof", "root", "leaf"))
            base = self.inclusion_path(b["base_proof"], f"{p}.base_proof")
            sub = self.inclusion_path(b["sub_proof"], f"{p}.sub_proof")
            top = self.inclusion_path(b["top_proof"], f"{p}.top_proof")
        else:
            raise self.fail(f"{path}.data", f"unknown proof kind {kind!r} (Single, Sub or Top)")
        root = self.domain(b["root"], f"{p}.root")
        leaf = self.domain(b["leaf"], f"{p}.leaf")
        return MerkleProof(kind, root, leaf, base, sub, top)

    def column_proof(self, v: Any, path: str) -> ColumnProof:
        o = self.obj(v, path, ("column", "inclusion_proof"))
        p = f"{path}.column"
        c = self.obj(o["column"], p, ("index", "rows", "_h"))
        if c["_h"] is not None:
            raise self.fail(f"{p}._h", f"expected null, got {_short(c['_h'])}")
        column = Column(
            self.uint(c["index"], f"{p}.index", U32_MAX), self.domains(c["rows"], f"{p}.rows")
        )
        return ColumnProof(
            column, self.merkle_proof(o["inclusion_proof"], f"{path}.inclusion_proof")
        )

    def labeling_proof(self, v: Any, path: str) -> LabelingProof:
        o = self.obj(v, path, ("parents", "layer_index", "node"))
        return LabelingProof(
            self.domains(o["parents"], f"{path}.parents"),
            self.uint(o["layer_index"], f"{path}.layer_index", U32_MAX),
            self.uint(o["node"], f"{path}.node", U64_MAX),
        )

    def challenge_proof(self, v: Any, path: str) -> ChallengeProof:
        o = self.obj(
            v,
            path,
            (
                "comm_d_proofs",
                "comm_r_last_proof",
                "replica_column_proofs",
                "labeling_proofs",
                "encoding_proof",
            ),
        )
        p = f"{path}.replica_column_proofs"
        rc = self.obj(o["replica_column_proofs"], p, ("c_x", "drg_parents", "exp_parents"))
        replica = ReplicaColumnProof(
            self.column_proof(rc["c_x"], f"{p}.c_x"),
            tuple(
                self.column_proof(x, f"{p}.drg_parents[{i}]")
                for i, x in enumerate(self.array(rc["drg_parents"], f"{p}.drg_parents"))
            ),
            tuple(
                self.column_proof(x, f"{p}.exp_parents[{i}]")
                for i, x in enumerate(self.array(rc["exp_parents"], f"{p}.exp_parents"))
            ),
        )
        labeling = tuple(
            self.labeling_proof(x, f"{path}.labeling_proofs[{i}]")
            for i, x in enumerate(self.array(o["labeling_proofs"], f"{path}.labeling_proofs"))
        )
        return ChallengeProof(
            self.merkle_proof(o["comm_d_proofs"], f"{path}.comm_d_proofs"),
            self.merkle_proof(o["comm_r_last_proof"], f"{path}.comm_r_last_proof"),
            replica,
            labeling,
            self.labeling_proof(o["encoding_proof"], f"{path}.encoding_proof"),
        )


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int | float):
        return f"the number {v}"
    if isinstance(v, str):
        return f"the string {_short(v)}"
    if isinstance(v, list):
        return f"an array of {len(v)}"
    return "an object"


def _short(v: Any) -> str:
    text = json.dumps(v) if not isinstance(v, bytes) else repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _parse_json(raw: bytes | str, source: str) -> Any:
    return jsondoc.loads(raw, source)


# The fields of a Phase1Out object (SealCommitPhase1Output), each required.
PHASE1_KEYS = (
    "registered_proof",
    "vanilla_proofs",
    "comm_r",
    "comm_d",
    "replica_id",
    "seed",
    "ticket",
)


def c1_from_json(doc: Any, source: str = "c1 output") -> SealCommitPhase1Output:
    """Build a :class:`SealCommitPhase1Output` from decoded JSON."""
    r = _Reader(source)
    o = r.obj(doc, "", PHASE1_KEYS)
    name = o["registered_proof"]
    if not isinstance(name, str):
        raise r.fail("registered_proof", f"expected a proof name, got {_kind(name)}")
    proof = REGISTERED_SEAL_PROOFS.get(name)
    if proof is None:
        raise r.fail("registered_proof", f"unknown seal proof type {_short(name)}")
    vp = o["vanilla_proofs"]
    if not isinstance(vp, dict) or len(vp) != 1:
        raise r.fail("vanilla_proofs", f"expected one variant ({proof.vanilla_variant})")
    ((variant, partitions_doc),) = vp.items()
    if variant != proof.vanilla_variant:
        raise r.fail(
            "vanilla_proofs",
            f"variant {variant!r} does not match {name} (expected {proof.vanilla_variant})",
        )
    base = f"vanilla_proofs.{variant}"
    partitions = tuple(
        tuple(
            r.challenge_proof(c, f"{base}[{k}][{i}]")
            for i, c in enumerate(r.array(part, f"{base}[{k}]"))
        )
        for k, part in enumerate(r.array(partitions_doc, base))
    )
    return SealCommitPhase1Output(
        registered_proof=name,
        vanilla_variant=variant,
        partitions=partitions,
        comm_r=r.domain(o["comm_r"], "comm_r"),
        comm_d=r.domain(o["comm_d"], "comm_d"),
        replica_id=r.domain(o["replica_id"], "replica_id"),
        seed=r.raw32(o["seed"], "seed"),
        ticket=r.raw32(o["ticket"], "ticket"),
    )


def loads_c1(raw: bytes | str, source: str = "c1 output") -> SealCommitPhase1Output:
    """Parse SealCommitPhase1Output JSON."""
    return c1_from_json(_parse_json(raw, source), source)


# --------------------------------------------------------------------------
# Writing, in serde_json's compact layout and rust's field order
# --------------------------------------------------------------------------

_BYTE_TEXT = [str(i) for i in range(256)]


class _Writer:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def domain(self, b: bytes) -> None:
        self.parts.append("[" + ",".join([_BYTE_TEXT[x] for x in b]) + "]")

    def domains(self, values: tuple[bytes, ...]) -> None:
        w = self.parts.append
        w("[")
        for i, v in enumerate(values):
            if i:
                w(",")
            self.domain(v)
        w("]")

    def inclusion_path(self, elements: tuple[PathElement, ...]) -> None:
        w = self.parts.append
        w('{"path":[')
        for i, e in enumerate(elements):
            w(',{"hashes":' if i else '{"hashes":')
            self.domains(e.hashes)
            w(f',"index":{e.index}}}')
        w("]}")

    def merkle_proof(self, p: MerkleProof) -> None:
        w = self.parts.append
        w(f'{{"data":{{"{p.kind}":{{')
        if p.kind == SINGLE:
            w('"root":')
            self.domain(p.root)
            w(',"leaf":')
            self.domain(p.leaf)
            w(',"path":')
            self.inclusion_path(p.base)
        else:
            w('"base_proof":')
            self.inclusion_path(p.base)
            w(',"sub_proof":')
            self.inclusion_path(p.sub)
            if p.kind == TOP:
                w(',"top_proof":')
                self.inclusion_path(p.top)
            w(',"root":')
            self.domain(p.root)
            w(',"leaf":')
            self.domain(p.leaf)
        w("}}}")

    def column_proof(self, c: ColumnProof) -> None:
        w = self.parts.append
        w(f'{{"column":{{"index":{c.column.index},"rows":')
        self.domains(c.column.rows)
        w(',"_h":null},"inclusion_proof":')
        self.merkle_proof(c.inclusion_proof)
        w("}")

    def column_proofs(self, cs: tuple[ColumnProof, ...]) -> None:
        w = self.parts.append
        w("[")
        for i, c in enumerate(cs):
            if i:
                w(",")
            self.column_proof(c)
        w("]")

    def labeling_proof(self, p: LabelingProof) -> None:
        self.parts.append('{"parents":')
        self.domains(p.parents)
        self.parts.append(f',"layer_index":{p.layer_index},"node":{p.node}}}')

    def challenge_proof(self, p: ChallengeProof) -> None:
        w = self.parts.append
        w('{"comm_d_proofs":')
        self.merkle_proof(p.comm_d_proofs)
        w(',"comm_r_last_proof":')
        self.merkle_proof(p.comm_r_last_proof)
        w(',"replica_column_proofs":{"c_x":')
        rc = p.replica_column_proofs
        self.column_proof(rc.c_x)
        w(',"drg_parents":')
        self.column_proofs(rc.drg_parents)
        w(',"exp_parents":')
        self.column_proofs(rc.exp_parents)
        w('},"labeling_proofs":[')
        for i, lp in enumerate(p.labeling_proofs):
            if i:
                w(",")
            self.labeling_proof(lp)
        w('],"encoding_proof":')
        self.labeling_proof(p.encoding_proof)
        w("}")


def dumps_c1(c1: SealCommitPhase1Output) -> bytes:
    """Serialise exactly as rust-filecoin-proofs-api's serde_json does."""
    wr = _Writer()
    w = wr.parts.append
    w(f'{{"registered_proof":"{c1.registered_proof}","vanilla_proofs":{{"{c1.vanilla_variant}":[')
    for k, part in enumerate(c1.partitions):
        w(",[" if k else "[")
        for i, proof in enumerate(part):
            if i:
                w(",")
            wr.challenge_proof(proof)
        w("]")
    w(']},"comm_r":')
    wr.domain(c1.comm_r)
    w(',"comm_d":')
    wr.domain(c1.comm_d)
    w(',"replica_id":')
    wr.domain(c1.replica_id)
    w(',"seed":')
    wr.domain(c1.seed)
    w(',"ticket":')
    wr.domain(c1.ticket)
    w("}")
    return "".join(wr.parts).encode()


# --------------------------------------------------------------------------
# Curio's c1.json envelope
# --------------------------------------------------------------------------

_WRAPPER_FIELDS = ("SectorNum", "Phase1Out", "SectorSize")


def check_sector_number(num: Any, source: str) -> int:
    """A c1.json's SectorNum: an integer from 0 to 2^63 − 1 (a Filecoin sector
    number; -1 and 2^64 are not); InputError naming the field otherwise."""
    if type(num) is not int or not 0 <= num < 1 << 63:
        raise InputError(source, "SectorNum", f"expected a sector number, got {_short(num)}")
    return num


_NOT_B64 = re.compile(rb"[^A-Za-z0-9+/=\r\n]")


def _b64decode(text: str, source: str) -> bytes:
    data = text.encode("ascii", errors="replace")
    bad = _NOT_B64.search(data)
    if bad:
        raise InputError(source, "Phase1Out", f"not valid base64 at byte {bad.start()}")
    compact = data.replace(b"\r", b"").replace(b"\n", b"")
    try:
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError) as e:
        pad = compact.find(b"=")
        where = f" at byte {pad}" if 0 <= pad < len(compact) - 2 else ""
        raise InputError(source, "Phase1Out", f"not valid base64{where} ({e})") from None


def loads_wrapper(raw: bytes | str, source: str = "c1.json") -> C1Wrapper:
    """Parse Curio's envelope (field names match case-insensitively, as in Go)."""
    return _wrapper_from_json(_parse_json(raw, source), source)


def _wrapper_from_json(doc: Any, source: str) -> C1Wrapper:
    if not isinstance(doc, dict):
        raise InputError(source, "", f"expected an object with {', '.join(_WRAPPER_FIELDS)}")
    found: dict[str, Any] = {}
    for key, value in doc.items():
        for name in _WRAPPER_FIELDS:
            if key == name or (key.lower() == name.lower() and name not in found):
                found[name] = value
    for name in _WRAPPER_FIELDS:
        if name not in found:
            raise InputError(source, name, "missing field")
    num, out, size = (found[n] for n in _WRAPPER_FIELDS)
    check_sector_number(num, source)
    if type(size) is not int or not 0 < size <= U64_MAX:
        raise InputError(source, "SectorSize", f"expected a size in bytes, got {_short(size)}")
    if not isinstance(out, str):
        raise InputError(source, "Phase1Out", f"expected a base64 string, got {_kind(out)}")
    return C1Wrapper(num, _b64decode(out, source), size)


def dumps_wrapper(w: C1Wrapper) -> bytes:
    """Serialise as Go's ``json.Marshal`` of Curio's wrapper struct."""
    b64 = base64.b64encode(w.phase1_out).decode()
    return (
        f'{{"SectorNum":{w.sector_num},"Phase1Out":"{b64}","SectorSize":{w.sector_size}}}'.encode()
    )


def load_c1_file(raw: bytes, source: str) -> tuple[SealCommitPhase1Output, C1Wrapper | None]:
    """Read either a Curio ``c1.json`` envelope or a bare C1 output."""
    doc = _parse_json(raw, source)
    if isinstance(doc, dict) and any(k.lower() == "phase1out" for k in doc):
        wrapper = _wrapper_from_json(doc, source)
        c1 = loads_c1(wrapper.phase1_out, f"{source}: Phase1Out")
        check_wrapper_size(c1, wrapper, source)
        return c1, wrapper
    return c1_from_json(doc, source), None


def check_wrapper_size(c1: SealCommitPhase1Output, wrapper: C1Wrapper, source: str) -> None:
    """The envelope's SectorSize is the size of the C1 output's proof type."""
    if c1.registered_proof in REGISTERED_SEAL_PROOFS:
        size = REGISTERED_SEAL_PROOFS[c1.registered_proof].sector_size
        if size != wrapper.sector_size:
            raise InputError(
                source,
                "SectorSize",
                f"{wrapper.sector_size} does not match {c1.registered_proof} ({size} bytes)",
            )
