/* The backend contract (src/tensor/backend.h) and the registry:
 *  - every required entry of the CPU table (and of the CUDA table when it is
 *    compiled in) is set; the table is walked as an array of function
 *    pointers after `name`, so an entry added later is checked without
 *    touching this test;
 *  - the built-in backends are registered and the library reaches them only
 *    through descriptors (wk_cpu, wk_backends, memory counters);
 *  - a backend with the required entries only (a copy of the CPU table with
 *    every optional entry cleared, registered as "cpu-required") runs
 *    everything, and the dispatcher's composites there give the results of
 *    the CPU's fused entries. */
#include "testutil.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"

typedef void (*any_fn)(void);

/* Entry i of a backend table, read as bytes (no aliasing games). */
static any_fn entry(const wk_backend *be, size_t i) {
    any_fn f;
    memcpy(&f, (const char *)be + sizeof(const char *) + i * sizeof(any_fn), sizeof f);
    return f;
}
static size_t index_of_softmax(void) { return (offsetof(wk_backend, softmax) - sizeof(const char *)) / sizeof(any_fn); }

static void test_layout_of_the_table(void **state) {
    (void)state;
    /* the macro covers the struct exactly: name, then only function pointers */
    assert_int_equal(offsetof(wk_backend, alloc), sizeof(const char *));
    assert_int_equal(sizeof(wk_backend), sizeof(const char *) + WK_BACKEND_NUM_ENTRIES * sizeof(any_fn));
    assert_true(WK_BACKEND_NUM_ENTRIES >= 21);
    /* the optional part starts right after synchronize */
    assert_int_equal(WK_BACKEND_NUM_REQUIRED, index_of_softmax());
    assert_true(WK_BACKEND_NUM_REQUIRED < WK_BACKEND_NUM_ENTRIES);
    assert_true(offsetof(wk_backend, copy_between) < sizeof(wk_backend));
    assert_int_equal((offsetof(wk_backend, matmul) - sizeof(const char *)) % sizeof(any_fn), 0);
}

static void check_required(const wk_backend *be) {
    size_t missing = 0;
    for (size_t i = 0; i < WK_BACKEND_NUM_REQUIRED; i++) {
        if (!entry(be, i)) {
            print_error("%s: required entry %zu (after name) is NULL\n", be->name, i);
            missing++;
        }
    }
    assert_int_equal(missing, 0);
    /* entries are distinct functions except where one kernel may serve two */
    size_t distinct = 0;
    for (size_t i = 0; i < WK_BACKEND_NUM_REQUIRED; i++) {
        bool seen = false;
        for (size_t j = 0; j < i; j++) seen = seen || entry(be, j) == entry(be, i);
        distinct += !seen;
    }
    assert_true(distinct >= WK_BACKEND_NUM_REQUIRED / 2);
}

static void test_cpu_backend_complete(void **state) {
    (void)state;
    const wk_backend *be = &wk__cpu_backend;
    assert_non_null(be->name);
    assert_string_equal(be->name, "cpu");
    check_required(be);
    /* the walk reads the same pointers as the named fields */
    any_fn first, sync;
    memcpy(&first, &be->alloc, sizeof first);
    memcpy(&sync, &be->synchronize, sizeof sync);
    assert_true(entry(be, 0) == first);
    assert_true(entry(be, WK_BACKEND_NUM_REQUIRED - 1) == sync);
    /* the CPU's fused kernels (cpu_nn.c) are in; the rest are composites */
    assert_non_null(be->softmax);
    assert_non_null(be->log_softmax);
    assert_non_null(be->rms_norm);
    assert_non_null(be->layer_norm);
    assert_non_null(be->qmatmul); /* cpu/quantized/qmatmul.c */
    assert_non_null(be->dequantize); /* cpu_quant.c */
    assert_non_null(be->quantize);
}

#ifdef WICK_HAVE_CUDA
extern const wk_backend wk__cuda_backend;

/* With the CUDA backend compiled in (WICK_CUDA), its required entries are
 * set too, none shared with the CPU table, and it has the peer copy. */
static void test_cuda_backend_complete(void **state) {
    (void)state;
    const wk_backend *be = &wk__cuda_backend;
    assert_string_equal(be->name, "cuda");
    check_required(be);
    for (size_t i = 0; i < WK_BACKEND_NUM_REQUIRED; i++) assert_true(entry(be, i) != entry(&wk__cpu_backend, i));
    assert_non_null(be->copy_between);
    const wk_backend_desc *d = wk__backend_find("cuda");
    assert_non_null(d);
    assert_true(d->ops == be);
    assert_int_equal(d->kind, WK_DEVICE_CUDA);
}
#endif

static void test_cpu_device_uses_the_table(void **state) {
    (void)state;
    /* the trivial entries behave as the contract says */
    assert_int_equal(wk__cpu_backend.synchronize(wk_cpu()), WK_OK);
    void *buf = NULL;
    assert_int_equal(wk__cpu_backend.alloc(wk_cpu(), 0, &buf), WK_OK);
    assert_non_null(buf); /* nbytes 0 still gives a valid pointer */
    wk__cpu_backend.free(wk_cpu(), buf, 0);
    assert_int_equal(wk__cpu_backend.alloc(wk_cpu(), 256, &buf), WK_OK);
    assert_non_null(buf);
    const char src[8] = "abcdefg";
    assert_int_equal(wk__cpu_backend.from_host(wk_cpu(), buf, 16, src, sizeof src), WK_OK);
    assert_memory_equal((char *)buf + 16, src, sizeof src);
    wk__cpu_backend.free(wk_cpu(), buf, 256);
    assert_string_equal(wk_device_name(wk_cpu()), wk__cpu_backend.name);
}

/* ---- the registry ---- */

static void test_registry_builtins(void **state) {
    (void)state;
    const wk_backend_desc *cpu = wk__backend_find("cpu");
    assert_non_null(cpu);
    assert_true(cpu == wk__backend_of_kind(WK_DEVICE_CPU));
    assert_true(cpu == wk__backend_at(0));
    assert_true(cpu->ops == &wk__cpu_backend);
    assert_true(cpu->open(0) == wk_cpu());
    assert_true(wk_cpu()->desc == cpu);
    assert_null(cpu->open(1));
    assert_int_equal(wk_last_status(), WK_ERR_DEVICE);
    wk_clear_error();
    assert_int_equal(cpu->device_count(), 1);
    /* wk_backends() lists the registered built-ins in order */
#ifdef WICK_HAVE_CUDA
    assert_string_equal(wk_backends(), "cpu cuda");
#else
    assert_string_equal(wk_backends(), "cpu");
    assert_null(wk__backend_of_kind(WK_DEVICE_CUDA));
    assert_null(wk_cuda(0));
    assert_int_equal(wk_last_status(), WK_ERR_NOT_COMPILED);
    wk_clear_error();
    assert_int_equal(wk_cuda_device_count(), 0);
#endif
    assert_null(wk__backend_find("no-such-backend"));
    /* memory counters come from the descriptor */
    wk_memory_stats ms;
    assert_int_equal(wk_device_memory_stats(wk_cpu(), &ms), WK_OK);
    int64_t shape[1] = {1000};
    wk_tensor *t = TU_OK(wk_zeros(shape, 1, WK_F32, wk_cpu()));
    wk_memory_stats ms2;
    assert_int_equal(wk_device_memory_stats(wk_cpu(), &ms2), WK_OK);
    assert_true(ms2.bytes_in_use >= ms.bytes_in_use + 4000);
    wk_tensor_free(t);
    size_t released = 0;
    assert_int_equal(wk_device_release_cache(wk_cpu(), &released), WK_OK);
}

/* ---- a backend with the required entries only ---- */

static wk_backend g_req_table;
static wk_backend_desc g_req_desc;
static wk_device g_req_dev;

static wk_device *req_open(int ordinal) {
    if (ordinal != 0) {
        wk__err(WK_ERR_DEVICE, "req_open", "cpu-required has one device");
        return NULL;
    }
    return &g_req_dev;
}
static int req_count(void) { return 1; }

static void register_required_only(void) {
    static bool done;
    if (done) return;
    done = true;
    g_req_table = wk__cpu_backend;
    g_req_table.name = "cpu-required";
    /* clear every optional entry */
    memset((char *)&g_req_table + offsetof(wk_backend, softmax), 0, sizeof(wk_backend) - offsetof(wk_backend, softmax));
    g_req_desc = (wk_backend_desc){.name = "cpu-required", .kind = WK_DEVICE_CPU, .ops = &g_req_table,
                                   .open = req_open, .device_count = req_count};
    /* a CPU-kind device (host buffers) with its own table; it shares the
     * CPU's generator state, which the copied rand entries expect */
    g_req_dev = (wk_device){.kind = WK_DEVICE_CPU, .ordinal = 0, .instance = 1000, .be = &g_req_table,
                            .desc = &g_req_desc, .name = "cpu-required", .seed = 0, .priv = wk_cpu()->priv};
    assert_int_equal(wk__backend_register(&g_req_desc), WK_OK);
}

static wk_device *req_dev(void) {
    register_required_only();
    const wk_backend_desc *d = wk__backend_find("cpu-required");
    assert_non_null(d);
    wk_device *dev = d->open(0);
    assert_true(dev == &g_req_dev);
    return dev;
}

/* The DLPack stream comes from the device's backend descriptor (the tensor
 * floor names no backend): 0 without a stream entry, the entry's value
 * with one. */
static uintptr_t fake_stream(const wk_device *dev) { return dev->instance == 1000 ? 0x5eed : 0; }

static void test_device_stream_through_desc(void **state) {
    (void)state;
    assert_int_equal(wk__device_stream(NULL), 0);
    assert_int_equal(wk__device_stream(wk_cpu()), 0);
    wk_device *dev = req_dev();
    assert_int_equal(wk__device_stream(dev), 0);
    g_req_desc.stream = fake_stream;
    assert_int_equal(wk__device_stream(dev), 0x5eed);
    g_req_desc.stream = NULL;
}

static void test_register_rejects(void **state) {
    (void)state;
    register_required_only();
    /* the same name twice, and a descriptor without open */
    assert_int_equal(wk__backend_register(&g_req_desc), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "cpu-required"));
    wk_clear_error();
    wk_backend_desc bad = g_req_desc;
    bad.name = "bad";
    bad.open = NULL;
    assert_int_equal(wk__backend_register(&bad), WK_ERR_ARG);
    wk_clear_error();
    assert_null(wk__backend_find("bad"));
    /* no counters / cache on a backend that gives none */
    wk_memory_stats ms;
    assert_int_equal(wk_device_memory_stats(req_dev(), &ms), WK_ERR_DEVICE);
    assert_int_equal(wk_device_release_cache(req_dev(), NULL), WK_ERR_DEVICE);
    wk_clear_error();
}

static uint64_t g_lcg = 12345;
static double rnd(void) {
    g_lcg = g_lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(g_lcg >> 11) * 0x1p-53 * 2.0 - 1.0;
}

/* The same values on the CPU and on the required-only device. */
static void pair(const int64_t *shape, int rank, wk_dtype dt, double scale, wk_tensor **cpu, wk_tensor **req) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = rnd() * scale;
    wk_tensor *f = TU_OK(wk_from_host(v, sizeof(double) * (size_t)n, shape, rank, WK_F64, wk_cpu()));
    free(v);
    *cpu = TU_OK(wk_to_dtype(f, dt));
    *req = TU_OK(wk_to_device(*cpu, req_dev()));
    assert_true(wk_tensor_device(*req) == req_dev());
    wk_tensor_free(f);
}

static double tol_of(wk_dtype dt) {
    return dt == WK_F64 ? 1e-12 : dt == WK_F32 ? 2e-6 : dt == WK_F16 ? 2e-3 : 1.6e-2;
}

/* fused (CPU) and composite (required-only) results agree */
static void agree(const char *what, wk_tensor *fused, wk_tensor *comp, wk_dtype dt) {
    if (!fused || !comp) print_error("%s: %s\n", what, wk_last_error());
    assert_non_null(fused);
    assert_non_null(comp);
    assert_true(wk_tensor_device(comp) == req_dev());
    wk_tensor *back = TU_OK(wk_to_device(comp, wk_cpu()));
    assert_int_equal(wk_tensor_dtype(fused), dt);
    tu_assert_matches(what, back, fused, tol_of(dt), tol_of(dt));
    wk_tensor_free(back);
    wk_tensor_free(fused);
    wk_tensor_free(comp);
}

static const wk_dtype k_float_dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16};

static void test_composites_match_fused(void **state) {
    (void)state;
    for (size_t di = 0; di < sizeof k_float_dts / sizeof *k_float_dts; di++) {
        wk_dtype dt = k_float_dts[di];
        int64_t shape[3] = {3, 5, 17};
        wk_tensor *c, *r;
        pair(shape, 3, dt, 4.0, &c, &r);
        /* contiguous, every dim, negative dims, large magnitudes */
        for (int d = -3; d < 3; d++) {
            agree("softmax", wk_softmax(c, d), wk_softmax(r, d), dt);
            agree("log_softmax", wk_log_softmax(c, d), wk_log_softmax(r, d), dt);
        }
        wk_tensor *cb = TU_OK(wk_affine(c, 1000.0, 0.0)), *rb = TU_OK(wk_affine(r, 1000.0, 0.0));
        if (dt == WK_F32 || dt == WK_F64) {
            agree("softmax large", wk_softmax(cb, -1), wk_softmax(rb, -1), dt);
            agree("log_softmax large", wk_log_softmax(cb, -1), wk_log_softmax(rb, -1), dt);
        }
        /* non-contiguous input */
        wk_tensor *ct = TU_OK(wk_transpose(c, 0, 2)), *rt = TU_OK(wk_transpose(r, 0, 2));
        agree("softmax transposed", wk_softmax(ct, 1), wk_softmax(rt, 1), dt);
        agree("log_softmax transposed", wk_log_softmax(ct, -1), wk_log_softmax(rt, -1), dt);
        /* norms, with and without weight / bias, on a transposed view */
        int64_t wshape[1] = {3};
        wk_tensor *cw, *rw, *cbias, *rbias;
        pair(wshape, 1, dt, 1.0, &cw, &rw);
        pair(wshape, 1, dt, 1.0, &cbias, &rbias);
        agree("rms_norm", wk_rms_norm(ct, cw, 1e-5), wk_rms_norm(rt, rw, 1e-5), dt);
        agree("rms_norm no weight", wk_rms_norm(ct, NULL, 1e-6), wk_rms_norm(rt, NULL, 1e-6), dt);
        agree("layer_norm", wk_layer_norm(ct, cw, cbias, 1e-5), wk_layer_norm(rt, rw, rbias, 1e-5), dt);
        agree("layer_norm weight only", wk_layer_norm(ct, cw, NULL, 1e-5), wk_layer_norm(rt, rw, NULL, 1e-5), dt);
        wk_tensor *c17 = TU_OK(wk_narrow(c, 2, 1, 13)), *r17 = TU_OK(wk_narrow(r, 2, 1, 13));
        agree("rms_norm narrowed", wk_rms_norm(c17, NULL, 1e-5), wk_rms_norm(r17, NULL, 1e-5), dt);
        agree("layer_norm narrowed", wk_layer_norm(c17, NULL, NULL, 1e-5), wk_layer_norm(r17, NULL, NULL, 1e-5), dt);
        wk_tensor *all[] = {c, r, cb, rb, ct, rt, cw, rw, cbias, rbias, c17, r17};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) wk_tensor_free(all[i]);
    }
}

/* softmax rows sum to one and follow exp on a hand-checked case (so the
 * agreement above cannot be two equal wrong answers) */
static void test_softmax_values(void **state) {
    (void)state;
    const float v[4] = {1, 2, 3, 1000};
    int64_t shape[2] = {2, 2};
    wk_tensor *c = tu_f32(v, shape, 2);
    wk_tensor *r = TU_OK(wk_to_device(c, req_dev()));
    double e1 = 1.0 / (1.0 + exp(1.0));
    const double want[4] = {e1, 1 - e1, 0, 1};
    const double want_log[4] = {log(e1), log(1 - e1), -997, 0};
    wk_tensor *ins[2] = {c, r};
    for (int i = 0; i < 2; i++) {
        for (int logp = 0; logp < 2; logp++) {
            wk_tensor *y = TU_OK(logp ? wk_log_softmax(ins[i], -1) : wk_softmax(ins[i], 1));
            wk_tensor *h = TU_OK(wk_to_device(y, wk_cpu()));
            tu_assert_close(h, logp ? want_log : want, 4, 1e-4, 1e-6);
            wk_tensor_free(h);
            wk_tensor_free(y);
        }
    }
    wk_tensor_free(r);
    wk_tensor_free(c);
}

/* The remaining fused ops are composites on both devices; they run on a
 * required-only backend and agree with the CPU. */
static void test_required_only_runs_everything(void **state) {
    (void)state;
    wk_dtype dt = WK_F32;
    int64_t xs[4] = {2, 3, 5, 8}, cs[2] = {5, 4};
    wk_tensor *cx, *rx, *cc, *rc, *csn, *rsn;
    pair(xs, 4, dt, 1.0, &cx, &rx);
    pair(cs, 2, dt, 1.0, &cc, &rc);
    pair(cs, 2, dt, 1.0, &csn, &rsn);
    agree("rope", wk_rope(cx, cc, csn, false), wk_rope(rx, rc, rsn, false), dt);
    agree("rope_i", wk_rope(cx, cc, csn, true), wk_rope(rx, rc, rsn, true), dt);
    int64_t qs[3] = {2, 5, 8}, ks[3] = {2, 7, 8}, vs[3] = {2, 7, 3}, ms[2] = {5, 7};
    wk_tensor *cq, *rq, *ck, *rk, *cv, *rv, *cm, *rm;
    pair(qs, 3, dt, 1.0, &cq, &rq);
    pair(ks, 3, dt, 1.0, &ck, &rk);
    pair(vs, 3, dt, 1.0, &cv, &rv);
    pair(ms, 2, dt, 1.0, &cm, &rm);
    agree("sdpa", wk_scaled_dot_product_attention(cq, ck, cv, NULL, 0, false),
          wk_scaled_dot_product_attention(rq, rk, rv, NULL, 0, false), dt);
    agree("sdpa causal mask", wk_scaled_dot_product_attention(cq, ck, cv, cm, 0.5, true),
          wk_scaled_dot_product_attention(rq, rk, rv, rm, 0.5, true), dt);
    /* required entries: conv, matmul, reductions, moves, random numbers */
    int64_t xs1[3] = {1, 2, 9}, ws1[3] = {3, 2, 3};
    wk_tensor *cx1, *rx1, *cw1, *rw1;
    pair(xs1, 3, dt, 1.0, &cx1, &rx1);
    pair(ws1, 3, dt, 1.0, &cw1, &rw1);
    wk_conv_params p = {.padding = 1, .stride = 2};
    agree("conv1d", wk_conv1d(cx1, cw1, &p), wk_conv1d(rx1, rw1, &p), dt);
    wk_tensor *cw1t = TU_OK(wk_transpose(cw1, 0, 1)), *rw1t = TU_OK(wk_transpose(rw1, 0, 1));
    agree("conv_transpose1d", wk_conv_transpose1d(cx1, cw1t, NULL), wk_conv_transpose1d(rx1, rw1t, NULL), dt);
    int64_t one[1] = {64};
    assert_int_equal(wk_device_set_seed(req_dev(), 7), WK_OK);
    assert_int_equal(wk_device_seed(req_dev()), 7);
    wk_tensor *a = TU_OK(wk_rand(one, 1, 0, 1, dt, req_dev()));
    assert_int_equal(wk_device_set_seed(req_dev(), 7), WK_OK);
    wk_tensor *b = TU_OK(wk_rand(one, 1, 0, 1, dt, req_dev()));
    wk_tensor *ah = TU_OK(wk_to_device(a, wk_cpu())), *bh = TU_OK(wk_to_device(b, wk_cpu()));
    assert_true(tu_max_abs_diff(ah, bh) == 0.0);
    wk_tensor *all[] = {cx, rx, cc, rc, csn, rsn, cq, rq, ck, rk, cv, rv, cm, rm,
                        cx1, rx1, cw1, rw1, cw1t, rw1t, a, b, ah, bh};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) wk_tensor_free(all[i]);
}

/* qmatmul / dequantize: no block dtype exists and no composite applies */
static void test_quantized_entries_answer_cleanly(void **state) {
    (void)state;
    int64_t s[2] = {2, 4};
    wk_tensor *x = TU_OK(wk_ones(s, 2, WK_F32, wk_cpu()));
    TU_FAILS(wk_qmatmul(x, x), WK_ERR_DTYPE);
    TU_FAILS(wk_dequantize(x, WK_F32), WK_ERR_DTYPE);
    wk_tensor *r = TU_OK(wk_to_device(x, req_dev()));
    assert_null(wk_dequantize(r, WK_F32));
    assert_non_null(strstr(wk_last_error(), "f32"));
    wk_clear_error();
    wk_tensor_free(r);
    wk_tensor_free(x);
}

/* The CPU generator is the device's private state: seeding twice repeats
 * the stream, and set_seed records the seed. */
static void test_rng_private_state(void **state) {
    (void)state;
    assert_non_null(wk_cpu()->priv);
    int64_t n[1] = {32};
    assert_int_equal(wk_device_set_seed(wk_cpu(), 99), WK_OK);
    assert_int_equal(wk_device_seed(wk_cpu()), 99);
    wk_tensor *a = TU_OK(wk_randn(n, 1, 0, 1, WK_F64, wk_cpu()));
    wk_tensor *b = TU_OK(wk_randn(n, 1, 0, 1, WK_F64, wk_cpu()));
    assert_true(tu_max_abs_diff(a, b) > 0.0);
    assert_int_equal(wk_device_set_seed(wk_cpu(), 99), WK_OK);
    wk_tensor *c = TU_OK(wk_randn(n, 1, 0, 1, WK_F64, wk_cpu()));
    assert_true(tu_max_abs_diff(a, c) == 0.0);
    wk_tensor_free(a);
    wk_tensor_free(b);
    wk_tensor_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_of_the_table),
        cmocka_unit_test(test_cpu_backend_complete),
        cmocka_unit_test(test_cpu_device_uses_the_table),
        cmocka_unit_test(test_registry_builtins),
        cmocka_unit_test(test_register_rejects),
        cmocka_unit_test(test_device_stream_through_desc),
        cmocka_unit_test(test_composites_match_fused),
        cmocka_unit_test(test_softmax_values),
        cmocka_unit_test(test_required_only_runs_everything),
        cmocka_unit_test(test_quantized_entries_answer_cleanly),
        cmocka_unit_test(test_rng_private_state),
#ifdef WICK_HAVE_CUDA
        cmocka_unit_test(test_cuda_backend_complete),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
