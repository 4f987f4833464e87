/* Per-ISA kernels of the CPU attention (cpu_attention.c) for the decode
 * step, one query row against a tile of keys: the scores, and p V. GEMV's
 * dot-product path ends each key with a serial chain of 16 scalar adds;
 * dots keeps four keys' accumulators in vector registers and reduces them
 * together (hadd). pv keeps the output row in registers (GEMV's row path
 * goes through memory) and adds p[j] * v_j with FMAs. Call only at the level the CPU has (the
 * choice follows wk_cpu_isa(), as the GEMM kernels do). */
#ifndef WICK_CPU_ATTENTION_H
#define WICK_CPU_ATTENTION_H
#include <stdint.h>

/* s[j] = sum_p q[p] * k[j * krs + p] for j < n: key rows contiguous. */
typedef void (*wk_attn_dots_fn)(const float *q, const float *k, int64_t krs, int64_t n, int64_t d, float *s);
void wk__attn_dots_f32_avx2(const float *q, const float *k, int64_t krs, int64_t n, int64_t d, float *s);
void wk__attn_dots_f32_avx512(const float *q, const float *k, int64_t krs, int64_t n, int64_t d, float *s);
/* o[e] = sum_j p[j] * v[j * vrs + e] for e < dv: value rows contiguous. */
typedef void (*wk_attn_pv_fn)(const float *p, const float *v, int64_t vrs, int64_t n, int64_t dv, float *o);
void wk__attn_pv_f32_avx2(const float *p, const float *v, int64_t vrs, int64_t n, int64_t dv, float *o);
void wk__attn_pv_f32_avx512(const float *p, const float *v, int64_t vrs, int64_t n, int64_t dv, float *o);

/* The same for an f16 / bf16 cache: k / v rows of 2-byte elements widened
 * in registers as they are read (cpu_attention_half.inc); q, p, s, o f32.
 * d and dv must be multiples of the vector width (16 on AVX-512, 8 on AVX2:
 * every real head size is); the caller widens tiles into f32 otherwise. */
typedef void (*wk_attn_dots_h_fn)(const float *q, const uint16_t *k, int64_t krs, int64_t n, int64_t d, float *s);
typedef void (*wk_attn_pv_h_fn)(const float *p, const uint16_t *v, int64_t vrs, int64_t n, int64_t dv, float *o);
void wk__attn_dots_f16_avx512(const float *q, const uint16_t *k, int64_t krs, int64_t n, int64_t d, float *s);
void wk__attn_dots_bf16_avx512(const float *q, const uint16_t *k, int64_t krs, int64_t n, int64_t d, float *s);
void wk__attn_pv_f16_avx512(const float *p, const uint16_t *v, int64_t vrs, int64_t n, int64_t dv, float *o);
void wk__attn_pv_bf16_avx512(const float *p, const uint16_t *v, int64_t vrs, int64_t n, int64_t dv, float *o);
void wk__attn_dots_f16_avx2(const float *q, const uint16_t *k, int64_t krs, int64_t n, int64_t d, float *s);
void wk__attn_dots_bf16_avx2(const float *q, const uint16_t *k, int64_t krs, int64_t n, int64_t d, float *s);
void wk__attn_pv_f16_avx2(const float *p, const uint16_t *v, int64_t vrs, int64_t n, int64_t dv, float *o);
void wk__attn_pv_bf16_avx2(const float *p, const uint16_t *v, int64_t vrs, int64_t n, int64_t dv, float *o);

#endif
