/* The tensor floor's copies (copy.c), untracked. */
#ifndef WICK_TENSOR_COPY_H
#define WICK_TENSOR_COPY_H
#include "tensor/tensor.h"

/* A fresh contiguous copy of t's view (any dtype, block dtypes included). */
wk_tensor *wk__prim_copy(const wk_tensor *t);
/* t itself (a new reference to the same view) when contiguous, else a copy. */
wk_tensor *wk__prim_contiguous(const wk_tensor *t);

#endif
