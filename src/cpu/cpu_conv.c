/* CPU convolutions (placeholder entries until the conv work lands). */
#include "core/tensor.h"
#include "cpu/cpu_backend.h"

static wk_status pending(const char *op) { return wk__err(WK_ERR_ARG, op, "not available in this build yet"); }
wk_status wk__cpu_conv1d(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                         void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_params *p) { return pending("conv1d"); }
wk_status wk__cpu_conv2d(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                         void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_params *p) { return pending("conv2d"); }
wk_status wk__cpu_conv_transpose1d(wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                                   const wk_layout *lw, void *dst, const wk_layout *ld, wk_dtype dt,
                                   const wk_conv_params *p) { return pending("conv_transpose1d"); }
wk_status wk__cpu_conv_transpose2d(wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                                   const wk_layout *lw, void *dst, const wk_layout *ld, wk_dtype dt,
                                   const wk_conv_params *p) { return pending("conv_transpose2d"); }
