/* SmolLM2-135M with f16 and bf16 weights: the first 20 greedy ids equal
 * transformers' f32 reference, with the weights converted at load
 * (opts.dtype on the HF f32 directory) and read as stored (F16 / BF16 GGUFs
 * written here from the package file). Activations stay f32; the weights go
 * through wk_qmatmul's f16 / bf16 path. Label `model`. */
#include "llama_testutil.h"
#include "wick/lm.h"
#include "model/lm_internal.h"

/* An optimised build checks all 20 reference ids; an unoptimised one (the
 * Debug + sanitizer run, whose kernels are -O0) checks the first 4, enough
 * for its purpose (memory errors and leaks on every path) in seconds. */
#ifdef NDEBUG
#define NGEN 20
#else
#define NGEN 4
#endif
#define NREF 20

static void check_ids(const char *path, wk_dtype opt_dtype, wk_dtype expect_weight) {
    char *facts = lt_read_data("smollm2_transformers.json");
    double d_ids[8], d_gen[NREF];
    int n = lt_json_numbers(facts, "capital", "ids", d_ids, 8);
    assert_int_equal(lt_json_numbers(facts, "capital", "greedy", d_gen, NREF), NREF);
    free(facts);
    int32_t ids[8], gen[NGEN];
    for (int i = 0; i < n; i++) ids[i] = (int32_t)d_ids[i];
    wk_lm_load_opts o = {.dtype = opt_dtype};
    wk_lm *m = wk_lm_load(path, &o);
    if (!m) fail_msg("wk_lm_load(%s): %s", path, wk_last_error());
    /* the weights really are kept in that dtype (a wrong one would still
     * pass the ids): white-box, through the model's layers */
    assert_int_equal(wk_tensor_dtype(m->layers[0].o.weight), expect_weight);
    assert_int_equal(wk_tensor_dtype(m->tok_embd.weight), expect_weight);
    lt_greedy(m, ids, n, NGEN, gen, NULL);
    for (int i = 0; i < NGEN; i++)
        if (gen[i] != (int32_t)d_gen[i])
            fail_msg("%s (%s): greedy id %d is %d, transformers %d", path, wk_dtype_name(opt_dtype), i, gen[i],
                     (int)d_gen[i]);
    wk_lm_free(m);
}

static void hf_as_f16(void **state) {
    (void)state;
    check_ids(lt_hf_dir_or_skip(), WK_F16, WK_F16);
}
static void hf_as_bf16(void **state) {
    (void)state;
    check_ids(lt_hf_dir_or_skip(), WK_BF16, WK_BF16);
}

static void gguf_stored(wk_dtype dt, const char *name) {
    const char *src = lt_q4_gguf_or_skip();
    char path[4096];
    lt_tmp_path(path, sizeof path, name);
    lt_write_gguf_as(src, path, dt, -1);
    check_ids(path, WK_U8 /* zero: as stored */, dt);
    remove(path);
}
static void gguf_f16(void **state) {
    (void)state;
    gguf_stored(WK_F16, "smollm2-f16.gguf");
}
static void gguf_bf16(void **state) {
    (void)state;
    gguf_stored(WK_BF16, "smollm2-bf16.gguf");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hf_as_f16),
        cmocka_unit_test(hf_as_bf16),
        cmocka_unit_test(gguf_f16),
        cmocka_unit_test(gguf_bf16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
