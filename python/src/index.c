/* Tensor indexing with numpy's semantics: t[key] and t[key] = value.
 *
 * A key is a tuple of entries: ints, slices, None, `...`, True / False,
 * integer index arrays (wick Tensors, numpy arrays, lists) and boolean masks
 * (u8 wick Tensors, numpy bool arrays, lists of bools). Ints, unit-step
 * slices and None are views (select / narrow / unsqueeze). Everything else
 * is planned into one gather (getitem) or one scatter (setitem):
 *  - a slice of step s != 1 narrows its dim to the span it walks and becomes
 *    a STEP dim: positions f, f + s, f + 2s, ... (wick has no stepped or
 *    reversed views; negative steps work, as a gather / scatter);
 *  - index arrays (a mask of k dims is k arrays of its true positions,
 *    computed on the host) are ADV dims, broadcast together to one shape B.
 * The flat position of every selected element in the (ADV + STEP) dims of
 * the view is computed once (an i64 tensor of shape B ++ step lengths), so
 * any combination costs one index_select or one scatter_. Result layout as
 * numpy: the B dims replace the advanced entries where those are adjacent
 * in the key (ints next to arrays count as advanced), else they go first. */
#include "wkpy.h"
#include <string.h>

/* ---- temporaries: every tensor made while indexing, freed at the end ---- */

#define BAG_CAP 256
typedef struct {
    wk_tensor *t[BAG_CAP];
    int n;
} bag;

/* Record t (NULL passes through; wick's error stays pending). */
static wk_tensor *keep(bag *b, wk_tensor *t) {
    if (t && b->n < BAG_CAP) b->t[b->n++] = t;
    else if (t) { /* cannot happen with ranks <= WK_MAX_RANK; never leak */
        wk_tensor_free(t);
        PyErr_SetString(PyExc_RuntimeError, "wick indexing: too many temporaries");
        return NULL;
    }
    return t;
}

static void bag_free(bag *b) {
    for (int i = 0; i < b->n; i++) wk_tensor_free(b->t[i]);
    b->n = 0;
}

/* A NULL from wick without a Python error set: raise wick's. */
static void *fail(void) {
    if (!PyErr_Occurred()) wkpy_raise();
    return NULL;
}

/* ---- index operands ---- */

/* A u8 tensor over a numpy bool buffer (a copy: numpy's '?' has no wick dtype). */
static wk_tensor *bool_buffer_tensor(Py_buffer *v) {
    int64_t shape[WK_MAX_RANK];
    if (v->ndim > WK_MAX_RANK) {
        PyErr_Format(PyExc_IndexError, "a boolean index of rank %d exceeds wick's maximum %d", v->ndim, WK_MAX_RANK);
        return NULL;
    }
    for (int i = 0; i < v->ndim; i++) shape[i] = v->shape[i];
    void *c = PyMem_Malloc(v->len ? (size_t)v->len : 1);
    if (!c) return PyErr_NoMemory(), NULL;
    wk_tensor *t = NULL;
    if (PyBuffer_ToContiguous(c, v, v->len, 'C') == 0) {
        t = wk_from_host(c, (size_t)v->len, shape, v->ndim, WK_U8, wk_cpu());
        if (!t) wkpy_raise();
    }
    PyMem_Free(c);
    return t;
}

/* The first leaf of a nested list / tuple is a bool (then it is a mask). */
static bool nested_is_bool(PyObject *o) {
    while (PyList_Check(o) || PyTuple_Check(o)) {
        if (PySequence_Fast_GET_SIZE(o) == 0) return false;
        o = PySequence_Fast_ITEMS(o)[0];
    }
    return PyBool_Check(o);
}

wk_tensor *wkpy_index_operand(PyObject *o, bool *owned, bool *is_mask) {
    *owned = false;
    *is_mask = false;
    if (wkpy_check(o)) {
        *is_mask = wk_tensor_dtype(wkpy_t(o)) == WK_U8; /* comparisons give u8: t[t > 0] */
        return wkpy_t(o);
    }
    wk_tensor *t = NULL;
    PyObject *arr = NULL;
    if (!PyObject_CheckBuffer(o) && !PyList_Check(o) && !PyTuple_Check(o) && PyObject_HasAttrString(o, "__array__")) {
        PyObject *np = PyImport_ImportModule("numpy"); /* torch tensors and other array-likes */
        if (!np) return NULL;
        arr = PyObject_CallMethod(np, "asarray", "O", o);
        Py_DECREF(np);
        if (!arr) return NULL;
        o = arr;
    }
    if (PyObject_CheckBuffer(o)) {
        Py_buffer v;
        if (PyObject_GetBuffer(o, &v, PyBUF_RECORDS_RO) < 0) goto done;
        bool isbool = v.format && (strcmp(v.format, "?") == 0 || strcmp(v.format, "=?") == 0 ||
                                   strcmp(v.format, "<?") == 0 || strcmp(v.format, "|?") == 0);
        if (isbool) {
            t = bool_buffer_tensor(&v);
            *is_mask = true;
        }
        PyBuffer_Release(&v);
        if (!isbool) t = wkpy_from_buffer(o); /* zero-copy: numpy int64 stays numpy's memory */
    } else if (PyList_Check(o) || PyTuple_Check(o)) {
        *is_mask = nested_is_bool(o);
        t = *is_mask ? wkpy_from_nested(o, WK_U8, true) : wkpy_from_nested(o, WK_I64, false);
        if (t && wk_numel(t) == 0 && wk_tensor_dtype(t) != WK_I64) { /* [] indexes nothing (numpy: intp) */
            wk_tensor *i = wk_to_dtype(t, WK_I64);
            wk_tensor_free(t);
            if (!(t = i)) wkpy_raise();
        }
    } else {
        PyErr_Format(PyExc_TypeError, "expected an index tensor, array or list, got %s", Py_TYPE(o)->tp_name);
    }
done:
    Py_XDECREF(arr);
    if (t) *owned = true;
    return t;
}

/* ---- the key, classified ---- */

enum { K_NONE, K_ELL, K_SLICE, K_INT, K_ARR, K_MASK, K_BOOL };

typedef struct {
    int kind;
    PyObject *obj;   /* K_SLICE */
    long long i;     /* K_INT; K_BOOL: 0 / 1 */
    wk_tensor *t;    /* K_ARR / K_MASK (in the bag) */
} entry;

#define MAX_ENTRIES 64

static int bad_index(PyObject *k) {
    PyErr_Format(PyExc_IndexError,
                 "only integers, slices (':'), ellipsis ('...'), None, and integer or boolean arrays are valid "
                 "indices (got %s)", Py_TYPE(k)->tp_name);
    return -1;
}

/* A 0-d integer array / tensor: an int, as numpy and torch take it. */
static int classify_array(entry *e, wk_tensor *t, bool mask) {
    wk_dtype dt = wk_tensor_dtype(t);
    if (!mask && !wk_dtype_is_int(dt)) {
        PyErr_Format(PyExc_IndexError, "arrays used as indices must be of integer or boolean type (got %s)",
                     wk_dtype_name(dt));
        return -1;
    }
    if (wk_rank(t) == 0) {
        double v;
        if (wk_item(t, &v) != WK_OK) return wkpy_raise_int();
        e->kind = mask ? K_BOOL : K_INT;
        e->i = mask ? v != 0 : (long long)v;
        return 0;
    }
    e->kind = mask ? K_MASK : K_ARR;
    e->t = t;
    return 0;
}

static int classify(PyObject *k, entry *e, bag *b) {
    memset(e, 0, sizeof *e);
    if (k == Py_None) e->kind = K_NONE;
    else if (k == Py_Ellipsis) e->kind = K_ELL;
    else if (PySlice_Check(k)) {
        e->kind = K_SLICE;
        e->obj = k;
    } else if (PyBool_Check(k)) {
        e->kind = K_BOOL;
        e->i = k == Py_True;
    } else if (PyLong_Check(k)) {
        e->kind = K_INT;
        e->i = PyLong_AsLongLong(k);
        if (e->i == -1 && PyErr_Occurred()) return -1;
    } else if (PyFloat_Check(k) || PyUnicode_Check(k) || PyBytes_Check(k) || PyDict_Check(k)) {
        return bad_index(k);
    } else if (!wkpy_check(k) && !PyObject_CheckBuffer(k) && !PyList_Check(k) && !PyTuple_Check(k) &&
               PyIndex_Check(k) && !PyObject_HasAttrString(k, "__array__")) { /* torch tensors: arrays */
        e->kind = K_INT; /* objects with __index__ */
        e->i = PyLong_AsLongLong(k);
        if (e->i == -1 && PyErr_Occurred()) return -1;
    } else {
        bool owned, mask;
        wk_tensor *t = wkpy_index_operand(k, &owned, &mask);
        if (!t) {
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                return bad_index(k);
            }
            return -1;
        }
        if (owned && !keep(b, t)) return -1;
        return classify_array(e, t, mask);
    }
    return 0;
}

/* ---- the plan: a view plus the dims a gather / scatter resolves ---- */

enum { R_REST, R_ADV, R_STEP };

typedef struct {
    wk_tensor *v;               /* the view after ints, unit slices, None (in the bag) */
    int rank;
    int role[WK_MAX_RANK];
    int64_t first[WK_MAX_RANK]; /* R_STEP: positions first, first + step, ... (step may be < 0) */
    int64_t step[WK_MAX_RANK];
    int64_t len[WK_MAX_RANK];   /* R_STEP: how many */
    wk_tensor *idx[WK_MAX_RANK];/* R_ADV: i64, in range, non-negative, on v's device */
    int64_t bshape[WK_MAX_RANK];
    int brank, nadv, nstep;
    int bpos;                   /* result position of the B dims */
} plan;

static int index_error(long long i, int dim, int64_t n) {
    PyErr_Format(wkpy_error_class(WK_ERR_INDEX), "index %lld is out of range for dim %d of size %lld", i, dim,
                 (long long)n);
    return -1;
}

/* Make ids an in-range, non-negative i64 index into a dim of size n on dev
 * (negative indices count from the end, as in numpy). */
static wk_tensor *norm_index(bag *b, wk_tensor *ids, int dim, int64_t n, wk_device *dev) {
    if (wk_tensor_device(ids) != dev && !(ids = keep(b, wk_to_device(ids, dev)))) return fail();
    if (wk_tensor_dtype(ids) != WK_I64 && !(ids = keep(b, wk_to_dtype(ids, WK_I64)))) return fail();
    if (wk_numel(ids) == 0) return ids;
    double mn, mx;
    wk_tensor *tmn = keep(b, wk_min_all(ids)), *tmx = tmn ? keep(b, wk_max_all(ids)) : NULL;
    if (!tmx || wk_item(tmn, &mn) != WK_OK || wk_item(tmx, &mx) != WK_OK) return fail();
    if (mx >= (double)n) return index_error((long long)mx, dim, n), NULL;
    if (mn < -(double)n) return index_error((long long)mn, dim, n), NULL;
    if (mn < 0) {
        wk_tensor *neg = keep(b, wk_cmp_scalar(ids, 0, WK_LT));
        wk_tensor *up = neg ? keep(b, wk_binary_scalar(ids, (double)n, WK_ADD)) : NULL;
        if (!up || !(ids = keep(b, wk_where(neg, up, ids)))) return fail();
    }
    return ids;
}

/* The true positions of a mask over dims dim.. of cur: one 1-D i64 tensor
 * per mask dim, computed on the host. */
static int mask_positions(bag *b, wk_tensor *cur, int dim, wk_tensor *mask, wk_tensor **out) {
    int k = wk_rank(mask);
    if (dim + k > wk_rank(cur)) {
        PyErr_Format(PyExc_IndexError, "too many indices: a boolean index of rank %d at dim %d of a rank-%d tensor", k,
                     dim, wk_rank(cur));
        return -1;
    }
    for (int i = 0; i < k; i++)
        if (wk_dim(mask, i) != wk_dim(cur, dim + i)) {
            PyErr_Format(PyExc_IndexError,
                         "boolean index did not match the indexed tensor along dim %d: size %lld, mask size %lld",
                         dim + i, (long long)wk_dim(cur, dim + i), (long long)wk_dim(mask, i));
            return -1;
        }
    int64_t n = wk_numel(mask), cnt = 0;
    unsigned char *m = PyMem_Malloc(n ? (size_t)n : 1);
    if (!m) return PyErr_NoMemory(), -1;
    wk_status st;
    Py_BEGIN_ALLOW_THREADS st = wk_to_host(mask, m, (size_t)n);
    Py_END_ALLOW_THREADS
    if (st != WK_OK) {
        PyMem_Free(m);
        return wkpy_raise_int();
    }
    for (int64_t i = 0; i < n; i++) cnt += m[i] != 0;
    int64_t *pos = PyMem_Malloc(sizeof(int64_t) * (size_t)(cnt * k + 1));
    if (!pos) {
        PyMem_Free(m);
        return PyErr_NoMemory(), -1;
    }
    const int64_t *shape = wk_shape(mask);
    for (int64_t i = 0, j = 0; i < n; i++) {
        if (!m[i]) continue;
        int64_t r = i; /* unravel i, row-major */
        for (int d = k - 1; d >= 0; d--) {
            pos[d * cnt + j] = r % shape[d];
            r /= shape[d];
        }
        j++;
    }
    int rc = 0;
    for (int d = 0; d < k && rc == 0; d++) {
        wk_tensor *t = keep(b, wk_from_host(pos + d * cnt, sizeof(int64_t) * (size_t)cnt, &cnt, 1, WK_I64,
                                            wk_tensor_device(cur)));
        if (!t) rc = -1, fail();
        out[d] = t;
    }
    PyMem_Free(m);
    PyMem_Free(pos);
    return rc;
}

/* Apply the key to t: the view and its ADV / STEP dims. */
static int make_plan(wk_tensor *t, PyObject *key, plan *p, bag *b) {
    memset(p, 0, sizeof *p);
    PyObject *tup = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (!tup) return -1;
    Py_ssize_t nk = PyTuple_GET_SIZE(tup);
    entry e[MAX_ENTRIES];
    int rc = -1;
    if (nk > MAX_ENTRIES) {
        PyErr_Format(PyExc_IndexError, "too many indices: %zd", nk);
        goto out;
    }
    int used = 0, ell = -1, first_adv = -1, last_adv = -1, nadv_entries = 0;
    bool any_array = false;
    for (Py_ssize_t i = 0; i < nk; i++) {
        if (classify(PyTuple_GET_ITEM(tup, i), &e[i], b) < 0) goto out;
        int kd = e[i].kind;
        if (kd == K_ELL) {
            if (ell >= 0) {
                PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
                goto out;
            }
            ell = (int)i;
        }
        if (kd == K_SLICE || kd == K_INT || kd == K_ARR) used++;
        if (kd == K_MASK) used += wk_rank(e[i].t);
        if (kd == K_ARR || kd == K_MASK) any_array = true;
    }
    int rank = wk_rank(t);
    if (used > rank) {
        PyErr_Format(PyExc_IndexError, "too many indices: %d for a tensor of rank %d", used, rank);
        goto out;
    }
    /* numpy's placement rule: are the advanced entries (arrays, masks, and
     * ints once an array is present) one run in the key? */
    for (Py_ssize_t i = 0; any_array && i < nk; i++) {
        int kd = e[i].kind;
        if (kd == K_ARR || kd == K_MASK || kd == K_INT) {
            if (first_adv < 0) first_adv = (int)i;
            last_adv = (int)i;
            nadv_entries++;
        }
    }
    bool adjacent = !any_array || last_adv - first_adv + 1 == nadv_entries;

    wk_tensor *cur = t;
    int dim = 0, first_adv_dim = -1;
    wk_tensor *arrs[WK_MAX_RANK];
    int narr = 0;
    for (Py_ssize_t i = 0; i < nk; i++) {
        entry *x = &e[i];
        switch (x->kind) {
        case K_ELL:
            for (int j = 0; j < rank - used; j++) p->role[dim++] = R_REST;
            break;
        case K_NONE:
        case K_BOOL: /* a 0-d mask: a new dim of size 1 (True) or 0 (False) */
            if (dim >= WK_MAX_RANK || !(cur = keep(b, wk_unsqueeze(cur, dim)))) {
                if (!PyErr_Occurred() && dim >= WK_MAX_RANK)
                    PyErr_Format(PyExc_IndexError, "the result would exceed wick's maximum rank %d", WK_MAX_RANK);
                goto fail_out;
            }
            if (x->kind == K_BOOL && !x->i && !(cur = keep(b, wk_narrow(cur, dim, 0, 0)))) goto fail_out;
            p->role[dim++] = R_REST;
            break;
        case K_SLICE: {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(x->obj, &start, &stop, &step) < 0) goto out;
            Py_ssize_t len = PySlice_AdjustIndices((Py_ssize_t)wk_dim(cur, dim), &start, &stop, step);
            /* narrow to the span the slice walks; a step other than 1 then
             * picks positions first, first + step, ... inside it */
            int64_t lo = len == 0 ? 0 : step > 0 ? start : start + (int64_t)(len - 1) * step;
            int64_t span = len > 1 ? (int64_t)(len - 1) * (step > 0 ? step : -step) + 1 : len;
            if (!(cur = keep(b, wk_narrow(cur, dim, lo, span)))) goto fail_out;
            if (len > 1 && step != 1) {
                p->role[dim] = R_STEP;
                p->first[dim] = start - lo;
                p->step[dim] = step;
                p->len[dim] = len;
                p->nstep++;
            } else p->role[dim] = R_REST;
            dim++;
            break;
        }
        case K_INT: {
            int64_t n = wk_dim(cur, dim);
            if (x->i < -n || x->i >= n) {
                index_error(x->i, dim, n);
                goto out;
            }
            if (!(cur = keep(b, wk_select(cur, dim, x->i < 0 ? x->i + n : x->i)))) goto fail_out;
            break;
        }
        case K_ARR:
        case K_MASK: {
            wk_tensor *ids[WK_MAX_RANK];
            int k = 1;
            if (x->kind == K_MASK) {
                k = wk_rank(x->t);
                if (mask_positions(b, cur, dim, x->t, ids) < 0) goto out;
            } else ids[0] = x->t;
            if (first_adv_dim < 0) first_adv_dim = dim;
            for (int j = 0; j < k; j++, dim++) {
                /* a mask's positions are in range by construction */
                wk_tensor *ix = x->kind == K_MASK ? ids[j]
                                                  : norm_index(b, ids[j], dim, wk_dim(cur, dim), wk_tensor_device(cur));
                if (!ix) goto out;
                p->role[dim] = R_ADV;
                p->idx[dim] = ix;
                arrs[narr++] = ix;
            }
            break;
        }
        }
    }
    for (; dim < wk_rank(cur); dim++) p->role[dim] = R_REST;
    p->v = cur;
    p->rank = wk_rank(cur);
    p->nadv = narr;
    /* B: the broadcast of every index array's shape (numpy's rule) */
    for (int a = 0; a < narr; a++) {
        int r = wk_rank(arrs[a]);
        const int64_t *s = wk_shape(arrs[a]);
        if (r > p->brank) {
            memmove(p->bshape + (r - p->brank), p->bshape, sizeof(int64_t) * (size_t)p->brank);
            for (int j = 0; j < r - p->brank; j++) p->bshape[j] = 1;
            p->brank = r;
        }
        for (int j = 0; j < r; j++) {
            int64_t *bd = &p->bshape[p->brank - r + j];
            if (*bd == 1) *bd = s[j];
            else if (s[j] != 1 && s[j] != *bd) {
                PyErr_SetString(PyExc_IndexError,
                                "shape mismatch: the index arrays could not be broadcast together");
                goto out;
            }
        }
    }
    if (p->rank - p->nadv + p->brank > WK_MAX_RANK) {
        PyErr_Format(PyExc_IndexError, "the result would exceed wick's maximum rank %d", WK_MAX_RANK);
        goto out;
    }
    p->bpos = adjacent && first_adv_dim >= 0 ? first_adv_dim : 0;
    rc = 0;
    goto out;
fail_out:
    fail();
out:
    Py_DECREF(tup);
    return rc;
}

/* ---- the flat index and the layouts around it ----
 * D: the ADV and STEP dims of v in order; G = B ++ (len of each STEP dim):
 * flat[g] = sum over d in D of pos_d[g] * (product of the sizes of the D
 * dims after d), the element's position in v's D dims merged into one. */

static int g_shape(const plan *p, int64_t *g) {
    int r = 0;
    for (int i = 0; i < p->brank; i++) g[r++] = p->bshape[i];
    for (int d = 0; d < p->rank; d++)
        if (p->role[d] == R_STEP) g[r++] = p->len[d];
    return r;
}

/* flat as a 1-D i64 tensor of numel(G) elements. */
static wk_tensor *flat_index(const plan *p, bag *b) {
    int64_t g[WK_MAX_RANK], shp[WK_MAX_RANK];
    int gr = g_shape(p, g);
    wk_device *dev = wk_tensor_device(p->v);
    wk_tensor *flat = NULL;
    int64_t mul = 1;
    for (int d = p->rank - 1; d >= 0; d--) {
        if (p->role[d] == R_REST) continue;
        wk_tensor *term;
        if (p->role[d] == R_ADV) {
            wk_tensor *bc = keep(b, wk_broadcast_as(p->idx[d], p->bshape, p->brank));
            for (int i = 0; i < gr; i++) shp[i] = i < p->brank ? p->bshape[i] : 1;
            term = bc ? keep(b, wk_reshape(bc, shp, gr)) : NULL;
        } else {
            int pos = p->brank; /* this STEP dim's place in G */
            for (int e = 0; e < d; e++) pos += p->role[e] == R_STEP;
            wk_tensor *ar = keep(b, wk_arange((double)p->first[d], (double)(p->first[d] + p->step[d] * p->len[d]),
                                              (double)p->step[d], WK_I64, dev));
            for (int i = 0; i < gr; i++) shp[i] = i == pos ? p->len[d] : 1;
            term = ar ? keep(b, wk_reshape(ar, shp, gr)) : NULL;
        }
        if (term && mul != 1) term = keep(b, wk_binary_scalar(term, (double)mul, WK_MUL));
        if (!term) return fail();
        flat = flat ? keep(b, wk_binary(flat, term, WK_ADD)) : term;
        if (!flat) return fail();
        mul *= wk_dim(p->v, d);
    }
    wk_tensor *full = keep(b, wk_broadcast_as(flat, g, gr));
    wk_tensor *c = full ? keep(b, wk_contiguous(full)) : NULL;
    int64_t n = 1;
    for (int i = 0; i < gr; i++) n *= g[i];
    wk_tensor *r = c ? keep(b, wk_reshape(c, &n, 1)) : NULL;
    return r ? r : fail();
}

/* The gathered layout is [G..., REST dims of v in order]; the result wants
 * the non-ADV dims of v in order with B inserted at bpos. order[i] = the
 * gathered axis that becomes result axis i. Returns the result rank. */
static int result_order(const plan *p, int *order) {
    int nd = 0, step_i = p->brank, rest_i = p->brank + p->nstep;
    int nonadv[WK_MAX_RANK], nn = 0;
    for (int d = 0; d < p->rank; d++) {
        if (p->role[d] == R_STEP) nonadv[nn++] = step_i++;
        else if (p->role[d] == R_REST) nonadv[nn++] = rest_i++;
    }
    for (int i = 0; i <= nn; i++) {
        if (i == p->bpos)
            for (int j = 0; j < p->brank; j++) order[nd++] = j;
        if (i < nn) order[nd++] = nonadv[i];
    }
    return nd;
}

/* v permuted to [D dims, REST dims]; perm receives the permutation. */
static wk_tensor *d_first(const plan *p, bag *b, int *perm, int *nd) {
    int k = 0;
    for (int d = 0; d < p->rank; d++)
        if (p->role[d] != R_REST) perm[k++] = d;
    *nd = k;
    for (int d = 0; d < p->rank; d++)
        if (p->role[d] == R_REST) perm[k++] = d;
    wk_tensor *r = keep(b, wk_permute(p->v, perm, p->rank));
    return r ? r : fail();
}

static wk_tensor *plan_gather(const plan *p, bag *b) {
    wk_tensor *flat = flat_index(p, b);
    if (!flat) return NULL;
    int perm[WK_MAX_RANK], nd, order[WK_MAX_RANK];
    int64_t shp[WK_MAX_RANK], g[WK_MAX_RANK];
    int gr = g_shape(p, g);
    wk_tensor *got;
    int r = 0;
    if (p->nadv + p->nstep == 1) { /* one dim: index_select on it, no permute of v */
        int d = 0;
        while (p->role[d] == R_REST) d++;
        WKPY_NOGIL(wkpy_big(p->v), got = wk_index_select(p->v, flat, d));
        if (!keep(b, got)) return fail();
        for (int i = 0; i < p->rank; i++) {
            if (i == d)
                for (int j = 0; j < gr; j++) shp[r++] = g[j];
            else shp[r++] = wk_dim(p->v, i);
        }
        got = keep(b, wk_reshape(got, shp, r));
        if (!got) return fail();
        if (p->role[d] == R_STEP || p->bpos == d) return got;
        /* B to the front (numpy: advanced entries separated in the key) */
        int o[WK_MAX_RANK], k = 0;
        for (int j = 0; j < gr; j++) o[k++] = d + j;
        for (int i = 0; i < r; i++)
            if (i < d || i >= d + gr) o[k++] = i;
        got = keep(b, wk_permute(got, o, r));
        return got ? got : fail();
    }
    wk_tensor *pv = d_first(p, b, perm, &nd);
    wk_tensor *f = pv ? keep(b, wk_flatten(pv, 0, nd - 1)) : NULL;
    if (!f) return fail();
    WKPY_NOGIL(wkpy_big(f), got = wk_index_select(f, flat, 0));
    if (!keep(b, got)) return fail();
    for (int j = 0; j < gr; j++) shp[r++] = g[j];
    for (int i = nd; i < p->rank; i++) shp[r++] = wk_dim(p->v, perm[i]);
    got = keep(b, wk_reshape(got, shp, r));
    int n = result_order(p, order);
    got = got ? keep(b, wk_permute(got, order, n)) : NULL;
    return got ? got : fail();
}

/* value as a tensor of like's dtype and device (numbers fill, arrays and
 * lists convert). */
static wk_tensor *value_tensor(PyObject *value, const wk_tensor *like, bag *b) {
    bool owned;
    wk_tensor *src = wkpy_operand(value, like, &owned);
    if (!src) return NULL;
    if (owned && !keep(b, src)) return NULL;
    if (wk_tensor_dtype(src) != wk_tensor_dtype(like) && !(src = keep(b, wk_to_dtype(src, wk_tensor_dtype(like)))))
        return fail();
    if (wk_tensor_device(src) != wk_tensor_device(like) &&
        !(src = keep(b, wk_to_device(src, wk_tensor_device(like)))))
        return fail();
    return src;
}

static int plan_scatter(const plan *p, PyObject *value, bag *b) {
    int perm[WK_MAX_RANK], nd, order[WK_MAX_RANK], inv[WK_MAX_RANK];
    int64_t g[WK_MAX_RANK], rshape[WK_MAX_RANK], cur[WK_MAX_RANK], ishape[WK_MAX_RANK];
    int gr = g_shape(p, g);
    wk_tensor *flat = flat_index(p, b);
    wk_tensor *pv = flat ? d_first(p, b, perm, &nd) : NULL;
    if (!pv) return -1;
    /* the gathered layout [G, REST] and the result layout it maps to */
    int cr = 0;
    for (int j = 0; j < gr; j++) cur[cr++] = g[j];
    for (int i = nd; i < p->rank; i++) cur[cr++] = wk_dim(p->v, perm[i]);
    int n = result_order(p, order);
    for (int i = 0; i < n; i++) {
        rshape[i] = cur[order[i]];
        inv[order[i]] = i;
    }
    wk_tensor *src = value_tensor(value, p->v, b);
    if (!src) return -1;
    /* value broadcast to the result's shape, then laid out as [numel G, REST] */
    src = keep(b, wk_broadcast_as(src, rshape, n));
    src = src ? keep(b, wk_permute(src, inv, n)) : NULL;
    int64_t ng = 1;
    for (int j = 0; j < gr; j++) ng *= g[j];
    ishape[0] = ng;
    for (int i = gr; i < cr; i++) ishape[i - gr + 1] = cur[i];
    int ir = cr - gr + 1;
    src = src ? keep(b, wk_reshape(src, ishape, ir)) : NULL;
    src = src ? keep(b, wk_contiguous(src)) : NULL;
    int64_t one[WK_MAX_RANK];
    one[0] = ng;
    for (int i = 1; i < ir; i++) one[i] = 1;
    wk_tensor *ids = src ? keep(b, wk_reshape(flat, one, ir)) : NULL;
    ids = ids ? keep(b, wk_broadcast_as(ids, ishape, ir)) : NULL;
    wk_tensor *f = ids ? keep(b, wk_flatten(pv, 0, nd - 1)) : NULL;
    if (!f) return fail(), -1;
    wk_status st;
    if (wk_shares_storage(f, p->v)) { /* the D dims merge in place: scatter straight into t */
        WKPY_NOGIL(wkpy_big(f), st = wk_scatter_(f, ids, src, 0));
    } else { /* they do not (a transposed view): scatter into a copy, copy it back */
        if (wk_is_read_only(p->v)) {
            PyErr_SetString(wkpy_error_class(WK_ERR_ARG), "cannot write into a read-only tensor");
            return -1;
        }
        int64_t pshape[WK_MAX_RANK];
        int ip[WK_MAX_RANK];
        for (int i = 0; i < p->rank; i++) {
            pshape[i] = wk_dim(p->v, perm[i]);
            ip[perm[i]] = i;
        }
        WKPY_NOGIL(wkpy_big(f), st = wk_scatter_(f, ids, src, 0));
        wk_tensor *back = st == WK_OK ? keep(b, wk_reshape(f, pshape, p->rank)) : NULL;
        back = back ? keep(b, wk_permute(back, ip, p->rank)) : NULL;
        if (st == WK_OK && !back) return fail(), -1;
        if (st == WK_OK) WKPY_NOGIL(wkpy_big(f), st = wk_copy_(p->v, back));
    }
    return st == WK_OK ? 0 : wkpy_raise_int();
}

/* ---- the entry points ---- */

PyObject *wkpy_getitem(PyObject *self, PyObject *key) {
    bag b = {.n = 0};
    plan p;
    PyObject *r = NULL;
    if (make_plan(wkpy_t(self), key, &p, &b) == 0) {
        wk_tensor *got = p.nadv + p.nstep ? plan_gather(&p, &b) : p.v;
        /* t[...] / t[:]: a new view object, never the same wk_tensor twice */
        if (got == wkpy_t(self)) got = keep(&b, wk_reshape(got, wk_shape(got), wk_rank(got)));
        if (got) r = wkpy_wrap(wk_tensor_retain(got));
        else fail();
    }
    bag_free(&b);
    return r;
}

/* t[mask] = number with a u8 Tensor mask of t's own shape (t[t < 0] = 0):
 * one masked_fill written back, no host round trip for the positions.
 * 0 / -1 when done, 1 when the key is not of that form. */
static int mask_fill(wk_tensor *t, PyObject *key, PyObject *value) {
    if (!wkpy_check(key) || !(PyFloat_Check(value) || PyLong_Check(value))) return 1;
    wk_tensor *m = wkpy_t(key);
    if (wk_tensor_dtype(m) != WK_U8 || wk_rank(m) != wk_rank(t) || wk_rank(t) == 0 ||
        wk_tensor_device(m) != wk_tensor_device(t))
        return 1;
    for (int i = 0; i < wk_rank(t); i++)
        if (wk_dim(m, i) != wk_dim(t, i)) return 1;
    double v = PyFloat_AsDouble(value);
    if (v == -1.0 && PyErr_Occurred()) return -1;
    wk_tensor *r;
    wk_status st;
    WKPY_NOGIL(wkpy_big(t), r = wk_masked_fill(t, m, v); st = r ? wk_copy_(t, r) : wk_last_status());
    wk_tensor_free(r);
    return st == WK_OK ? 0 : wkpy_raise_int();
}

/* t[key] = value: a view write for basic keys (value broadcast to the
 * view), one scatter_ for stepped slices, index arrays and masks. Writes
 * into read-only memory raise wick.ArgError. */
int wkpy_setitem(PyObject *self, PyObject *key, PyObject *value) {
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "wick tensors do not support item deletion");
        return -1;
    }
    bag b = {.n = 0};
    plan p;
    int rc = -1;
    int fast = mask_fill(wkpy_t(self), key, value);
    if (fast != 1) return fast;
    if (make_plan(wkpy_t(self), key, &p, &b) == 0) {
        if (p.nadv + p.nstep) rc = plan_scatter(&p, value, &b);
        else {
            wk_status st;
            wk_tensor *view = p.v;
            if (PyFloat_Check(value) || PyLong_Check(value)) {
                double v = PyFloat_AsDouble(value);
                if (!(v == -1.0 && PyErr_Occurred())) {
                    WKPY_NOGIL(wkpy_big(view), st = wk_fill_(view, v));
                    rc = st == WK_OK ? 0 : wkpy_raise_int();
                }
            } else {
                wk_tensor *src = value_tensor(value, view, &b);
                wk_tensor *bc = src ? keep(&b, wk_broadcast_as(src, wk_shape(view), wk_rank(view))) : NULL;
                if (bc) {
                    WKPY_NOGIL(wkpy_big(view), st = wk_copy_(view, bc));
                    rc = st == WK_OK ? 0 : wkpy_raise_int();
                } else if (src) fail();
            }
        }
    }
    bag_free(&b);
    return rc;
}
