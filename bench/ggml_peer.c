/* The dlopen shim of ggml_peer.h. The structs and prototypes below restate
 * ggml's public ABI (llama-cpp-python 0.3.36's vendor/llama.cpp/ggml/include:
 * ggml.h, ggml-cpu.h); only pointers to ggml's own structs are held, never
 * their layout, except the three small by-value structs ggml's API takes or
 * returns (init params, compute plan, threadpool params). */
#include "ggml_peer.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ggml's ABI (restated, see the file comment) ---- */

struct gp_init_params { /* struct ggml_init_params */
    size_t mem_size;
    void *mem_buffer;
    bool no_alloc;
};

struct gp_cplan { /* struct ggml_cplan (ggml-cpu.h) */
    size_t work_size;
    uint8_t *work_data;
    int n_threads;
    void *threadpool;
    bool (*abort_callback)(void *data);
    void *abort_callback_data;
    bool use_ref;
};

#define GP_MAX_N_THREADS 512 /* GGML_MAX_N_THREADS */
struct gp_threadpool_params { /* struct ggml_threadpool_params */
    bool cpumask[GP_MAX_N_THREADS];
    int n_threads;
    int prio; /* enum ggml_sched_priority */
    uint32_t poll;
    bool strict_cpu;
    bool paused;
};

static struct {
    void *(*init)(struct gp_init_params);
    void (*free)(void *ctx);
    void *(*new_tensor_2d)(void *ctx, int type, int64_t ne0, int64_t ne1);
    void *(*mul_mat)(void *ctx, void *a, void *b);
    void *(*new_graph)(void *ctx);
    void (*build_forward_expand)(void *graph, void *tensor);
    struct gp_cplan (*graph_plan)(const void *graph, int n_threads, void *threadpool);
    int (*graph_compute)(void *graph, struct gp_cplan *plan);
    void *(*get_data)(const void *tensor);
    size_t (*row_size)(int type, int64_t ne);
    size_t (*quantize_chunk)(int type, const float *src, void *dst, int64_t start, int64_t nrows,
                             int64_t n_per_row, const float *imatrix);
    size_t (*tensor_overhead)(void);
    size_t (*graph_overhead)(void);
    struct gp_threadpool_params (*threadpool_params_default)(int n_threads);
    void *(*threadpool_new)(struct gp_threadpool_params *params);
    void (*threadpool_free)(void *tp);
    void (*threadpool_pause)(void *tp);
    void (*cpu_init)(void);                 /* optional */
    const char *(*version)(void);           /* optional */
    const char *(*commit)(void);            /* optional */
} G;

static int g_state; /* 0 not tried, 1 loaded, -1 failed */
static char g_why[512];
static char g_version[128];
static char g_features[128];
static void *g_pools[65]; /* threadpool per thread count */

/* dlopen dir/name, else dir/name.0 (a build tree has only the versioned
 * file plus links), its symbols global (see ggml_peer_open). */
static void *open_lib(const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (h) return h;
    snprintf(path, sizeof path, "%s/%s.0", dir, name);
    return dlopen(path, RTLD_NOW | RTLD_GLOBAL);
}

#define GP_SYM(h, field, sym)                                                           \
    do {                                                                                 \
        *(void **)(&G.field) = dlsym(h, sym);                                            \
        if (!G.field && required) {                                                      \
            snprintf(g_why, sizeof g_why, "peer not found: %s lacks %s", lib_dir, sym);  \
            return false;                                                                \
        }                                                                                \
    } while (0)

static bool resolve(void *h, const char *lib_dir) {
    bool required = true;
    GP_SYM(h, init, "ggml_init");
    GP_SYM(h, free, "ggml_free");
    GP_SYM(h, new_tensor_2d, "ggml_new_tensor_2d");
    GP_SYM(h, mul_mat, "ggml_mul_mat");
    GP_SYM(h, new_graph, "ggml_new_graph");
    GP_SYM(h, build_forward_expand, "ggml_build_forward_expand");
    GP_SYM(h, graph_plan, "ggml_graph_plan");
    GP_SYM(h, graph_compute, "ggml_graph_compute");
    GP_SYM(h, get_data, "ggml_get_data");
    GP_SYM(h, row_size, "ggml_row_size");
    GP_SYM(h, quantize_chunk, "ggml_quantize_chunk");
    GP_SYM(h, tensor_overhead, "ggml_tensor_overhead");
    GP_SYM(h, graph_overhead, "ggml_graph_overhead");
    GP_SYM(h, threadpool_params_default, "ggml_threadpool_params_default");
    GP_SYM(h, threadpool_new, "ggml_threadpool_new");
    GP_SYM(h, threadpool_free, "ggml_threadpool_free");
    GP_SYM(h, threadpool_pause, "ggml_threadpool_pause");
    required = false;
    GP_SYM(h, cpu_init, "ggml_cpu_init");
    GP_SYM(h, version, "ggml_version");
    GP_SYM(h, commit, "ggml_commit");
    return true;
}

static void describe(void *h) {
    if (G.version) snprintf(g_version, sizeof g_version, "ggml %s%s%s%s", G.version(), G.commit ? " (" : "",
                            G.commit ? G.commit() : "", G.commit ? ")" : "");
    static const char *const feats[][2] = {
        {"ggml_cpu_has_avx2", "AVX2"},         {"ggml_cpu_has_avx512", "AVX512"},
        {"ggml_cpu_has_avx512_vnni", "VNNI"},  {"ggml_cpu_has_avx512_bf16", "AVX512_BF16"},
        {"ggml_cpu_has_llamafile", "LLAMAFILE"},
    };
    size_t used = 0;
    for (size_t i = 0; i < sizeof feats / sizeof feats[0]; i++) {
        int (*has)(void);
        *(void **)(&has) = dlsym(h, feats[i][0]);
        if (has && has() && used + 16 < sizeof g_features)
            used += (size_t)snprintf(g_features + used, sizeof g_features - used, "%s%s", used ? " " : "",
                                     feats[i][1]);
    }
}

bool ggml_peer_open(const char *lib_dir, char *why, size_t len) {
    if (g_state == 0) {
        g_state = -1;
        if (!lib_dir || !lib_dir[0]) {
            snprintf(g_why, sizeof g_why, "peer not found: no ggml library directory given");
        } else {
            /* base first (RTLD_GLOBAL), so the CPU library's dependency on
             * it resolves to this copy whatever its RPATH says. */
            void *base = open_lib(lib_dir, "libggml-base.so");
            void *cpu = base ? open_lib(lib_dir, "libggml-cpu.so") : NULL;
            if (!base || !cpu) {
                const char *e = dlerror();
                snprintf(g_why, sizeof g_why, "peer not found: %s", e ? e : "dlopen failed");
            } else if (resolve(cpu, lib_dir)) {
                /* dlsym on the CPU library's handle also searches its
                 * dependencies, libggml-base.so among them */
                g_state = 1;
            }
            if (g_state == 1) {
                if (G.cpu_init) G.cpu_init();
                describe(cpu);
            }
        }
    }
    if (g_state != 1 && why && len) snprintf(why, len, "%s", g_why);
    return g_state == 1;
}

bool ggml_peer_loaded(void) { return g_state == 1; }
const char *ggml_peer_version(void) { return g_version; }
const char *ggml_peer_cpu_features(void) { return g_features; }

size_t ggml_peer_row_size(int type, int64_t k) { return g_state == 1 ? G.row_size(type, k) : 0; }

size_t ggml_peer_quantize(int type, const float *src, void *dst, int64_t nrows, int64_t k) {
    if (g_state != 1) return 0;
    return G.quantize_chunk(type, src, dst, 0, nrows, k, NULL);
}

struct ggml_peer_mm {
    void *ctx, *w, *x, *y, *graph;
    size_t w_bytes;
    uint8_t *work;
    size_t work_cap;
};

ggml_peer_mm *ggml_peer_mm_new(int type, int64_t n, int64_t k, int64_t m) {
    if (g_state != 1 || n <= 0 || k <= 0 || m <= 0) return NULL;
    ggml_peer_mm *mm = calloc(1, sizeof *mm);
    if (!mm) return NULL;
    mm->w_bytes = G.row_size(type, k) * (size_t)n;
    size_t bytes = mm->w_bytes + (size_t)(m * k + m * n) * sizeof(float) + 4 * G.tensor_overhead() +
                   G.graph_overhead() + (1u << 20);
    mm->ctx = G.init((struct gp_init_params){bytes, NULL, false});
    if (!mm->ctx) { free(mm); return NULL; }
    mm->w = G.new_tensor_2d(mm->ctx, type, k, n);
    mm->x = G.new_tensor_2d(mm->ctx, GGMLP_F32, k, m);
    mm->y = mm->w && mm->x ? G.mul_mat(mm->ctx, mm->w, mm->x) : NULL;
    mm->graph = mm->y ? G.new_graph(mm->ctx) : NULL;
    if (!mm->graph) { ggml_peer_mm_free(mm); return NULL; }
    G.build_forward_expand(mm->graph, mm->y);
    return mm;
}

void ggml_peer_mm_free(ggml_peer_mm *mm) {
    if (!mm) return;
    if (mm->ctx) G.free(mm->ctx);
    free(mm->work);
    free(mm);
}

void *ggml_peer_mm_weights(ggml_peer_mm *mm) { return G.get_data(mm->w); }
size_t ggml_peer_mm_weight_bytes(const ggml_peer_mm *mm) { return mm->w_bytes; }
float *ggml_peer_mm_x(ggml_peer_mm *mm) { return G.get_data(mm->x); }
const float *ggml_peer_mm_y(const ggml_peer_mm *mm) { return G.get_data(mm->y); }

bool ggml_peer_mm_run(ggml_peer_mm *mm, int n_threads) {
    if (!mm || n_threads < 1 || n_threads > 64) return false;
    if (!g_pools[n_threads]) {
        struct gp_threadpool_params p = G.threadpool_params_default(n_threads);
        g_pools[n_threads] = G.threadpool_new(&p);
        if (!g_pools[n_threads]) return false;
    }
    struct gp_cplan plan = G.graph_plan(mm->graph, n_threads, g_pools[n_threads]);
    if (plan.work_size > mm->work_cap) {
        /* the work buffer (x quantized to the partner type, per-thread
         * scratch) is allocated once, outside the timed calls' steady state */
        free(mm->work);
        mm->work = malloc(plan.work_size);
        mm->work_cap = mm->work ? plan.work_size : 0;
        if (!mm->work) return false;
    }
    plan.work_data = mm->work;
    return G.graph_compute(mm->graph, &plan) == 0;
}

void ggml_peer_pause(void) {
    if (g_state != 1) return;
    for (int i = 0; i <= 64; i++)
        if (g_pools[i]) G.threadpool_pause(g_pools[i]);
}

void ggml_peer_close(void) {
    if (g_state != 1) return;
    for (int i = 0; i <= 64; i++)
        if (g_pools[i]) G.threadpool_free(g_pools[i]), g_pools[i] = NULL;
}
