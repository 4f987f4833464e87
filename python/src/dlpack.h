/* The DLPack exchange structures, ABI version 0.x (the unversioned
 * "dltensor" capsule that PyTorch 1.13 and numpy 1.24 speak), written from
 * the DLPack specification (dmlc/dlpack, include/dlpack/dlpack.h). Only what
 * wick exchanges is named; the layouts are the spec's, field for field.
 *
 * The capsule protocol (Python array API): a producer's __dlpack__ returns
 * a PyCapsule named "dltensor" holding a DLManagedTensor*. A consumer that
 * takes ownership renames it "used_dltensor" and later calls deleter once;
 * a capsule still named "dltensor" when it dies calls deleter itself. */
#ifndef WKPY_DLPACK_H
#define WKPY_DLPACK_H
#include <stdint.h>

/* DLDeviceType: a C enum in the spec, i.e. an int; spelled int32_t here so
 * the struct layout does not depend on the compiler's enum size. */
enum {
    WKDL_CPU = 1,        /* kDLCPU: host memory */
    WKDL_CUDA = 2,       /* kDLCUDA: device memory of a CUDA GPU */
    WKDL_CUDA_HOST = 3,  /* kDLCUDAHost: pinned host memory (readable by the CPU) */
    WKDL_METAL = 8,      /* kDLMetal */
    WKDL_CUDA_MANAGED = 13, /* kDLCUDAManaged */
};

typedef struct {
    int32_t device_type; /* WKDL_* */
    int32_t device_id;   /* the GPU ordinal; 0 for the CPU */
} wkdl_device;

/* DLDataTypeCode */
enum {
    WKDL_INT = 0,
    WKDL_UINT = 1,
    WKDL_FLOAT = 2,
    WKDL_OPAQUE = 3,
    WKDL_BFLOAT = 4,
    WKDL_COMPLEX = 5,
    WKDL_BOOL = 6,
};

typedef struct {
    uint8_t code;   /* WKDL_INT ... */
    uint8_t bits;   /* bits per lane */
    uint16_t lanes; /* 1 for scalars; wick has no vector element types */
} wkdl_dtype;

/* DLTensor: the first element is at (char *)data + byte_offset; shape and
 * strides (in elements, NULL: compact row-major) have ndim entries. */
typedef struct {
    void *data;
    wkdl_device device;
    int32_t ndim;
    wkdl_dtype dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} wkdl_tensor;

/* DLManagedTensor: the tensor plus its producer's bookkeeping; deleter
 * (may be NULL) frees both, called once by whoever owns it last. */
typedef struct wkdl_managed {
    wkdl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct wkdl_managed *self);
} wkdl_managed;

#endif
