/* The HTTP side of `wick serve` over libmicrohttpd (tools/serve.h): one
 * thread per connection (a reply that waits for the engine blocks only its
 * own connection), a connection limit, an idle timeout (slow or silent
 * clients are dropped), a per-connection memory limit; the routes, the API
 * key and the body limit are checked before the body is read. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* POLLRDHUP */
#endif
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "tools/serve.h"

typedef enum { R_NONE, R_CHAT, R_COMPLETIONS, R_EMBEDDINGS, R_MODELS, R_HEALTH, R_METRICS } route_id;

static const struct {
    const char *path;
    route_id id;
    const char *method;
    int endpoint;
} ROUTES[] = {
    {"/v1/chat/completions", R_CHAT, "POST", WK__EP_CHAT},
    {"/chat/completions", R_CHAT, "POST", WK__EP_CHAT},
    {"/v1/completions", R_COMPLETIONS, "POST", WK__EP_COMPLETIONS},
    {"/completions", R_COMPLETIONS, "POST", WK__EP_COMPLETIONS},
    {"/v1/embeddings", R_EMBEDDINGS, "POST", WK__EP_EMBEDDINGS},
    {"/embeddings", R_EMBEDDINGS, "POST", WK__EP_EMBEDDINGS},
    {"/v1/models", R_MODELS, "GET", WK__EP_MODELS},
    {"/models", R_MODELS, "GET", WK__EP_MODELS},
    {"/health", R_HEALTH, "GET", WK__EP_HEALTH},
    {"/metrics", R_METRICS, "GET", WK__EP_METRICS},
};

typedef struct {
    route_id route;
    int endpoint;
    const char *allow; /* the route's method */
    wk__sbuf body;
    bool too_big, answered;
} conn_state;

bool wk__conn_gone(struct MHD_Connection *conn) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return false;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* Compare in time that does not depend on where the strings differ (only
 * on the expected key's length). */
static bool same_secret(const char *got, const char *key) {
    size_t ng = strlen(got), nk = strlen(key);
    unsigned d = ng != nk;
    for (size_t i = 0; i < nk; i++) d |= (unsigned)((i < ng ? (unsigned char)got[i] : 0u) ^ (unsigned char)key[i]);
    return d == 0;
}

static bool authorized(wk__srv *s, struct MHD_Connection *conn) {
    if (!s->api_key) return true;
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7)) return false;
    h += 7;
    while (*h == ' ') h++;
    return same_secret(h, s->api_key);
}

static enum MHD_Result send_reply(wk__srv *s, struct MHD_Connection *conn, conn_state *cs, wk__reply *r,
                                  bool close) {
    cs->answered = true;
    if (r->hangup) {
        free(r->body);
        return MHD_NO; /* the client is gone: close the connection */
    }
    struct MHD_Response *resp = r->stream;
    unsigned status = r->stream ? 200 : r->status;
    if (!resp) {
        resp = MHD_create_response_from_buffer(r->n, r->body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
            free(r->body);
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type", r->ctype ? r->ctype : "application/json");
    }
    if (r->retry_after > 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", r->retry_after);
        MHD_add_response_header(resp, "Retry-After", v);
    }
    if (status == 405 && cs->allow) MHD_add_response_header(resp, "Allow", cs->allow);
    if (close) MHD_add_response_header(resp, "Connection", "close");
    enum MHD_Result ok = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    wk__srv_count(s, cs->endpoint, status);
    return ok;
}

/* Answers given before the body is read: unknown route, wrong method, no
 * key, too large, shutting down. status 0: none of those. */
static void early(wk__srv *s, struct MHD_Connection *conn, conn_state *cs, const char *method, wk__reply *r) {
    char msg[200];
    if (cs->route == R_NONE) {
        wk__reply_error(r, 404, "unknown path (try /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/models, "
                                "/health, /metrics)", NULL);
    } else if (strcmp(method, cs->allow) && !(cs->route != R_NONE && !strcmp(method, "HEAD") && !strcmp(cs->allow, "GET"))) {
        snprintf(msg, sizeof msg, "method %.20s is not allowed here (use %s)", method, cs->allow);
        wk__reply_error(r, 405, msg, NULL);
    } else if (cs->route != R_HEALTH && !authorized(s, conn)) {
        wk__reply_error(r, 401, "missing or wrong API key (send 'Authorization: Bearer KEY')", NULL);
    } else if (atomic_load(&s->state) != WK__SRV_READY && cs->route != R_HEALTH && cs->route != R_METRICS) {
        wk__reply_error(r, 503, "the server is shutting down", NULL);
    } else {
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        if (cl) {
            char *end;
            unsigned long long v = strtoull(cl, &end, 10);
            if (v > (unsigned long long)s->max_body) {
                snprintf(msg, sizeof msg, "the request body has %llu bytes, more than this server's limit of %lld", v,
                         (long long)s->max_body);
                wk__reply_error(r, 413, msg, NULL);
            }
        }
    }
}

static void dispatch(wk__srv *s, struct MHD_Connection *conn, conn_state *cs, wk__reply *r) {
    const char *b = cs->body.p ? cs->body.p : "";
    size_t n = cs->body.n;
    if (cs->body.oom) {
        wk__reply_error(r, 500, "no memory for the request body", NULL);
        return;
    }
    switch (cs->route) {
    case R_CHAT: wk__srv_generate(s, conn, WK__HREQ_CHAT, b, n, r); break;
    case R_COMPLETIONS: wk__srv_generate(s, conn, WK__HREQ_COMPLETION, b, n, r); break;
    case R_EMBEDDINGS: wk__srv_embeddings(s, b, n, r); break;
    case R_MODELS: wk__srv_models(s, r); break;
    case R_HEALTH: wk__srv_health(s, r); break;
    case R_METRICS: wk__srv_metrics(s, r); break;
    case R_NONE: wk__reply_error(r, 404, "unknown path", NULL); break;
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    wk__srv *s = cls;
    conn_state *cs = *con_cls;
    wk__reply r = {0};
    if (!cs) {
        if (!(cs = calloc(1, sizeof *cs))) return MHD_NO;
        *con_cls = cs;
        atomic_fetch_add(&s->active, 1);
        cs->endpoint = WK__EP_OTHER;
        for (size_t i = 0; i < sizeof ROUTES / sizeof ROUTES[0]; i++)
            if (!strcmp(url, ROUTES[i].path)) {
                cs->route = ROUTES[i].id;
                cs->allow = ROUTES[i].method;
                cs->endpoint = ROUTES[i].endpoint;
            }
        early(s, conn, cs, method, &r);
        /* answered before the body: close after it, so an unread body is not taken for the next request */
        if (r.status) return send_reply(s, conn, cs, &r, true);
        return MHD_YES;
    }
    if (cs->answered) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size) {
        if (cs->body.n + *upload_size > (size_t)s->max_body) cs->too_big = true;
        else wk__sbuf_put(&cs->body, upload, *upload_size);
        *upload_size = 0;
        if (cs->too_big) {
            /* a body without Content-Length (chunked) that grew past the
             * limit: answer now, read no more. The 413 is sent, but the
             * close with the client's bytes still unread resets the
             * connection, and a client still sending may lose the answer
             * (TCP's rule, not the server's); what matters is that the
             * server stops reading at the limit */
            char msg[160];
            snprintf(msg, sizeof msg, "the request body is larger than this server's limit of %lld bytes",
                     (long long)s->max_body);
            wk__reply_error(&r, 413, msg, NULL);
            return send_reply(s, conn, cs, &r, true);
        }
        return MHD_YES;
    }
    dispatch(s, conn, cs, &r);
    return send_reply(s, conn, cs, &r, false);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode t) {
    (void)conn;
    (void)t;
    wk__srv *s = cls;
    conn_state *cs = *con_cls;
    if (!cs) return;
    wk__sbuf_free(&cs->body);
    free(cs);
    *con_cls = NULL;
    atomic_fetch_sub(&s->active, 1);
}

struct MHD_Daemon *wk__srv_listen(wk__srv *s, const char *host, int *port, int max_conns, int timeout_s) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", *port);
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc != 0 || !ai) {
        fprintf(stderr, "wick serve: --host %s: %s\n", host, gai_strerror(rc));
        return NULL;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)*port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)max_conns, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)256 * 1024, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!d) {
        fprintf(stderr, "wick serve: cannot listen on %s port %d (in use, or not an address of this machine?)\n", host,
                *port);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    if (di && di->port) *port = di->port;
    return d;
}
