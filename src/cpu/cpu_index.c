/* CPU indexing kernels (placeholder entries until the indexing work lands:
 * they report an error, never touch memory). */
#include "core/tensor.h"
#include "cpu/cpu_backend.h"

static wk_status pending(const char *op) { return wk__err(WK_ERR_ARG, op, "not available in this build yet"); }
wk_status wk__cpu_index_select(wk_device *dev, const void *src, const wk_layout *ls, const void *ids,
                               const wk_layout *lids, wk_dtype idt, int dim, void *dst, wk_dtype dt) { return pending("index_select"); }
wk_status wk__cpu_gather(wk_device *dev, const void *src, const wk_layout *ls, const void *ids, const wk_layout *lids,
                         wk_dtype idt, int dim, void *dst, wk_dtype dt) { return pending("gather"); }
wk_status wk__cpu_scatter(wk_device *dev, void *dst, const wk_layout *ld, const void *ids, const wk_layout *lids,
                          wk_dtype idt, const void *src, const wk_layout *lsrc, int dim, wk_dtype dt, bool add) { return pending("scatter"); }
wk_status wk__cpu_index_add(wk_device *dev, void *dst, const wk_layout *ld, const void *ids, const wk_layout *lids,
                            wk_dtype idt, const void *src, const wk_layout *lsrc, int dim, wk_dtype dt) { return pending("index_add"); }
