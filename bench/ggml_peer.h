/* llama.cpp's ggml as a benchmark peer, loaded at run time with dlopen.
 *
 * Nothing of llama.cpp is compiled into wick: this shim declares the few
 * ggml functions the qmatmul bench calls with prototypes of its own (the ABI
 * of ggml as vendored by llama-cpp-python 0.3.36: ggml.h, ggml-cpu.h) and
 * resolves them from libggml-base.so + libggml-cpu.so in a directory given
 * at run time. Without the libraries every call reports "peer not found"
 * and the bench prints n/a. */
#ifndef WICK_BENCH_GGML_PEER_H
#define WICK_BENCH_GGML_PEER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ggml's type ids (enum ggml_type) for the types the bench uses. */
enum {
    GGMLP_F32 = 0,
    GGMLP_F16 = 1,
    GGMLP_Q4_0 = 2,
    GGMLP_Q4_1 = 3,
    GGMLP_Q8_0 = 8,
    GGMLP_Q4_K = 12,
    GGMLP_Q6_K = 14,
    GGMLP_BF16 = 30,
};

/* Loads the peer from lib_dir (the directory holding libggml-base.so and
 * libggml-cpu.so). Returns false and writes why into why[len] when the
 * libraries are missing or lack a symbol. Call once; later calls return the
 * first answer. */
bool ggml_peer_open(const char *lib_dir, char *why, size_t len);
bool ggml_peer_loaded(void);
/* "ggml <version> (<commit>)" of the loaded library, or "". */
const char *ggml_peer_version(void);
/* The CPU features ggml's CPU backend was built with / detects, e.g.
 * "AVX2 AVX512 VNNI" (from ggml_cpu_has_*), or "". */
const char *ggml_peer_cpu_features(void);

/* ggml_row_size(type, k): bytes of one row of k elements. 0 when not loaded. */
size_t ggml_peer_row_size(int type, int64_t k);
/* ggml_quantize_chunk(type, src, dst, 0, nrows, k, NULL): f32 rows to
 * ggml's bytes of type (F16 and BF16 included). Returns the bytes written,
 * 0 when not loaded. */
size_t ggml_peer_quantize(int type, const float *src, void *dst, int64_t nrows, int64_t k);

/* One y = x . W^T problem in a ggml context of its own: W type, N x K
 * (ggml ne = [K, N]); x f32 M x K (ne = [K, M]); y = ggml_mul_mat(W, x),
 * f32 M x N (ne = [N, M]), all row-major and contiguous. The graph is built
 * once; every run computes it again on a threadpool kept by the shim (one
 * per thread count, ggml_threadpool_new, as llama.cpp's tools keep one). */
typedef struct ggml_peer_mm ggml_peer_mm;
ggml_peer_mm *ggml_peer_mm_new(int type, int64_t n, int64_t k, int64_t m);
void ggml_peer_mm_free(ggml_peer_mm *mm);
void *ggml_peer_mm_weights(ggml_peer_mm *mm); /* N rows of ggml_peer_row_size(type, K) bytes */
size_t ggml_peer_mm_weight_bytes(const ggml_peer_mm *mm);
float *ggml_peer_mm_x(ggml_peer_mm *mm);      /* M x K */
const float *ggml_peer_mm_y(const ggml_peer_mm *mm); /* M x N, valid after a run */
/* Computes the graph on n_threads; false when ggml reports a failure or
 * the threadpool cannot be made. */
bool ggml_peer_mm_run(ggml_peer_mm *mm, int n_threads);
/* Puts the threadpool's workers to sleep (ggml_threadpool_pause), so that
 * their polling does not take a core from what is timed next. The next run
 * wakes them. */
void ggml_peer_pause(void);
/* Frees the threadpools (at exit). */
void ggml_peer_close(void);

#endif
