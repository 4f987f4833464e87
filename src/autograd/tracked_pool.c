/* The public pooling and resampling ops: the untracked op (src/ops/pool.c),
 * recorded when x is tracked (src/autograd/rules_pool.c), an empty result
 * included. The pool parameters are recorded as the backend got them. */
#include "autograd/record.h"
#include "ops/prim_pool.h"

wk_tensor *wk_avg_pool2d(const wk_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                         bool count_include_pad) {
    wk_tensor *r = wk__prim_avg_pool2d(x, kh, kw, sh, sw, ph, pw, count_include_pad);
    if (!wk__ag_on1(x)) return r;
    wk_pool_params p = {{kh, kw}, {sh, sw}, {ph, pw}, false, count_include_pad};
    return wk__ag_pool2d(r, x, &p, "wk_avg_pool2d");
}

wk_tensor *wk_max_pool2d(const wk_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
    wk_tensor *r = wk__prim_max_pool2d(x, kh, kw, sh, sw, ph, pw);
    if (!wk__ag_on1(x)) return r;
    wk_pool_params p = {{kh, kw}, {sh, sw}, {ph, pw}, true, false};
    return wk__ag_pool2d(r, x, &p, "wk_max_pool2d");
}

wk_tensor *wk_upsample_nearest1d(const wk_tensor *x, int64_t out_l) {
    wk_tensor *r = wk__prim_upsample_nearest1d(x, out_l);
    return wk__ag_on1(x) ? wk__ag_upsample(r, x, 3, false, false, "wk_upsample_nearest1d") : r;
}

wk_tensor *wk_upsample_nearest2d(const wk_tensor *x, int64_t out_h, int64_t out_w) {
    wk_tensor *r = wk__prim_upsample_nearest2d(x, out_h, out_w);
    return wk__ag_on1(x) ? wk__ag_upsample(r, x, 4, false, false, "wk_upsample_nearest2d") : r;
}

wk_tensor *wk_upsample_bilinear2d(const wk_tensor *x, int64_t out_h, int64_t out_w, bool align_corners) {
    wk_tensor *r = wk__prim_upsample_bilinear2d(x, out_h, out_w, align_corners);
    return wk__ag_on1(x) ? wk__ag_upsample(r, x, 4, true, align_corners, "wk_upsample_bilinear2d") : r;
}
