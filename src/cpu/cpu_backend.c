/* The CPU backend table, memory entries and the seedable generator (its
 * state is the CPU device's private state, see cpu_device.c). */
#include "tensor/tensor.h"
#include "cpu/memory/cpu_alloc.h"
#include "cpu/cpu_backend.h"
#include "cpu/runtime/cpu_rng.h"
#include "cpu/elementwise/cpu_convert.h"
#include "cpu/quantized/cpu_quant.h"
#include "cpu/quantized/qdot.h"
#include "cpu/quantized/qmatmul_multi.h"
#include "cpu/vmath/vmath.h"

static wk_status cpu_alloc(wk_device *dev, size_t nbytes, void **buf) {
    (void)dev;
    *buf = wk__cpu_alloc(nbytes);
    return *buf ? WK_OK : WK_ERR_OOM;
}

static void cpu_free(wk_device *dev, void *buf, size_t nbytes) {
    (void)dev;
    wk__cpu_free(buf, nbytes);
}

static wk_status cpu_synchronize(wk_device *dev) {
    (void)dev;
    return WK_OK; /* CPU ops have finished when they return */
}

/* ---- random numbers: xoshiro256** seeded through splitmix64 ---- */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void wk__cpu_rng_init(wk_cpu_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static inline uint64_t next_u64(uint64_t *s) {
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}
/* uniform double in [0, 1) with 53 random bits */
static inline double next_unit(uint64_t *s) { return (double)(next_u64(s) >> 11) * 0x1p-53; }

/* The generator is the device's private state (wk_device.priv). */
static wk_cpu_rng *rng_lock(wk_device *d) {
    wk_cpu_rng *r = d->priv;
    while (atomic_flag_test_and_set_explicit(&r->lock, memory_order_acquire)) {}
    return r;
}
static void rng_unlock(wk_cpu_rng *r) { atomic_flag_clear_explicit(&r->lock, memory_order_release); }

wk_status wk__cpu_set_seed(wk_device *dev, uint64_t seed) {
    wk_cpu_rng *r = rng_lock(dev);
    wk__cpu_rng_init(r, seed);
    dev->seed = seed;
    rng_unlock(r);
    return WK_OK;
}

wk_status wk__cpu_rand_uniform(wk_device *dev, void *dst, int64_t n, wk_dtype dt, double lo, double hi) {
    wk_cpu_rng *r = rng_lock(dev);
    for (int64_t i = 0; i < n; i++) {
        double v = lo + (hi - lo) * next_unit(r->s);
        wk__store_f64(dst, i, dt, v);
        /* rounding to a narrow dtype can land on hi; keep the interval half-open */
        if (dt != WK_F64 && hi > lo && wk__load_f64(dst, i, dt) >= hi) wk__store_f64(dst, i, dt, lo);
    }
    rng_unlock(r);
    return WK_OK;
}

wk_status wk__cpu_rand_normal(wk_device *dev, void *dst, int64_t n, wk_dtype dt, double mean, double std) {
    wk_cpu_rng *r = rng_lock(dev);
    /* Box-Muller, both outputs used */
    for (int64_t i = 0; i < n; i += 2) {
        double u1 = 1.0 - next_unit(r->s), u2 = next_unit(r->s);
        double rad = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
        wk__store_f64(dst, i, dt, mean + std * rad * cos(th));
        if (i + 1 < n) wk__store_f64(dst, i + 1, dt, mean + std * rad * sin(th));
    }
    rng_unlock(r);
    return WK_OK;
}

const char *wk_cpu_isa(void) { return wk__vmath_isa(); }

const wk_backend wk__cpu_backend = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .from_host = wk__cpu_from_host,
    .to_host = wk__cpu_to_host,
    .copy_strided = wk__cpu_copy_strided,
    .fill = wk__cpu_fill,
    .cast = wk__cpu_cast,
    .unary = wk__cpu_unary,
    .affine = wk__cpu_affine,
    .powf = wk__cpu_powf,
    .elu = wk__cpu_elu,
    .clamp = wk__cpu_clamp,
    .binary = wk__cpu_binary,
    .cmp = wk__cpu_cmp,
    .where = wk__cpu_where,
    .reduce = wk__cpu_reduce,
    .matmul = wk__cpu_matmul,
    .index_select = wk__cpu_index_select,
    .gather = wk__cpu_gather,
    .scatter = wk__cpu_scatter,
    .index_add = wk__cpu_index_add,
    .conv = wk__cpu_conv,
    .pool2d = wk__cpu_pool2d,
    .upsample2d = wk__cpu_upsample2d,
    .scan = wk__cpu_scan,
    .sort = wk__cpu_sort,
    .topk = wk__cpu_topk,
    .rand_uniform = wk__cpu_rand_uniform,
    .rand_normal = wk__cpu_rand_normal,
    .set_seed = wk__cpu_set_seed,
    .synchronize = cpu_synchronize,
    /* optional: fused kernels in cpu_nn.c, cpu_rope.c, cpu_attention.c */
    .softmax = wk__cpu_softmax,
    .log_softmax = wk__cpu_log_softmax,
    .rms_norm = wk__cpu_rms_norm,
    .layer_norm = wk__cpu_layer_norm,
    .rope = wk__cpu_rope,
    .swiglu = wk__cpu_swiglu,
    .attention = wk__cpu_attention,
    /* autograd (grad_nn): cpu_nn_backward.c, cpu_attention_backward.c */
    .softmax_backward = wk__cpu_softmax_backward,
    .norm_backward = wk__cpu_norm_backward,
    .attention_backward = wk__cpu_attention_backward,
    /* block dtypes: cpu_quant.c */
    .dequantize = wk__cpu_dequantize,
    .quantize = wk__cpu_quantize,
    .qmatmul = wk__cpu_qmatmul,
    .qmatmul_multi = wk__cpu_qmatmul_multi,
    /* optional autograd entries: cpu_pool_backward.c */
    .pool2d_backward = wk__cpu_pool2d_backward,
    .upsample2d_backward = wk__cpu_upsample2d_backward,
    /* training: cpu_optim.c */
    .optim_step = wk__cpu_optim_step,
};
