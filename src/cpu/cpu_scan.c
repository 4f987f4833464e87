/* CPU scans, sort and top-k (placeholder entries until that work lands). */
#include "core/tensor.h"
#include "cpu/cpu_backend.h"

static wk_status pending(const char *op) { return wk__err(WK_ERR_ARG, op, "not available in this build yet"); }
wk_status wk__cpu_scan(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, int dim, bool prod) { return pending("scan"); }
wk_status wk__cpu_sort(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, bool descending,
                       void *values, void *indices) { return pending("sort"); }
wk_status wk__cpu_topk(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, int64_t k,
                       bool largest, void *values, void *indices) { return pending("topk"); }
