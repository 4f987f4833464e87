/* Pipeline parallel, the forward: every rank calls wk_lm_forward(_batch)
 * with the same sequences; rank 0 embeds the tokens, each rank runs its
 * layers (lm_forward.c's stage) and passes the activations (rows, dim) f32
 * to the next rank; the last rank puts the rows asked for through the
 * final norm and the lm head, and broadcasts the logits, so every rank
 * returns the same (bit-identical) tensor.
 *
 * The rows of a pass (every sequence's new tokens, in order) are cut into
 * micro-batches of pp->microbatch rows; a sequence spanning several runs
 * its pieces in order, each over the cache its earlier pieces filled
 * (causal attention over the cache makes the chunked pass the same
 * arithmetic). Sends are asynchronous (the communicator's progress thread),
 * so rank r computes micro-batch i+1 while rank r+1 runs i. The
 * messages make a PP model's forwards a sequence every rank issues in the
 * same order: one forward at a time per model (not per cache). */
#include "model/lm_internal.h"
#include "wick/dist.h"
#include "base/error.h"
#include "tensor/tensor.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One tag for the activations between neighbouring ranks: the stream is
 * ordered (MPI keeps one sender's messages of one tag in order). */
#define PP_TAG 4242

typedef struct pp_run {
    const char *op;
    const wk_lm *m;
    const wk_lm_seq *seqs;
    int64_t n_seqs, R, mb;
    int64_t *len0;      /* every cache's length before the pass (for the undo) */
    wk_lm_seq *piece;   /* the current micro-batch's pieces */
    int64_t *piece_seq; /* which sequence each piece is of */
    wk_tensor **rows;   /* last rank: the rows for the head, in order */
    int64_t n_rows;
    wk_dist_work *send; /* the send in flight (at most one) */
} pp_run;

/* The pieces of micro-batch [r0, r1) of the pass's rows; returns their count. */
static int64_t pieces_of(pp_run *p, int64_t r0, int64_t r1) {
    int64_t n = 0;
    for (int64_t i = 0, off = 0; i < p->n_seqs && off < r1; off += p->seqs[i].n, i++) {
        int64_t a = r0 > off ? r0 : off, b = r1 < off + p->seqs[i].n ? r1 : off + p->seqs[i].n;
        if (a >= b) continue;
        p->piece[n] = (wk_lm_seq){.cache = p->seqs[i].cache, .ids = p->seqs[i].ids + (a - off), .n = b - a,
                                  .all_logits = true};
        p->piece_seq[n++] = i;
    }
    return n;
}

/* Last rank: keep the rows of activations y (the micro-batch's pieces in
 * order) that the caller wants logits for: all of a piece when its sequence
 * asked for all_logits, else the sequence's last row when this piece has it. */
static wk_status keep_rows(pp_run *p, int64_t np, wk_tensor *y) {
    for (int64_t k = 0, off = 0; k < np; off += p->piece[k].n, k++) {
        const wk_lm_seq *s = &p->seqs[p->piece_seq[k]];
        bool last = p->piece[k].ids + p->piece[k].n == s->ids + s->n;
        wk_tensor *r = NULL;
        if (s->all_logits) r = wk_narrow(y, 0, off, p->piece[k].n);
        else if (last) r = wk_narrow(y, 0, off + p->piece[k].n - 1, 1);
        else continue;
        if (!(p->rows[p->n_rows++] = wk_keep(r))) return wk_last_status();
    }
    return WK_OK;
}

/* x on the model's device (the transport delivers host tensors); consumes x. */
static wk_tensor *to_model(const wk_lm *m, wk_tensor *x) {
    if (!x || wk_same_device(wk_tensor_device(x), m->dev)) return x;
    wk_tensor *d = wk_keep(wk_to_device(x, m->dev));
    wk_tensor_free(x);
    return d;
}

/* Rank > 0: the activations of micro-batch rows n, from the rank before,
 * checked (a different shape means the ranks ran different forwards). */
static wk_tensor *recv_rows(pp_run *p, int64_t n) {
    const wk__lm_pp *pp = p->m->pp;
    wk_tensor *x = wk_keep(wk_recv(pp->comm, pp->rank - 1, PP_TAG));
    if (!x) return NULL;
    if (wk_tensor_dtype(x) != WK_F32 || wk_rank(x) != 2 || wk_dim(x, 0) != n || wk_dim(x, 1) != p->m->cfg.dim) {
        wk__err(WK_ERR_COMM, p->op,
                "rank %d of %d: rank %d sent activations that are not (%lld, %lld) f32 (do all ranks run the same "
                "forwards?)",
                pp->rank, pp->size, pp->rank - 1, (long long)n, (long long)p->m->cfg.dim);
        wk_tensor_free(x);
        return NULL;
    }
    return to_model(p->m, x);
}

static wk_status wait_send(pp_run *p) {
    if (!p->send) return WK_OK;
    wk_dist_work *w = p->send;
    p->send = NULL;
    return wk_dist_wait_status(w, NULL);
}

/* Every micro-batch through this rank's layers; the last rank's head rows
 * collected in p->rows. */
static wk_status run_micro_batches(pp_run *p) {
    const wk__lm_pp *pp = p->m->pp;
    bool first = pp->rank == 0, last = pp->rank == pp->size - 1;
    for (int64_t r0 = 0; r0 < p->R; r0 += p->mb) {
        int64_t r1 = r0 + p->mb < p->R ? r0 + p->mb : p->R;
        int64_t np = pieces_of(p, r0, r1);
        wk_tensor *x = NULL;
        if (!first && !(x = recv_rows(p, r1 - r0))) return wk_last_status();
        wk_tensor *y = wk__lm_forward_stage(p->op, p->m, p->piece, np, x);
        wk_tensor_free(x);
        if (!y) return wk_last_status();
        wk_status st = WK_OK;
        if (last) {
            st = keep_rows(p, np, y);
        } else if ((st = wait_send(p)) == WK_OK) {
            /* the job holds its own reference to y until it is sent */
            p->send = wk_send_async(pp->comm, y, pp->rank + 1, PP_TAG);
            if (!p->send) st = wk_last_status();
        }
        wk_tensor_free(y);
        if (st != WK_OK) return st;
    }
    return wait_send(p);
}

/* Last rank: the logits of the kept rows (one head product, as a
 * single-process forward runs it). */
static wk_tensor *head_logits(pp_run *p) {
    wk_tensor *sel = p->n_rows == 1 ? wk_tensor_retain(p->rows[0]) : wk_keep(wk_cat(p->rows, (int)p->n_rows, 0));
    if (!sel) return NULL;
    wk_tensor *out = NULL;
    if (wk__scope_open()) out = wk_keep(wk__lm_head(p->m, sel));
    wk_scope_end();
    wk_tensor_free(sel);
    return out;
}

wk_tensor *wk__lm_pp_forward(const char *op, bool numbered, const wk_lm *m, const wk_lm_seq *seqs, int64_t n_seqs) {
    /* every rank checks the same arguments alike: an error here is every
     * rank's, before any message */
    if (wk__lm_forward_check(op, numbered, m, seqs, n_seqs) != WK_OK) return NULL;
    const wk__lm_pp *pp = m->pp;
    pp_run p = {.op = op, .m = m, .seqs = seqs, .n_seqs = n_seqs, .mb = pp->microbatch};
    for (int64_t i = 0; i < n_seqs; i++) p.R += seqs[i].n;
    int64_t n_mb = (p.R + p.mb - 1) / p.mb;
    p.len0 = malloc(sizeof *p.len0 * (size_t)n_seqs);
    p.piece = malloc(sizeof *p.piece * (size_t)n_seqs);
    p.piece_seq = malloc(sizeof *p.piece_seq * (size_t)n_seqs);
    /* at most one head part per piece: n_seqs + n_mb - 1 pieces in all */
    p.rows = calloc((size_t)(n_seqs + n_mb), sizeof *p.rows);
    wk_tensor *out = NULL;
    wk_status st = WK_OK;
    if (!p.len0 || !p.piece || !p.piece_seq || !p.rows) {
        st = wk__err(WK_ERR_OOM, op, "cannot plan %lld micro-batches", (long long)n_mb);
    } else {
        for (int64_t i = 0; i < n_seqs; i++) p.len0[i] = seqs[i].cache->len;
        st = run_micro_batches(&p);
    }
    if (st == WK_OK && pp->rank == pp->size - 1 && !(out = head_logits(&p))) st = wk_last_status();
    if (st == WK_OK) {
        /* the last rank's logits on every rank (the others learn the shape from it) */
        wk_tensor *b = wk_keep(wk_broadcast(pp->comm, out, pp->size - 1));
        wk_tensor_free(out);
        out = b ? to_model(m, b) : NULL;
        if (!out) st = wk_last_status();
    }
    if (st != WK_OK) {
        /* a send still in flight is waited for (its error is not this one) */
        wk_status keep = wk_last_status();
        char msg[512];
        snprintf(msg, sizeof msg, "%s", wk_last_error());
        wait_send(&p);
        wk__err_restore(keep, msg);
        if (p.len0)
            for (int64_t i = 0; i < n_seqs; i++) seqs[i].cache->len = p.len0[i];
        wk_tensor_free(out);
        out = NULL;
    }
    for (int64_t i = 0; i < p.n_rows; i++) wk_tensor_free(p.rows[i]);
    free(p.rows);
    free(p.piece_seq);
    free(p.piece);
    free(p.len0);
    return out;
}
