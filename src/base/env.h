/* Every WICK_* environment variable, parsed by one table-driven parser.
 *
 * All of them are read together, once, at the first query (thread-safe);
 * a bad value is reported once on stderr ("wick: WICK_GEMM_KC=-5 ignored:
 * must be an integer in [1, 1048576]") and the query then says "unset", so
 * the caller's default applies. An empty value counts as unset (how a shell
 * user clears one: WICK_ISA= prog). Lives in the base floor so that every
 * backend (cpu, cuda) can include it. */
#ifndef WICK_CORE_ENV_H
#define WICK_CORE_ENV_H
#include <stdbool.h>
#include <stdint.h>

typedef enum wk_env_id {
    WK_ENV_NUM_THREADS = 0, /* int [1, 1024]: threads for CPU ops */
    WK_ENV_CPU_CACHE_MB,    /* int [0, 2^40]: MiB of freed CPU buffers kept */
    WK_ENV_ISA,             /* word: WK_ENV_ISA_* below */
    WK_ENV_GEMM_KC,         /* int [1, 2^20]: GEMM block sizes (tuning) */
    WK_ENV_GEMM_MC,
    WK_ENV_GEMM_NC,
    WK_ENV_BF16_KERNEL,     /* word: WK_ENV_BF16_* below */
    WK_ENV_CUDA_TF32,       /* bool 0 / 1: f32 matmul may use TF32 on CUDA */
    WK_ENV_COUNT
} wk_env_id;

/* Word values (the index of the word in the variable's list; words are
 * matched case-insensitively). */
enum { WK_ENV_ISA_AVX512 = 0, WK_ENV_ISA_AVX2, WK_ENV_ISA_SCALAR, WK_ENV_ISA_AUTO };
enum { WK_ENV_BF16_DP = 0, WK_ENV_BF16_FMA };

/* True and *value (the number; a word's index; 0 / 1) when the variable is
 * set to a valid value; false when it is unset, empty or bad. */
bool wk__env_get(wk_env_id id, int64_t *value);
/* "WICK_NUM_THREADS", ... */
const char *wk__env_name(wk_env_id id);
/* Read the environment again and report bad values again: for tests that
 * change a variable with setenv. Not to be called while other threads may
 * query (it rewrites the table). */
void wk__env_reload(void);

#endif
