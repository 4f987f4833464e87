/* The requests waiting for a slot: a FIFO (admission is in submit order),
 * singly linked through wk__req.next. The engine's mutex guards it. */
#include "serve/engine_internal.h"

void wk__queue_push(wk__queue *q, wk__req *r) {
    r->next = NULL;
    if (q->tail) q->tail->next = r;
    else q->head = r;
    q->tail = r;
    q->n++;
}

wk__req *wk__queue_pop(wk__queue *q) {
    wk__req *r = q->head;
    if (!r) return NULL;
    q->head = r->next;
    if (!q->head) q->tail = NULL;
    r->next = NULL;
    q->n--;
    return r;
}

bool wk__queue_remove(wk__queue *q, wk__req *r) {
    wk__req *prev = NULL;
    for (wk__req *p = q->head; p; prev = p, p = p->next) {
        if (p != r) continue;
        if (prev) prev->next = p->next;
        else q->head = p->next;
        if (q->tail == p) q->tail = prev;
        p->next = NULL;
        q->n--;
        return true;
    }
    return false;
}

wk__req *wk__queue_find(const wk__queue *q, int64_t id) {
    for (wk__req *p = q->head; p; p = p->next)
        if (p->id == id) return p;
    return NULL;
}
