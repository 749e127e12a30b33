"""Filecoin's published Groth16 parameter files: names, digests, and the digest check.

rust-fil-proofs (``storage-proofs-core`` ``parameter_cache.rs``) names a
circuit's key files ``v28-<cache prefix>-<sha256 hex of identifier>.params``
(and ``.vk``). The *cache prefix* names the proof scheme and its tree R
(``merkletree-<hasher>-<base>-<sub>-<top>``, 0 for a missing level); the
*identifier* is the text its public parameters describe themselves with.
Both are rebuilt here from the project's own circuit parameters, so every
name below is derived, none tabulated; the tests pin each derived name to
rust-fil-proofs' ``parameters.json``.

- PoRep (StackedDRG, the interactive V1_1 proofs): prefix
  ``stacked-proof-of-replication-<tree R>-sha256_hasher`` (tree D's hasher);
  the identifier describes the graph (nodes, 6 DRG parents, 8 expander
  parents), the layer count, the challenges per partition and tree R.
- WinningPoSt / WindowPoSt: prefix ``proof-of-spacetime-fallback-<tree R>``;
  the identifier holds the sector size and the circuit's challenge and
  sector counts (WinningPoSt: 66 sectors of 1 challenge; WindowPoSt: 10
  challenges, 2 / 2349 / 2300 sectors), which is what tells the two apart.
- SnapDeals: prefix ``empty-sector-update-<tree R>``; the identifier holds
  only the sector's node count.

No identifier carries the proofs API version or the porep id, so the V1 and
V1_1 seal proofs (and WindowPoSt V1 and V1_1) share one file per size.

SnapDeals variant: rust-fil-proofs also publishes
``empty-sector-update-poseidon-…`` files (32GiB and 64GiB), for the
``storage_proofs_update::poseidon`` circuit (marked unaudited there), whose
``comm_d_new`` is the root of a Poseidon tree of tree R's shape and which
proves every challenge in a single partition (no partition index among its
public inputs). The project's circuit (:mod:`cuzk.circuits.update`) is the
other one: tree D is binary SHA-256 under per-partition apex leaves, the
partition index is a public input, and large sectors take 16 partitions.
That is the circuit filecoin-proofs' update API proves for every
``RegisteredUpdateProof::StackedDrg*V1`` (rust-filecoin-proofs-api has no
Poseidon variant) and the file Curio's cuzk loads for SnapDeals, so the
plain ``empty-sector-update-…`` files are the ones served here.

Digests: rust-fil-proofs' parameter tools check a file by its unkeyed
BLAKE2b-512 digest, hex encoded and cut to its first 32 hex digits (the
first 16 bytes); :func:`file_digest` computes the same, streaming.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from cuzk.circuits.porep.params import BASE_DEGREE, EXP_DEGREE, SectorParams, default_proof
from cuzk.circuits.post.config import WINDOW, WINNING, PoStConfig, post_config
from cuzk.circuits.update.params import UpdateParams
from cuzk.errors import InputError
from cuzk.hashers.merkle import TreeShape

VERSION = 28  # rust-fil-proofs' parameter cache version, the names' "v28-"
POSEIDON_HASHER = "poseidon_hasher"  # the hashers' names as rust-fil-proofs spells them
SHA256_HASHER = "sha256_hasher"
DIGEST_HEX_CHARS = 32
DEFAULT_CHUNK = 16 << 20

_SHORT = {2 << 10: "2k", 8 << 20: "8m", 512 << 20: "512m", 32 << 30: "32g", 64 << 30: "64g"}
_POST_PREFIX = {WINNING: "winning", WINDOW: "wpost"}


@dataclass(frozen=True)
class _Published:
    """One circuit's entries in rust-fil-proofs' ``parameters.json``."""

    params_cid: str
    params_digest: str
    vk_cid: str
    vk_digest: str


# rust-fil-proofs' parameters.json (as last changed in its commit de000dd3),
# by the project's circuit id.
_PUBLISHED: dict[str, _Published] = {
    "porep-2k": _Published(
        "QmWceMgnWYLopMuM4AoGMvGEau7tNe5UK83XFjH5V9B17h",
        "434fb1338ecfaf0f59256f30dde4968f",
        "QmamahpFCstMUqHi2qGtVoDnRrsXhid86qsfvoyCTKJqHr",
        "dc1ade9929ade1708238f155343044ac",
    ),
    "porep-8m": _Published(
        "QmPXAPPuQtuQz7Zz3MHMAMEtsYwqM1o9H1csPLeiMUQwZH",
        "09e612e4eeb7a0eb95679a88404f960c",
        "QmYCuipFyvVW1GojdMrjK1JnMobXtT4zRCZs1CGxjizs99",
        "b687beb9adbd9dabe265a7e3620813e4",
    ),
    "porep-512m": _Published(
        "QmYBpTt7LWNAWr1JXThV5VxX7wsQFLd1PHrGYVbrU1EZjC",
        "6c77597eb91ab936c1cef4cf19eba1b3",
        "QmWionkqH2B6TXivzBSQeSyBxojaiAFbzhjtwYRrfwd8nH",
        "065179da19fbe515507267677f02823e",
    ),
    "porep-32g": _Published(
        "QmengpM684XLQfG8754ToonszgEg2bQeAGUan5uXTHUQzJ",
        "6a388072a518cf46ebd661f5cc46900a",
        "Qmf93EMrADXAK6CyiSfE8xx45fkMfR3uzKEPCvZC1n2kzb",
        "0c7b4aac1c40fdb7eb82bc355b41addf",
    ),
    "porep-64g": _Published(
        "QmS7ye6Ri2MfFzCkcUJ7FQ6zxDKuJ6J6B8k5PN7wzSR9sX",
        "1801f8a6e1b00bceb00cc27314bb5ce3",
        "QmehSmC6BhrgRZakPDta2ewoH9nosNzdjCqQRXsNFNUkLN",
        "a89884252c04c298d0b3c81bfd884164",
    ),
    "winning-2k": _Published(
        "QmcSTqDcFVLGGVYz1njhUZ7B6fkKtBumsLUwx4nkh22TzS",
        "82c88066be968bb550a05e30ff6c2413",
        "QmSTCXF2ipGA3f6muVo6kHc2URSx6PzZxGUqu7uykaH5KU",
        "ffd79788d614d27919ae5bd2d94eacb6",
    ),
    "winning-8m": _Published(
        "QmU9SBzJNrcjRFDiFc4GcApqdApN6z9X7MpUr66mJ2kAJP",
        "700171ecf7334e3199437c930676af82",
        "QmbmUMa3TbbW3X5kFhExs6WgC4KeWT18YivaVmXDkB6ANG",
        "79ebb55f56fda427743e35053edad8fc",
    ),
    "winning-512m": _Published(
        "QmVgCsJFRXKLuuUhT3aMYwKVGNA9rDeR6DCrs7cAe8riBT",
        "827359440349fe8f5a016e7598993b79",
        "QmfA31fbCWojSmhSGvvfxmxaYCpMoXP95zEQ9sLvBGHNaN",
        "bd2cd62f65c1ab84f19ca27e97b7c731",
    ),
    "winning-32g": _Published(
        "Qmdtczp7p4wrbDofmHdGhiixn9irAcN77mV9AEHZBaTt1i",
        "d84f79a16fe40e9e25a36e2107bb1ba0",
        "QmZCvxKcKP97vDAk8Nxs9R1fWtqpjQrAhhfXPoCi1nkDoF",
        "fc02943678dd119e69e7fab8420e8819",
    ),
    "winning-64g": _Published(
        "QmVkrXc1SLcpgcudK5J25HH93QvR9tNsVhVTYHm5UymXAz",
        "2170a91ad5bae22ea61f2ea766630322",
        "QmbfQjPD7EpzjhWGmvWAsyN2mAZ4PcYhsf3ujuhU9CSuBm",
        "6d3789148fb6466d07ee1e24d6292fd6",
    ),
    "wpost-2k": _Published(
        "QmVxjFRyhmyQaZEtCh7nk2abc7LhFkzhnRX4rcHqCCpikR",
        "7610b9f82bfc88405b7a832b651ce2f6",
        "QmcS5JZs8X3TdtkEBpHAdUYjdNDqcL7fWQFtQz69mpnu2X",
        "0e0958009936b9d5e515ec97b8cb792d",
    ),
    "wpost-8m": _Published(
        "QmdNEL2RtqL52GQNuj8uz6mVj5Z34NVnbaJ1yMyh1oXtBx",
        "c49499bb76a0762884896f9683403f55",
        "QmUiVYCQUgr6Y13pZFr8acWpSM4xvTXUdcvGmxyuHbKhsc",
        "34d4feeacd9abf788d69ef1bb4d8fd00",
    ),
    "wpost-512m": _Published(
        "QmUiRx71uxfmUE8V3H9sWAsAXoM88KR4eo1ByvvcFNeTLR",
        "1a7d4a9c8a502a497ed92a54366af33f",
        "QmfCeddjFpWtavzfEzZpJfzSajGNwfL4RjFXWAvA9TSnTV",
        "4dae975de4f011f101f5a2f86d1daaba",
    ),
    "wpost-32g": _Published(
        "QmaUmfcJt6pozn8ndq1JVBzLRjRJdHMTPd4foa8iw5sjBZ",
        "2cf49eb26f1fee94c85781a390ddb4c8",
        "QmR9i9KL3vhhAqTBGj1bPPC7LvkptxrH9RvxJxLN1vvsBE",
        "0f8ec542485568fa3468c066e9fed82b",
    ),
    "wpost-64g": _Published(
        "QmeAN4vuANhXsF8xP2Lx5j2L6yMSdogLzpcvqCJThRGK1V",
        "3810b7780ac0e299b22ae70f1f94c9bc",
        "QmWV8rqZLxs1oQN9jxNWmnT1YdgLwCcscv94VARrhHf1T7",
        "59d2bf1857adc59a4f08fcf2afaa916b",
    ),
    "snap-2k": _Published(
        "QmYM6Hg7mjmvA3ZHTsqkss1fkdyDju5dDmLiBZGJ5pz9y9",
        "311f92a3e75036ced01b1c0025f1fa0c",
        "QmaQsTLL3nc5dw6wAvaioJSBfd1jhQrA2o6ucFf7XeV74P",
        "eadad9784969890d30f2749708c79771",
    ),
    "snap-8m": _Published(
        "QmQiT4qBGodrVNEgVTDXxBNDdPbaD8Ag7Sx3ZTq1zHX79S",
        "5aedd2cf3e5c0a15623d56a1b43110ad",
        "QmdcpKUQvHM8RFRVKbk1yHfEqMcBzhtFWKRp9SNEmWq37i",
        "abd80269054d391a734febdac0d2e687",
    ),
    "snap-512m": _Published(
        "Qma5WL6abSqYg9uUQAZ3EHS286bsNsha7oAGsJBD48Bq2q",
        "c3ad7bb549470b82ad52ed070aebb4f4",
        "QmUa7f9JtJMsqJJ3s3ZXk6WyF4xJLE8FiqYskZGgk8GCDv",
        "994c5b7d450ca9da348c910689f2dc7f",
    ),
    "snap-32g": _Published(
        "QmNPc75iEfcahCwNKdqnWLtxnjspUGGR4iscjiz3wP3RtS",
        "1b3cfd761a961543f9eb273e435a06a2",
        "QmdFFUe1gcz9MMHc6YW8aoV48w4ckvcERjt7PkydQAMfCN",
        "3a6941983754737fde880d29c7094905",
    ),
    "snap-64g": _Published(
        "QmUB6xTVjzBQGuDNeyJMrrJ1byk58vhPm8eY2Lv9pgwanp",
        "1a392e7b759fb18e036c7559b5ece816",
        "Qmd794Jty7k26XJ8Eg4NDEks65Qk8G4GVfGkwqvymv8HAg",
        "80e366df2f1011953c2d01c7b7c9ee8e",
    ),
}


@dataclass(frozen=True)
class ParameterFile:
    """The published key files of one served circuit.

    ``identifier`` is the public-parameters description whose SHA-256 names
    the files; ``cache_prefix`` the scheme-and-tree part of the name.
    """

    circuit_id: str
    sector_size: int
    cache_prefix: str
    identifier: str
    params_digest: str
    vk_digest: str
    params_cid: str
    vk_cid: str

    @property
    def identifier_hash(self) -> str:
        return hashlib.sha256(self.identifier.encode()).hexdigest()

    @property
    def cache_id(self) -> str:
        """The name without version and extension: ``<prefix>-<sha256 hex>``."""
        return f"{self.cache_prefix}-{self.identifier_hash}"

    @property
    def params_name(self) -> str:
        return f"v{VERSION}-{self.cache_id}.params"

    @property
    def vk_name(self) -> str:
        return f"v{VERSION}-{self.cache_id}.vk"


def tree_display(shape: TreeShape, hasher: str = POSEIDON_HASHER) -> str:
    """A tree's name in cache prefixes: ``merkletree-poseidon_hasher-8-8-0``."""
    return f"merkletree-{hasher}-{shape.base}-{shape.sub}-{shape.top}"


def porep_cache_prefix(sector: SectorParams) -> str:
    return f"stacked-proof-of-replication-{tree_display(sector.tree_shape)}-{SHA256_HASHER}"


def porep_identifier(sector: SectorParams) -> str:
    """StackedDRG public parameters: the graph, layers, challenges per partition, tree R."""
    base_graph = (
        f"drgraph::BucketGraph{{size: {sector.nodes}; degree: {BASE_DEGREE}; "
        f"hasher: {POSEIDON_HASHER}}}"
    )
    graph = (
        f"stacked_graph::StackedGraph{{expansion_degree: {EXP_DEGREE} base_graph: {base_graph} }}"
    )
    return (
        f"layered_drgporep::PublicParams{{ graph: {graph}, challenges: LayerChallenges "
        f"{{ layers: {sector.layers}, max_count: {sector.challenges_per_partition} }}, "
        f"tree: {tree_display(sector.tree_shape)} }}"
    )


def post_cache_prefix(config: PoStConfig) -> str:
    return f"proof-of-spacetime-fallback-{tree_display(config.shape)}"


def post_identifier(config: PoStConfig) -> str:
    """Fallback PoSt public parameters, with the circuit's (not the API's) counts."""
    return (
        f"FallbackPoSt::PublicParams{{sector_size: {config.sector_size}, "
        f"challenge_count: {config.circuit_challenge_count}, "
        f"sector_count: {config.circuit_sector_count}}}"
    )


def update_cache_prefix(params: UpdateParams) -> str:
    return f"empty-sector-update-{tree_display(params.tree_shape)}"


def update_identifier(params: UpdateParams) -> str:
    return f"empty_sector_update::PublicParams{{ sector_nodes: {params.sector_nodes} }}"


def _served() -> Iterator[tuple[str, int, str, str]]:
    """(circuit id, sector size, cache prefix, identifier) of every served circuit."""
    for size, short in _SHORT.items():
        sector = default_proof(size).sector  # the interactive V1_1 seal proof
        yield f"porep-{short}", size, porep_cache_prefix(sector), porep_identifier(sector)
    for kind in (WINNING, WINDOW):
        for size, short in _SHORT.items():
            config = post_config(kind, size)
            cid = f"{_POST_PREFIX[kind]}-{short}"
            yield cid, size, post_cache_prefix(config), post_identifier(config)
    for size, short in _SHORT.items():
        update = UpdateParams.of(size)
        yield f"snap-{short}", size, update_cache_prefix(update), update_identifier(update)


def _derive() -> dict[str, ParameterFile]:
    out = {}
    for cid, size, prefix, identifier in _served():
        p = _PUBLISHED[cid]
        out[cid] = ParameterFile(
            cid, size, prefix, identifier, p.params_digest, p.vk_digest, p.params_cid, p.vk_cid
        )
    return out


_FILES = _derive()


def parameter_files() -> list[ParameterFile]:
    """Every served circuit's files: PoRep, WinningPoSt, WindowPoSt, SnapDeals, small to large."""
    return list(_FILES.values())


def parameter_file(circuit_id: str) -> ParameterFile:
    try:
        return _FILES[circuit_id]
    except KeyError:
        raise InputError(
            "circuit_id",
            circuit_id,
            "no published Groth16 parameters for this circuit (known: " + ", ".join(_FILES) + ")",
        ) from None


def circuit_for_params_name(name: str) -> str | None:
    """The served circuit whose published ``.params`` file has this name, if any."""
    for p in _FILES.values():
        if p.params_name == name:
            return p.circuit_id
    return None


def file_digest(path: str | os.PathLike[str], chunk: int = DEFAULT_CHUNK) -> str:
    """A file's digest as ``parameters.json`` records it: BLAKE2b-512, first 32 hex digits.

    Read ``chunk`` bytes at a time into one reused buffer, so a 47 GB
    ``.params`` file costs ``chunk`` bytes of memory.
    """
    if chunk <= 0:
        raise ValueError(f"chunk must be positive, not {chunk}")
    h = hashlib.blake2b()  # digest_size 64, unkeyed: BLAKE2b-512
    buf = bytearray(chunk)
    view = memoryview(buf)
    try:
        with open(path, "rb", buffering=0) as f:
            while n := f.readinto(buf):
                h.update(view[:n])
    except OSError as e:
        raise InputError(os.fspath(path), "", f"cannot read the file: {e.strerror or e}") from e
    return h.hexdigest()[:DIGEST_HEX_CHARS]
