/* The CPU backend's entries (assembled into wk__cpu_backend in cpu_backend.c). */
#ifndef WICK_CPU_BACKEND_H
#define WICK_CPU_BACKEND_H
#include "backend.h"

wk_status wk__cpu_copy_strided(wk_device *dev, const void *src, const wk_layout *ls, void *dst, const wk_layout *ld,
                               wk_dtype dt);
wk_status wk__cpu_to_host(wk_device *dev, const void *src, const wk_layout *l, wk_dtype dt, void *dst);
wk_status wk__cpu_from_host(wk_device *dev, void *buf, size_t off, const void *src, size_t nbytes);
wk_status wk__cpu_fill(wk_device *dev, void *dst, const wk_layout *ld, wk_dtype dt, double value);
wk_status wk__cpu_cast(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype sdt, void *dst, wk_dtype ddt);

wk_status wk__cpu_unary(wk_device *dev, wk_unary_op op, const void *src, const wk_layout *ls, void *dst, wk_dtype dt);
wk_status wk__cpu_affine(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double mul,
                         double add);
wk_status wk__cpu_powf(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double e);
wk_status wk__cpu_elu(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double alpha);
wk_status wk__cpu_clamp(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double lo,
                        double hi);
wk_status wk__cpu_binary(wk_device *dev, wk_binary_op op, const void *a, const wk_layout *la, const void *b,
                         const wk_layout *lb, void *dst, wk_dtype dt);
wk_status wk__cpu_cmp(wk_device *dev, wk_cmp_op op, const void *a, const wk_layout *la, const void *b,
                      const wk_layout *lb, void *dst, wk_dtype dt);
wk_status wk__cpu_where(wk_device *dev, const void *cond, const wk_layout *lc, wk_dtype cdt, const void *a,
                        const wk_layout *la, const void *b, const wk_layout *lb, void *dst, wk_dtype dt);
wk_status wk__cpu_reduce(wk_device *dev, wk_reduce_op op, const void *src, const wk_layout *ls, wk_dtype dt,
                         const bool *mask, void *dst);
wk_status wk__cpu_matmul(wk_device *dev, const void *a, const wk_layout *la, const void *b, const wk_layout *lb,
                         void *dst, wk_dtype dt);
wk_status wk__cpu_rand_uniform(wk_device *dev, void *dst, int64_t n, wk_dtype dt, double lo, double hi);
wk_status wk__cpu_rand_normal(wk_device *dev, void *dst, int64_t n, wk_dtype dt, double mean, double std);
wk_status wk__cpu_set_seed(wk_device *dev, uint64_t seed);

#endif
