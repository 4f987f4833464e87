/* Convolutions, pooling and resampling from Python with the signatures of
 * torch.nn.functional: conv1d / conv2d / conv_transpose1d /
 * conv_transpose2d, max_pool1d/2d / avg_pool1d/2d, interpolate / upsample.
 *
 * wick's convs take one padding, stride and dilation for every spatial dim;
 * torch's per-dim tuples map onto that when the values agree, and unequal
 * paddings (and padding="same") are composed: explicit zero padding of the
 * input for convs, a crop of the full output for transposed convs. Unequal
 * strides or dilations raise ValueError. Unbatched inputs (no N dim) work
 * as in torch. Everything wick computes runs with the GIL released. */
#include "wkpy.h"
#include <math.h>
#include <string.h>

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS

/* An int or a sequence of n ints (one per spatial dim) into v[0..n-1]. */
static int spatial(PyObject *o, long long dflt, int n, const char *fname, const char *what, int64_t *v) {
    if (!o || o == Py_None || PyLong_Check(o) || PyIndex_Check(o)) {
        long long x;
        if (wkpy_int(o, dflt, &x) < 0) return -1;
        for (int i = 0; i < n; i++) v[i] = x;
        return 0;
    }
    int64_t s[WK_MAX_RANK];
    int k;
    if (wkpy_shape(o, s, &k) < 0) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s(): %s must be an int or a tuple of %d ints, got %s", fname, what, n,
                         Py_TYPE(o)->tp_name);
        }
        return -1;
    }
    if (k == 1)
        for (int i = 1; i < n; i++) s[i] = s[0];
    else if (k != n) {
        PyErr_Format(PyExc_ValueError, "%s(): %s needs 1 or %d values, got %d", fname, what, n, k);
        return -1;
    }
    memcpy(v, s, sizeof(int64_t) * (size_t)n);
    return 0;
}

/* One value for every spatial dim (what wick takes), or ValueError. */
static int uniform(const int64_t *v, int n, const char *fname, const char *what) {
    for (int i = 1; i < n; i++)
        if (v[i] != v[0]) {
            PyErr_Format(PyExc_ValueError, "%s(): wick takes one %s for every spatial dim, got %lld and %lld", fname,
                         what, (long long)v[0], (long long)v[i]);
            return -1;
        }
    return 0;
}

static bool all_equal(const int64_t *v, int n) {
    for (int i = 1; i < n; i++)
        if (v[i] != v[0]) return false;
    return true;
}

/* ------------------------------------------------------------ convolutions */

typedef struct conv_job {
    const wk_tensor *x, *w, *bias;
    int sp;                          /* spatial dims: 1 or 2 */
    bool transposed, unbatched;
    int64_t stride, dilation, groups;
    int64_t pad_l[2], pad_r[2];      /* convs: zero padding of the input per dim */
    int64_t pad[2], out_pad[2];      /* transposed: torch's padding / output_padding per dim */
} conv_job;

static wk_tensor *conv_call(const conv_job *j, const wk_tensor *x, const wk_conv_params *p) {
    if (j->transposed) return j->sp == 1 ? wk_conv_transpose1d(x, j->w, p) : wk_conv_transpose2d(x, j->w, p);
    return j->sp == 1 ? wk_conv1d(x, j->w, p) : wk_conv2d(x, j->w, p);
}

/* Replaces *t by f(*t) (which may fail: *t NULL). */
#define STEP(t, expr)                                                                                          \
    do {                                                                                                       \
        wk_tensor *next_ = (t) ? (expr) : NULL;                                                                \
        wk_tensor_free(t);                                                                                     \
        (t) = next_;                                                                                           \
    } while (0)

/* The whole conv in wick calls only (it runs without the GIL). */
static wk_tensor *conv_run(const conv_job *j) {
    wk_conv_params p = {.stride = j->stride, .dilation = j->dilation, .groups = j->groups};
    wk_tensor *x = j->unbatched ? wk_unsqueeze(j->x, 0) : wk_tensor_retain((wk_tensor *)j->x), *r = NULL;
    if (!x) return NULL;
    if (!j->transposed) {
        bool sym = all_equal(j->pad_l, j->sp) && all_equal(j->pad_r, j->sp) && j->pad_l[0] == j->pad_r[0];
        if (sym) p.padding = j->pad_l[0];
        else
            for (int i = 0; i < j->sp; i++)
                if (j->pad_l[i] || j->pad_r[i]) STEP(x, wk_pad_with_zeros(x, 2 + i, j->pad_l[i], j->pad_r[i]));
        r = x ? conv_call(j, x, &p) : NULL;
    } else if (all_equal(j->pad, j->sp) && all_equal(j->out_pad, j->sp)) {
        p.padding = j->pad[0];
        p.output_padding = j->out_pad[0];
        r = conv_call(j, x, &p);
    } else {
        /* the full output (padding 0), then per dim torch's window of it:
         * padding crops both sides, output_padding gives back cells on the
         * right (zeros where the full output ends: nothing reaches them) */
        r = conv_call(j, x, &p);
        for (int i = 0; r && i < j->sp; i++) {
            int64_t full = wk_shape(r)[2 + i], want = full - 2 * j->pad[i] + j->out_pad[i];
            if (j->pad[i] + want > full) STEP(r, wk_pad_with_zeros(r, 2 + i, 0, j->pad[i] + want - full));
            STEP(r, wk_narrow(r, 2 + i, j->pad[i], want));
        }
    }
    wk_tensor_free(x);
    if (r && j->bias) {
        int64_t s[4] = {1, wk_numel(j->bias), 1, 1};
        wk_tensor *b = wk_reshape(j->bias, s, 2 + j->sp);
        STEP(r, b ? wk_add(r, b) : NULL);
        wk_tensor_free(b);
    }
    if (r && j->unbatched) STEP(r, wk_squeeze(r, 0));
    return r;
}

static PyObject *conv(const char *fname, int sp, bool transposed, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kw) {
    /* torch's orders: conv (..., dilation, groups), transposed (..., output_padding, groups, dilation) */
    static const char *const cnames[] = {"input", "weight", "bias", "stride", "padding", "dilation", "groups", NULL};
    static const char *const tnames[] = {"input",          "weight", "bias",     "stride", "padding",
                                         "output_padding", "groups", "dilation", NULL};
    PyObject *a[8] = {0};
    if (wkpy_parse(fname, args, nargs, kw, transposed ? tnames : cnames, 2, a) < 0) return NULL;
    PyObject *o_stride = a[3], *o_pad = a[4], *o_dil = transposed ? a[7] : a[5], *o_groups = a[6],
             *o_opad = transposed ? a[5] : NULL;
    conv_job j = {.sp = sp, .transposed = transposed};
    if (!(j.x = wkpy_tensor_arg(a[0], fname, "input")) || !(j.w = wkpy_tensor_arg(a[1], fname, "weight"))) return NULL;
    if (a[2] && a[2] != Py_None && !(j.bias = wkpy_tensor_arg(a[2], fname, "bias"))) return NULL;
    if (j.bias && wk_rank(j.bias) != 1)
        return PyErr_Format(wkpy_error_class(WK_ERR_SHAPE), "%s(): bias must be 1-D, got rank %d", fname,
                            wk_rank(j.bias)),
               NULL;
    j.unbatched = wk_rank(j.x) == sp + 1;
    int64_t stride[2], dil[2], pad[2];
    long long groups;
    if (spatial(o_stride, 1, sp, fname, "stride", stride) < 0 || uniform(stride, sp, fname, "stride") < 0 ||
        spatial(o_dil, 1, sp, fname, "dilation", dil) < 0 || uniform(dil, sp, fname, "dilation") < 0 ||
        wkpy_int(o_groups, 1, &groups) < 0)
        return NULL;
    if (stride[0] < 1 || dil[0] < 1 || groups < 1)
        return PyErr_Format(wkpy_error_class(WK_ERR_ARG), "%s(): stride, dilation and groups must be >= 1", fname),
               NULL;
    j.stride = stride[0];
    j.dilation = dil[0];
    j.groups = groups;
    if (!transposed && o_pad && PyUnicode_Check(o_pad)) {
        const char *s = PyUnicode_AsUTF8(o_pad);
        if (!s) return NULL;
        bool same = !strcmp(s, "same");
        if (!same && strcmp(s, "valid"))
            return PyErr_Format(PyExc_ValueError, "%s(): padding must be an int, a tuple, 'valid' or 'same'", fname),
                   NULL;
        if (same && j.stride != 1)
            return PyErr_Format(PyExc_ValueError, "%s(): padding='same' is not supported for strided convolutions",
                                fname),
                   NULL;
        for (int i = 0; i < sp; i++) {
            /* 'same': the extra cell of an odd total goes on the right (torch) */
            int64_t k = wk_rank(j.w) == sp + 2 ? wk_shape(j.w)[2 + i] : 1;
            int64_t total = same && k > 0 ? j.dilation * (k - 1) : 0;
            j.pad_l[i] = total / 2;
            j.pad_r[i] = total - total / 2;
        }
    } else {
        if (spatial(o_pad, 0, sp, fname, "padding", pad) < 0) return NULL;
        for (int i = 0; i < sp; i++) {
            if (pad[i] < 0) return PyErr_Format(wkpy_error_class(WK_ERR_ARG), "%s(): negative padding", fname), NULL;
            j.pad_l[i] = j.pad_r[i] = j.pad[i] = pad[i];
        }
    }
    if (transposed) {
        if (spatial(o_opad, 0, sp, fname, "output_padding", j.out_pad) < 0) return NULL;
        for (int i = 0; i < sp; i++) {
            int64_t lim = j.stride > j.dilation ? j.stride : j.dilation;
            if (j.out_pad[i] < 0 || j.out_pad[i] >= lim)
                return PyErr_Format(wkpy_error_class(WK_ERR_ARG),
                                    "%s(): output_padding %lld must be in [0, max(stride, dilation) = %lld)", fname,
                                    (long long)j.out_pad[i], (long long)lim),
                       NULL;
        }
    }
    if (transposed && !(all_equal(j.pad, sp) && all_equal(j.out_pad, sp)) && wk_rank(j.w) == sp + 2 &&
        wk_rank(j.x) - !j.unbatched == sp + 1)
        for (int i = 0; i < sp; i++) { /* the cropped window must be >= 1, as wick checks for its own padding */
            int64_t in = wk_shape(j.x)[wk_rank(j.x) - sp + i], k = wk_shape(j.w)[2 + i];
            int64_t want = (in - 1) * j.stride + j.dilation * (k - 1) + 1 - 2 * j.pad[i] + j.out_pad[i];
            if (want < 1)
                return PyErr_Format(wkpy_error_class(WK_ERR_SHAPE),
                                    "%s(): output size %lld < 1 on spatial dim %d (input %lld, stride %lld, padding "
                                    "%lld, dilation %lld, kernel %lld, output_padding %lld)",
                                    fname, (long long)want, i, (long long)in, (long long)j.stride, (long long)j.pad[i],
                                    (long long)j.dilation, (long long)k, (long long)j.out_pad[i]),
                       NULL;
        }
    wk_tensor *r;
    Py_BEGIN_ALLOW_THREADS
    r = conv_run(&j);
    Py_END_ALLOW_THREADS
    return wkpy_wrap(r);
}

static PyObject *f_conv1d(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {
    (void)m;
    return conv("conv1d", 1, false, a, n, k);
}
static PyObject *f_conv2d(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {
    (void)m;
    return conv("conv2d", 2, false, a, n, k);
}
static PyObject *f_conv_transpose1d(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {
    (void)m;
    return conv("conv_transpose1d", 1, true, a, n, k);
}
static PyObject *f_conv_transpose2d(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {
    (void)m;
    return conv("conv_transpose2d", 2, true, a, n, k);
}

/* ----------------------------------------------------------------- pooling */

typedef struct pool_job {
    const wk_tensor *x;
    bool max, one_d, unbatched, count_include_pad;
    int64_t k[2], s[2], p[2];
    double scale; /* divisor_override: the mean times k_h * k_w / divisor */
} pool_job;

static wk_tensor *pool_run(const pool_job *j) {
    wk_tensor *x = j->unbatched ? wk_unsqueeze(j->x, 0) : wk_tensor_retain((wk_tensor *)j->x);
    if (j->one_d) STEP(x, wk_unsqueeze(x, 2)); /* (N, C, L) as (N, C, 1, L) */
    wk_tensor *r = !x ? NULL
                   : j->max ? wk_max_pool2d(x, j->k[0], j->k[1], j->s[0], j->s[1], j->p[0], j->p[1])
                            : wk_avg_pool2d(x, j->k[0], j->k[1], j->s[0], j->s[1], j->p[0], j->p[1], j->count_include_pad);
    wk_tensor_free(x);
    if (j->scale != 1.0) STEP(r, wk_affine(r, j->scale, 0.0));
    if (j->one_d) STEP(r, wk_squeeze(r, 2));
    if (j->unbatched) STEP(r, wk_squeeze(r, 0));
    return r;
}

static PyObject *pool(const char *fname, bool max, bool one_d, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const mnames[] = {"input",    "kernel_size", "stride",        "padding", "dilation",
                                         "ceil_mode", "return_indices", NULL};
    static const char *const anames[] = {"input",     "kernel_size",       "stride",           "padding",
                                         "ceil_mode", "count_include_pad", "divisor_override", NULL};
    PyObject *a[7] = {0};
    if (wkpy_parse(fname, args, nargs, kw, max ? mnames : anames, 2, a) < 0) return NULL;
    pool_job j = {.max = max, .one_d = one_d, .scale = 1.0};
    if (!(j.x = wkpy_tensor_arg(a[0], fname, "input"))) return NULL;
    int sp = one_d ? 1 : 2, at = one_d ? 1 : 0; /* 1-d pools fill the W entries, H is 1 */
    j.k[0] = j.s[0] = 1;
    j.p[0] = 0;
    if (spatial(a[1], 0, sp, fname, "kernel_size", j.k + at) < 0 ||
        spatial(a[2] && a[2] != Py_None && !(PySequence_Check(a[2]) && PySequence_Size(a[2]) == 0) ? a[2] : a[1], 0,
                sp, fname, "stride", j.s + at) < 0 ||
        spatial(a[3], 0, sp, fname, "padding", j.p + at) < 0)
        return NULL;
    bool ceil;
    if (wkpy_bool(max ? a[5] : a[4], false, &ceil) < 0) return NULL;
    if (ceil) return PyErr_Format(PyExc_ValueError, "%s(): ceil_mode=True is not supported (wick pools in floor mode)", fname), NULL;
    if (max) {
        int64_t dil[2];
        bool ri;
        if (spatial(a[4], 1, sp, fname, "dilation", dil) < 0 || wkpy_bool(a[6], false, &ri) < 0) return NULL;
        for (int i = 0; i < sp; i++)
            if (dil[i] != 1) return PyErr_Format(PyExc_ValueError, "%s(): dilation other than 1 is not supported", fname), NULL;
        if (ri) return PyErr_Format(PyExc_ValueError, "%s(): return_indices=True is not supported", fname), NULL;
    } else {
        if (wkpy_bool(a[5], true, &j.count_include_pad) < 0) return NULL;
        if (a[6] && a[6] != Py_None) {
            long long div;
            if (wkpy_int(a[6], 0, &div) < 0) return NULL;
            if (div == 0) return PyErr_Format(PyExc_ValueError, "%s(): divisor_override must be nonzero", fname), NULL;
            j.count_include_pad = true; /* every window then divides by k_h * k_w exactly */
            j.scale = (double)(j.k[0] * j.k[1]) / (double)div;
        }
    }
    j.unbatched = wk_rank(j.x) == sp + 1;
    wk_tensor *r;
    Py_BEGIN_ALLOW_THREADS
    r = pool_run(&j);
    Py_END_ALLOW_THREADS
    return wkpy_wrap(r);
}

static PyObject *f_max_pool2d(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {
    (void)m;
    return pool("max_pool2d", true, false, a, n, k);
}
static PyObject *f_avg_pool2d(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {
    (void)m;
    return pool("avg_pool2d", false, false, a, n, k);
}
static PyObject *f_max_pool1d(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {
    (void)m;
    return pool("max_pool1d", true, true, a, n, k);
}
static PyObject *f_avg_pool1d(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {
    (void)m;
    return pool("avg_pool1d", false, true, a, n, k);
}

/* -------------------------------------------------------------- resampling */

typedef enum { UP_NEAREST, UP_LINEAR, UP_BILINEAR } up_mode;

typedef struct up_job {
    const wk_tensor *x;
    up_mode mode;
    bool by_scale, align_corners;
    int64_t size[2];
    double scale[2];
} up_job;

static wk_tensor *up_run(const up_job *j) {
    const wk_tensor *x = j->x;
    if (j->mode == UP_NEAREST && wk_rank(x) == 3)
        return j->by_scale ? wk_upsample_nearest1d_scale(x, j->scale[0]) : wk_upsample_nearest1d(x, j->size[0]);
    if (j->mode == UP_NEAREST)
        return j->by_scale ? wk_upsample_nearest2d_scale(x, j->scale[0], j->scale[1])
                           : wk_upsample_nearest2d(x, j->size[0], j->size[1]);
    if (j->mode == UP_BILINEAR)
        return j->by_scale ? wk_upsample_bilinear2d_scale(x, j->scale[0], j->scale[1], j->align_corners)
                           : wk_upsample_bilinear2d(x, j->size[0], j->size[1], j->align_corners);
    /* linear (N, C, L): bilinear over (N, C, 1, L) with H kept (one row
     * maps onto itself under both coordinate rules) */
    wk_tensor *x4 = wk_unsqueeze(x, 2), *r;
    r = !x4 ? NULL
        : j->by_scale ? wk_upsample_bilinear2d_scale(x4, 1.0, j->scale[0], j->align_corners)
                      : wk_upsample_bilinear2d(x4, 1, j->size[0], j->align_corners);
    wk_tensor_free(x4);
    STEP(r, wk_squeeze(r, 2));
    return r;
}

/* interpolate(input, size=None, scale_factor=None, mode, align_corners,
 * recompute_scale_factor, antialias): torch's checks, wick's kernels */
static PyObject *resample(const char *fname, PyObject *input, PyObject *o_size, PyObject *o_scale, PyObject *o_mode,
                          PyObject *o_align, PyObject *o_recompute, PyObject *o_antialias, bool align_default) {
    up_job j = {.mode = UP_NEAREST};
    if (!(j.x = wkpy_tensor_arg(input, fname, "input"))) return NULL;
    if (o_mode && o_mode != Py_None) {
        const char *s = PyUnicode_Check(o_mode) ? PyUnicode_AsUTF8(o_mode) : NULL;
        if (!s) return PyErr_Occurred() ? NULL : (PyErr_Format(PyExc_TypeError, "%s(): mode must be a str", fname), NULL);
        if (!strcmp(s, "nearest")) j.mode = UP_NEAREST;
        else if (!strcmp(s, "linear")) j.mode = UP_LINEAR;
        else if (!strcmp(s, "bilinear")) j.mode = UP_BILINEAR;
        else
            return PyErr_Format(PyExc_ValueError, "%s(): mode '%s' is not supported (nearest, linear, bilinear)", fname, s),
                   NULL;
    }
    int r = wk_rank(j.x), sp = r - 2;
    if (r != 3 && r != 4)
        return PyErr_Format(wkpy_error_class(WK_ERR_SHAPE), "%s(): expects a 3-D (N, C, L) or 4-D (N, C, H, W) input, got rank %d",
                            fname, r),
               NULL;
    if ((j.mode == UP_LINEAR && r != 3) || (j.mode == UP_BILINEAR && r != 4))
        return PyErr_Format(wkpy_error_class(WK_ERR_SHAPE), "%s(): mode '%s' needs a %d-D input, got rank %d", fname,
                            j.mode == UP_LINEAR ? "linear" : "bilinear", j.mode == UP_LINEAR ? 3 : 4, r),
               NULL;
    bool have_align = o_align && o_align != Py_None, recompute, antialias;
    if (have_align && j.mode == UP_NEAREST)
        return PyErr_Format(PyExc_ValueError, "%s(): align_corners can only be set with the interpolating modes", fname),
               NULL;
    if (wkpy_bool(o_align, align_default, &j.align_corners) < 0 || wkpy_bool(o_recompute, false, &recompute) < 0 ||
        wkpy_bool(o_antialias, false, &antialias) < 0)
        return NULL;
    if (antialias) return PyErr_Format(PyExc_ValueError, "%s(): antialias=True is not supported", fname), NULL;
    bool has_size = o_size && o_size != Py_None, has_scale = o_scale && o_scale != Py_None;
    if (has_size == has_scale)
        return PyErr_Format(PyExc_ValueError, "%s(): give exactly one of size and scale_factor", fname), NULL;
    if (has_size) {
        if (spatial(o_size, 0, sp, fname, "size", j.size) < 0) return NULL;
    } else {
        if (PyFloat_Check(o_scale) || PyLong_Check(o_scale)) {
            double s;
            if (wkpy_double(o_scale, 1.0, &s) < 0) return NULL;
            j.scale[0] = j.scale[1] = s;
        } else {
            PyObject *seq = PySequence_Fast(o_scale, "scale_factor must be a float or a sequence of floats");
            if (!seq) return NULL;
            Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
            int bad = n != sp;
            for (Py_ssize_t i = 0; !bad && i < n; i++) bad = wkpy_double(PySequence_Fast_GET_ITEM(seq, i), 1.0, &j.scale[i]) < 0;
            Py_DECREF(seq);
            if (bad) {
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_ValueError, "%s(): scale_factor needs %d values, got %zd", fname, sp, n);
                return NULL;
            }
        }
        for (int i = 0; i < sp; i++)
            if (!(j.scale[i] > 0) || !isfinite(j.scale[i]))
                return PyErr_Format(PyExc_ValueError, "%s(): scale_factor must be finite and > 0", fname), NULL;
        j.by_scale = !recompute;
        if (recompute) /* the size from the scale, then the size's own mapping */
            for (int i = 0; i < sp; i++) j.size[i] = (int64_t)floor((double)wk_shape(j.x)[2 + i] * j.scale[i]);
    }
    wk_tensor *res;
    Py_BEGIN_ALLOW_THREADS
    res = up_run(&j);
    Py_END_ALLOW_THREADS
    return wkpy_wrap(res);
}

static PyObject *f_interpolate(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"input",         "size",
                                        "scale_factor",  "mode",
                                        "align_corners", "recompute_scale_factor",
                                        "antialias",     NULL};
    PyObject *a[7];
    if (wkpy_parse("interpolate", args, nargs, kw, names, 1, a) < 0) return NULL;
    return resample("interpolate", a[0], a[1], a[2], a[3], a[4], a[5], a[6], false);
}

static PyObject *f_upsample(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"input", "size", "scale_factor", "mode", "align_corners", NULL};
    PyObject *a[5];
    if (wkpy_parse("upsample", args, nargs, kw, names, 1, a) < 0) return NULL;
    return resample("upsample", a[0], a[1], a[2], a[3], a[4], NULL, NULL, false);
}

/* F.upsample_nearest / F.upsample_bilinear (the latter aligns corners) */
static PyObject *fixed_mode(const char *fname, const char *mode, bool align, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kw) {
    static const char *const names[] = {"input", "size", "scale_factor", NULL};
    PyObject *a[3];
    if (wkpy_parse(fname, args, nargs, kw, names, 1, a) < 0) return NULL;
    PyObject *m = PyUnicode_FromString(mode);
    if (!m) return NULL;
    PyObject *r = resample(fname, a[0], a[1], a[2], m, NULL, NULL, NULL, align);
    Py_DECREF(m);
    return r;
}
static PyObject *f_upsample_nearest(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {
    (void)m;
    return fixed_mode("upsample_nearest", "nearest", false, a, n, k);
}
static PyObject *f_upsample_bilinear(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {
    (void)m;
    return fixed_mode("upsample_bilinear", "bilinear", true, a, n, k);
}

static PyMethodDef conv_functions[] = {
    {"conv1d", FAST(f_conv1d),
     "conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)\ntorch.nn.functional.conv1d: "
     "input (N, C_in, L) or (C_in, L), weight (C_out, C_in / groups, K); padding an int, a 1-tuple, 'valid' or "
     "'same'. Float dtypes (f32, f64, f16, bf16)."},
    {"conv2d", FAST(f_conv2d),
     "conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)\ntorch.nn.functional.conv2d: "
     "input (N, C_in, H, W) or (C_in, H, W), weight (C_out, C_in / groups, KH, KW); padding an int, a pair "
     "(unequal pads are applied to the input first), 'valid' or 'same'; stride and dilation one value for both "
     "dims (wick's kernels), else ValueError."},
    {"conv_transpose1d", FAST(f_conv_transpose1d),
     "conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1)\n"
     "torch.nn.functional.conv_transpose1d: weight (C_in, C_out / groups, K)."},
    {"conv_transpose2d", FAST(f_conv_transpose2d),
     "conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1)\n"
     "torch.nn.functional.conv_transpose2d: weight (C_in, C_out / groups, KH, KW); unequal paddings / output "
     "paddings crop the full output; stride and dilation one value for both dims."},
    {"max_pool2d", FAST(f_max_pool2d),
     "max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)\n"
     "torch.nn.functional.max_pool2d (floor mode; padding <= kernel / 2; stride defaults to kernel_size). "
     "dilation != 1, ceil_mode and return_indices raise ValueError."},
    {"avg_pool2d", FAST(f_avg_pool2d),
     "avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, "
     "divisor_override=None)\ntorch.nn.functional.avg_pool2d (floor mode)."},
    {"max_pool1d", FAST(f_max_pool1d),
     "max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)\n"
     "torch.nn.functional.max_pool1d over (N, C, L) or (C, L)."},
    {"avg_pool1d", FAST(f_avg_pool1d),
     "avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True)\n"
     "torch.nn.functional.avg_pool1d over (N, C, L) or (C, L)."},
    {"interpolate", FAST(f_interpolate),
     "interpolate(input, size=None, scale_factor=None, mode='nearest', align_corners=None, "
     "recompute_scale_factor=None, antialias=False)\ntorch.nn.functional.interpolate for mode 'nearest' (3-D or "
     "4-D input), 'linear' (3-D) and 'bilinear' (4-D)."},
    {"upsample", FAST(f_upsample),
     "upsample(input, size=None, scale_factor=None, mode='nearest', align_corners=None)\nAlias of interpolate."},
    {"upsample_nearest", FAST(f_upsample_nearest),
     "upsample_nearest(input, size=None, scale_factor=None)\ninterpolate(mode='nearest')."},
    {"upsample_nearest2d", FAST(f_upsample_nearest),
     "upsample_nearest2d(input, size=None, scale_factor=None)\ninterpolate(mode='nearest')."},
    {"upsample_bilinear", FAST(f_upsample_bilinear),
     "upsample_bilinear(input, size=None, scale_factor=None)\ninterpolate(mode='bilinear', align_corners=True), as "
     "torch.nn.functional.upsample_bilinear."},
    {"upsample_bilinear2d", FAST(f_upsample_bilinear),
     "upsample_bilinear2d(input, size=None, scale_factor=None)\nAlias of upsample_bilinear."},
    {NULL, NULL, 0, NULL},
};

const wkpy_part wkpy_part_conv = {NULL, NULL, conv_functions, NULL};
