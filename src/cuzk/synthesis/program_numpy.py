"""The witness programs' reference interpreter: numpy lanes, Python-int Fr.

:class:`NumpyWitness` is a :class:`~cuzk.synthesis.static_plan.WitnessDevice`
that runs a :class:`~cuzk.synthesis.program.Program` one instruction at a
time over all lanes, decoding the same arrays the CUDA interpreter decodes.
It defines what each instruction means (the CUDA kernel is tested against
it) and, with :class:`~cuzk.synthesis.static_plan.StaticPlan`, gives a
second CPU witness that tests compare with the plan's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuzk.algebra.arrays import fr_from_array, fr_to_array
from cuzk.algebra.fields import R
from cuzk.hashers.sha256 import compress
from cuzk.synthesis.program import CONST, MASK32, Op, Program
from cuzk.synthesis.static_plan import PassLanes

_U64 = np.uint64


def _obj(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def poseidon_lanes(state: list[np.ndarray], head: np.ndarray, table: list[int]) -> np.ndarray:
    """Poseidon over object-int lanes from a flat table (``flat_table`` layout)."""
    off, t, half, partial = (int(x) for x in head)
    tag = table[off]
    crc = table[off + 1 : off + 1 + 2 * half * t + partial]
    base = off + 1 + len(crc)
    mds = table[base : base + t * t]
    pre = table[base + t * t : base + 2 * t * t]
    sparse = base + 2 * t * t
    s = [_obj([tag] * len(state[0])), *state]
    assert len(s) == t
    s = [(x + k) % R for x, k in zip(s, crc[:t], strict=True)]
    k = t
    rnd = 0

    def sbox(x):
        x2 = x * x % R
        return x2 * x2 % R * x % R

    def product(s):
        nonlocal rnd
        if rnd == half - 1:
            m = pre
        elif half - 1 < rnd < half + partial:
            o = sparse + (rnd - half) * (2 * t - 1)
            w_hat, v_rest = table[o : o + t], table[o + t : o + 2 * t - 1]
            first = sum(s[i] * w_hat[i] for i in range(t)) % R
            rnd += 1
            return [first] + [(s[j] + s[0] * v_rest[j - 1]) % R for j in range(1, t)]
        else:
            m = mds
        rnd += 1
        return [sum(s[i] * m[i * t + j] for i in range(t)) % R for j in range(t)]

    for _ in range(half):
        s = product([(sbox(x) + c) % R for x, c in zip(s, crc[k : k + t], strict=True)])
        k += t
    for _ in range(partial):
        s = product([(sbox(s[0]) + crc[k]) % R, *s[1:]])
        k += 1
    for _ in range(half - 1):
        s = product([(sbox(x) + c) % R for x, c in zip(s, crc[k : k + t], strict=True)])
        k += t
    s = product([sbox(x) for x in s])
    return s[1]


class NumpyWitness:
    """A :class:`~cuzk.synthesis.static_plan.WitnessDevice` on host numpy arrays."""

    def zeros(self, n: int) -> np.ndarray:
        W = np.zeros((n, 4), dtype=np.uint64)
        W[0, 0] = 1
        return W

    def upload(self, a: np.ndarray) -> np.ndarray:
        return a

    def hints(self, table: np.ndarray, W: np.ndarray) -> np.ndarray:
        return table

    def poseidon(self, head: np.ndarray, values: list[int]) -> tuple:
        return head, [int(v) for v in values]

    def program(self, p: Program) -> Program:
        return p

    def free(self, W: np.ndarray) -> None:
        """Nothing to give back: the assignment is a host array."""

    def run_bytes(self, plan: object) -> int:
        """Device bytes a run takes beyond its assignment: none (host memory)."""
        return 0

    def run(self, W: np.ndarray, hints: np.ndarray, poseidon: tuple, p: Program, lanes: PassLanes):
        n = lanes.lanes
        if n == 0:
            return
        uconst = [_U64(int(x)) for x in p.uconst]
        fconst = fr_from_array(p.fconst)
        ureg: list[Any] = [None] * p.n_u
        freg: list[Any] = [None] * p.n_f
        aux_rows = lanes.n_inputs + lanes.aux_base
        head, table = poseidon

        def u(x: int):
            x = int(x)
            return uconst[x & ~CONST] if x & CONST else ureg[x]

        def f(x: int):
            x = int(x)
            return fconst[x & ~CONST] if x & CONST else freg[x]

        def lane_u(v) -> np.ndarray:
            return np.broadcast_to(np.asarray(v, dtype=_U64), (n,))

        def lane_f(v) -> np.ndarray:
            return v if isinstance(v, np.ndarray) else _obj([v] * n)

        def store(rows: np.ndarray, v, kind: str) -> None:
            if kind == "u":
                out = np.zeros((n, 4), dtype=np.uint64)
                out[:, 0] = lane_u(v)
            else:
                out = fr_to_array([int(x) % R for x in lane_f(v)])
            W[rows] = out

        args = p.args
        for row in p.ops:
            op, d, a, b, c, imm = (int(x) for x in row)
            if op == Op.U_PORT:
                ureg[d] = W[lanes.port_cols[:, imm], 0].copy()
            elif op == Op.U_HINT:
                ureg[d] = hints[lanes.hint_index[:, imm], 0].copy()
            elif op == Op.U_XOR:
                ureg[d] = lane_u(u(a) ^ u(b))
            elif op == Op.U_AND:
                ureg[d] = lane_u(u(a) & u(b))
            elif op == Op.U_OR:
                ureg[d] = lane_u(u(a) | u(b))
            elif op == Op.U_NOT1:
                ureg[d] = lane_u(u(a) ^ _U64(1))
            elif op == Op.U_ADD:
                with np.errstate(over="ignore"):
                    ureg[d] = lane_u(u(a) + u(b))
            elif op == Op.U_SHR:
                ureg[d] = lane_u(u(a) >> _U64(imm))
            elif op == Op.U_ROTR:
                by, bits = imm & 0xFF, imm >> 8
                m = _U64((1 << bits) - 1) if bits < 64 else _U64(2**64 - 1)
                v = u(a)
                hi = v << _U64(bits - by) if bits - by < 64 else _U64(0)
                ureg[d] = lane_u(((v >> _U64(by)) | hi) & m)
            elif op == Op.U_MASK:
                m = _U64((1 << imm) - 1) if imm < 64 else _U64(2**64 - 1)
                ureg[d] = lane_u(u(a) & m)
            elif op == Op.U_BIT:
                ureg[d] = lane_u((u(a) >> _U64(imm)) & _U64(1))
            elif op == Op.U_EQI:
                ureg[d] = lane_u(u(a) == _U64(imm))
            elif op == Op.U_LTI:
                ureg[d] = lane_u(u(a) < _U64(imm))
            elif op == Op.U_GTI:
                ureg[d] = lane_u(u(a) > _U64(imm))
            elif op == Op.U_FROM_BITS:
                acc = np.zeros(n, dtype=_U64)
                for i in range(b):
                    acc += lane_u(u(args[a + 2 * i])) << _U64(int(args[a + 2 * i + 1]))
                ureg[d] = acc
            elif op == Op.U_BSWAP:
                v = lane_u(u(a)) & _U64(MASK32)
                ureg[d] = lane_u(v.astype(">u4").view("<u4").astype(_U64))
            elif op == Op.F_PORT:
                freg[d] = _obj(fr_from_array(W[lanes.port_cols[:, imm]]))
            elif op == Op.F_HINT:
                freg[d] = _obj(fr_from_array(hints[lanes.hint_index[:, imm]]))
            elif op == Op.F_ADD:
                freg[d] = lane_f((f(a) + f(b)) % R)
            elif op == Op.F_SUB:
                freg[d] = lane_f((f(a) - f(b)) % R)
            elif op == Op.F_MUL:
                freg[d] = lane_f(f(a) * f(b) % R)
            elif op == Op.F_NEG:
                freg[d] = lane_f((-f(a)) % R)
            elif op == Op.F_SELECT:
                cond = lane_u(u(c)) != 0
                freg[d] = _obj(np.where(cond, lane_f(f(a)), lane_f(f(b))))
            elif op == Op.F_FROM_U:
                freg[d] = _obj([int(x) for x in lane_u(u(a))])
            elif op == Op.F_BIT:
                ureg[d] = lane_u(np.array([(int(x) >> imm) & 1 for x in lane_f(f(a))], _U64))
            elif op == Op.F_WORD:
                s = 32 * imm
                ureg[d] = lane_u(np.array([(int(x) >> s) & MASK32 for x in lane_f(f(a))], _U64))
            elif op == Op.F_FROM_WORDS:
                acc = _obj([0] * n)
                for i in range(b):
                    acc = acc + (lane_u(u(args[a + i])).astype(object) << (32 * i))
                freg[d] = acc % R
            elif op == Op.F_INV:
                freg[d] = _obj([pow(int(x), -1, R) if x else 0 for x in lane_f(f(a))])
            elif op == Op.ST_AUX_U:
                store(aux_rows + imm, u(a), "u")
            elif op == Op.ST_AUX_F:
                store(aux_rows + imm, f(a), "f")
            elif op == Op.ST_IN_U:
                store(lanes.input_base + imm, u(a), "u")
            elif op == Op.ST_IN_F:
                store(lanes.input_base + imm, f(a), "f")
            elif op == Op.SHA256:
                srcs = [lane_u(u(x)).astype(np.uint32) for x in args[a : a + 24]]
                with np.errstate(over="ignore"):
                    out = compress(np, srcs[:8], srcs[8:])
                for reg, w in zip(args[a + 24 : a + 32], out, strict=True):
                    ureg[int(reg)] = w.astype(_U64)
            elif op == Op.POSEIDON:
                state = [lane_f(f(x)) for x in args[a : a + b]]
                freg[d] = poseidon_lanes(state, head[imm], table)
            else:
                raise ValueError(f"{p.key}: unknown instruction {op}")
