/* Custom ops (include/wick/custom_op.h): checks, the callback of the
 * device's backend kind, and the output allocation. The callbacks are the
 * user's; wick only hands them views of the tensors. */
#include "tensor/tensor.h"
#include "ops/prim_custom_op.h"
#include "ops/prim_copy.h"
#include "wick/custom_op.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct wk_custom_op {
    atomic_int refs; /* the registering caller's (wk_custom_op_free) + one per recorded node */
    wk_custom_op_def def;
    char name[64];
};

wk_custom_op *wk_custom_op_register(const wk_custom_op_def *def) {
    const char *op = "wk_custom_op_register";
    if (!def || !def->name || !def->name[0]) {
        wk__err(WK_ERR_ARG, op, "the op needs a name");
        return NULL;
    }
    if (def->num_inputs < 1 || def->num_inputs > 3) {
        wk__err(WK_ERR_ARG, op, "op '%s': num_inputs %d, custom ops take 1, 2 or 3 inputs", def->name,
                def->num_inputs);
        return NULL;
    }
    if (!def->cpu && !def->cuda && !def->cpu_inplace && !def->cuda_inplace) {
        wk__err(WK_ERR_ARG, op, "op '%s' has no callback for any backend", def->name);
        return NULL;
    }
    if (strlen(def->name) >= sizeof ((wk_custom_op *)0)->name) {
        wk__err(WK_ERR_ARG, op, "op name '%.32s...' longer than 63 characters", def->name);
        return NULL;
    }
    wk_custom_op *o = calloc(1, sizeof *o);
    if (!o) {
        wk__err(WK_ERR_OOM, op, "cannot allocate op '%s'", def->name);
        return NULL;
    }
    atomic_init(&o->refs, 1);
    o->def = *def;
    strcpy(o->name, def->name);
    o->def.name = o->name;
    return o;
}

void wk__custom_op_retain(const wk_custom_op *op) {
    if (op) atomic_fetch_add_explicit(&((wk_custom_op *)op)->refs, 1, memory_order_relaxed);
}

void wk__custom_op_release(const wk_custom_op *op) {
    wk_custom_op *o = (wk_custom_op *)op;
    if (o && atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1) free(o);
}

void wk_custom_op_free(wk_custom_op *op) { wk__custom_op_release(op); }
const char *wk_custom_op_name(const wk_custom_op *op) { return op ? op->name : "(null op)"; }

static wk_custom_view view_of(const wk_tensor *t) {
    return (wk_custom_view){.buf = t->storage->buf, .dtype = t->dtype, .rank = t->layout.rank,
                            .shape = t->layout.shape, .stride = t->layout.stride, .offset = t->layout.offset,
                            .device = wk__dev(t)};
}

static const char *kind_name(wk_device_kind k) {
    switch (k) {
    case WK_DEVICE_CPU: return "cpu";
    case WK_DEVICE_CUDA: return "cuda";
    case WK_DEVICE_METAL: return "metal";
    }
    return "unknown";
}

/* Common checks; ins gets the inputs (contiguous copies when the op asks,
 * owned[i] set for those). */
static bool prepare(const char *fn, const wk_custom_op *op, int nin, const wk_tensor *const *in, const wk_tensor **ins,
                    wk_tensor **owned) {
    for (int i = 0; i < nin; i++) {
        ins[i] = in[i];
        owned[i] = NULL;
    }
    if (!op) {
        wk__err(WK_ERR_ARG, fn, "NULL op");
        return false;
    }
    for (int i = 0; i < nin; i++)
        if (!wk__check_in(fn, in[i]) || (i && !wk__check_same(fn, in[0], in[i]))) return false;
    if (op->def.num_inputs != nin) {
        wk__err(WK_ERR_ARG, fn, "op '%s' takes %d inputs, called with %d", op->name, op->def.num_inputs, nin);
        return false;
    }
    if (op->def.contiguous_inputs) {
        for (int i = 0; i < nin; i++) {
            if (wk__layout_is_contiguous(&in[i]->layout)) continue;
            owned[i] = wk__prim_copy(in[i]);
            if (!owned[i]) return false;
            ins[i] = owned[i];
        }
    }
    /* CUDA callbacks may use any stream: the queued work comes first */
    return wk__dev(in[0])->kind == WK_DEVICE_CPU || wk_device_synchronize(wk__dev(in[0])) == WK_OK;
}

static void release(int nin, wk_tensor **owned) {
    for (int i = 0; i < nin; i++) wk_tensor_free(owned[i]);
}

wk_tensor *wk__prim_custom_op(const char *fn, const wk_custom_op *op, int nin, const wk_tensor *const *in) {
    const wk_tensor *ins[3];
    wk_tensor *owned[3];
    if (!prepare(fn, op, nin, in, ins, owned)) {
        if (op) release(nin, owned);
        return NULL;
    }
    wk_device *dev = wk__dev(in[0]);
    wk_custom_compute_fn f = dev->kind == WK_DEVICE_CPU ? op->def.cpu : dev->kind == WK_DEVICE_CUDA ? op->def.cuda : NULL;
    wk_tensor *out = NULL;
    if (!f) {
        wk__err(WK_ERR_NOT_COMPILED, fn, "op '%s' has no %s callback for backend %s (device %s)", op->name,
                kind_name(dev->kind), dev->be->name, dev->name);
        goto done;
    }
    wk_custom_view v[3];
    for (int i = 0; i < nin; i++) v[i] = view_of(ins[i]);
    int64_t shape[WK_MAX_RANK];
    int rank = ins[0]->layout.rank;
    wk_dtype dt = ins[0]->dtype;
    memcpy(shape, ins[0]->layout.shape, sizeof(int64_t) * (size_t)rank);
    if (op->def.out_shape) {
        wk_status st = op->def.out_shape(op->def.user, nin, v, shape, &rank, &dt);
        if (st != WK_OK) {
            wk__err(st, fn, "op '%s': the output shape callback returned %s", op->name, wk_status_name(st));
            goto done;
        }
        if (rank < 0 || rank > WK_MAX_RANK || !wk_dtype_size(dt)) {
            wk__err(WK_ERR_ARG, fn, "op '%s': the shape callback gave rank %d, dtype %d", op->name, rank, (int)dt);
            goto done;
        }
    }
    out = wk__tensor_alloc(fn, dev, dt, shape, rank);
    if (!out || wk_numel(out) == 0) goto done;
    wk_custom_view vo = view_of(out);
    wk_status st = f(op->def.user, nin, v, &vo);
    if (st != WK_OK) {
        wk__err(st, fn, "op '%s': the %s callback returned %s on %s", op->name, kind_name(dev->kind),
                wk_status_name(st), dev->name);
        wk_tensor_free(out);
        out = NULL;
    }
done:
    release(nin, owned);
    return out;
}

static wk_status run_inplace(const char *fn, const wk_custom_op *op, int nin, wk_tensor *a, const wk_tensor *const *in) {
    const wk_tensor *ins[3];
    wk_tensor *owned[3];
    if (!prepare(fn, op, nin, in, ins, owned)) {
        if (op) release(nin, owned);
        return wk_last_status();
    }
    ins[0] = a; /* the destination is written through its own view, never a copy */
    /* the same rule as every built-in in-place op: no read-only storage, no
     * destination where two indices share one element */
    if (wk__check_writable(fn, a, &a->layout) != WK_OK) {
        release(nin, owned);
        return wk_last_status();
    }
    wk_device *dev = wk__dev(a);
    wk_custom_inplace_fn f =
        dev->kind == WK_DEVICE_CPU ? op->def.cpu_inplace : dev->kind == WK_DEVICE_CUDA ? op->def.cuda_inplace : NULL;
    wk_status st;
    if (!f) {
        st = wk__err(WK_ERR_NOT_COMPILED, fn, "op '%s' has no in-place %s callback for backend %s (device %s)",
                     op->name, kind_name(dev->kind), dev->be->name, dev->name);
    } else if (wk_numel(a) == 0) {
        st = WK_OK;
    } else {
        wk_custom_view v[3];
        for (int i = 0; i < nin; i++) v[i] = view_of(ins[i]);
        st = f(op->def.user, nin, v);
        if (st != WK_OK)
            wk__err(st, fn, "op '%s': the in-place %s callback returned %s on %s", op->name, kind_name(dev->kind),
                    wk_status_name(st), dev->name);
    }
    release(nin, owned);
    return st;
}

/* wk_custom_op1/2/3, which record, are src/autograd/tracked_custom_op.c. */
wk_status wk_custom_inplace1(const wk_custom_op *op, wk_tensor *a) {
    const wk_tensor *in[1] = {a};
    return run_inplace("wk_custom_inplace1", op, 1, a, in);
}
wk_status wk_custom_inplace2(const wk_custom_op *op, wk_tensor *a, const wk_tensor *b) {
    const wk_tensor *in[2] = {a, b};
    return run_inplace("wk_custom_inplace2", op, 2, a, in);
}
wk_status wk_custom_inplace3(const wk_custom_op *op, wk_tensor *a, const wk_tensor *b, const wk_tensor *c) {
    const wk_tensor *in[3] = {a, b, c};
    return run_inplace("wk_custom_inplace3", op, 3, a, in);
}

bool wk_custom_op_has_backward(const wk_custom_op *op) { return op && op->def.backward; }

wk_status wk_custom_op_backward(const wk_custom_op *op, const wk_tensor *const *inputs, const wk_tensor *output,
                                const wk_tensor *grad_output, wk_tensor **grad_inputs) {
    const char *fn = "wk_custom_op_backward";
    if (!op || !inputs || !grad_inputs) return wk__err(WK_ERR_ARG, fn, "NULL op, inputs or grad_inputs");
    for (int i = 0; i < op->def.num_inputs; i++) grad_inputs[i] = NULL;
    if (!op->def.backward) return wk__err(WK_ERR_NOT_COMPILED, fn, "op '%s' has no backward callback", op->name);
    for (int i = 0; i < op->def.num_inputs; i++)
        if (!wk__check_in(fn, inputs[i])) return wk_last_status();
    if (!wk__check_in(fn, output) || !wk__check_in(fn, grad_output)) return wk_last_status();
    wk_status st = op->def.backward(op->def.user, op->def.num_inputs, inputs, output, grad_output, grad_inputs);
    if (st != WK_OK) {
        for (int i = 0; i < op->def.num_inputs; i++) {
            wk_tensor_free(grad_inputs[i]);
            grad_inputs[i] = NULL;
        }
        wk__err(st, fn, "op '%s': the backward callback returned %s", op->name, wk_status_name(st));
    }
    return st;
}
