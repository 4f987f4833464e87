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
    X(dlpack)         \
    /* end of the list */
#endif
