/* The interpreter's arena, its error exit, and the value constructors
 * (see jinja.h for why one arena and longjmp). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja.h"

struct jj_chunk { jj_chunk *next; size_t size, used; max_align_t data[]; };

void jj_rt_init(jj_rt *rt, size_t limit) {
    memset(rt, 0, sizeof *rt);
    rt->limit = limit;
}

void jj_rt_free(jj_rt *rt) {
    for (jj_chunk *c = rt->chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    rt->chunks = NULL;
    rt->used = 0;
}

void *jj_alloc(jj_rt *rt, size_t n) {
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (n == 0) n = sizeof(max_align_t);
    jj_chunk *c = rt->chunks;
    if (!c || c->size - c->used < n) {
        size_t size = n > (64u << 10) ? n : (64u << 10);
        if (n > rt->limit || rt->used > rt->limit - size)
            jj_fail(rt, 0, "the template needs more than %zu MiB of memory (limit)", rt->limit >> 20);
        c = malloc(sizeof *c + size);
        if (!c) {
            rt->status = WK_ERR_OOM;
            snprintf(rt->msg, sizeof rt->msg, "jinja: out of memory");
            longjmp(rt->jb, 1);
        }
        c->size = size;
        c->used = 0;
        c->next = rt->chunks;
        rt->chunks = c;
        rt->used += size;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

void jj_fail(jj_rt *rt, int line, const char *fmt, ...) {
    int k = line > 0 ? snprintf(rt->msg, sizeof rt->msg, "jinja: line %d: ", line)
                     : snprintf(rt->msg, sizeof rt->msg, "jinja: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rt->msg + k, sizeof rt->msg - (size_t)k, fmt, ap);
    va_end(ap);
    rt->status = WK_ERR_FORMAT;
    longjmp(rt->jb, 1);
}

void jj_fail_raw(jj_rt *rt, wk_status s, const char *msg) {
    snprintf(rt->msg, sizeof rt->msg, "%s", msg);
    rt->status = s;
    longjmp(rt->jb, 1);
}

/* ---- values ---- */

jv jv_undef(void) { return (jv){.t = JV_UNDEF}; }
jv jv_none(void) { return (jv){.t = JV_NONE}; }
jv jv_bool(bool b) { return (jv){.t = JV_BOOL, .u.b = b}; }
jv jv_int(int64_t i) { return (jv){.t = JV_INT, .u.i = i}; }
jv jv_float(double f) { return (jv){.t = JV_FLOAT, .u.f = f}; }
jv jv_func(int fn, jv *self) { return (jv){.t = JV_FUNC, .fn = (int16_t)fn, .self = self}; }

jv jv_undef_msg(jj_rt *rt, const char *fmt, ...) {
    char m[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    jv v = jv_cstr(rt, m);
    v.t = JV_UNDEF;
    return v;
}

jv jv_str(jj_rt *rt, const char *s, size_t n) {
    if (n > rt->limit) jj_fail(rt, 0, "a string exceeds the memory limit");
    jj_str *p = jj_alloc(rt, sizeof *p + n + 1);
    p->n = n;
    if (n) memcpy(p->p, s, n);
    p->p[n] = 0;
    return (jv){.t = JV_STR, .u.s = p};
}

jv jv_cstr(jj_rt *rt, const char *s) { return jv_str(rt, s, strlen(s)); }

jv jv_list(jj_rt *rt, size_t cap) {
    jj_list *l = jj_alloc(rt, sizeof *l);
    if (cap) {
        if (cap > rt->limit / sizeof(jv)) jj_fail(rt, 0, "a list exceeds the memory limit");
        l->v = jj_alloc(rt, cap * sizeof(jv));
        l->cap = cap;
    }
    return (jv){.t = JV_LIST, .u.l = l};
}

jv jv_dict(jj_rt *rt) { return (jv){.t = JV_DICT, .u.d = jj_alloc(rt, sizeof(jj_dict))}; }

jv *jj_box(jj_rt *rt, jv v) {
    jv *p = jj_alloc(rt, sizeof *p);
    *p = v;
    return p;
}

void jj_list_push(jj_rt *rt, jj_list *l, jv v) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        if (cap > rt->limit / sizeof(jv)) jj_fail(rt, 0, "a list exceeds the memory limit");
        jv *nv = jj_alloc(rt, cap * sizeof(jv));
        if (l->n) memcpy(nv, l->v, l->n * sizeof(jv));
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
}

/* Dict keys: Python hashes 1, 1.0 and True alike; jv_equal says so too. */
jv *jj_dict_get(const jj_dict *d, jv key) {
    for (size_t i = 0; i < d->n; i++)
        if (jv_equal(d->k[i], key)) return &d->v[i];
    return NULL;
}

jv *jj_dict_gets(const jj_dict *d, const char *key) {
    size_t n = strlen(key);
    for (size_t i = 0; i < d->n; i++)
        if (d->k[i].t == JV_STR && d->k[i].u.s->n == n && memcmp(d->k[i].u.s->p, key, n) == 0) return &d->v[i];
    return NULL;
}

void jj_dict_set(jj_rt *rt, jj_dict *d, jv key, jv val) {
    jv *slot = jj_dict_get(d, key);
    if (slot) {
        *slot = val;
        return;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 8;
        if (cap > rt->limit / sizeof(jv)) jj_fail(rt, 0, "a dict exceeds the memory limit");
        jv *nk = jj_alloc(rt, cap * sizeof(jv)), *nv = jj_alloc(rt, cap * sizeof(jv));
        if (d->n) {
            memcpy(nk, d->k, d->n * sizeof(jv));
            memcpy(nv, d->v, d->n * sizeof(jv));
        }
        d->k = nk;
        d->v = nv;
        d->cap = cap;
    }
    d->k[d->n] = key;
    d->v[d->n++] = val;
}

/* ---- buffers ---- */

void jj_buf_put(jj_rt *rt, jj_buf *b, const char *s, size_t n) {
    if (n == 0) return;
    if (b->cap - b->n < n + 1) {
        if (n > JJ_MAX_OUTPUT || b->n > JJ_MAX_OUTPUT - n)
            jj_fail(rt, 0, "the output exceeds %u MiB (limit)", JJ_MAX_OUTPUT >> 20);
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = jj_alloc(rt, cap);
        if (b->n) memcpy(p, b->p, b->n);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void jj_buf_putc(jj_rt *rt, jj_buf *b, char c) { jj_buf_put(rt, b, &c, 1); }

void jj_buf_printf(jj_rt *rt, jj_buf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0) jj_buf_put(rt, b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

jv jj_buf_value(jj_rt *rt, const jj_buf *b) { return jv_str(rt, b->p ? b->p : "", b->n); }
