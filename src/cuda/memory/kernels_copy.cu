/* CUDA kernels: fill, strided copy and cast (launchers declared in
 * cuda_kernels.h).
 *  - fill: the value is converted once on the host with wick's store rules
 *    (wkc_store_f64 = wk__store_f64) and written as raw bits through dst's
 *    view, so it is bit-identical to the CPU backend.
 *  - copy_strided: raw elements by size (1/2/4/8 bytes), one kernel per
 *    size for every dtype.
 *  - cast: the CPU's rules (cpu_copy.c): int -> int wraps; i64 -> f32 is one
 *    correct rounding; everything else goes through double with
 *    wk__load_f64/wk__store_f64 semantics (f64 -> narrow via f32 rounded to
 *    odd). Hot pairs f32 <-> f16/bf16 get their own kernels; the rest share
 *    one kernel that switches on the two runtime dtypes (uniform branches).
 * Checked: nvcc compile (sm_80/86/89/90 + compute_90 PTX) warning-free;
 * the element code, packing and grid loop run on the host
 * (WKC_HOST_EMULATION) against the CPU backend: fill (9 values), copy
 * between every pair of layouts, cast for all 100 dtype pairs, every dtype
 * and layout kind. */
#include "cuda/common/cuda_index.cuh"

namespace {

/* ---- fill ---- */
template <class T> struct FillP {
    wkc_pack<1> pk;
    T *dst;
    T bits;
};
template <class T> struct FillOp {
    typedef T L;
    typedef T V;
    static WKC_HD L load(const FillP<T> &p, const int64_t *) { return p.bits; }
    static WKC_HD V apply(const FillP<T> &, L l) { return l; }
    static WKC_HD void put(const FillP<T> &p, int64_t o, V v) { p.dst[o] = v; }
};
template <class T> static int fill_sized(wk_cu_stream s, void *dst, const wkc_pack<1> &pk, const void *bits) {
    FillP<T> p;
    p.pk = pk;
    p.dst = (T *)dst;
    memcpy(&p.bits, bits, sizeof(T));
    return wkc_launch<FillOp<T>>(s, p);
}

/* ---- copy ---- */
template <class T> struct CopyP {
    wkc_pack<2> pk; /* 0: dst, 1: src */
    T *dst;
    const T *src;
};
template <class T> struct CopyOp {
    typedef T L;
    typedef T V;
    static WKC_HD L load(const CopyP<T> &p, const int64_t *off) { return p.src[off[1]]; }
    static WKC_HD V apply(const CopyP<T> &, L l) { return l; }
    static WKC_HD void put(const CopyP<T> &p, int64_t o, V v) { p.dst[o] = v; }
};
template <class T> static int copy_sized(wk_cu_stream s, const void *src, void *dst, const wkc_pack<2> &pk) {
    CopyP<T> p;
    p.pk = pk;
    p.dst = (T *)dst;
    p.src = (const T *)src;
    return wkc_launch<CopyOp<T>>(s, p);
}

/* ---- cast ---- */
struct CastP {
    wkc_pack<2> pk; /* 0: dst (contiguous), 1: src */
    void *dst;
    const void *src;
    int32_t sdt, ddt;
};

/* Source element bits b (dtype sdt) converted to ddt, as bits. Out of line:
 * every conversion of every pair is in here, once (not once per unrolled
 * element); the hot pairs have their own kernels below. */
__host__ __device__ __noinline__ unsigned long long cast_bits(unsigned long long b, int sdt, int ddt) {
    if (wkc_is_int(sdt) && wkc_is_int(ddt)) return wkc_bits_i64(ddt, wkc_bits_to_i64(sdt, b));
    if (sdt == WK_I64 && ddt == WK_F32) /* one correct rounding */
        return wkc_f2u((float)(long long)b);
    return wkc_bits_f64(ddt, wkc_bits_to_f64(sdt, b));
}

/* Generic pair: runtime dtypes. */
struct CastAnyOp {
    typedef unsigned long long L;
    typedef unsigned long long V;
    static WKC_HD L load(const CastP &p, const int64_t *off) { return wkc_raw_load(p.src, off[1], p.sdt); }
    static WKC_HD V apply(const CastP &p, L l) { return cast_bits(l, p.sdt, p.ddt); }
    static WKC_HD void put(const CastP &p, int64_t o, V v) { wkc_put_bits(p.dst, o, p.ddt, v); }
};

/* Hot pairs between f32 and a narrow float (identical to the generic path:
 * an f32 is exact in double and its round-to-odd is itself). */
template <int SDT, int DDT> struct CastPairOp {
    typedef typename wkc_t<SDT>::S L;
    typedef typename wkc_t<DDT>::C V;
    static WKC_HD L load(const CastP &p, const int64_t *off) { return ((const L *)p.src)[off[1]]; }
    static WKC_HD V apply(const CastP &, L l) { return (V)wkc_t<SDT>::val(l); }
    static WKC_HD void put(const CastP &p, int64_t o, V v) { wkc_t<DDT>::store(p.dst, o, v); }
};

} // namespace

extern "C" int wk__cu_fill(wk_cu_stream s, void *dst, wk_cu_view ld, wk_dtype dt, double value) {
    int es = wkc_size(dt);
    if (es == 0) return WKC_BAD_ARG;
    const wk_cu_view *v[1] = {&ld};
    wkc_pack<1> pk;
    int64_t n = wkc_pack_views<1>(&pk, v);
    if (n < 0) return WKC_BAD_ARG;
    if (n == 0) return 0;
    unsigned char bits[8] = {0};
    wkc_store_f64(bits, 0, dt, value); /* host: wick's conversion of the value, once */
    switch (es) {
    case 1: return fill_sized<uint8_t>(s, dst, pk, bits);
    case 2: return fill_sized<uint16_t>(s, dst, pk, bits);
    case 4: return fill_sized<uint32_t>(s, dst, pk, bits);
    default: return fill_sized<unsigned long long>(s, dst, pk, bits);
    }
}

extern "C" int wk__cu_copy_strided(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_cu_view ld,
                                   wk_dtype dt) {
    int es = wkc_size(dt);
    if (es == 0) return WKC_BAD_ARG;
    const wk_cu_view *v[2] = {&ld, &ls};
    wkc_pack<2> pk;
    int64_t n = wkc_pack_views<2>(&pk, v);
    if (n < 0) return WKC_BAD_ARG;
    if (n == 0) return 0;
    switch (es) {
    case 1: return copy_sized<uint8_t>(s, src, dst, pk);
    case 2: return copy_sized<uint16_t>(s, src, dst, pk);
    case 4: return copy_sized<uint32_t>(s, src, dst, pk);
    default: return copy_sized<unsigned long long>(s, src, dst, pk);
    }
}

extern "C" int wk__cu_cast(wk_cu_stream s, const void *src, wk_cu_view ls, wk_dtype sdt, void *dst, wk_dtype ddt) {
    if (wkc_size(sdt) == 0 || wkc_size(ddt) == 0) return WKC_BAD_ARG;
    wk_cu_view ld = wkc_contig_view(&ls);
    const wk_cu_view *v[2] = {&ld, &ls};
    CastP p;
    int64_t n = wkc_pack_views<2>(&p.pk, v);
    if (n < 0) return WKC_BAD_ARG;
    if (n == 0) return 0;
    p.dst = dst;
    p.src = src;
    p.sdt = sdt;
    p.ddt = ddt;
    if (sdt == ddt) return wk__cu_copy_strided(s, src, ls, dst, ld, sdt);
    if (sdt == WK_F32 && ddt == WK_F16) return wkc_launch<CastPairOp<WK_F32, WK_F16>>(s, p);
    if (sdt == WK_F32 && ddt == WK_BF16) return wkc_launch<CastPairOp<WK_F32, WK_BF16>>(s, p);
    if (sdt == WK_F16 && ddt == WK_F32) return wkc_launch<CastPairOp<WK_F16, WK_F32>>(s, p);
    if (sdt == WK_BF16 && ddt == WK_F32) return wkc_launch<CastPairOp<WK_BF16, WK_F32>>(s, p);
    return wkc_launch<CastAnyOp>(s, p);
}
