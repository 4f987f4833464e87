/* The backward of the fused nn ops against PyTorch autograd (float64): the
 * cases tests/oracle/gen_grad_nn.py writes (its docstring has the manifest
 * format). Each case: the inputs in the case's dtype and layout, the
 * tracked ones marked, loss = sum(op(...) * R), the gradients compared with
 * torch's within the case's tolerance. */
#include "testutil.h"
#include "oracle_util.h"
#include "wick/autograd.h"
#include "wick/nn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXIN 4

static int split(char *s, char **out, int cap) {
    int n = 0;
    for (char *p = strtok(s, ","); p && n < cap; p = strtok(NULL, ",")) out[n++] = p;
    return n;
}

static double param_d(const char *params, const char *key, double dflt) {
    char v[64];
    return ou_param(params, key, v, sizeof v) ? atof(v) : dflt;
}

static wk_tensor *run_op(const char *op, const char *params, wk_tensor **in) {
    int dim = (int)param_d(params, "dim", -1);
    bool inter = param_d(params, "inter", 0) != 0;
    if (!strcmp(op, "softmax")) return wk_softmax(in[0], dim);
    if (!strcmp(op, "log_softmax")) return wk_log_softmax(in[0], dim);
    if (!strcmp(op, "rms_norm")) return wk_rms_norm(in[0], in[1], 1e-5);
    if (!strcmp(op, "layer_norm")) return wk_layer_norm(in[0], in[1], in[2], 1e-5);
    if (!strcmp(op, "rope")) return wk_rope(in[0], in[1], in[2], inter);
    if (!strcmp(op, "rope_thd")) return wk_rope_thd(in[0], in[1], in[2], inter);
    if (!strcmp(op, "swiglu")) return wk_swiglu(in[0]);
    if (!strcmp(op, "attention")) {
        wk_attention_opts o = {.mask = in[3],
                               .scale = param_d(params, "scale", 0),
                               .causal = param_d(params, "causal", 0) != 0,
                               .q_offset = (int64_t)param_d(params, "off", 0),
                               .window = (int64_t)param_d(params, "win", 0),
                               .softcap = param_d(params, "cap", 0)};
        return wk_attention(in[0], in[1], in[2], &o);
    }
    return NULL;
}

static void test_grad_nn_oracle(void **state) {
    (void)state;
    char dir[512], path[600];
    if (!ou_dir("grad_nn", dir, sizeof dir)) {
        print_message("WICK_ORACLE_DIR not set: run through ctest (the gen_grad_nn fixture)\n");
        skip();
    }
    FILE *f = ou_open_manifest(dir, path, sizeof path);
    if (!f) {
        print_error("cannot open %s\n", path);
        fail();
    }
    wk_device *dev = ou_device();
    char line[4096];
    int ncases = 0, nfail = 0, ngrads = 0;
    while (ou_next_line(f, line, sizeof line)) {
        char id[128], op[64], dts[16], params[256], inputs[1024], weight[128], grads[1024];
        double tol;
        if (sscanf(line, "%127s %63s %15s %255s %1023s %127s %1023s %lf", id, op, dts, params, inputs, weight, grads,
                   &tol) != 8) {
            print_error("bad manifest line: %s\n", line);
            fail();
        }
        wk_dtype dt;
        assert_true(wk_dtype_from_name(dts, &dt));
        wk_scope_begin();
        char *ispec[MAXIN] = {0}, *gspec[MAXIN] = {0};
        int ni = split(inputs, ispec, MAXIN), ng = split(grads, gspec, MAXIN);
        assert_int_equal(ni, ng);
        wk_tensor *in[MAXIN] = {0}, *xs[MAXIN];
        int slot[MAXIN], nx = 0;
        for (int i = 0; i < ni; i++) {
            if (!strcmp(ispec[i], "-")) continue;
            char why[256];
            bool nc = false;
            in[i] = ou_load_input(dir, ispec[i], dt, &nc, why, sizeof why);
            if (!in[i]) {
                print_error("%s: input %d: %s\n", id, i, why);
                fail();
            }
            if (strcmp(gspec[i], "-")) {
                TU_STATUS_OK(wk_requires_grad(in[i], true));
                slot[nx] = i;
                xs[nx++] = in[i];
            }
        }
        wk_tensor *y = run_op(op, params, in);
        if (!y) {
            print_error("%s: %s\n", id, wk_last_error());
            fail();
        }
        wk_tensor *r = TU_OK(wk_to_device(wk_to_dtype(TU_OK(ou_load(dir, weight)), dt), dev));
        wk_tensor *l = TU_OK(wk_sum_all(wk_mul(wk_to_dtype(y, WK_F64), wk_to_dtype(r, WK_F64))));
        wk_tensor *g[MAXIN];
        if (wk_grad_of(l, xs, nx, NULL, g) != WK_OK) {
            print_error("%s: backward: %s\n", id, wk_last_error());
            fail();
        }
        for (int k = 0; k < nx; k++) {
            char msg[512];
            assert_int_equal(wk_tensor_dtype(g[k]), dt);
            const char *bad = ou_compare_file(g[k], dir, gspec[slot[k]], tol, false, msg, sizeof msg);
            if (bad) {
                print_error("%s (%s %s): gradient of input %d: %s\n", id, op, params, slot[k], bad);
                nfail++;
            }
            ngrads++;
            wk_tensor_free(g[k]);
        }
        wk_scope_end();
        ncases++;
    }
    fclose(f);
    print_message("grad_nn oracle: %d cases, %d gradients, %d mismatches\n", ncases, ngrads, nfail);
    assert_true(ncases > 0);
    assert_int_equal(nfail, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_grad_nn_oracle)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
