/* NCCL communicators: CUDA tensors reduced on the device. Without NCCL
 * compiled in (WICK_HAVE_NCCL), creation is a clean WK_ERR_NOT_COMPILED. */
#include "dist/dist_internal.h"
#include "base/error.h"

#ifndef WICK_HAVE_NCCL
wk_comm *wk_comm_init_nccl(wk_comm *boot, wk_device *dev, const wk_comm_opts *opts) {
    (void)boot, (void)dev, (void)opts;
    wk__err(WK_ERR_NOT_COMPILED, "wk_comm_init_nccl", "this wick was built without NCCL (a CUDA build with nccl.h)");
    return NULL;
}
wk_tensor *wk__nccl_run(wk__dist_job *j) {
    wk__err(WK_ERR_NOT_COMPILED, j->op, "this wick was built without NCCL");
    return NULL;
}
void wk__nccl_free(wk_comm *c) { (void)c; }
#endif
