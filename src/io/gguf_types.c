/* ggml's tensor types as GGUF stores them: names, block geometry and the
 * wick dtype of each. The table holds every id ggml defines today, so a file
 * with types wick cannot compute on still opens (its sizes are known) and
 * only those tensors are refused. */
#include <ctype.h>
#include <stddef.h>
#include "wick/gguf.h"

typedef struct ggml_type_row {
    const char *name;    /* NULL: id unused (removed types such as q4_2) */
    uint32_t block_elems;
    uint32_t block_bytes;
    bool has_dtype;
    wk_dtype dtype;
} ggml_type_row;

#define ROW(id, nm, be, bb, dt) [id] = {nm, be, bb, true, dt}
#define ROW_NO_DTYPE(id, nm, be, bb) [id] = {nm, be, bb, false, WK_F32}

/* Sizes are ggml's sizeof(block_*). gguf-py 0.19 lists q8_1 as 40 bytes
 * (float d and s); ggml's block_q8_1 holds two halves: 36, as wick's WK_Q8_1. */
static const ggml_type_row k_types[] = {
    ROW(WK_GGML_F32, "f32", 1, 4, WK_F32),
    ROW(WK_GGML_F16, "f16", 1, 2, WK_F16),
    ROW(WK_GGML_Q4_0, "q4_0", 32, 18, WK_Q4_0),
    ROW(WK_GGML_Q4_1, "q4_1", 32, 20, WK_Q4_1),
    ROW(WK_GGML_Q5_0, "q5_0", 32, 22, WK_Q5_0),
    ROW(WK_GGML_Q5_1, "q5_1", 32, 24, WK_Q5_1),
    ROW(WK_GGML_Q8_0, "q8_0", 32, 34, WK_Q8_0),
    ROW(WK_GGML_Q8_1, "q8_1", 32, 36, WK_Q8_1),
    ROW(WK_GGML_Q2_K, "q2_K", 256, 84, WK_Q2_K),
    ROW(WK_GGML_Q3_K, "q3_K", 256, 110, WK_Q3_K),
    ROW(WK_GGML_Q4_K, "q4_K", 256, 144, WK_Q4_K),
    ROW(WK_GGML_Q5_K, "q5_K", 256, 176, WK_Q5_K),
    ROW(WK_GGML_Q6_K, "q6_K", 256, 210, WK_Q6_K),
    ROW(WK_GGML_Q8_K, "q8_K", 256, 292, WK_Q8_K),
    ROW_NO_DTYPE(WK_GGML_IQ2_XXS, "iq2_xxs", 256, 66),
    ROW_NO_DTYPE(WK_GGML_IQ2_XS, "iq2_xs", 256, 74),
    ROW_NO_DTYPE(WK_GGML_IQ3_XXS, "iq3_xxs", 256, 98),
    ROW_NO_DTYPE(WK_GGML_IQ1_S, "iq1_s", 256, 50),
    ROW(WK_GGML_IQ4_NL, "iq4_nl", 32, 18, WK_IQ4_NL),
    ROW_NO_DTYPE(WK_GGML_IQ3_S, "iq3_s", 256, 110),
    ROW_NO_DTYPE(WK_GGML_IQ2_S, "iq2_s", 256, 82),
    ROW(WK_GGML_IQ4_XS, "iq4_xs", 256, 136, WK_IQ4_XS),
    ROW_NO_DTYPE(WK_GGML_I8, "i8", 1, 1),
    ROW(WK_GGML_I16, "i16", 1, 2, WK_I16),
    ROW(WK_GGML_I32, "i32", 1, 4, WK_I32),
    ROW(WK_GGML_I64, "i64", 1, 8, WK_I64),
    ROW(WK_GGML_F64, "f64", 1, 8, WK_F64),
    ROW_NO_DTYPE(WK_GGML_IQ1_M, "iq1_m", 256, 56),
    ROW(WK_GGML_BF16, "bf16", 1, 2, WK_BF16),
    ROW_NO_DTYPE(WK_GGML_TQ1_0, "tq1_0", 256, 54),
    ROW_NO_DTYPE(WK_GGML_TQ2_0, "tq2_0", 256, 66),
    ROW_NO_DTYPE(WK_GGML_MXFP4, "mxfp4", 32, 17),
    ROW_NO_DTYPE(WK_GGML_NVFP4, "nvfp4", 64, 36),
    ROW_NO_DTYPE(WK_GGML_Q1_0, "q1_0", 128, 18),
};
#define N_TYPES (sizeof k_types / sizeof k_types[0])

static const ggml_type_row *row_of(uint32_t id) {
    return id < N_TYPES && k_types[id].name ? &k_types[id] : NULL;
}

const char *wk_ggml_type_name(uint32_t ggml_type) {
    const ggml_type_row *r = row_of(ggml_type);
    return r ? r->name : NULL;
}

bool wk_ggml_type_block(uint32_t ggml_type, uint32_t *block_elems, uint32_t *block_bytes) {
    const ggml_type_row *r = row_of(ggml_type);
    if (!r) return false;
    if (block_elems) *block_elems = r->block_elems;
    if (block_bytes) *block_bytes = r->block_bytes;
    return true;
}

bool wk_ggml_type_to_dtype(uint32_t ggml_type, wk_dtype *out) {
    const ggml_type_row *r = row_of(ggml_type);
    if (!r || !r->has_dtype) return false;
    if (out) *out = r->dtype;
    return true;
}

bool wk_dtype_to_ggml_type(wk_dtype dt, uint32_t *out) {
    uint32_t id = UINT32_MAX; /* stays so for dtypes ggml lacks and non-dtypes */
    switch (dt) {
    case WK_U8:
    case WK_U32:
    case WK_F8E4M3:
    case WK_DTYPE_COUNT: break;
    case WK_I16: id = WK_GGML_I16; break;
    case WK_I32: id = WK_GGML_I32; break;
    case WK_I64: id = WK_GGML_I64; break;
    case WK_BF16: id = WK_GGML_BF16; break;
    case WK_F16: id = WK_GGML_F16; break;
    case WK_F32: id = WK_GGML_F32; break;
    case WK_F64: id = WK_GGML_F64; break;
    case WK_Q4_0: id = WK_GGML_Q4_0; break;
    case WK_Q4_1: id = WK_GGML_Q4_1; break;
    case WK_Q5_0: id = WK_GGML_Q5_0; break;
    case WK_Q5_1: id = WK_GGML_Q5_1; break;
    case WK_Q8_0: id = WK_GGML_Q8_0; break;
    case WK_Q8_1: id = WK_GGML_Q8_1; break;
    case WK_Q2_K: id = WK_GGML_Q2_K; break;
    case WK_Q3_K: id = WK_GGML_Q3_K; break;
    case WK_Q4_K: id = WK_GGML_Q4_K; break;
    case WK_Q5_K: id = WK_GGML_Q5_K; break;
    case WK_Q6_K: id = WK_GGML_Q6_K; break;
    case WK_Q8_K: id = WK_GGML_Q8_K; break;
    case WK_IQ4_NL: id = WK_GGML_IQ4_NL; break;
    case WK_IQ4_XS: id = WK_GGML_IQ4_XS; break;
    }
    if (id == UINT32_MAX) return false;
    if (out) *out = id;
    return true;
}

bool wk_ggml_type_from_name(const char *name, uint32_t *out) {
    if (!name) return false;
    for (uint32_t id = 0; id < N_TYPES; id++) {
        const char *n = k_types[id].name;
        if (!n) continue;
        size_t k = 0;
        while (n[k] && name[k] && tolower((unsigned char)n[k]) == tolower((unsigned char)name[k])) k++;
        if (!n[k] && !name[k]) {
            if (out) *out = id;
            return true;
        }
    }
    return false;
}

const char *wk_gguf_type_name(wk_gguf_type t) {
    switch (t) {
    case WK_GGUF_U8: return "u8";
    case WK_GGUF_I8: return "i8";
    case WK_GGUF_U16: return "u16";
    case WK_GGUF_I16: return "i16";
    case WK_GGUF_U32: return "u32";
    case WK_GGUF_I32: return "i32";
    case WK_GGUF_F32: return "f32";
    case WK_GGUF_BOOL: return "bool";
    case WK_GGUF_STRING: return "string";
    case WK_GGUF_ARRAY: return "array";
    case WK_GGUF_U64: return "u64";
    case WK_GGUF_I64: return "i64";
    case WK_GGUF_F64: return "f64";
    case WK_GGUF_TYPE_COUNT: break;
    }
    return "invalid";
}
