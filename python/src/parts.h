/* The binding's parts: each file defining `const wkpy_part wkpy_part_<name>`
 * is one line here (append before the end marker; a name earlier in the
 * list wins when two parts define the same method). */
#ifndef WKPY_PARTS_H
#define WKPY_PARTS_H
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
    /* end of the list */
#endif
