/* CPU pooling and resampling (placeholder entries until that work lands). */
#include "core/tensor.h"
#include "cpu/cpu_backend.h"

static wk_status pending(const char *op) { return wk__err(WK_ERR_ARG, op, "not available in this build yet"); }
wk_status wk__cpu_pool2d(wk_device *dev, const void *x, const wk_layout *lx, void *dst, const wk_layout *ld,
                         wk_dtype dt, const wk_pool_params *p) { return pending("pool2d"); }
wk_status wk__cpu_upsample2d(wk_device *dev, const void *x, const wk_layout *lx, void *dst, const wk_layout *ld,
                             wk_dtype dt, bool bilinear, bool align_corners) { return pending("upsample2d"); }
