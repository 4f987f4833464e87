/* wk_ddp's checkpoints: one file, written and read by rank 0 only (the
 * ranks hold the same values), the outcome and the values broadcast.
 *
 * Load sends, from rank 0, one f64 header — status, and with an optimizer
 * its config, step count, per-parameter steps and which state buffers
 * exist — then every parameter, then every state buffer that exists. So a
 * rank other than 0 never opens the file, and a failed load on rank 0 is a
 * failed load everywhere (the others get a message saying so). */
#include <stdlib.h>
#include "base/error.h"
#include "tensor/tensor.h"
#include "train/ddp_internal.h"
#include "train/train_internal.h"

/* Rank 0's status to every rank (the broadcast is the meeting point). */
static wk_status share_status(const char *op, wk_comm *c, wk_status mine, const char *path) {
    double v = (double)mine;
    int64_t one = 1;
    wk_tensor *t = wk_from_host(&v, sizeof v, &one, 1, WK_F64, wk_cpu());
    wk_tensor *r = t ? wk_broadcast(c, t, 0) : NULL;
    wk_status st = r ? wk_to_host(r, &v, sizeof v) : wk_last_status();
    wk_tensor_free(t);
    wk_tensor_free(r);
    if (wk_comm_rank(c) == 0) return mine;
    if (st != WK_OK) return st;
    if (v != 0) return wk__err((wk_status)(int)v, op, "%s: failed on rank 0 (see its error)", path);
    return WK_OK;
}

wk_status wk_ddp_checkpoint_save(wk_ddp *d, const char *path, const char *const *names, const wk_optimizer *opt) {
    const char *op = "wk_ddp_checkpoint_save";
    if (!d) return wk__err(WK_ERR_ARG, op, "NULL ddp");
    int n;
    wk_tensor *const *p = wk__ddp_params(d, &n);
    wk_comm *c = wk_ddp_comm(d);
    wk_status mine = WK_OK;
    if (wk_comm_rank(c) == 0) mine = wk_checkpoint_save(path, names, p, n, opt);
    return share_status(op, c, mine, path ? path : "(NULL path)");
}

/* rank 0's t (every rank's t gives the shape) into a new kept tensor. */
static wk_tensor *bcast_kept(wk_comm *c, const wk_tensor *t) {
    wk_tensor *r = wk_broadcast(c, t, 0);
    return r ? wk_keep(r) : NULL;
}

wk_status wk_ddp_checkpoint_load(wk_ddp *d, const char *path, const char *const *names, wk_optimizer *opt) {
    const char *op = "wk_ddp_checkpoint_load";
    if (!d) return wk__err(WK_ERR_ARG, op, "NULL ddp");
    int n;
    wk_tensor *const *p = wk__ddp_params(d, &n);
    wk_comm *c = wk_ddp_comm(d);
    bool root = wk_comm_rank(c) == 0;
    if (opt && opt->n != n) return wk__err(WK_ERR_ARG, op, "the optimizer has %d parameters, the ddp %d", opt->n, n);
    wk_status mine = root ? wk_checkpoint_load(path, names, p, n, opt) : WK_OK;
    wk_status st = share_status(op, c, mine, path ? path : "(NULL path)");
    if (st != WK_OK || wk_comm_size(c) == 1) return st;

    /* the optimizer's header: config, steps, per parameter step / m / v */
    int64_t hn = opt ? 9 + 3 * (int64_t)n : 1;
    double *h = calloc((size_t)hn, sizeof *h);
    if (!h) return wk__err(WK_ERR_OOM, op, "cannot allocate the header");
    if (root && opt) {
        const wk_optim_config *k = &opt->cfg;
        double f[9] = {k->lr, k->weight_decay, k->momentum, k->dampening, k->nesterov, k->beta1, k->beta2, k->eps,
                       (double)opt->steps};
        for (int i = 0; i < 9; i++) h[i] = f[i];
        for (int i = 0; i < n; i++) {
            h[9 + i] = (double)opt->pstep[i];
            h[9 + n + i] = opt->m[i] != NULL;
            h[9 + 2 * n + i] = opt->v[i] != NULL;
        }
    }
    wk_scope_begin();
    wk_tensor *ht = wk_from_host(h, (size_t)hn * sizeof *h, &hn, 1, WK_F64, wk_cpu());
    wk_tensor *hr = ht ? wk_broadcast(c, ht, 0) : NULL;
    st = hr ? wk_to_host(hr, h, (size_t)hn * sizeof *h) : wk_last_status();
    /* the values: parameters, then the state buffers that exist */
    wk_no_grad_begin();
    for (int i = 0; st == WK_OK && i < n; i++) {
        wk_tensor *r = wk_broadcast(c, p[i], 0);
        if (!r) st = wk_last_status();
        else if (!root) st = wk_param_assign_(p[i], r);
    }
    for (int i = 0; opt && st == WK_OK && i < n; i++) {
        for (int w = 0; w < 2 && st == WK_OK; w++) {
            wk_tensor **slot = w ? &opt->v[i] : &opt->m[i];
            bool has = h[9 + (w + 1) * n + i] != 0;
            if (!has) {
                if (!root) {
                    wk_tensor_free(*slot);
                    *slot = NULL;
                }
                continue;
            }
            /* root sends its buffer; the others' p gives the shape */
            wk_tensor *r = bcast_kept(c, root ? *slot : p[i]);
            if (!r) {
                st = wk_last_status();
                break;
            }
            if (root) wk_tensor_free(r);
            else {
                wk_tensor_free(*slot);
                *slot = r;
            }
        }
    }
    wk_no_grad_end();
    wk_scope_end();
    if (st == WK_OK && opt && !root) {
        wk_optim_config *k = &opt->cfg;
        k->lr = h[0]; k->weight_decay = h[1]; k->momentum = h[2]; k->dampening = h[3];
        k->nesterov = h[4] != 0; k->beta1 = h[5]; k->beta2 = h[6]; k->eps = h[7];
        opt->steps = (int64_t)h[8];
        for (int i = 0; i < n; i++) opt->pstep[i] = (int64_t)h[9 + i];
    }
    free(h);
    return st;
}
