/* cuzk.backends.native._native: the Python face of the C kernels.
 *
 * Arguments are buffer-protocol objects (C-contiguous numpy arrays from
 * cuzk.backends.native, which also allocates every output); this file checks
 * their sizes and values, releases the GIL and calls the kernels. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>
#include <unistd.h>

#include "kernels.h"

static int g_threads = 1;

#define FR_BYTES 32
#define G1_BYTES 96
#define G2_BYTES 192

/* Release every buffer in a NULL-terminated list of views that were filled. */
static void release_all(Py_buffer **views)
{
    for (; *views; views++) {
        if ((*views)->obj)
            PyBuffer_Release(*views);
    }
}

static int check_size(const Py_buffer *v, Py_ssize_t unit, const char *what, Py_ssize_t *count)
{
    if (v->len % unit) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes is not a whole number of %zd-byte items",
                     what, v->len, unit);
        return 0;
    }
    *count = v->len / unit;
    return 1;
}

/* An Fr input: the caller's limbs, or (when some are ≥ r) a copy reduced
 * mod r: the contract takes any 256-bit values, as the Python twin's ints do. */
typedef struct {
    const u64 *data;
    u64 *owned;
    Py_ssize_t n;
} fr_in;

static int fr_input(const Py_buffer *v, const char *what, fr_in *f)
{
    f->data = (const u64 *)v->buf;
    f->owned = NULL;
    f->n = 0;
    if (!v->obj)
        return 1; /* an absent optional input */
    if (!check_size(v, FR_BYTES, what, &f->n))
        return 0;
    long long bad = fr_first_noncanonical(f->data, (size_t)f->n);
    if (bad < 0)
        return 1;
    f->owned = malloc((size_t)f->n * FR_BYTES);
    if (!f->owned) {
        PyErr_NoMemory();
        return 0;
    }
    memcpy(f->owned, f->data, (size_t)f->n * FR_BYTES);
    fr_reduce(f->owned + 4 * bad, (size_t)(f->n - bad));
    f->data = f->owned;
    return 1;
}

static PyObject *py_set_threads(PyObject *self, PyObject *args)
{
    int n;
    (void)self;
    if (!PyArg_ParseTuple(args, "i", &n))
        return NULL;
    if (n < 1 || n > 1024) {
        PyErr_Format(PyExc_ValueError, "thread count %d outside [1, 1024]", n);
        return NULL;
    }
    g_threads = n;
    Py_RETURN_NONE;
}

static PyObject *py_get_threads(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    return PyLong_FromLong(g_threads);
}

/* set_arith("adx" | "portable"): which Montgomery product the kernels use. */
static PyObject *py_set_arith(PyObject *self, PyObject *args)
{
    const char *name;
    (void)self;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    int adx = strcmp(name, "adx") == 0;
    if (!adx && strcmp(name, "portable") != 0) {
        PyErr_Format(PyExc_ValueError, "arithmetic %s: expected adx or portable", name);
        return NULL;
    }
    if (!arith_select(adx)) {
        PyErr_SetString(PyExc_ValueError, "this CPU lacks BMI2/ADX: only portable arithmetic");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *py_get_arith(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    return PyUnicode_FromString(arith_is_adx() ? "adx" : "portable");
}

static PyObject *py_adx_supported(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    return PyBool_FromLong(arith_adx_supported());
}

/* fr_ntt(data, log_n, inverse, coset): in place on a writable (2^log_n, 4) buffer. */
static PyObject *py_fr_ntt(PyObject *self, PyObject *args)
{
    Py_buffer a = {0};
    int log_n, inverse, coset;
    Py_buffer *views[] = {&a, NULL};
    (void)self;
    if (!PyArg_ParseTuple(args, "w*ipp", &a, &log_n, &inverse, &coset))
        return NULL;
    Py_ssize_t n;
    int rc = -1;
    if (log_n < 0 || log_n > 32) {
        PyErr_Format(PyExc_ValueError, "NTT of 2^%d elements: Fr supports up to 2^32", log_n);
    } else if (check_size(&a, FR_BYTES, "NTT input", &n)) {
        if (n != (Py_ssize_t)1 << log_n) {
            PyErr_Format(PyExc_ValueError, "NTT input has %zd elements, not 2^%d", n, log_n);
        } else {
            Py_BEGIN_ALLOW_THREADS
            fr_reduce((u64 *)a.buf, (size_t)n); /* in place: the wrapper passes a copy */
            rc = fr_ntt((u64 *)a.buf, log_n, inverse, coset, g_threads);
            Py_END_ALLOW_THREADS
            if (rc)
                PyErr_NoMemory();
        }
    }
    release_all(views);
    if (rc)
        return NULL;
    Py_RETURN_NONE;
}

/* fr_h_poly(a, b, c, out, log_n): out gets the 2^log_n − 1 coefficients of H. */
static PyObject *py_fr_h_poly(PyObject *self, PyObject *args)
{
    Py_buffer a = {0}, b = {0}, c = {0}, out = {0};
    int log_n;
    Py_buffer *views[] = {&a, &b, &c, &out, NULL};
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*w*i", &a, &b, &c, &out, &log_n))
        return NULL;
    Py_ssize_t nout;
    fr_in fa = {0}, fb = {0}, fc = {0};
    int rc = -1;
    if (log_n < 0 || log_n > 32) {
        PyErr_Format(PyExc_ValueError, "H over 2^%d points: Fr supports up to 2^32", log_n);
    } else if (fr_input(&a, "H input a", &fa) && fr_input(&b, "H input b", &fb) &&
               fr_input(&c, "H input c", &fc) && check_size(&out, FR_BYTES, "H output", &nout)) {
        Py_ssize_t n = (Py_ssize_t)1 << log_n;
        if (fa.n > n || fb.n > n || fc.n > n || nout != n - 1) {
            PyErr_Format(PyExc_ValueError,
                         "H over 2^%d points: inputs of %zd, %zd, %zd and an output of %zd",
                         log_n, fa.n, fb.n, fc.n, nout);
        } else {
            Py_BEGIN_ALLOW_THREADS
            rc = fr_h_poly(fa.data, (size_t)fa.n, fb.data, (size_t)fb.n, fc.data, (size_t)fc.n,
                           (u64 *)out.buf, log_n, g_threads);
            Py_END_ALLOW_THREADS
            if (rc)
                PyErr_NoMemory();
        }
    }
    free(fa.owned);
    free(fb.owned);
    free(fc.owned);
    release_all(views);
    if (rc)
        return NULL;
    Py_RETURN_NONE;
}

/* fr_h_odd_coset(a, b, c | None, out, log_n): out gets the 2^log_n values. */
static PyObject *py_fr_h_odd_coset(PyObject *self, PyObject *args)
{
    Py_buffer a = {0}, b = {0}, c = {0}, out = {0};
    PyObject *c_obj;
    int log_n;
    Py_buffer *views[] = {&a, &b, &c, &out, NULL};
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*Ow*i", &a, &b, &c_obj, &out, &log_n))
        return NULL;
    Py_ssize_t nout;
    fr_in fa = {0}, fb = {0}, fc = {0};
    int rc = -1;
    int have_c = c_obj != Py_None;
    if (have_c && PyObject_GetBuffer(c_obj, &c, PyBUF_SIMPLE) < 0) {
        release_all(views);
        return NULL;
    }
    if (log_n < 0 || log_n > 31) {
        PyErr_Format(PyExc_ValueError,
                     "odd coset of 2^%d points: needs a 2^%d-th root of unity, Fr has up to 2^32",
                     log_n, log_n + 1);
    } else if (fr_input(&a, "H input a", &fa) && fr_input(&b, "H input b", &fb) &&
               fr_input(&c, "H input c", &fc) && check_size(&out, FR_BYTES, "H output", &nout)) {
        Py_ssize_t n = (Py_ssize_t)1 << log_n;
        if (fa.n > n || fb.n > n || fc.n > n || nout != n) {
            PyErr_Format(PyExc_ValueError,
                         "odd coset of 2^%d points: inputs of %zd, %zd, %zd and an output of %zd",
                         log_n, fa.n, fb.n, fc.n, nout);
        } else {
            Py_BEGIN_ALLOW_THREADS
            rc = fr_h_odd_coset(fa.data, (size_t)fa.n, fb.data, (size_t)fb.n,
                                have_c ? fc.data : NULL, (size_t)fc.n, (u64 *)out.buf, log_n,
                                g_threads);
            Py_END_ALLOW_THREADS
            if (rc)
                PyErr_NoMemory();
        }
    }
    free(fa.owned);
    free(fb.owned);
    free(fc.owned);
    release_all(views);
    if (rc)
        return NULL;
    Py_RETURN_NONE;
}

/* A CSR's row pointers and indices agree with its rows and coefficients; else a
 * ValueError is set and 0 returned. */
static int csr_shape_ok(Py_ssize_t rows, Py_ssize_t nptr, Py_ssize_t nidx, Py_ssize_t nnz)
{
    if (nptr == rows + 1 && nidx == nnz)
        return 1;
    PyErr_Format(PyExc_ValueError,
                 "CSR of %zd rows needs %zd row pointers (has %zd) and as many "
                 "indices as coefficients (%zd, %zd)",
                 rows, rows + 1, nptr, nidx, nnz);
    return 0;
}

/* The Python exception for a sparse kernel's result code (none for SPMV_OK). */
static void csr_error(int rc, Py_ssize_t nnz, Py_ssize_t ncols, size_t where)
{
    switch (rc) {
    case SPMV_OK:
        break;
    case SPMV_BAD_INDPTR:
        PyErr_Format(PyExc_ValueError,
                     "CSR indptr must start at 0, never decrease and end at the "
                     "entry count (%zd); broken at row %zu", nnz, where);
        break;
    case SPMV_BAD_COLUMN:
        PyErr_Format(PyExc_ValueError, "CSR entry %zu: column outside [0, %zd)", where, ncols);
        break;
    default:
        PyErr_NoMemory();
    }
}

/* fr_spmv(indptr, indices, coeffs, w, out). */
static PyObject *py_fr_spmv(PyObject *self, PyObject *args)
{
    Py_buffer indptr = {0}, indices = {0}, coeffs = {0}, w = {0}, out = {0};
    Py_buffer *views[] = {&indptr, &indices, &coeffs, &w, &out, NULL};
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*", &indptr, &indices, &coeffs, &w, &out))
        return NULL;
    Py_ssize_t nptr, nidx, nnz, ncols, rows;
    fr_in fk = {0}, fw = {0};
    int rc = -1;
    if (check_size(&indptr, 8, "CSR indptr", &nptr) &&
        check_size(&indices, 8, "CSR indices", &nidx) &&
        fr_input(&coeffs, "CSR coefficients", &fk) && fr_input(&w, "witness", &fw) &&
        check_size(&out, FR_BYTES, "output", &rows)) {
        nnz = fk.n;
        ncols = fw.n;
        if (csr_shape_ok(rows, nptr, nidx, nnz)) {
            size_t where = 0;
            Py_BEGIN_ALLOW_THREADS
            rc = fr_spmv((const int64_t *)indptr.buf, (size_t)rows, (const int64_t *)indices.buf,
                         fk.data, (size_t)nnz, fw.data, (size_t)ncols, (u64 *)out.buf, &where,
                         g_threads);
            Py_END_ALLOW_THREADS
            csr_error(rc, nnz, ncols, where);
        }
    }
    free(fk.owned);
    free(fw.owned);
    release_all(views);
    if (rc)
        return NULL;
    Py_RETURN_NONE;
}

/* A canonical Fr constant passed as 32 little-endian bytes. */
static int fr_constant(const Py_buffer *v, const char *what)
{
    if (v->len != FR_BYTES) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, not %d", what, v->len, FR_BYTES);
        return 0;
    }
    if (fr_first_noncanonical((const u64 *)v->buf, 1) >= 0) {
        PyErr_Format(PyExc_ValueError, "%s is not reduced mod r", what);
        return 0;
    }
    return 1;
}

/* fr_lagrange_at(tau, log_m, out): out[j] = L_j(tau) for the first len(out) points. */
static PyObject *py_fr_lagrange_at(PyObject *self, PyObject *args)
{
    Py_buffer tau = {0}, out = {0};
    int log_m;
    Py_buffer *views[] = {&tau, &out, NULL};
    (void)self;
    if (!PyArg_ParseTuple(args, "y*iw*", &tau, &log_m, &out))
        return NULL;
    Py_ssize_t n;
    int rc = -1;
    if (log_m < 0 || log_m > 32) {
        PyErr_Format(PyExc_ValueError, "domain of 2^%d points: Fr supports up to 2^32", log_m);
    } else if (fr_constant(&tau, "tau") && check_size(&out, FR_BYTES, "Lagrange output", &n)) {
        if (n > (Py_ssize_t)1 << log_m) {
            PyErr_Format(PyExc_ValueError, "%zd Lagrange values of a 2^%d-point domain", n, log_m);
        } else {
            Py_BEGIN_ALLOW_THREADS
            rc = fr_lagrange_at((const u64 *)tau.buf, log_m, (u64 *)out.buf, (size_t)n,
                                g_threads);
            Py_END_ALLOW_THREADS
            if (rc)
                PyErr_SetString(PyExc_ValueError, "tau lies in the domain");
        }
    }
    release_all(views);
    if (rc)
        return NULL;
    Py_RETURN_NONE;
}

/* fr_rmatvec(indptr, indices, coeffs, v, out, mask | None): out = vᵀ·m, one value
 * per column; mask (one byte per column) gets the columns' densities. */
static PyObject *py_fr_rmatvec(PyObject *self, PyObject *args)
{
    Py_buffer indptr = {0}, indices = {0}, coeffs = {0}, v = {0}, out = {0}, mask = {0};
    PyObject *mask_obj;
    Py_buffer *views[] = {&indptr, &indices, &coeffs, &v, &out, &mask, NULL};
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*O", &indptr, &indices, &coeffs, &v, &out, &mask_obj))
        return NULL;
    if (mask_obj != Py_None && PyObject_GetBuffer(mask_obj, &mask, PyBUF_WRITABLE) < 0) {
        release_all(views);
        return NULL;
    }
    Py_ssize_t nptr, nidx, nnz, ncols, rows;
    fr_in fk = {0}, fv = {0};
    int rc = -1;
    if (check_size(&indptr, 8, "CSR indptr", &nptr) &&
        check_size(&indices, 8, "CSR indices", &nidx) &&
        fr_input(&coeffs, "CSR coefficients", &fk) && fr_input(&v, "row vector", &fv) &&
        check_size(&out, FR_BYTES, "output", &ncols)) {
        nnz = fk.n;
        rows = fv.n;
        if (mask.obj && mask.len != ncols) {
            PyErr_Format(PyExc_ValueError, "column mask of %zd bytes for %zd columns", mask.len,
                         ncols);
        } else if (csr_shape_ok(rows, nptr, nidx, nnz)) {
            size_t where = 0;
            Py_BEGIN_ALLOW_THREADS
            rc = fr_rmatvec((const int64_t *)indptr.buf, (size_t)rows,
                            (const int64_t *)indices.buf, fk.data, (size_t)nnz, fv.data,
                            (size_t)ncols, (u64 *)out.buf, mask.obj ? (uint8_t *)mask.buf : NULL,
                            &where, g_threads);
            Py_END_ALLOW_THREADS
            csr_error(rc, nnz, ncols, where);
        }
    }
    free(fk.owned);
    free(fv.owned);
    release_all(views);
    if (rc)
        return NULL;
    Py_RETURN_NONE;
}

/* fr_powers(start, ratio, out): out[i] = start·ratio^i. */
static PyObject *py_fr_powers(PyObject *self, PyObject *args)
{
    Py_buffer start = {0}, ratio = {0}, out = {0};
    Py_buffer *views[] = {&start, &ratio, &out, NULL};
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*w*", &start, &ratio, &out))
        return NULL;
    Py_ssize_t n;
    int ok = 0;
    if (fr_constant(&start, "start") && fr_constant(&ratio, "ratio") &&
        check_size(&out, FR_BYTES, "powers output", &n)) {
        Py_BEGIN_ALLOW_THREADS
        fr_powers((const u64 *)start.buf, (const u64 *)ratio.buf, (u64 *)out.buf, (size_t)n,
                  g_threads);
        Py_END_ALLOW_THREADS
        ok = 1;
    }
    release_all(views);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

/* fr_qap_combine(a, b, c, beta, alpha, scale, out) -> first zero output or -1. */
static PyObject *py_fr_qap_combine(PyObject *self, PyObject *args)
{
    Py_buffer a = {0}, b = {0}, c = {0}, beta = {0}, alpha = {0}, scale = {0}, out = {0};
    Py_buffer *views[] = {&a, &b, &c, &beta, &alpha, &scale, &out, NULL};
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*w*", &a, &b, &c, &beta, &alpha, &scale, &out))
        return NULL;
    Py_ssize_t nout;
    fr_in fa = {0}, fb = {0}, fc = {0};
    long long first = -2;
    int ok = 0;
    if (fr_constant(&beta, "beta") && fr_constant(&alpha, "alpha") &&
        fr_constant(&scale, "scale") && fr_input(&a, "a", &fa) && fr_input(&b, "b", &fb) &&
        fr_input(&c, "c", &fc) && check_size(&out, FR_BYTES, "output", &nout)) {
        if (fa.n != nout || fb.n != nout || fc.n != nout) {
            PyErr_Format(PyExc_ValueError, "combining %zd, %zd, %zd values into %zd", fa.n, fb.n,
                         fc.n, nout);
        } else {
            Py_BEGIN_ALLOW_THREADS
            first = fr_qap_combine(fa.data, fb.data, fc.data, (size_t)nout,
                                   (const u64 *)beta.buf, (const u64 *)alpha.buf,
                                   (const u64 *)scale.buf, (u64 *)out.buf, g_threads);
            Py_END_ALLOW_THREADS
            if (first == -2)
                PyErr_NoMemory();
            else
                ok = 1;
        }
    }
    free(fa.owned);
    free(fb.owned);
    free(fc.owned);
    release_all(views);
    if (!ok)
        return NULL;
    return PyLong_FromLongLong(first);
}

typedef long long (*prepare_fn)(const u64 *, u64 *, size_t, int *);

/* The ValueError for point `bad` of a prepare_fn's input. */
static void bad_point(const char *what, const char *group, long long bad, int why)
{
    if (why == PREPARE_OFF_CURVE)
        PyErr_Format(PyExc_ValueError, "%s: point %lld is not on the %s curve", what, bad, group);
    else
        PyErr_Format(PyExc_ValueError, "%s: point %lld has a coordinate not reduced mod q", what,
                     bad);
}

/* prepare(in, out[, report]): with report true, a bad point is returned as
 * (index, why) rather than raised ((-1, 0) when every point is good), so a
 * loader can name the file offset of the point. */
static PyObject *prepare(PyObject *args, Py_ssize_t point_bytes, prepare_fn fn, const char *what,
                         const char *group)
{
    Py_buffer in = {0}, out = {0};
    Py_buffer *views[] = {&in, &out, NULL};
    int report = 0;
    if (!PyArg_ParseTuple(args, "y*w*|p", &in, &out, &report))
        return NULL;
    Py_ssize_t n, nout;
    int ok = 0;
    long long bad = -1;
    int why = 0;
    if (check_size(&in, point_bytes, what, &n) && check_size(&out, point_bytes, what, &nout)) {
        if (n != nout) {
            PyErr_Format(PyExc_ValueError, "%s: %zd points in, room for %zd", what, n, nout);
        } else {
            Py_BEGIN_ALLOW_THREADS
            bad = fn((const u64 *)in.buf, (u64 *)out.buf, (size_t)n, &why);
            Py_END_ALLOW_THREADS
            if (bad >= 0 && !report)
                bad_point(what, group, bad, why);
            else
                ok = 1;
        }
    }
    release_all(views);
    if (!ok)
        return NULL;
    if (report)
        return Py_BuildValue("(Li)", bad, bad >= 0 ? why : 0);
    Py_RETURN_NONE;
}

static PyObject *py_g1_prepare(PyObject *self, PyObject *args)
{
    (void)self;
    return prepare(args, G1_BYTES, g1_prepare, "G1 bases", "G1");
}

static PyObject *py_g2_prepare(PyObject *self, PyObject *args)
{
    (void)self;
    return prepare(args, G2_BYTES, g2_prepare, "G2 bases", "G2");
}

typedef int (*msm_fn)(const u64 *, const u64 *, size_t, u64 *, int);

static PyObject *msm(PyObject *args, Py_ssize_t point_bytes, msm_fn fn, const char *what)
{
    Py_buffer bases = {0}, scalars = {0}, out = {0};
    Py_buffer *views[] = {&bases, &scalars, &out, NULL};
    if (!PyArg_ParseTuple(args, "y*y*w*", &bases, &scalars, &out))
        return NULL;
    Py_ssize_t nb, ns;
    fr_in fs = {0};
    int rc = -1;
    if (check_size(&bases, point_bytes, what, &nb) && fr_input(&scalars, "MSM scalars", &fs)) {
        ns = fs.n;
        if (ns > nb) {
            PyErr_Format(PyExc_ValueError, "MSM of %zd scalars over %zd bases", ns, nb);
        } else if (out.len != point_bytes) {
            PyErr_Format(PyExc_ValueError, "%s MSM output: %zd bytes, not %zd", what, out.len,
                         point_bytes);
        } else {
            Py_BEGIN_ALLOW_THREADS
            rc = fn((const u64 *)bases.buf, fs.data, (size_t)ns, (u64 *)out.buf, g_threads);
            Py_END_ALLOW_THREADS
            if (rc)
                PyErr_NoMemory();
        }
    }
    free(fs.owned);
    release_all(views);
    if (rc)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_g1_msm(PyObject *self, PyObject *args)
{
    (void)self;
    return msm(args, G1_BYTES, g1_msm, "G1");
}

static PyObject *py_g2_msm(PyObject *self, PyObject *args)
{
    (void)self;
    return msm(args, G2_BYTES, g2_msm, "G2");
}

typedef size_t (*table_len_fn)(int);
typedef int (*table_fn)(const u64 *, int, u64 *, int);
typedef int (*fixed_mul_fn)(const u64 *, int, const u64 *, size_t, u64 *, int);

static int check_window(int c)
{
    if (c < 1 || c > 20) {
        PyErr_Format(PyExc_ValueError, "fixed-base window of %d bits outside [1, 20]", c);
        return 0;
    }
    return 1;
}

static PyObject *fixed_table_len(PyObject *args, table_len_fn len_fn, Py_ssize_t point_bytes)
{
    int c;
    if (!PyArg_ParseTuple(args, "i", &c) || !check_window(c))
        return NULL;
    return PyLong_FromSize_t(len_fn(c) * (size_t)point_bytes);
}

static PyObject *py_g1_fixed_table_bytes(PyObject *self, PyObject *args)
{
    (void)self;
    return fixed_table_len(args, g1_fixed_table_len, G1_BYTES);
}

static PyObject *py_g2_fixed_table_bytes(PyObject *self, PyObject *args)
{
    (void)self;
    return fixed_table_len(args, g2_fixed_table_len, G2_BYTES);
}

static PyObject *fixed_table(PyObject *args, Py_ssize_t point_bytes, table_len_fn len_fn,
                             prepare_fn check, table_fn fn, const char *what)
{
    Py_buffer base = {0}, table = {0};
    int c;
    Py_buffer *views[] = {&base, &table, NULL};
    if (!PyArg_ParseTuple(args, "y*iw*", &base, &c, &table))
        return NULL;
    int rc = -1, why = 0;
    long long bad;
    if (check_window(c)) {
        u64 scratch[G2_BYTES / 8];
        if (base.len != point_bytes) {
            PyErr_Format(PyExc_ValueError, "%s fixed base: %zd bytes, not %zd", what, base.len,
                         point_bytes);
        } else if ((size_t)table.len != len_fn(c) * (size_t)point_bytes) {
            PyErr_Format(PyExc_ValueError, "%s fixed-base table: %zd bytes, not %zu", what,
                         table.len, len_fn(c) * (size_t)point_bytes);
        } else if ((bad = check((const u64 *)base.buf, scratch, 1, &why)) >= 0) {
            bad_point("fixed base", what, bad, why);
        } else {
            Py_BEGIN_ALLOW_THREADS
            rc = fn((const u64 *)base.buf, c, (u64 *)table.buf, g_threads);
            Py_END_ALLOW_THREADS
            if (rc)
                PyErr_NoMemory();
        }
    }
    release_all(views);
    if (rc)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_g1_fixed_table(PyObject *self, PyObject *args)
{
    (void)self;
    return fixed_table(args, G1_BYTES, g1_fixed_table_len, g1_prepare, g1_fixed_table, "G1");
}

static PyObject *py_g2_fixed_table(PyObject *self, PyObject *args)
{
    (void)self;
    return fixed_table(args, G2_BYTES, g2_fixed_table_len, g2_prepare, g2_fixed_table, "G2");
}

static PyObject *fixed_mul(PyObject *args, Py_ssize_t point_bytes, table_len_fn len_fn,
                           fixed_mul_fn fn, const char *what)
{
    Py_buffer table = {0}, scalars = {0}, out = {0};
    int c;
    Py_buffer *views[] = {&table, &scalars, &out, NULL};
    if (!PyArg_ParseTuple(args, "y*iy*w*", &table, &c, &scalars, &out))
        return NULL;
    int ok = 0;
    Py_ssize_t m;
    fr_in fs = {0};
    if (check_window(c) && fr_input(&scalars, "fixed-base scalars", &fs)) {
        m = fs.n;
        if ((size_t)table.len != len_fn(c) * (size_t)point_bytes) {
            PyErr_Format(PyExc_ValueError, "%s fixed-base table does not match a %d-bit window",
                         what, c);
        } else if (out.len != m * point_bytes) {
            PyErr_Format(PyExc_ValueError, "%s fixed-base output: room for %zd bytes, needs %zd",
                         what, out.len, m * point_bytes);
        } else {
            int rc;
            Py_BEGIN_ALLOW_THREADS
            rc = fn((const u64 *)table.buf, c, fs.data, (size_t)m, (u64 *)out.buf, g_threads);
            Py_END_ALLOW_THREADS
            if (rc)
                PyErr_NoMemory();
            else
                ok = 1;
        }
    }
    free(fs.owned);
    release_all(views);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_g1_fixed_mul(PyObject *self, PyObject *args)
{
    (void)self;
    return fixed_mul(args, G1_BYTES, g1_fixed_table_len, g1_fixed_mul, "G1");
}

static PyObject *py_g2_fixed_mul(PyObject *self, PyObject *args)
{
    (void)self;
    return fixed_mul(args, G2_BYTES, g2_fixed_table_len, g2_fixed_mul, "G2");
}

static PyMethodDef methods[] = {
    {"set_threads", py_set_threads, METH_VARARGS, "set_threads(n): worker threads per kernel"},
    {"get_threads", py_get_threads, METH_NOARGS, "get_threads() -> int"},
    {"set_arith", py_set_arith, METH_VARARGS,
     "set_arith(name): 'adx' (MULX/ADX assembly) or 'portable' (C) Montgomery products"},
    {"get_arith", py_get_arith, METH_NOARGS, "get_arith() -> 'adx' or 'portable'"},
    {"adx_supported", py_adx_supported, METH_NOARGS, "adx_supported() -> bool"},
    {"fr_ntt", py_fr_ntt, METH_VARARGS,
     "fr_ntt(data, log_n, inverse, coset): in-place (coset) NTT or iNTT of an Fr buffer"},
    {"fr_h_poly", py_fr_h_poly, METH_VARARGS,
     "fr_h_poly(a, b, c, out, log_n): Groth16's H coefficients into out"},
    {"fr_h_odd_coset", py_fr_h_odd_coset, METH_VARARGS,
     "fr_h_odd_coset(a, b, c_or_None, out, log_n): snarkjs's A·B − C on the odd coset"},
    {"fr_spmv", py_fr_spmv, METH_VARARGS,
     "fr_spmv(indptr, indices, coeffs, w, out): CSR matrix times vector over Fr"},
    {"fr_lagrange_at", py_fr_lagrange_at, METH_VARARGS,
     "fr_lagrange_at(tau, log_m, out): the domain's Lagrange basis at tau into out"},
    {"fr_rmatvec", py_fr_rmatvec, METH_VARARGS,
     "fr_rmatvec(indptr, indices, coeffs, v, out, mask_or_None): row vector times CSR "
     "matrix over Fr"},
    {"fr_powers", py_fr_powers, METH_VARARGS,
     "fr_powers(start, ratio, out): out[i] = start * ratio^i"},
    {"fr_qap_combine", py_fr_qap_combine, METH_VARARGS,
     "fr_qap_combine(a, b, c, beta, alpha, scale, out): (beta a + alpha b + c) scale; "
     "first zero or -1"},
    {"g1_prepare", py_g1_prepare, METH_VARARGS, "g1_prepare(in, out[, report]): bases to Montgomery form"},
    {"g2_prepare", py_g2_prepare, METH_VARARGS, "g2_prepare(in, out[, report]): bases to Montgomery form"},
    {"g1_msm", py_g1_msm, METH_VARARGS, "g1_msm(prepared, scalars, out): affine result"},
    {"g2_msm", py_g2_msm, METH_VARARGS, "g2_msm(prepared, scalars, out): affine result"},
    {"g1_fixed_table_bytes", py_g1_fixed_table_bytes, METH_VARARGS,
     "g1_fixed_table_bytes(c): size of a G1 fixed-base table"},
    {"g2_fixed_table_bytes", py_g2_fixed_table_bytes, METH_VARARGS,
     "g2_fixed_table_bytes(c): size of a G2 fixed-base table"},
    {"g1_fixed_table", py_g1_fixed_table, METH_VARARGS,
     "g1_fixed_table(base, c, table): fill a G1 fixed-base table"},
    {"g2_fixed_table", py_g2_fixed_table, METH_VARARGS,
     "g2_fixed_table(base, c, table): fill a G2 fixed-base table"},
    {"g1_fixed_mul", py_g1_fixed_mul, METH_VARARGS,
     "g1_fixed_mul(table, c, scalars, out): k_i·G as affine rows"},
    {"g2_fixed_mul", py_g2_fixed_mul, METH_VARARGS,
     "g2_fixed_mul(table, c, scalars, out): k_i·G as affine rows"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_native",
    .m_doc = "C kernels of cuzk's CPU backend (Fr NTT, H polynomial, spmv, G1/G2 MSM, "
             "fixed-base multiples)",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__native(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    g_threads = n > 0 ? (int)n : 1;
    arith_select(arith_adx_supported());
    return PyModule_Create(&module);
}
