// The queued index check (issue 15, "No hidden waits"): the indexing
// kernels report a bad id into the device's record (wk_cu_ixrec) instead of
// the host waiting for a check, and the host turns the record into the
// error of the next wait (wk__cuda_flag_status, cuda_device.c).
//
// Covered, in host emulation (the launchers run their per-thread code over
// a fake grid of 7 threads, so position 7 is visited before position 3 and
// "the first bad position" is really the minimum, not the first visit):
//   - a bad id sets the record: the first bad row-major position, the id,
//     the size, the op, the dim; the error word = WK_ERR_INDEX; index_select
//     / gather store zero bits where the id is bad and the right elements
//     elsewhere; wk__cu_index_check also sets the gate (bad_seq);
//   - good ids leave the record and the error word all zero (every op);
//   - the first launch keeps the record: a later launch's bad id (even at a
//     smaller position) changes nothing and does not set the word again;
//   - in-place ops are gated: check + write kernels (plain, serial =
//     overlapping dst, sorted; scatter, scatter_add, index_add) leave dst
//     untouched when any id is bad - and the same write kernels with gate = 0
//     do write (so the check is what stops them); with good ids and an older
//     seq in bad_seq the gated op writes exactly the CPU's result;
//   - the serial plan's bound: the pair counts wk__cu_ix_serial_pairs gives,
//     the launchers refusing an overlapping dst beyond 2^20 pairs;
//   - the report: WK_ERR_INDEX under the op's name with the id, dim, size,
//     device and wait; OK for a clean word; the generic messages otherwise.
// With -DGPU_MODE the same file runs the real kernels (managed buffers).
#ifndef GPU_MODE
#define WKC_HOST_EMULATION 1
#endif
#include "cuda/indexing/kernels_index.cu"
#include "cuda/reduce/kernels_sort.cu"
#define EMU_RND_SEED 0x6A09E667F3BCC909ull
#include "emu_harness.cuh"

extern "C" {
wk_status wk__cuda_flag_status(const char *wait_op, const char *dev_name, int32_t v, const struct wk_cu_ixrec *rec);
const char *wk__cuda_ixop_name(int op);
}

/* the record and the error word, in a Buf (managed in GPU_MODE) */
struct Rec {
    Buf b;
    Rec() : b(sizeof(wk_cu_ixrec) + sizeof(int32_t), 0) {}
    wk_cu_ixrec *rec() { return (wk_cu_ixrec *)(void *)b.data(); }
    int32_t *word() { return (int32_t *)(void *)(b.data() + sizeof(wk_cu_ixrec)); }
    wk_cu_ixflag flag(unsigned long long seq, int gate = 0) {
        wk_cu_ixflag f = ixf(word());
        f.rec = rec();
        f.seq = seq;
        f.gate = gate;
        return f;
    }
    bool clean() {
        for (size_t i = 0; i < b.size(); i++)
            if (b[i]) return false;
        return true;
    }
};

static wk_layout row_major(const int64_t *sh, int rank) {
    wk_layout l = emu_layout(sh, rank);
    emu_row_major(l, 0);
    return l;
}
static Buf i32s(const std::vector<int32_t> &v) {
    Buf b(v.size() * 4);
    memcpy(b.data(), v.data(), b.size());
    return b;
}
static Buf f32s(int64_t n, float base) {
    Buf b((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) ((float *)(void *)b.data())[i] = base + (float)i;
    return b;
}
static float f32at(const Buf &b, int64_t i) { return ((const float *)(const void *)b.data())[i]; }

/* ---- a bad id sets the record with the first position ---- */
static void test_first_position() {
    const int64_t n = 12, size = 5;
    std::vector<int32_t> idv(n);
    for (int64_t i = 0; i < n; i++) idv[(size_t)i] = (int32_t)(i % size);
    /* the fake grid visits 7 (thread 0), then 3 (thread 3), then 11 (thread 4):
     * the reported one is neither the first nor the last visited */
    idv[7] = -1;
    idv[3] = 9; /* the first in row-major order: the one reported */
    idv[11] = 6;
    Buf ids = i32s(idv), src = f32s(size, 10.0f);
    wk_layout ls = row_major(&size, 1), li = row_major(&n, 1);
    /* gather */
    {
        Rec r;
        Buf dst((size_t)n * 4, 0xAB);
        int rc = wk__cu_gather(nullptr, src.data(), cv(ls), ids.data(), cv(li), WK_I32, 0, dst.data(), WK_F32, r.flag(5));
        SYNC();
        wk_cu_ixrec *x = r.rec();
        CHECK(rc == 0 && x->owner == 5 && x->pos == 3 && x->id == 9 && x->size == size && x->op == WK_CU_IX_GATHER &&
                  x->dim == 0 && *r.word() == WK_ERR_INDEX,
              "gather record: rc %d owner %llu pos %llu id %lld size %lld op %d word %d", rc, x->owner, x->pos, x->id,
              x->size, x->op, *r.word());
        CHECK(x->bad_seq == 0, "gather is not gated: bad_seq %llu", x->bad_seq);
        bool ok = true;
        for (int64_t i = 0; i < n; i++) {
            const bool bad = i == 3 || i == 7 || i == 11;
            uint32_t got;
            memcpy(&got, dst.data() + 4 * i, 4);
            if (bad ? got != 0 : f32at(dst, i) != 10.0f + (float)idv[(size_t)i]) ok = false;
        }
        CHECK(ok, "gather output: zero bits at the bad ids, the elements elsewhere");
    }
    /* index_select over rows: position = the id's place in the 1-D ids */
    {
        Rec r;
        int64_t sh[2] = {size, 3};
        wk_layout l2 = row_major(sh, 2);
        Buf s2 = f32s(size * 3, 0.5f), dst((size_t)(n * 3) * 4, 0xCD);
        int rc = wk__cu_index_select(nullptr, s2.data(), cv(l2), ids.data(), cv(li), WK_I32, 0, dst.data(), WK_F32,
                                     r.flag(6));
        SYNC();
        wk_cu_ixrec *x = r.rec();
        CHECK(rc == 0 && x->owner == 6 && x->pos == 3 && x->id == 9 && x->op == WK_CU_IX_SELECT && *r.word() == WK_ERR_INDEX,
              "index_select record: pos %llu id %lld op %d", x->pos, x->id, x->op);
        bool ok = true;
        for (int64_t i = 0; i < n * 3; i++) {
            int64_t row = i / 3;
            bool bad = row == 3 || row == 7 || row == 11;
            uint32_t got;
            memcpy(&got, dst.data() + 4 * i, 4);
            if (bad ? got != 0 : f32at(dst, i) != 0.5f + (float)(idv[(size_t)row] * 3 + i % 3)) ok = false;
        }
        CHECK(ok, "index_select output");
    }
    /* the check kernel: same position, and the gate */
    {
        Rec r;
        int rc = wk__cu_index_check(nullptr, ids.data(), cv(li), WK_I32, size, WK_CU_IX_INDEX_ADD, 0, r.flag(7));
        SYNC();
        wk_cu_ixrec *x = r.rec();
        CHECK(rc == 0 && x->owner == 7 && x->pos == 3 && x->id == 9 && x->op == WK_CU_IX_INDEX_ADD && x->bad_seq == 7 &&
                  *r.word() == WK_ERR_INDEX,
              "check record: pos %llu id %lld gate %llu", x->pos, x->id, x->bad_seq);
    }
    /* the first launch keeps the record; a later one does not set the word again */
    {
        Rec r;
        std::vector<int32_t> late(n, 1);
        late[1] = 77;
        Buf ids2 = i32s(late), dst((size_t)n * 4, 0);
        wk__cu_gather(nullptr, src.data(), cv(ls), ids.data(), cv(li), WK_I32, 0, dst.data(), WK_F32, r.flag(5));
        SYNC();
        *r.word() = 0; /* as the host's read of the word */
        int rc = wk__cu_gather(nullptr, src.data(), cv(ls), ids2.data(), cv(li), WK_I32, 0, dst.data(), WK_F32, r.flag(8));
        SYNC();
        wk_cu_ixrec *x = r.rec();
        CHECK(rc == 0 && x->owner == 5 && x->pos == 3 && x->id == 9 && *r.word() == 0,
              "first launch keeps the record: owner %llu pos %llu id %lld word %d", x->owner, x->pos, x->id, *r.word());
        /* once the host cleared the record (all but bad_seq), the next bad launch owns it */
        memset((char *)(void *)r.rec() + offsetof(wk_cu_ixrec, owner), 0, sizeof(wk_cu_ixrec) - offsetof(wk_cu_ixrec, owner));
        wk__cu_gather(nullptr, src.data(), cv(ls), ids2.data(), cv(li), WK_I32, 0, dst.data(), WK_F32, r.flag(9));
        SYNC();
        CHECK(x->owner == 9 && x->pos == 1 && x->id == 77 && *r.word() == WK_ERR_INDEX, "fresh record: owner %llu pos %llu",
              x->owner, x->pos);
    }
}

/* ---- good ids leave record and word clean ---- */
static void test_good_ids() {
    const int64_t size = 6, n = 9;
    std::vector<int32_t> idv(n);
    for (int64_t i = 0; i < n; i++) idv[(size_t)i] = (int32_t)((i * 5) % size);
    Buf ids = i32s(idv);
    int64_t sh[2] = {size, 4}, ish[2] = {n, 4};
    wk_layout ld = row_major(sh, 2), li1 = row_major(&n, 1);
    Buf src = f32s(n * 4, 1.0f), dst((size_t)(size * 4) * 4, 0), out((size_t)(n * 4) * 4, 0);
    Rec r;
    wk__cu_index_check(nullptr, ids.data(), cv(li1), WK_I32, size, WK_CU_IX_INDEX_ADD, 0, r.flag(3));
    wk__cu_index_select(nullptr, dst.data(), cv(ld), ids.data(), cv(li1), WK_I32, 0, out.data(), WK_F32, r.flag(4));
    wk__cu_index_add(nullptr, dst.data(), cv(ld), ids.data(), cv(li1), WK_I32, src.data(), cv(row_major(ish, 2)), 0,
                     WK_F32, r.flag(3, 1));
    /* 2-D ids for gather / scatter: every column the same ids */
    std::vector<int32_t> id2((size_t)(n * 4));
    for (int64_t i = 0; i < n * 4; i++) id2[(size_t)i] = idv[(size_t)(i / 4)];
    Buf ids2 = i32s(id2);
    wk_layout li2 = row_major(ish, 2);
    wk__cu_gather(nullptr, dst.data(), cv(ld), ids2.data(), cv(li2), WK_I32, 0, out.data(), WK_F32, r.flag(5));
    wk__cu_index_check(nullptr, ids2.data(), cv(li2), WK_I32, size, WK_CU_IX_SCATTER, 0, r.flag(6));
    wk__cu_scatter(nullptr, dst.data(), cv(ld), ids2.data(), cv(li2), WK_I32, src.data(), cv(li2), 0, WK_F32, false,
                   r.flag(6, 1));
    SYNC();
    CHECK(r.clean(), "good ids: record and word stay zero");
}

/* ---- in-place ops are gated on their check ---- */
enum { P_PLAIN, P_SERIAL, P_SORTED };
static const char *pname[3] = {"plain", "serial", "sorted"};

/* One in-place op as cuda_backend.c queues it: check, then the write
 * kernels with gate (sorted path: the ids sorted first). op: scatter (add 0
 * / 1) or index_add (ixadd). */
static int run_inplace(bool ixadd, bool add, int path, Buf &dst, const wk_layout &ld, const Buf &ids,
                       const wk_layout &li, const Buf &src, const wk_layout &lsrc, Rec &r, unsigned long long seq,
                       int gate, bool check) {
    const int op = ixadd ? WK_CU_IX_INDEX_ADD : add ? WK_CU_IX_SCATTER_ADD : WK_CU_IX_SCATTER;
    int rc = 0;
    if (check) rc = wk__cu_index_check(nullptr, ids.data(), cv(li), WK_I32, ld.shape[0], op, 0, r.flag(seq));
    SYNC();
    if (rc) return rc;
    wk_cu_ixflag f = r.flag(seq, gate);
    if (path == P_SORTED) {
        SortedIds so = sort_ids(ids, li, WK_I32, 0);
        if (so.rc) return so.rc;
        if (ixadd)
            rc = wk__cu_index_add_sorted(nullptr, dst.data(), cv(ld), so.values.data(), (const int64_t *)(void *)so.perm.data(),
                                         WK_I32, li.shape[0], src.data(), cv(lsrc), 0, WK_F32, f);
        else
            rc = wk__cu_scatter_sorted(nullptr, dst.data(), cv(ld), so.values.data(), (const int64_t *)(void *)so.perm.data(),
                                       cv(li), WK_I32, src.data(), cv(lsrc), 0, WK_F32, add, f);
        SYNC();
        return rc;
    }
    if (ixadd) rc = wk__cu_index_add(nullptr, dst.data(), cv(ld), ids.data(), cv(li), WK_I32, src.data(), cv(lsrc), 0, WK_F32, f);
    else rc = wk__cu_scatter(nullptr, dst.data(), cv(ld), ids.data(), cv(li), WK_I32, src.data(), cv(lsrc), 0, WK_F32, add, f);
    SYNC();
    return rc;
}

static void test_gate() {
    for (int kind = 0; kind < 3; kind++) /* scatter, scatter_add, index_add */
        for (int path = 0; path < 3; path++) {
            const bool ixadd = kind == 2, add = kind != 0;
            const int64_t size = 8, cols = 3;
            const int64_t len = path == P_SORTED ? 80 : 6; /* the sorted paths want >= 64 ids */
            /* dst [size, cols]; serial: dst's columns broadcast (0 stride) so positions overlap */
            int64_t dsh[2] = {size, cols};
            wk_layout ld = row_major(dsh, 2);
            if (path == P_SERIAL) ld.stride[1] = 0;
            int64_t ish[2] = {len, cols};
            wk_layout li = ixadd ? row_major(&len, 1) : row_major(ish, 2);
            wk_layout lsrc = row_major(ish, 2);
            const int64_t nid = ixadd ? len : len * cols;
            std::vector<int32_t> good((size_t)nid);
            for (int64_t i = 0; i < nid; i++) good[(size_t)i] = (int32_t)((i * 3 + i / 7) % size);
            std::vector<int32_t> bad = good;
            bad[(size_t)(nid / 2)] = (int32_t)size; /* one bad id in the middle */
            Buf gids = i32s(good), bids = i32s(bad), src = f32s(len * cols, 100.0f);
            const Buf dst0 = f32s(size * cols, -3.0f);
            CHECK(ixadd ? (path == P_SORTED) == wk__cu_index_add_prefers_sorted(cv(ld), cv(li), 0)
                        : (path == P_SORTED) == wk__cu_scatter_prefers_sorted(cv(ld), cv(li), 0),
                  "%s: the path under test is the one the host picks", pname[path]);
            /* bad ids: check + gated writes leave dst untouched */
            {
                Rec r;
                Buf dst = dst0;
                int rc = run_inplace(ixadd, add, path, dst, ld, bids, li, src, lsrc, r, 11, 1, true);
                CHECK(rc == 0 && dst == dst0, "kind %d %s: a bad id, gated: dst untouched (rc %d)", kind, pname[path], rc);
                CHECK(r.rec()->owner == 11 && r.rec()->pos == (unsigned long long)(nid / 2) && r.rec()->id == size &&
                          r.rec()->bad_seq == 11 && *r.word() == WK_ERR_INDEX,
                      "kind %d %s: record pos %llu id %lld", kind, pname[path], r.rec()->pos, r.rec()->id);
            }
            /* the same writes without the gate do write: the check is what stops them */
            {
                Rec r;
                Buf dst = dst0;
                int rc = run_inplace(ixadd, add, path, dst, ld, bids, li, src, lsrc, r, 12, 0, true);
                CHECK(rc == 0 && dst != dst0, "kind %d %s: ungated writes change dst", kind, pname[path]);
            }
            /* good ids after an older gated op: written as the CPU writes them */
            {
                Rec r;
                Buf dst = dst0;
                run_inplace(ixadd, add, path, dst, ld, bids, li, src, lsrc, r, 13, 1, true); /* bad_seq = 13 */
                int rc = run_inplace(ixadd, add, path, dst, ld, gids, li, src, lsrc, r, 14, 1, true);
                Buf want = dst0;
                wk_status cst = ixadd ? wk__cpu_index_add(NULL, want.data(), &ld, gids.data(), &li, WK_I32, src.data(),
                                                          &lsrc, 0, WK_F32)
                                      : wk__cpu_scatter(NULL, want.data(), &ld, gids.data(), &li, WK_I32, src.data(),
                                                        &lsrc, 0, WK_F32, add);
                CHECK(rc == 0 && cst == WK_OK && dst == want && r.rec()->bad_seq == 13 && r.rec()->owner == 13,
                      "kind %d %s: good ids after a gated op: the CPU's result", kind, pname[path]);
            }
        }
}

/* ---- the serial plan's bound ---- */
static void test_serial_bound() {
    int64_t dsh[2] = {8, 3};
    wk_layout ld = row_major(dsh, 2), lo = ld;
    lo.stride[1] = 0; /* overlaps itself: the serial plan */
    int64_t bound = 0;
    const int64_t len = ((INT64_C(1) << 20) + 3) / 3 + 1; /* len x 3 > 2^20 */
    int64_t ish[2] = {len, 3};
    wk_layout li2 = row_major(ish, 2), li1 = row_major(&len, 1);
    CHECK(wk__cu_ix_serial_pairs(cv(ld), cv(li2), 0, false, &bound) == 0 && bound == (INT64_C(1) << 20),
          "parallel scatter: 0 pairs, bound 2^20 (%lld)", (long long)bound);
    CHECK(wk__cu_ix_serial_pairs(cv(ld), cv(li1), 0, true, NULL) == 0, "parallel index_add: 0 pairs");
    CHECK(wk__cu_ix_serial_pairs(cv(lo), cv(li2), 0, false, NULL) == len * 3, "serial scatter: numel(ids) pairs");
    CHECK(wk__cu_ix_serial_pairs(cv(lo), cv(li1), 0, true, NULL) == len * 3, "serial index_add: ids x outer pairs");
    /* beyond the bound the launchers refuse before touching memory */
    CHECK(wk__cu_scatter(nullptr, NULL, cv(lo), NULL, cv(li2), WK_I32, NULL, cv(li2), 0, WK_F32, true, ixf(NULL)) != 0,
          "serial scatter beyond the bound refused");
    int64_t s3[2] = {len, 3};
    CHECK(wk__cu_index_add(nullptr, NULL, cv(lo), NULL, cv(li1), WK_I32, NULL, cv(row_major(s3, 2)), 0, WK_F32,
                           ixf(NULL)) != 0,
          "serial index_add beyond the bound refused");
    /* within it, small: runs (checked against the CPU in test_gate's serial cases) */
    int64_t s6[2] = {6, 3};
    CHECK(wk__cu_ix_serial_pairs(cv(lo), cv(row_major(s6, 2)), 0, false, NULL) == 18, "6 x 3 ids: 18 pairs");
}

/* ---- the host's report ---- */
static bool has(const char *s, const char *part) { return s && strstr(s, part); }

static void test_report() {
    wk_cu_ixrec rec;
    memset(&rec, 0, sizeof rec);
    wk_clear_error();
    CHECK(wk__cuda_flag_status("wk_device_synchronize", "cuda:0#1", 0, NULL) == WK_OK, "clean word: OK");
    CHECK(wk__cuda_flag_status("to_host", "cuda:0#1", 0, &rec) == WK_OK, "clean word, empty record: OK");
    /* from a record the kernels filled */
    {
        const int64_t n = 4, size = 3;
        Buf ids = i32s({0, 2, 5, 1}), src = f32s(size, 0.0f), dst((size_t)n * 4, 0);
        Rec r;
        wk_layout ls = row_major(&size, 1), li = row_major(&n, 1);
        wk__cu_gather(nullptr, src.data(), cv(ls), ids.data(), cv(li), WK_I32, 0, dst.data(), WK_F32, r.flag(21));
        SYNC();
        wk_status st = wk__cuda_flag_status("wk_device_synchronize", "cuda:0#1", *r.word(), r.rec());
        const char *m = wk_last_error();
        CHECK(st == WK_ERR_INDEX && wk_last_status() == WK_ERR_INDEX, "bad gather: WK_ERR_INDEX (%d)", (int)st);
        CHECK(has(m, "wk_gather") && has(m, "index 5 is out of range for dim 0 of size 3") && has(m, "position 2") &&
                  has(m, "cuda:0#1") && has(m, "wk_device_synchronize"),
              "message names the op, id, dim, size, position, device and wait: %s", m ? m : "(null)");
    }
    /* every op's name, the CPU's spelling */
    const char *names[6] = {"indexing", "wk_index_select", "wk_gather", "wk_scatter", "wk_scatter_add", "wk_index_add"};
    for (int op = 0; op <= WK_CU_IX_INDEX_ADD; op++) {
        rec.owner = 1;
        rec.op = op;
        rec.id = -4;
        rec.size = 10;
        rec.dim = 2;
        wk__cuda_flag_status("to_host", "cuda:1#2", WK_ERR_INDEX, &rec);
        CHECK(!strcmp(wk__cuda_ixop_name(op), names[op]) && has(wk_last_error(), names[op]) &&
                  has(wk_last_error(), "index -4 is out of range for dim 2 of size 10") && has(wk_last_error(), "to_host"),
              "op %d: %s", op, wk_last_error());
    }
    memset(&rec, 0, sizeof rec);
    CHECK(wk__cuda_flag_status("to_host", "cuda:0#1", WK_ERR_DIV_ZERO, &rec) == WK_ERR_DIV_ZERO &&
              has(wk_last_error(), "integer division by zero"),
          "division by zero keeps its message: %s", wk_last_error());
    CHECK(wk__cuda_flag_status("to_host", "cuda:0#1", WK_ERR_INDEX, NULL) == WK_ERR_INDEX, "index word, no record");
    CHECK(wk__cuda_flag_status("to_host", "cuda:0#1", 9999, NULL) == WK_ERR_INTERNAL, "unknown word: internal");
    wk_clear_error();
}

int main() {
    if (emu_no_device()) return 0;
    clock_t t0 = clock();
    test_first_position();
    test_good_ids();
    test_gate();
    test_serial_bound();
    test_report();
    return emu_summary(t0);
}
