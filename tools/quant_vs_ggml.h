/* The data sets tools/quant_vs_ggml.c quantizes with ggml and wick, shared
 * with tests/test_quantk.c so the test can hold the hashes of ggml's bytes
 * for them. Made with an integer generator and float adds and multiplies
 * only (no libm), so every machine makes the same floats. Header-only. */
#ifndef WICK_TOOLS_QUANT_VS_GGML_H
#define WICK_TOOLS_QUANT_VS_GGML_H
#include <stddef.h>
#include <stdint.h>

#include "wick/wick.h"

enum { QVG_N_SETS = 13 };
static const char *const QVG_SET_NAMES[QVG_N_SETS] = {
    "normal",   "uniform", "outliers", "weights", "positive", "negative", "sparse",
    "zero+const", "tiny",  "large",    "integers", "mixed",   "f16-grid"};

static inline uint64_t qvg_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* uniform in [0, 1), 24 bits */
static inline float qvg_unif(uint64_t *s) { return (float)(qvg_next(s) >> 40) * 0x1p-24f; }
/* roughly standard normal: a scaled sum of four uniforms (Irwin-Hall) */
static inline float qvg_gauss(uint64_t *s) {
    float a = qvg_unif(s) + qvg_unif(s), b = qvg_unif(s) + qvg_unif(s);
    return ((a + b) - 2.0f) * 1.7320508f;
}

/* Data set `set` (0..QVG_N_SETS-1), n values, seeded by set and seed. */
static inline void qvg_fill(int set, uint64_t seed, float *x, int64_t n) {
    static const float decades[7] = {1e-3f, 1e-2f, 1e-1f, 1.f, 1e1f, 1e2f, 1e3f};
    uint64_t s = seed * 0x100000001b3ull + (uint64_t)set * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        float v;
        switch (set) {
        case 0: v = qvg_gauss(&s); break;
        case 1: v = 2 * qvg_unif(&s) - 1; break;
        case 2: v = qvg_gauss(&s) * (qvg_unif(&s) < 0.01f ? 50.f : 1.f); break; /* 1% outliers */
        case 3: v = 0.02f * qvg_gauss(&s); break;                                /* weight-like */
        case 4: v = qvg_unif(&s); break;
        case 5: v = -qvg_unif(&s) - 0.5f; break;
        case 6: v = qvg_unif(&s) < 0.8f ? 0.f : qvg_gauss(&s); break; /* 80% zeros */
        case 7: v = (i / 256) % 3 == 0 ? 0.f : (i / 256) % 3 == 1 ? 0.75f : -3.f; break; /* whole blocks */
        case 8: v = 1e-4f * qvg_gauss(&s); break;
        case 9: v = 1e3f * qvg_gauss(&s); break;
        case 10: v = (float)((int)(qvg_unif(&s) * 9) - 4); break; /* small integers: exact ties */
        case 11: v = qvg_gauss(&s) * decades[(i / 16) % 7]; break; /* scale changes every 16 */
        default: v = wk_f16_to_f32(wk_f32_to_f16(qvg_gauss(&s))); break;
        }
        x[i] = v;
    }
}

/* An importance matrix of n weights (one per column), seeded: mostly
 * squares of normals (as activations' mean squares are), one in 16 a large
 * outlier column, one in 32 exactly zero (a column no token reached). */
static inline void qvg_imatrix(uint64_t seed, float *w, int64_t n) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    for (int64_t i = 0; i < n; i++) {
        float g = qvg_gauss(&s), u = qvg_unif(&s);
        float v = g * g + 0.01f;
        if (u < 1.0f / 32) v = 0.f;
        else if (u < 3.0f / 32) v *= 40.f;
        w[i] = v;
    }
}

/* FNV-1a, 64 bits, continuing from h (start with QVG_FNV0). */
#define QVG_FNV0 0xcbf29ce484222325ull
static inline uint64_t qvg_fnv(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = (const uint8_t *)p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

#endif
