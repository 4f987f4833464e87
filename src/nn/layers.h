/* The layer kit's internals (src/nn/layers.c), for the floors above nn:
 * the models (src/model), training (src/train). The public half, the layer
 * structs and their forwards, is include/wick/layers.h. */
#ifndef WICK_NN_LAYERS_H
#define WICK_NN_LAYERS_H
#include "wick/layers.h"

/* A composite's result made inside its own scope and kept, handed to the
 * caller as a new result: registered in the caller's scope like any op's
 * (a header of its own; the kept one is dropped). NULL passes through. */
wk_tensor *wk__hand_over(wk_tensor *kept);

/* a and b (either may be NULL) as a layer's *_params lists them. */
int wk__list_params(wk_tensor *a, wk_tensor *b, wk_tensor **out, int cap);

/* Store a float weight transposed: l->weight becomes an (out, in) view of a
 * contiguous (in, out) copy, so that the forward's GEMM reads a short
 * batch's weights in place instead of repacking them on every call (BERT's
 * 8-token sentences spent more time packing than in FMAs). Same values; a
 * block weight is left as it is. The new weight belongs where a fresh
 * result would (the open scope, else l): call it where the old one was made. */
wk_status wk__linear_pretranspose(wk_linear *l);

#endif
