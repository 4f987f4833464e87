/* The GGML block layouts, byte for byte as ggml stores them (GGUF files hold
 * these bytes; wk_dtype_info's block_bytes is their sizeof). Scales are f16
 * bit patterns (wk_f16_to_f32) except Q8_K's f32. Plain C: included by the
 * CPU code, the CUDA kernels and the tests alike. */
#ifndef WICK_BASE_BLOCKS_H
#define WICK_BASE_BLOCKS_H
#include <stdint.h>

#define WK_QK 32    /* elements per block of the 32-element types */
#define WK_QK_K 256 /* elements per super-block of the K types and IQ4_XS */

typedef struct { uint16_t d; uint8_t qs[WK_QK / 2]; } wk_block_q4_0;               /* x = d * (q - 8) */
typedef struct { uint16_t d, m; uint8_t qs[WK_QK / 2]; } wk_block_q4_1;            /* x = d * q + m */
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[WK_QK / 2]; } wk_block_q5_0;  /* x = d * (q - 16) */
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[WK_QK / 2]; } wk_block_q5_1;
typedef struct { uint16_t d; int8_t qs[WK_QK]; } wk_block_q8_0;                    /* x = d * q */
typedef struct { uint16_t d, s; int8_t qs[WK_QK]; } wk_block_q8_1;                 /* s = d * sum(q) */

/* K types: a 256-element super-block of 16 or 8 sub-blocks with quantized
 * sub-block scales (and mins) under f16 super-scales d (and dmin). */
typedef struct {
    uint8_t scales[WK_QK_K / 16]; /* low 4 bits scale, high 4 bits min, per 16 */
    uint8_t qs[WK_QK_K / 4];      /* 2-bit values */
    uint16_t d, dmin;
} wk_block_q2_K;
typedef struct {
    uint8_t hmask[WK_QK_K / 8]; /* high bit of each 3-bit value */
    uint8_t qs[WK_QK_K / 4];    /* low 2 bits */
    uint8_t scales[12];         /* 16 6-bit scales, packed */
    uint16_t d;
} wk_block_q3_K;
typedef struct {
    uint16_t d, dmin;
    uint8_t scales[12]; /* 8 6-bit scales and 8 6-bit mins, packed */
    uint8_t qs[WK_QK_K / 2];
} wk_block_q4_K;
typedef struct {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qh[WK_QK_K / 8]; /* fifth bit */
    uint8_t qs[WK_QK_K / 2];
} wk_block_q5_K;
typedef struct {
    uint8_t ql[WK_QK_K / 2];     /* low 4 bits */
    uint8_t qh[WK_QK_K / 4];     /* high 2 bits */
    int8_t scales[WK_QK_K / 16]; /* 8-bit sub-block scales */
    uint16_t d;
} wk_block_q6_K;
typedef struct {
    float d;
    int8_t qs[WK_QK_K];
    int16_t bsums[WK_QK_K / 16]; /* sums of each 16 qs (for the mins of the K types) */
} wk_block_q8_K;

/* IQ4: 4-bit indices into the fixed non-linear table wk_iq4nl_values. */
typedef struct { uint16_t d; uint8_t qs[WK_QK / 2]; } wk_block_iq4_nl;
typedef struct {
    uint16_t d;
    uint16_t scales_h;       /* high 2 bits of 8 6-bit sub-block scales */
    uint8_t scales_l[WK_QK_K / 64]; /* low 4 bits */
    uint8_t qs[WK_QK_K / 2];
} wk_block_iq4_xs;

/* ggml's IQ4_NL / IQ4_XS value table (part of the format). */
static const int8_t wk_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                           1,    13,   25,  38,  53,  69,  89,  113};

_Static_assert(sizeof(wk_block_q4_0) == 18, "q4_0 block");
_Static_assert(sizeof(wk_block_q4_1) == 20, "q4_1 block");
_Static_assert(sizeof(wk_block_q5_0) == 22, "q5_0 block");
_Static_assert(sizeof(wk_block_q5_1) == 24, "q5_1 block");
_Static_assert(sizeof(wk_block_q8_0) == 34, "q8_0 block");
_Static_assert(sizeof(wk_block_q8_1) == 36, "q8_1 block");
_Static_assert(sizeof(wk_block_q2_K) == 84, "q2_K block");
_Static_assert(sizeof(wk_block_q3_K) == 110, "q3_K block");
_Static_assert(sizeof(wk_block_q4_K) == 144, "q4_K block");
_Static_assert(sizeof(wk_block_q5_K) == 176, "q5_K block");
_Static_assert(sizeof(wk_block_q6_K) == 210, "q6_K block");
_Static_assert(sizeof(wk_block_q8_K) == 292, "q8_K block");
_Static_assert(sizeof(wk_block_iq4_nl) == 18, "iq4_nl block");
_Static_assert(sizeof(wk_block_iq4_xs) == 136, "iq4_xs block");

#endif
