// Witness programs: one thread per lane runs a pass's straight-line program
// (cuzk.synthesis.program: the instruction set, how programs are recorded;
// cuzk.synthesis.program_numpy: the reference interpreter these kernels must
// equal bit for bit). No shared memory, barriers or warp operations: the CPU
// emulation of the tests runs it thread by thread.
//
// A program is `ops`, (n, 6) uint32 rows [op, d, a, b, c, imm], and `args`
// for variable-length operand lists. An operand is a register index, or
// CONST | i for entry i of the constant table of its type. Registers live in
// global memory, register-major (u: ureg[r * lanes + lane], u64; f: freg,
// fr_t in Montgomery form), so a warp's accesses to one register coalesce;
// every instruction reads all its operands before it writes (the register
// allocator reuses a dead operand's register for the result).
//
// The assignment W is (n, 4) uint64 rows in standard form: ONE, inputs, aux.
// A lane's own aux j is row n_inputs + aux_base[lane] + j, its input j row
// input_base[lane] + j; port p is row port_cols[lane * n_ports + p]; hint slot
// s is row hint_index[lane * n_slots + s] of the hint table (standard form,
// bits and words in limb 0).
#define FR_MUL_FOLDED 1  // the folded product (fr.cuh)
#include "fr.cuh"
#include "poseidon.cuh"
#include "sha256.cuh"

// The instruction set: the numbers of cuzk.synthesis.program.Op.
enum : uint32_t {
    OP_U_PORT = 1,
    OP_U_HINT = 2,
    OP_U_XOR = 3,
    OP_U_AND = 4,
    OP_U_OR = 5,
    OP_U_NOT1 = 6,
    OP_U_ADD = 7,
    OP_U_SHR = 8,
    OP_U_ROTR = 9,
    OP_U_MASK = 10,
    OP_U_BIT = 11,
    OP_U_EQI = 12,
    OP_U_LTI = 13,
    OP_U_GTI = 14,
    OP_U_FROM_BITS = 15,
    OP_U_BSWAP = 16,
    OP_F_PORT = 20,
    OP_F_HINT = 21,
    OP_F_ADD = 22,
    OP_F_SUB = 23,
    OP_F_MUL = 24,
    OP_F_NEG = 25,
    OP_F_SELECT = 26,
    OP_F_FROM_U = 27,
    OP_F_BIT = 28,
    OP_F_WORD = 29,
    OP_F_FROM_WORDS = 30,
    OP_F_INV = 31,
    OP_ST_AUX_U = 40,
    OP_ST_AUX_F = 41,
    OP_ST_IN_U = 42,
    OP_ST_IN_F = 43,
    OP_SHA256 = 50,
    OP_POSEIDON = 51,
};

#define WIT_CONST 0x80000000u

CUZK_HD uint64_t wit_mask(uint32_t bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

CUZK_HD fr_t wit_from_u64(uint64_t v) {
    return fr_make((uint32_t)v, (uint32_t)(v >> 32), 0, 0, 0, 0, 0, 0);
}

CUZK_HD void wit_store_u(uint4* W, uint64_t row, uint64_t v) {
    W[2 * row] = make_uint4((uint32_t)v, (uint32_t)(v >> 32), 0, 0);
    W[2 * row + 1] = make_uint4(0, 0, 0, 0);
}

struct wit_lane {
    uint64_t lane, lanes;
    uint64_t* ureg;
    uint4* freg;
    const uint64_t* uconst;
    const uint4* fconst;

    CUZK_HD uint64_t u(uint32_t x) const {
        return (x & WIT_CONST) ? uconst[x & ~WIT_CONST] : ureg[(uint64_t)x * lanes + lane];
    }
    CUZK_HD void set_u(uint32_t r, uint64_t v) const { ureg[(uint64_t)r * lanes + lane] = v; }
    CUZK_HD fr_t f(uint32_t x) const {
        return (x & WIT_CONST) ? fr_load(fconst, x & ~WIT_CONST)
                               : fr_load(freg, (uint64_t)x * lanes + lane);
    }
    CUZK_HD void set_f(uint32_t r, const fr_t& v) const {
        fr_store(freg, (uint64_t)r * lanes + lane, v);
    }
};

// One pass: thread `lane` runs the program for its instance. fconst and the
// Poseidon tables are in Montgomery form.
extern "C" __global__ void witness_program(
    const uint32_t* __restrict__ ops, uint32_t n_ops, const uint32_t* __restrict__ args,
    const uint64_t* __restrict__ uconst, const uint4* __restrict__ fconst, uint4* W,
    uint64_t n_inputs, const int64_t* __restrict__ aux_base,
    const int64_t* __restrict__ input_base, const int64_t* __restrict__ port_cols,
    uint32_t n_ports, const uint4* __restrict__ hints, const int64_t* __restrict__ hint_index,
    uint32_t n_slots, uint64_t* ureg, uint4* freg, uint64_t lanes,
    const uint4* __restrict__ ptable, const uint32_t* __restrict__ phead) {
    const uint64_t lane = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (lane >= lanes) return;
    wit_lane L{lane, lanes, ureg, freg, uconst, fconst};
    const uint64_t aux_row = n_inputs + (uint64_t)aux_base[lane];
    const uint64_t in_row = (uint64_t)input_base[lane];
    for (uint32_t k = 0; k < n_ops; k++) {
        const uint32_t* o = ops + 6 * (uint64_t)k;
        const uint32_t op = o[0], d = o[1], a = o[2], b = o[3], c = o[4], imm = o[5];
        switch (op) {
            case OP_U_PORT: {
                const uint64_t row = (uint64_t)port_cols[lane * n_ports + imm];
                const uint4 lo = W[2 * row];
                L.set_u(d, (uint64_t)lo.x | ((uint64_t)lo.y << 32));
                break;
            }
            case OP_U_HINT: {
                const uint64_t row = (uint64_t)hint_index[lane * n_slots + imm];
                const uint4 lo = hints[2 * row];
                L.set_u(d, (uint64_t)lo.x | ((uint64_t)lo.y << 32));
                break;
            }
            case OP_U_XOR: L.set_u(d, L.u(a) ^ L.u(b)); break;
            case OP_U_AND: L.set_u(d, L.u(a) & L.u(b)); break;
            case OP_U_OR: L.set_u(d, L.u(a) | L.u(b)); break;
            case OP_U_NOT1: L.set_u(d, L.u(a) ^ 1ull); break;
            case OP_U_ADD: L.set_u(d, L.u(a) + L.u(b)); break;
            case OP_U_SHR: L.set_u(d, L.u(a) >> imm); break;
            case OP_U_ROTR: {
                const uint32_t by = imm & 0xffu, bits = imm >> 8;
                const uint64_t v = L.u(a);
                const uint64_t hi = bits - by < 64 ? v << (bits - by) : 0ull;
                L.set_u(d, ((v >> by) | hi) & wit_mask(bits));
                break;
            }
            case OP_U_MASK: L.set_u(d, L.u(a) & wit_mask(imm)); break;
            case OP_U_BIT: L.set_u(d, (L.u(a) >> imm) & 1ull); break;
            case OP_U_EQI: L.set_u(d, L.u(a) == (uint64_t)imm); break;
            case OP_U_LTI: L.set_u(d, L.u(a) < (uint64_t)imm); break;
            case OP_U_GTI: L.set_u(d, L.u(a) > (uint64_t)imm); break;
            case OP_U_FROM_BITS: {
                uint64_t acc = 0;
                for (uint32_t i = 0; i < b; i++) acc += L.u(args[a + 2 * i]) << args[a + 2 * i + 1];
                L.set_u(d, acc);
                break;
            }
            case OP_U_BSWAP: {
                const uint32_t v = (uint32_t)L.u(a);
                L.set_u(d, (uint64_t)((v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) |
                                      (v << 24)));
                break;
            }
            case OP_F_PORT: {
                const uint64_t row = (uint64_t)port_cols[lane * n_ports + imm];
                L.set_f(d, fr_to_mont(fr_reduce_full(fr_load(W, row))));
                break;
            }
            case OP_F_HINT: {
                const uint64_t row = (uint64_t)hint_index[lane * n_slots + imm];
                L.set_f(d, fr_to_mont(fr_reduce_full(fr_load(hints, row))));
                break;
            }
            case OP_F_ADD: L.set_f(d, fr_add(L.f(a), L.f(b))); break;
            case OP_F_SUB: L.set_f(d, fr_sub(L.f(a), L.f(b))); break;
            case OP_F_MUL: L.set_f(d, fr_mul(L.f(a), L.f(b))); break;
            case OP_F_NEG: L.set_f(d, fr_neg(L.f(a))); break;
            case OP_F_SELECT: {
                const fr_t x = L.f(a), y = L.f(b);
                L.set_f(d, L.u(c) != 0 ? x : y);
                break;
            }
            case OP_F_FROM_U: L.set_f(d, fr_to_mont(wit_from_u64(L.u(a)))); break;
            case OP_F_BIT: {
                const fr_t v = fr_from_mont(L.f(a));
                L.set_u(d, (v.w[imm >> 5] >> (imm & 31)) & 1u);
                break;
            }
            case OP_F_WORD: L.set_u(d, fr_from_mont(L.f(a)).w[imm]); break;
            case OP_F_FROM_WORDS: {
                fr_t v = fr_zero();
                for (uint32_t i = 0; i < b; i++) v.w[i] = (uint32_t)L.u(args[a + i]);
                L.set_f(d, fr_to_mont(fr_reduce_full(v)));
                break;
            }
            case OP_F_INV: L.set_f(d, fr_inv_mont(L.f(a))); break;
            case OP_ST_AUX_U: wit_store_u(W, aux_row + imm, L.u(a)); break;
            case OP_ST_AUX_F: fr_store(W, aux_row + imm, fr_from_mont(L.f(a))); break;
            case OP_ST_IN_U: wit_store_u(W, in_row + imm, L.u(a)); break;
            case OP_ST_IN_F: fr_store(W, in_row + imm, fr_from_mont(L.f(a))); break;
            case OP_SHA256: {
                uint32_t st[8], w[16];
                for (int i = 0; i < 8; i++) st[i] = (uint32_t)L.u(args[a + i]);
                for (int i = 0; i < 16; i++) w[i] = (uint32_t)L.u(args[a + 8 + i]);
                sha256_compress(st, w);
                for (int i = 0; i < 8; i++) L.set_u(args[a + 24 + i], st[i]);
                break;
            }
            case OP_POSEIDON: {
                fr_t in[POSEIDON_MAX_WIDTH];
                for (uint32_t i = 0; i < b; i++) in[i] = L.f(args[a + i]);
                const uint32_t* h = phead + 4 * imm;
                L.set_f(d, poseidon_hash(in, ptable + 2 * (uint64_t)h[0], (int)h[1], (int)h[2],
                                         (int)h[3]));
                break;
            }
            default: break;
        }
    }
}

// n compressions: state (n, 8) and block (n, 16) uint32 words in, state out.
extern "C" __global__ void sha256_compress_kernel(uint32_t* state, const uint32_t* block,
                                                  uint64_t n) {
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint32_t st[8], w[16];
        for (int j = 0; j < 8; j++) st[j] = state[8 * i + j];
        for (int j = 0; j < 16; j++) w[j] = block[16 * i + j];
        sha256_compress(st, w);
        for (int j = 0; j < 8; j++) state[8 * i + j] = st[j];
    }
}

// n Poseidon hashes of t - 1 elements each: in (n, t - 1) and out (n,) Fr
// rows in standard form; the table (Montgomery form) of header `head`.
extern "C" __global__ void poseidon_kernel(uint4* out, const uint4* in, uint64_t n,
                                           const uint4* ptable, const uint32_t* head) {
    const int t = (int)head[1];
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        fr_t x[POSEIDON_MAX_WIDTH];
        for (int j = 0; j < t - 1; j++)
            x[j] = fr_to_mont(fr_reduce_full(fr_load(in, i * (uint64_t)(t - 1) + j)));
        const fr_t h = poseidon_hash(x, ptable + 2 * (uint64_t)head[0], t, (int)head[2],
                                     (int)head[3]);
        fr_store(out, i, fr_from_mont(h));
    }
}
