/* Everything wick declares, for programs that would rather not pick: the
 * tensor core (wick.h: ops, fused nn ops, gradients), custom ops, the layer
 * kit (layers.h), model
 * files, tokenizers, training, and the language models with generation.
 * Each of those headers also stands alone; the core never includes the
 * ones above it (tools/depgraph.py checks that). */
#ifndef WICK_ALL_H
#define WICK_ALL_H
#include "wick/wick.h"
#include "wick/custom_op.h"
#include "wick/layers.h"
#include "wick/gguf.h"
#include "wick/imatrix.h"
#include "wick/safetensors.h"
#include "wick/tokenizer.h"
#include "wick/dist.h"
#include "wick/chat.h"
#include "wick/train.h"
#include "wick/lm.h"
#include "wick/generate.h"
#include "wick/bert.h"
#include "wick/grammar.h"
#include "wick/serve.h"
#endif /* WICK_ALL_H */
