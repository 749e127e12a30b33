"""The demo proof kind: the built-in demo circuit, served like a Filecoin proof.

Its vanilla proof is JSON naming the circuit's size and one instance per
partition::

    {"rounds": 500, "words": 2,
     "instances": [{"x": "123…", "secrets": ["1844…", "7"]}, …]}

``x`` is the chain's public start (decimal, < r), ``secrets`` the circuit's
64-bit words (decimal). The circuit id is ``demo-r<rounds>-w<words>``; each
instance is one partition, proven under that circuit's key and returned as
192 bytes, partitions concatenated. On the wire the kind is ``CUZK_DEMO``
(ProofKind 100, a value outside Curio's range).
"""

from __future__ import annotations

import functools
import json
import re
import secrets as _secrets
from typing import Any

from cuzk.algebra.arrays import fr_to_array
from cuzk.algebra.fields import R
from cuzk.circuits import jsondoc
from cuzk.circuits.demo import DemoCircuit
from cuzk.engine.jobs import ProofKind, ProofRequest
from cuzk.engine.kinds.base import (
    ParsedRequest,
    PartitionInput,
    ProofKindHandler,
    Witness,
)
from cuzk.errors import InputError
from cuzk.r1cs import ConstraintSystem
from cuzk.r1cs.system import R1CS

MAX_ROUNDS = 1 << 16
MAX_WORDS = 256
MAX_PARTITIONS = 64
# One spelling a size (no leading zeros: "demo-r010-w1" made a second key of
# "demo-r10-w1"), and no more digits than MAX_ROUNDS has (a 4,400-digit id
# reached the file system as a name too long)
_CIRCUIT_ID = re.compile(r"demo-r([1-9][0-9]{0,5})-w([1-9][0-9]{0,2})")
_DECIMAL = re.compile(rf"[0-9]{{1,{jsondoc.MAX_DIGITS}}}")  # ASCII digits only: not "²" or "١"
SOURCE = "demo vanilla proof"
# The largest body of valid content: 64 instances of 256 words of 20 digits, an x of
# 78 digits, with the JSON around them. More is padding, refused before it is read.
MAX_BODY_BYTES = 1 << 20


def circuit_id(rounds: int, words: int) -> str:
    return f"demo-r{rounds}-w{words}"


def circuit_for_constraints(constraints: int) -> DemoCircuit:
    return DemoCircuit.with_constraints(constraints)


def make_vanilla(circuit: DemoCircuit, partitions: int = 1, rng: Any = None) -> bytes:
    """A random, valid demo request body with ``partitions`` instances."""
    randbelow = rng.randrange if rng is not None else _secrets.randbelow
    instances = [
        {
            "x": str(randbelow(R)),
            "secrets": [str(randbelow(1 << 64)) for _ in range(circuit.words)],
        }
        for _ in range(partitions)
    ]
    body = {"rounds": circuit.rounds, "words": circuit.words, "instances": instances}
    return json.dumps(body).encode()


def _int_field(value: Any, field: str, lo: int, hi: int) -> int:
    if isinstance(value, str) and _DECIMAL.fullmatch(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(SOURCE, field, f"expected an integer, got {_shown(value)}")
    if not lo <= value < hi:
        raise InputError(SOURCE, field, f"{value} is out of range [{lo}, {hi})")
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class DemoKind(ProofKindHandler):
    kind = ProofKind.DEMO
    batchable = True
    dev_keys_by_default = True

    def parse(self, request: ProofRequest) -> ParsedRequest:
        size = len(request.vanilla_proof)
        if size > MAX_BODY_BYTES:
            raise InputError(
                SOURCE,
                "",
                f"{size} bytes; a demo request is at most {MAX_BODY_BYTES} (64 instances of "
                f"{MAX_WORDS} words)",
            )
        doc = jsondoc.loads(request.vanilla_proof, SOURCE)
        if not isinstance(doc, dict):
            raise InputError(SOURCE, "", "expected a JSON object")
        rounds = _int_field(doc.get("rounds"), "rounds", 1, MAX_ROUNDS + 1)
        words = _int_field(doc.get("words"), "words", 1, MAX_WORDS + 1)
        instances = doc.get("instances")
        if not isinstance(instances, list) or not 1 <= len(instances) <= MAX_PARTITIONS:
            raise InputError(SOURCE, "instances", f"expected a list of 1 to {MAX_PARTITIONS}")
        parts = []
        for i, inst in enumerate(instances):
            where = f"instances[{i}]"
            if not isinstance(inst, dict):
                raise InputError(SOURCE, where, "expected an object with x and secrets")
            x = _int_field(inst.get("x"), f"{where}.x", 0, R)
            secrets = inst.get("secrets")
            if not isinstance(secrets, list) or len(secrets) != words:
                raise InputError(SOURCE, f"{where}.secrets", f"expected a list of {words} words")
            vals = tuple(
                _int_field(s, f"{where}.secrets[{j}]", 0, 1 << 64) for j, s in enumerate(secrets)
            )
            parts.append(PartitionInput(i, (x, vals)))
        return ParsedRequest(circuit_id(rounds, words), tuple(parts))

    def owns(self, cid: str) -> bool:
        return _CIRCUIT_ID.fullmatch(cid) is not None

    def _circuit(self, cid: str) -> DemoCircuit:
        m = _CIRCUIT_ID.fullmatch(cid)
        if m is None:
            raise InputError("circuit_id", cid, "not a demo circuit id (demo-r<rounds>-w<words>)")
        rounds, words = int(m.group(1)), int(m.group(2))
        if not (1 <= rounds <= MAX_ROUNDS and 1 <= words <= MAX_WORDS):
            raise InputError("circuit_id", cid, "demo circuit size out of range")
        return DemoCircuit(rounds=rounds, words=words)

    def r1cs(self, cid: str) -> R1CS:
        return _compiled(self._circuit(cid))

    def synthesize(self, cid: str, partition: PartitionInput) -> Witness:
        circuit = self._circuit(cid)
        x, words = partition.data
        cs = ConstraintSystem(witness=True, keep_names=False)
        circuit.synthesize(cs, x, list(words))
        cs.finish()
        return Witness(
            assignment=fr_to_array(cs.assignment()), public_inputs=tuple(cs.public_inputs())
        )

    def synthesis_bytes(self, cid: str) -> int:
        # Synthesis keeps each constraint's three linear combinations as dicts.
        nc, nv = self.shape(cid)
        return 1200 * nc + 400 * nv


@functools.lru_cache(maxsize=16)
def _compiled(circuit: DemoCircuit) -> R1CS:
    cs = ConstraintSystem(witness=False, keep_names=False)
    circuit.synthesize(cs, None, None)
    return cs.r1cs()


def register(registry: Any) -> None:
    registry.register(DemoKind())
