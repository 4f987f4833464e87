/* wk_prod: the one-op wrapper over the recorded wk_reduce (its part records). */
#include "autograd/node.h"

wk_tensor *wk_prod(const wk_tensor *t, const int *d, int n, bool k) { return wk_reduce(t, WK_REDUCE_PROD, d, n, k); }
