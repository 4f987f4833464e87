/* A running HTTP generation request's event queue (tools/serve_job.h). */
#include "tools/serve_job.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

wk__job *wk__job_new(wk_engine *e, int n, wk_grammar *grammar) {
    if (n < 1 || n > 16) return NULL;
    wk__job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    pthread_mutex_init(&j->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cv, &ca);
    pthread_condattr_destroy(&ca);
    j->refs = 1;
    j->engine = e;
    j->n = n;
    j->grammar = grammar;
    for (int i = 0; i < 16; i++) j->ids[i] = -1;
    return j;
}

static void job_free(wk__job *j) {
    for (size_t i = j->head; i < j->nq; i++) free(j->q[i].text);
    free(j->q);
    wk_grammar_free(j->grammar);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

/* Drop one reference with j->mu held; unlocks (and frees at zero). */
static void unref_locked(wk__job *j) {
    bool last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (last) job_free(j);
}

static int choice_of(const wk__job *j, int64_t request) {
    for (int i = 0; i < j->n; i++)
        if (j->ids[i] == request) return i;
    return -1;
}

void wk__job_on_event(void *ctx, const wk_engine_event *ev) {
    wk__job *j = ctx;
    pthread_mutex_lock(&j->mu);
    int c = choice_of(j, ev->request);
    if (c < 0) {
        /* an event before submit returned the id: find the slot being submitted */
        for (int i = 0; i < j->n; i++)
            if (j->ids[i] == -2) {
                j->ids[i] = ev->request;
                c = i;
                break;
            }
    }
    if (c < 0 || j->ended[c]) {
        pthread_mutex_unlock(&j->mu);
        return;
    }
    bool end = ev->kind != WK_EV_TOKEN;
    wk__job_ev e = {.choice = c, .kind = ev->kind, .id = ev->id, .logprob = ev->logprob, .stop = ev->stop,
                    .n_prompt = ev->n_prompt, .n_generated = ev->n_generated, .status = ev->status};
    const char *txt = ev->kind == WK_EV_ERROR ? ev->error : ev->text;
    size_t nt = ev->kind == WK_EV_ERROR ? (txt ? strlen(txt) : 0) : ev->n_text;
    e.n_top = ev->n_top < 0 ? 0 : ev->n_top > WK__JOB_MAX_TOP ? WK__JOB_MAX_TOP : ev->n_top;
    for (int k = 0; k < e.n_top; k++) {
        e.top_ids[k] = ev->top_ids[k];
        e.top_logprobs[k] = ev->top_logprobs[k];
    }
    bool ok = true;
    if (j->overflow && !end) ok = false; /* cancelled for overflow: drop the rest until DONE */
    if (ok && nt) {
        e.text = malloc(nt + 1);
        if (e.text) {
            memcpy(e.text, txt, nt);
            e.text[nt] = 0;
            e.n_text = nt;
        } else if (!end) {
            ok = false;
        }
    }
    if (ok && j->nq == j->capq) {
        /* compact what was taken, then grow */
        if (j->head) {
            memmove(j->q, j->q + j->head, (j->nq - j->head) * sizeof *j->q);
            j->nq -= j->head;
            j->head = 0;
        }
        if (j->nq == j->capq) {
            size_t cap = j->capq ? j->capq * 2 : 32;
            wk__job_ev *q = realloc(j->q, cap * sizeof *q);
            if (q) j->q = q, j->capq = cap;
        }
    }
    if (ok && j->nq < j->capq) {
        j->q[j->nq++] = e;
        j->queued_bytes += sizeof e + e.n_text;
    } else {
        free(e.text);
        if (!end && !j->overflow) {
            /* no memory for the event: stop this request rather than lose text silently */
            j->overflow = true;
            for (int i = 0; i < j->n; i++)
                if (!j->ended[i] && j->ids[i] >= 0) wk_engine_cancel(j->engine, j->ids[i]);
        }
    }
    if (!j->overflow && j->queued_bytes > WK__JOB_MAX_QUEUED) {
        j->overflow = true;
        for (int i = 0; i < j->n; i++)
            if (!j->ended[i] && j->ids[i] >= 0) wk_engine_cancel(j->engine, j->ids[i]);
    }
    if (end) {
        j->ended[c] = true;
        j->n_ended++;
        pthread_cond_broadcast(&j->cv);
        unref_locked(j); /* the engine request's reference */
        return;
    }
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

bool wk__job_submit(wk__job *j, int i, const int32_t *ids, int64_t n, const wk_request_opts *o) {
    pthread_mutex_lock(&j->mu);
    j->ids[i] = -2; /* events may come before submit returns: they find this slot */
    j->refs++;
    pthread_mutex_unlock(&j->mu);
    int64_t r = wk_engine_submit(j->engine, ids, n, o, wk__job_on_event, j);
    pthread_mutex_lock(&j->mu);
    if (r < 0) {
        /* this choice and the ones after it (submitted in order) will never run */
        j->ids[i] = -1;
        for (int k = i; k < j->n; k++)
            if (!j->ended[k]) j->ended[k] = true, j->n_ended++;
        j->refs--; /* the connection still holds one: never zero here */
        pthread_mutex_unlock(&j->mu);
        return false;
    }
    j->ids[i] = r;
    pthread_mutex_unlock(&j->mu);
    return true;
}

int wk__job_wait(wk__job *j, wk__job_ev *ev, int timeout_ms) {
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&j->mu);
    int rc;
    for (;;) {
        if (j->head < j->nq) {
            *ev = j->q[j->head++];
            j->queued_bytes -= sizeof *ev + ev->n_text;
            rc = 1;
            break;
        }
        if (j->n_ended == j->n) {
            rc = -1;
            break;
        }
        if (pthread_cond_timedwait(&j->cv, &j->mu, &dl) == ETIMEDOUT) {
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&j->mu);
    return rc;
}

void wk__job_cancel(wk__job *j) {
    /* the ids are copied out: the engine is called without the job's lock,
     * which its thread takes in wk__job_on_event */
    int64_t ids[16];
    int k = 0;
    pthread_mutex_lock(&j->mu);
    for (int i = 0; i < j->n; i++)
        if (!j->ended[i] && j->ids[i] >= 0) ids[k++] = j->ids[i];
    pthread_mutex_unlock(&j->mu);
    for (int i = 0; i < k; i++) wk_engine_cancel(j->engine, ids[i]);
}

void wk__job_release(wk__job *j) {
    pthread_mutex_lock(&j->mu);
    unref_locked(j);
}
