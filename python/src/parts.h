/* The roof's header (module.c and py_tensor.c include it; no other file
 * may): the binding's parts, each file defining
 * `const wkpy_part wkpy_part_<name>` is one line here (append before the
 * end marker; a name earlier in the list wins when two parts define the
 * same method), and the Tensor's protocols py_tensor.c contributes. */
#ifndef WKPY_PARTS_H
#define WKPY_PARTS_H
#include "py_base.h"

/* py_tensor.c: set the Tensor's protocol slots (repr, numbers, buffer,
 * mapping, comparisons) on tp, before module.c readies it. */
void wkpy_tensor_protocols(PyTypeObject *tp);

#define WKPY_PARTS(X) \
    X(tensor_core)    \
    X(creation)       \
    X(dtypes)         \
    X(devices)        \
    X(gather)         \
    X(shape)          \
    X(conv)           \
    X(elementwise)    \
    X(reduce)         \
    X(convert)        \
    X(files)          \
    X(gguf_file)      \
    X(quant)          \
    X(tokenizer)      \
    X(llm)            \
    X(textgen)        \
    X(encoder)        \
    X(nn)             \
    X(nn_loss)        \
    X(autograd)       \
    X(optim)          \
    X(dlpack)         \
    X(runtime)        \
    X(sampler)        \
    X(dist)           \
    /* end of the list */
#endif
