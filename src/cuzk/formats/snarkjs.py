"""snarkjs / circom binary files: .r1cs, .wtns and Groth16 .zkey.

Binary files share the iden3 container (:mod:`cuzk.formats.binfile`).

**.r1cs** (circom; header section 1, constraints section 2): the prime, wire
counts ``nVars, nOutputs, nPubInputs, nPrvInputs, nLabels (u64),
nConstraints``; each constraint is three linear combinations, each a u32
term count followed by ``(u32 wire, 32-byte LE coefficient)`` terms. Wire 0
is ONE, then the outputs, the public inputs, the private inputs and the
internal signals: exactly cuzk's ``[ONE, inputs..., aux...]`` with the
``nOutputs + nPubInputs`` public signals as inputs.

*Reconciling input constraints.* A circom R1CS lists only the circuit's own
constraints. Groth16 needs every public input to occur in A (otherwise its IC
point is not bound to it), so both bellperson (``x_i · 0 = 0`` appended by the
prover and the parameter generator) and snarkjs (rows ``nConstraints + i``
with coefficient 1 in A, added when it builds the .zkey) append one constraint
per public signal, ONE included, after the circuit's. :func:`read_r1cs` does
the same, so the returned :class:`~cuzk.r1cs.R1CS` has ``nConstraints +
nPublic + 1`` rows, the evaluation domain snarkjs picks, and the matrices of a
snarkjs .zkey row for row.

**.wtns** (header section 1: n8, prime, count; section 2: the values, 32-byte
LE standard form): the full assignment, ONE first.

**.zkey** (Groth16, protocol id 1 in section 1). Section 2: ``n8q, q, n8r, r,
nVars, nPublic, domainSize``, then α₁, β₁, β₂, γ₂, δ₁, δ₂; section 3: IC
(nPublic + 1 G1); 4: the QAP coefficients of A and B (u32 count, then
``u32 matrix (0 = A, 1 = B), u32 constraint, u32 signal, Fr coefficient``);
5, 6, 7: A, B₁, B₂ for every signal (infinity where a signal is absent);
8: the L ("C") points of the private signals; 9: H, ``domainSize`` points;
10: the contribution history (not needed to prove). Points are little-endian
Montgomery (:mod:`cuzk.formats.points`).

snarkjs's H points are *not* bellperson's ``τ^i·Z(τ)/δ``: they are the odd-indexed
Lagrange points of the 2m-domain at τ, over δ, and the prover multiplies
them by the values of A·B − C on the odd coset (no division by Z). The domain
is also generated differently: snarkjs's roots of unity are powers of
``5^((r−1)/2^32)``, cuzk's of ``7^((r−1)/2^32)`` (both primitive 2^32-th
roots, so the same set of points in a different order). :class:`Zkey`
therefore re-indexes the key once when it is read: constraint rows and H
points are permuted into cuzk's domain order, after which the proof is
computed with cuzk's own NTTs (:mod:`cuzk.formats.zkey_prover`).

The JSON files (proof, public signals, verification key) are
:mod:`cuzk.formats.snarkjs_json`'s.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from cuzk.algebra import pairing
from cuzk.algebra.arrays import g1_from_array, g2_from_array
from cuzk.algebra.curves import Affine
from cuzk.algebra.domain import EvaluationDomain
from cuzk.algebra.fields import FR_ODD_PART, FR_TWO_ADICITY, Q, R
from cuzk.algebra.sparse import SparseMatrix
from cuzk.errors import InputError
from cuzk.formats.binfile import BinFile
from cuzk.formats.points import (
    DecodedPoints,
    fr_first_noncanonical,
    fr_from_mont2,
    g1_from_lem,
    g2_from_lem,
)
from cuzk.groth16.keys import VerifyingKey
from cuzk.r1cs.system import R1CS

# Primes of the curves snarkjs knows, to name a wrong one in errors.
BN128_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
BN128_Q = 21888242871839275222246405745257275088696311157297823662689037894645226208583
_KNOWN_PRIMES = {R: "BLS12-381's r", Q: "BLS12-381's q", BN128_R: "bn128's r", BN128_Q: "bn128's q"}

GROTH16_PROTOCOL_ID = 1
_OTHER_PROTOCOLS = {2: "PLONK", 10: "FFLONK"}
_FR_N8 = 32
_FQ_N8 = 48


def _prime_name(p: int) -> str:
    return _KNOWN_PRIMES.get(p, f"an unknown prime ({p.bit_length()} bits)")


def _check_prime(name: str, field: str, p: int, want: int, hint: str) -> None:
    if p != want:
        raise InputError(
            name,
            field,
            f"wrong curve: the prime is {_prime_name(p)}, cuzk proves over BLS12-381 ({hint})",
        )


_R1CS_HINT = "compile the circuit with circom --prime bls12381"


# --- .r1cs ---------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CircomR1CS:
    """A circom constraint system, with its input constraints appended in ``r1cs``."""

    path: str
    n_vars: int
    n_outputs: int
    n_pub_inputs: int
    n_prv_inputs: int
    n_labels: int
    n_constraints: int  # the circuit's own, without the input constraints
    r1cs: R1CS

    @property
    def n_public(self) -> int:
        """Public signals (outputs, then public inputs), ONE not counted."""
        return self.n_outputs + self.n_pub_inputs


def read_r1cs(path: str | os.PathLike) -> CircomR1CS:
    f = BinFile(path, b"r1cs", 1)
    for sid in (4, 5):
        if sid in f.sections:
            raise InputError(
                f.name, f"section {sid}", "uses custom gates, which only PLONK supports"
            )
    h = f.reader(1, "header")
    n8 = h.u32("field size")
    if n8 != _FR_N8:
        raise InputError(
            f.name, "header: field size", f"{n8} bytes: wrong curve, BLS12-381's Fr has 32"
        )
    _check_prime(f.name, "header: prime", h.integer(n8, "prime"), R, _R1CS_HINT)
    n_vars = h.u32("nVars")
    n_out = h.u32("nOutputs")
    n_pub = h.u32("nPubInputs")
    n_prv = h.u32("nPrvInputs")
    n_labels = h.u64("nLabels")
    n_constraints = h.u32("nConstraints")
    h.finish()
    n_public = n_out + n_pub
    if n_public + 1 > n_vars:
        raise InputError(
            f.name, "header", f"{n_public} public signals but only {n_vars} wires (ONE included)"
        )

    mats = _read_constraints(f, n_constraints, n_vars, n_public)
    r1cs = R1CS(
        num_inputs=n_public + 1, num_aux=n_vars - n_public - 1, a=mats[0], b=mats[1], c=mats[2]
    )
    return CircomR1CS(
        path=f.name,
        n_vars=n_vars,
        n_outputs=n_out,
        n_pub_inputs=n_pub,
        n_prv_inputs=n_prv,
        n_labels=n_labels,
        n_constraints=n_constraints,
        r1cs=r1cs,
    )


_TERM = 36  # u32 wire + 32-byte coefficient


def _read_constraints(
    f: BinFile, n_constraints: int, n_vars: int, n_public: int
) -> list[SparseMatrix]:
    """Section 2 as CSR matrices A, B, C, with the input constraints appended.

    Only the term counts are walked in Python (they give each linear
    combination's place); wires and coefficients are then gathered for all
    terms at once, the coefficients straight into (nnz, 4) limbs.
    """
    raw = f.body(2, "constraints").tobytes()
    body = np.frombuffer(raw, dtype=np.uint8)
    where = "section 2 (constraints)"
    n_lc = 3 * n_constraints
    starts = [0] * n_lc
    counts = [0] * n_lc
    unpack = struct.Struct("<I").unpack_from
    pos = 0
    size = len(raw)
    for j in range(n_lc):
        if pos + 4 > size:
            raise InputError(f.name, where, f"ends inside constraint {j // 3} of {n_constraints}")
        (n_terms,) = unpack(raw, pos)
        starts[j] = pos + 4
        counts[j] = n_terms
        pos += 4 + n_terms * _TERM
    if pos > size:
        raise InputError(f.name, where, f"ends inside constraint {n_constraints - 1}")
    if pos != size:
        raise InputError(
            f.name, where, f"{size - pos} bytes left after {n_constraints} constraints"
        )
    starts = np.array(starts, dtype=np.int64)
    counts = np.array(counts, dtype=np.int64)
    # Byte offset of every term, grouped by linear combination.
    lc_of_term = np.repeat(np.arange(n_lc, dtype=np.int64), counts)
    first_term = np.concatenate([[0], np.cumsum(counts)[:-1]]) if n_lc else counts
    k_in_lc = np.arange(len(lc_of_term), dtype=np.int64) - np.repeat(first_term, counts)
    offs = starts[lc_of_term] + _TERM * k_in_lc
    wires = (
        body[offs[:, None] + np.arange(4)].copy().view("<u4").reshape(-1).astype(np.int64)
        if len(offs)
        else np.zeros(0, dtype=np.int64)
    )
    coeffs = (
        body[offs[:, None] + np.arange(4, _TERM)].copy().view("<u8").reshape(-1, 4)
        if len(offs)
        else np.zeros((0, 4), dtype=np.uint64)
    )
    bad = np.flatnonzero(wires >= n_vars)
    if len(bad):
        t = int(bad[0])
        raise InputError(
            f.name,
            f"constraint {int(lc_of_term[t]) // 3}",
            f"wire {int(wires[t])} is not below nVars = {n_vars}",
        )
    t = fr_first_noncanonical(coeffs)
    if t is not None:
        raise InputError(
            f.name, f"constraint {int(lc_of_term[t]) // 3}", "a coefficient is not below r"
        )
    mats = []
    one = np.zeros((1, 4), dtype=np.uint64)
    one[0, 0] = 1
    for m in range(3):
        sel = lc_of_term % 3 == m
        row_counts = counts[m::3]
        indices = wires[sel]
        vals = coeffs[sel]
        # One input constraint per public signal, ONE first: x_i · 0 = 0 (see the module
        # doc): x_i in A, empty rows in B and C.
        if m == 0:
            extra = np.ones(n_public + 1, dtype=np.int64)
            indices = np.concatenate([indices, np.arange(n_public + 1, dtype=np.int64)])
            vals = np.concatenate([vals, np.repeat(one, n_public + 1, axis=0)])
        else:
            extra = np.zeros(n_public + 1, dtype=np.int64)
        all_counts = np.concatenate([row_counts, extra])
        indptr = np.zeros(len(all_counts) + 1, dtype=np.int64)
        np.cumsum(all_counts, out=indptr[1:])
        mats.append(SparseMatrix(indptr=indptr, indices=indices, coeffs=vals, num_cols=n_vars))
    return mats


# --- .wtns ---------------------------------------------------------------------


def read_wtns(
    path: str | os.PathLike, expected: int | None = None, against: str = ""
) -> np.ndarray:
    """The assignment of a .wtns file as an (n, 4) uint64 array, ONE first.

    ``expected`` is the number of wires of the circuit it is meant for
    (``against`` names that circuit's file in the error).
    """
    f = BinFile(path, b"wtns", 2)
    h = f.reader(1, "header")
    n8 = h.u32("field size")
    if n8 != _FR_N8:
        raise InputError(
            f.name, "header: field size", f"{n8} bytes: wrong curve, BLS12-381's Fr has 32"
        )
    _check_prime(
        f.name,
        "header: prime",
        h.integer(n8, "prime"),
        R,
        "compute the witness of a circuit compiled with --prime bls12381",
    )
    n = h.u32("witness count")
    h.finish()
    body = f.body(2, "witness", expected_size=n * _FR_N8)
    w = np.frombuffer(body.tobytes(), dtype="<u8").reshape(n, 4).copy()
    bad = fr_first_noncanonical(w)
    if bad is not None:
        raise InputError(f.name, f"witness[{bad}]", "not below r")
    if n == 0 or w[0, 0] != 1 or w[0, 1:].any():
        raise InputError(f.name, "witness[0]", "the first value (the constant ONE) is not 1")
    if expected is not None and n != expected:
        raise InputError(
            f.name,
            "witness count",
            f"{n} values, but {against or 'the circuit'} has {expected} wires: "
            "the witness belongs to another circuit",
        )
    return w


# --- domain re-indexing (snarkjs's roots of unity → cuzk's) ----------------------


def _dlog_2power(h: int, g: int, bits: int) -> int:
    """e with g^e = h, g of order 2^bits (Pohlig–Hellman, one bit at a time)."""
    e = 0
    g_inv = pow(g, -1, R)
    for i in range(bits):
        # Strip the bits found so far, then test the order of what is left.
        t = h * pow(g_inv, e, R) % R
        if pow(t, 1 << (bits - 1 - i), R) != 1:
            e |= 1 << i
    return e


SNARKJS_ROOT = pow(5, FR_ODD_PART, R)  # snarkjs's primitive 2^32-th root (5 is its non-residue)
# cuzk's root is SNARKJS_ROOT^(1/E): snarkjs's k-th domain generator is cuzk's raised to E mod 2^k.
SNARKJS_ROOT_EXPONENT = _dlog_2power(
    SNARKJS_ROOT, EvaluationDomain(FR_TWO_ADICITY).omega, FR_TWO_ADICITY
)


def snarkjs_row_positions(m: int) -> np.ndarray:
    """Where snarkjs's domain point ω_s^c sits in cuzk's order: ω_s^c = ω^pos[c]."""
    e = SNARKJS_ROOT_EXPONENT % m
    return (np.arange(m, dtype=np.int64) * e) % m


def snarkjs_odd_coset_positions(m: int) -> np.ndarray:
    """Where snarkjs's odd-coset point ζ_s·ω_s^j sits in cuzk's odd coset ζ·ω^i.

    Both are odd powers of a 2m-th root: ζ_s^(2j+1) = ζ^(E(2j+1) mod 2m) = ζ·ω^i
    with i = (E(2j+1) mod 2m − 1)/2.
    """
    e = SNARKJS_ROOT_EXPONENT % (2 * m)
    return (((2 * np.arange(m, dtype=np.int64) + 1) * e) % (2 * m) - 1) // 2


# --- .zkey ---------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Zkey:
    """A Groth16 .zkey, its points in cuzk's limb layout, rows in cuzk's domain order.

    ``a``, ``b_g1``, ``b_g2`` hold one point per signal (infinity included),
    ``c`` one per private signal, ``h`` one per odd-coset point in cuzk's order
    (``h[i]`` pairs with the value at ζ·ωⁱ). ``coeff_*`` is the A/B coefficient
    list with each constraint already mapped to its cuzk domain row.
    """

    path: str
    n_vars: int
    n_public: int
    domain_size: int
    vk: VerifyingKey
    coeff_matrix: np.ndarray  # uint8: 0 = A, 1 = B
    coeff_row: np.ndarray  # int64: cuzk domain row
    coeff_signal: np.ndarray  # int64
    coeff_values: np.ndarray  # (k, 4) uint64, standard form
    a: np.ndarray
    b_g1: np.ndarray
    b_g2: np.ndarray
    c: np.ndarray
    h: np.ndarray

    @cached_property
    def matrices(self) -> tuple[SparseMatrix, SparseMatrix]:
        """The QAP's A and B as CSR matrices: domain_size rows (cuzk order) × n_vars."""
        out = []
        for m in (0, 1):
            sel = np.flatnonzero(self.coeff_matrix == m)
            order = sel[np.argsort(self.coeff_row[sel], kind="stable")]
            rows = self.coeff_row[order]
            indptr = np.zeros(self.domain_size + 1, dtype=np.int64)
            np.cumsum(np.bincount(rows, minlength=self.domain_size), out=indptr[1:])
            out.append(
                SparseMatrix(
                    indptr=indptr,
                    indices=self.coeff_signal[order].copy(),
                    coeffs=self.coeff_values[order].copy(),
                    num_cols=self.n_vars,
                )
            )
        return out[0], out[1]


def _points(f: BinFile, sid: int, what: str, n: int, group: str) -> DecodedPoints:
    size = 96 if group == "G1" else 192
    raw = f.body(sid, what, expected_size=n * size)
    dec = g1_from_lem(raw) if group == "G1" else g2_from_lem(raw)
    if dec.problem is not None:
        raise InputError(
            f.name, f"section {sid} ({what}) point {dec.problem.index}", dec.problem.problem
        )
    return dec


def _one_point(dec: DecodedPoints, group: str) -> Affine:
    return (g1_from_array if group == "G1" else g2_from_array)(dec.array)[0]


def read_zkey(path: str | os.PathLike) -> Zkey:
    """Read and check a BLS12-381 Groth16 .zkey (points on their curves, indices in range)."""
    f = BinFile(path, b"zkey", 2)
    h1 = f.reader(1, "header")
    protocol = h1.u32("protocol")
    h1.finish()
    if protocol != GROTH16_PROTOCOL_ID:
        other = _OTHER_PROTOCOLS.get(protocol, f"protocol id {protocol}")
        raise InputError(f.name, "section 1 (header)", f"a {other} key, cuzk proves Groth16")
    h = f.reader(2, "Groth16 header")
    n8q = h.u32("n8q")
    q = h.integer(n8q, "q")
    _check_prime(
        f.name, "header: q", q, Q, "set up the circuit with a BLS12-381 powers-of-tau file"
    )
    if n8q != _FQ_N8:
        raise InputError(f.name, "header: n8q", f"{n8q}, BLS12-381's Fq takes 48 bytes")
    n8r = h.u32("n8r")
    r = h.integer(n8r, "r")
    _check_prime(f.name, "header: r", r, R, "set up with a BLS12-381 powers-of-tau file")
    if n8r != _FR_N8:
        raise InputError(f.name, "header: n8r", f"{n8r}, BLS12-381's Fr takes 32 bytes")
    n_vars = h.u32("nVars")
    n_public = h.u32("nPublic")
    domain_size = h.u32("domainSize")
    if domain_size == 0 or domain_size & (domain_size - 1):
        raise InputError(f.name, "header: domainSize", f"{domain_size} is not a power of two")
    if domain_size >= 1 << FR_TWO_ADICITY:
        raise InputError(f.name, "header: domainSize", "2^32 points: too large for cuzk")
    if n_public + 1 > n_vars:
        raise InputError(
            f.name, "header", f"nPublic = {n_public} but only {n_vars} signals (ONE included)"
        )
    hdr_g1 = []
    for name in ("alpha_1", "beta_1"):
        hdr_g1.append((name, h.raw(96, name)))
    hdr_g2 = [("beta_2", h.raw(192, "beta_2")), ("gamma_2", h.raw(192, "gamma_2"))]
    delta_1 = h.raw(96, "delta_1")
    delta_2 = h.raw(192, "delta_2")
    h.finish()
    vk_points: dict[str, Affine] = {}
    for name, raw in [*hdr_g1, ("delta_1", delta_1)]:
        vk_points[name] = _header_point(f, name, raw, "G1")
    for name, raw in [*hdr_g2, ("delta_2", delta_2)]:
        vk_points[name] = _header_point(f, name, raw, "G2")

    ic = _points(f, 3, "IC", n_public + 1, "G1")
    if ic.infinity.any():
        i = int(np.flatnonzero(ic.infinity)[0])
        raise InputError(
            f.name, f"section 3 (IC) point {i}", "at infinity: public signal unconstrained"
        )
    vk = VerifyingKey(
        alpha_g1=vk_points["alpha_1"],
        beta_g1=vk_points["beta_1"],
        beta_g2=vk_points["beta_2"],
        gamma_g2=vk_points["gamma_2"],
        delta_g1=vk_points["delta_1"],
        delta_g2=vk_points["delta_2"],
        ic=tuple(g1_from_array(ic.array)),
    )

    # Coefficients: u32 count, then 12 bytes of indices and 32 of value per entry.
    cs = f.section(4, "coefficients")
    if cs.size < 4:
        raise InputError(f.name, "section 4 (coefficients)", "shorter than its count field")
    n_coef = int.from_bytes(f.data[cs.offset : cs.offset + 4].tobytes(), "little")
    body = f.body(4, "coefficients", expected_size=4 + 44 * n_coef)
    entries = np.asarray(body[4:]).reshape(n_coef, 44)
    idx = np.ascontiguousarray(entries[:, :12]).view("<u4").reshape(n_coef, 3).astype(np.int64)
    matrix, constraint, signal = idx[:, 0], idx[:, 1], idx[:, 2]
    for name, arr, bound in (
        ("matrix", matrix, 2),
        ("constraint", constraint, domain_size),
        ("signal", signal, n_vars),
    ):
        over = np.flatnonzero(arr >= bound)
        if len(over):
            k = int(over[0])
            raise InputError(
                f.name,
                f"section 4 (coefficients) entry {k}",
                f"{name} {int(arr[k])} is not below {bound}",
            )
    values, bad = fr_from_mont2(entries[:, 12:])
    if bad is not None:
        raise InputError(f.name, f"section 4 (coefficients) entry {bad}", "value not below r")

    a = _points(f, 5, "A", n_vars, "G1")
    b1 = _points(f, 6, "B1", n_vars, "G1")
    b2 = _points(f, 7, "B2", n_vars, "G2")
    c = _points(f, 8, "C", n_vars - n_public - 1, "G1")
    hp = _points(f, 9, "H", domain_size, "G1")

    rows = snarkjs_row_positions(domain_size)[constraint]
    h_cuzk = np.empty_like(hp.array)
    h_cuzk[snarkjs_odd_coset_positions(domain_size)] = hp.array
    return Zkey(
        path=f.name,
        n_vars=n_vars,
        n_public=n_public,
        domain_size=domain_size,
        vk=vk,
        coeff_matrix=matrix.astype(np.uint8),
        coeff_row=rows,
        coeff_signal=signal,
        coeff_values=values,
        a=a.array,
        b_g1=b1.array,
        b_g2=b2.array,
        c=c.array,
        h=h_cuzk,
    )


def _header_point(f: BinFile, name: str, raw: np.ndarray, group: str) -> Affine:
    dec = g1_from_lem(raw) if group == "G1" else g2_from_lem(raw)
    if dec.problem is not None:
        raise InputError(f.name, f"section 2 (header) {name}", dec.problem.problem)
    p = _one_point(dec, group)
    if p is None:
        raise InputError(f.name, f"section 2 (header) {name}", "at infinity")
    ok = pairing.g1_in_subgroup(p) if group == "G1" else pairing.g2_in_subgroup(p)
    if not ok:
        raise InputError(f.name, f"section 2 (header) {name}", "not in the r-order subgroup")
    return p
