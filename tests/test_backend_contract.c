/* The backend contract (src/backend.h): every entry of the CPU backend table
 * (and of the CUDA table when it is compiled in) is set. The table is walked as an array of WK_BACKEND_NUM_ENTRIES function
 * pointers after `name`, so an entry added to wk_backend later is checked
 * without touching this test. */
#include "testutil.h"

#include <stddef.h>
#include <string.h>

#include "backend.h"

typedef void (*any_fn)(void);

/* Entry i of a backend table, read as bytes (no aliasing games). */
static any_fn entry(const wk_backend *be, size_t i) {
    any_fn f;
    memcpy(&f, (const char *)be + sizeof(const char *) + i * sizeof(any_fn), sizeof f);
    return f;
}

static void test_layout_of_the_table(void **state) {
    (void)state;
    /* the macro covers the struct exactly: name, then only function pointers */
    assert_int_equal(offsetof(wk_backend, alloc), sizeof(const char *));
    assert_int_equal(sizeof(wk_backend), sizeof(const char *) + WK_BACKEND_NUM_ENTRIES * sizeof(any_fn));
    assert_true(WK_BACKEND_NUM_ENTRIES >= 21);
    /* named entries sit inside the walked range */
    assert_true(offsetof(wk_backend, synchronize) < sizeof(wk_backend));
    assert_int_equal((offsetof(wk_backend, matmul) - sizeof(const char *)) % sizeof(any_fn), 0);
}

static void test_cpu_backend_complete(void **state) {
    (void)state;
    const wk_backend *be = &wk__cpu_backend;
    assert_non_null(be->name);
    assert_string_equal(be->name, "cpu");
    size_t missing = 0;
    for (size_t i = 0; i < WK_BACKEND_NUM_ENTRIES; i++) {
        if (!entry(be, i)) {
            print_error("wk__cpu_backend entry %zu (after name) is NULL\n", i);
            missing++;
        }
    }
    assert_int_equal(missing, 0);
    /* the walk reads the same pointers as the named fields */
    any_fn first, sync;
    memcpy(&first, &be->alloc, sizeof first);
    memcpy(&sync, &be->synchronize, sizeof sync);
    assert_true(entry(be, 0) == first);
    assert_true(entry(be, (offsetof(wk_backend, synchronize) - sizeof(const char *)) / sizeof(any_fn)) == sync);
    /* entries are distinct functions except where one kernel may serve two */
    size_t distinct = 0;
    for (size_t i = 0; i < WK_BACKEND_NUM_ENTRIES; i++) {
        bool seen = false;
        for (size_t j = 0; j < i; j++) seen = seen || entry(be, j) == entry(be, i);
        distinct += !seen;
    }
    assert_true(distinct >= WK_BACKEND_NUM_ENTRIES / 2);
}

#ifdef WICK_HAVE_CUDA
extern const wk_backend wk__cuda_backend;

/* With the CUDA backend compiled in (WICK_CUDA), its table is complete too:
 * entries not written yet are non-NULL functions that answer
 * WK_ERR_NOT_COMPILED (tests/test_cuda.c checks their messages). */
static void test_cuda_backend_complete(void **state) {
    (void)state;
    const wk_backend *be = &wk__cuda_backend;
    assert_non_null(be->name);
    assert_string_equal(be->name, "cuda");
    size_t missing = 0;
    for (size_t i = 0; i < WK_BACKEND_NUM_ENTRIES; i++) {
        if (!entry(be, i)) {
            print_error("wk__cuda_backend entry %zu (after name) is NULL\n", i);
            missing++;
        }
    }
    assert_int_equal(missing, 0);
    size_t distinct = 0;
    for (size_t i = 0; i < WK_BACKEND_NUM_ENTRIES; i++) {
        bool seen = false;
        for (size_t j = 0; j < i; j++) seen = seen || entry(be, j) == entry(be, i);
        distinct += !seen;
    }
    assert_true(distinct >= WK_BACKEND_NUM_ENTRIES / 2);
    /* no entry is shared with the CPU table */
    for (size_t i = 0; i < WK_BACKEND_NUM_ENTRIES; i++) assert_true(entry(be, i) != entry(&wk__cpu_backend, i));
}
#endif

static void test_cpu_device_uses_the_table(void **state) {
    (void)state;
    /* the trivial entries behave as the contract says */
    assert_int_equal(wk__cpu_backend.synchronize(wk_cpu()), WK_OK);
    void *buf = NULL;
    assert_int_equal(wk__cpu_backend.alloc(wk_cpu(), 0, &buf), WK_OK);
    assert_non_null(buf); /* nbytes 0 still gives a valid pointer */
    wk__cpu_backend.free(wk_cpu(), buf, 0);
    assert_int_equal(wk__cpu_backend.alloc(wk_cpu(), 256, &buf), WK_OK);
    assert_non_null(buf);
    const char src[8] = "abcdefg";
    assert_int_equal(wk__cpu_backend.from_host(wk_cpu(), buf, 16, src, sizeof src), WK_OK);
    assert_memory_equal((char *)buf + 16, src, sizeof src);
    wk__cpu_backend.free(wk_cpu(), buf, 256);
    assert_string_equal(wk_device_name(wk_cpu()), wk__cpu_backend.name);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_of_the_table),
        cmocka_unit_test(test_cpu_backend_complete),
        cmocka_unit_test(test_cpu_device_uses_the_table),
#ifdef WICK_HAVE_CUDA
        cmocka_unit_test(test_cuda_backend_complete),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
