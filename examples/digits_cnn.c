/*
 * digits_cnn: train a small CNN on scikit-learn's digits with AdamW.
 *
 *   /usr/bin/python3 examples/digits_data.py /tmp/digits
 *   build/examples/digits_cnn --data /tmp/digits --check
 *
 * The data directory (examples/digits_data.py) holds a fixed train/test
 * split and a fixed batch order (one permutation per epoch), so the run is
 * deterministic and examples/digits_torch.py can replay it in PyTorch from
 * the initial weights this program writes (--init-out) and compare the loss
 * curves (--losses-out). The last partial batch of an epoch is dropped.
 *
 * Options: --epochs E (default 15), --batch B (32), --lr (3e-3),
 * --weight-decay (1e-2), --seed (0), --steps N (stop after N steps),
 * --threads T, --init-out FILE.safetensors, --losses-out FILE.json,
 * --check (exit 1 when the test accuracy is below 97%).
 *
 * Data parallel (wk_ddp, wick/train.h): --ddp under mpirun splits every
 * global batch of B evenly over the ranks (B divisible by their number),
 * each rank its contiguous part; gradients are averaged in buckets of
 * --bucket-mb MiB (default 25) while backward runs. Rank 0 prints and
 * writes the files; the loss printed is the mean over the ranks.
 *
 *   mpirun -np 2 build/examples/digits_cnn --data /tmp/digits --ddp --check
 */
#include <stdio.h>
#include "wick/train.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "digits_model.h"

typedef struct digits_opts {
    const char *data, *init_out, *losses_out;
    int epochs, batch, threads;
    int64_t steps;
    double lr, wd, bucket_mb;
    uint64_t seed;
    bool check, ddp;
} digits_opts;

static int usage(void) {
    fprintf(stderr, "usage: digits_cnn --data DIR [--epochs E] [--batch B] [--lr LR] [--weight-decay WD] "
                    "[--seed S] [--steps N] [--threads T] [--init-out F] [--losses-out F] [--check] [--ddp] "
                    "[--bucket-mb MB]\n");
    return 2;
}

static bool parse(int argc, char **argv, digits_opts *o) {
    *o = (digits_opts){.epochs = 15, .batch = 32, .lr = 3e-3, .wd = 1e-2, .steps = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--check")) { o->check = true; continue; }
        if (!strcmp(a, "--ddp")) { o->ddp = true; continue; }
        if (!v) return false;
        i++;
        if (!strcmp(a, "--data")) o->data = v;
        else if (!strcmp(a, "--init-out")) o->init_out = v;
        else if (!strcmp(a, "--losses-out")) o->losses_out = v;
        else if (!strcmp(a, "--epochs")) o->epochs = atoi(v);
        else if (!strcmp(a, "--batch")) o->batch = atoi(v);
        else if (!strcmp(a, "--threads")) o->threads = atoi(v);
        else if (!strcmp(a, "--steps")) o->steps = atoll(v);
        else if (!strcmp(a, "--lr")) o->lr = atof(v);
        else if (!strcmp(a, "--weight-decay")) o->wd = atof(v);
        else if (!strcmp(a, "--bucket-mb")) o->bucket_mb = atof(v);
        else if (!strcmp(a, "--seed")) o->seed = strtoull(v, NULL, 10);
        else return false;
    }
    return o->data && o->epochs > 0 && o->batch > 0;
}

static wk_tensor *load(const char *dir, const char *name, wk_device *dev) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    wk_tensor *t = wk_npy_load(path, dev);
    if (!t) fprintf(stderr, "digits_cnn: %s: %s\n", path, wk_last_error());
    return t;
}

static bool write_losses(const char *path, const double *losses, int64_t n, double acc) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fprintf(f, "{\"test_accuracy\": %.6f, \"losses\": [", acc);
    for (int64_t i = 0; i < n; i++) fprintf(f, "%s%.9g", i ? ", " : "", losses[i]);
    fprintf(f, "]}\n");
    return fclose(f) == 0;
}

int main(int argc, char **argv) {
    digits_opts o;
    if (!parse(argc, argv, &o)) return usage();
    if (o.threads > 0) wk_set_num_threads(o.threads);
    wk_comm *comm = NULL;
    int rank = 0, world = 1;
    if (o.ddp) {
        comm = wk_comm_init_mpi(&argc, &argv, NULL);
        if (!comm) {
            fprintf(stderr, "digits_cnn: --ddp: %s\n", wk_last_error());
            return 1;
        }
        rank = wk_comm_rank(comm);
        world = wk_comm_size(comm);
        if (o.batch % world) {
            fprintf(stderr, "digits_cnn: --batch %d does not split evenly over %d ranks\n", o.batch, world);
            return 2;
        }
    }
    int local = o.batch / world;
    wk_device *dev = wk_cpu();
    wk_tensor *trx = load(o.data, "train_x", dev), *try_ = load(o.data, "train_y", dev);
    wk_tensor *tex = load(o.data, "test_x", dev), *tey = load(o.data, "test_y", dev);
    wk_tensor *order = load(o.data, "order", dev);
    if (!trx || !try_ || !tex || !tey || !order) return 1;
    int64_t n_train = wk_dim(trx, 0), per_epoch = n_train / o.batch;
    if (wk_dim(order, 0) < o.epochs || wk_dim(order, 1) != n_train || wk_tensor_dtype(order) != WK_I64) {
        fprintf(stderr, "digits_cnn: order.npy has %lld epochs of batch order, %d asked (rerun digits_data.py --epochs)\n",
                (long long)wk_dim(order, 0), o.epochs);
        return 1;
    }
    int64_t total = per_epoch * o.epochs;
    if (o.steps >= 0 && o.steps < total) total = o.steps;
    int64_t *ord = malloc((size_t)wk_numel(order) * sizeof *ord);
    double *losses = malloc((size_t)(total > 0 ? total : 1) * sizeof *losses);
    if (!ord || !losses || wk_to_host(order, ord, (size_t)wk_numel(order) * sizeof *ord) != WK_OK) return 1;

    digits_model m = {0};
    if (digits_model_init(&m, o.seed, dev) != WK_OK) {
        fprintf(stderr, "digits_cnn: init: %s\n", wk_last_error());
        return 1;
    }
    if (rank == 0 && o.init_out && wk_checkpoint_save(o.init_out, digits_param_names(), m.params, DIGITS_NPARAMS, NULL) != WK_OK) {
        fprintf(stderr, "digits_cnn: %s: %s\n", o.init_out, wk_last_error());
        return 1;
    }
    wk_optim_config cfg = {.kind = WK_ADAMW, .lr = o.lr, .weight_decay = o.wd};
    wk_optimizer *opt = wk_optimizer_new(&cfg, m.params, DIGITS_NPARAMS);
    wk_grad_store *gs = wk_grad_store_new();
    wk_ddp_opts dop = {.bucket_mb = o.bucket_mb};
    wk_ddp *ddp = comm ? wk_ddp_new(comm, m.params, DIGITS_NPARAMS, &dop) : NULL;
    if (!opt || !gs || (comm && !ddp)) {
        fprintf(stderr, "digits_cnn: optimizer: %s\n", wk_last_error());
        return 1;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int64_t s = 0; s < total; s++) {
        int64_t e = s / per_epoch, b = s % per_epoch, shape = local;
        wk_tensor *ids = wk_from_host(ord + e * n_train + b * o.batch + (int64_t)rank * local,
                                      (size_t)local * sizeof *ord, &shape, 1, WK_I64, dev);
        wk_status st = ids ? digits_train_step_ddp(&m, opt, gs, ddp, trx, try_, ids, &losses[s]) : WK_ERR_OOM;
        wk_tensor_free(ids);
        if (st == WK_OK && comm) { /* the global batch's loss: the mean of the ranks' */
            int64_t one = 1;
            wk_tensor *lt = wk_full(&one, 1, losses[s], WK_F64, dev), *la = lt ? wk_all_reduce(comm, lt, WK_DIST_AVG) : NULL;
            st = la ? wk_item(la, &losses[s]) : wk_last_status();
            wk_tensor_free(lt);
            wk_tensor_free(la);
        }
        if (st != WK_OK) {
            fprintf(stderr, "digits_cnn: step %lld: %s\n", (long long)s, wk_last_error());
            return 1;
        }
        if (rank == 0 && (b == per_epoch - 1 || s == total - 1))
            printf("epoch %lld step %lld loss %.4f\n", (long long)e + 1, (long long)s + 1, losses[s]);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) / (double)(total ? total : 1);
    double acc = digits_accuracy(&m, tex, tey);
    if (acc < 0) {
        fprintf(stderr, "digits_cnn: eval: %s\n", wk_last_error());
        return 1;
    }
    if (rank == 0)
        printf("test accuracy %.2f%% (%lld test images, %lld steps, %.2f ms/step on %d rank%s)\n", 100.0 * acc,
               (long long)wk_dim(tey, 0), (long long)total, ms, world, world > 1 ? "s" : "");
    if (rank == 0 && o.losses_out && !write_losses(o.losses_out, losses, total, acc)) {
        fprintf(stderr, "digits_cnn: cannot write %s\n", o.losses_out);
        return 1;
    }
    wk_grad_store_free(gs);
    wk_optimizer_free(opt);
    wk_ddp_free(ddp);
    wk_comm_free(comm);
    digits_model_free(&m);
    wk_tensor_free(trx); wk_tensor_free(try_); wk_tensor_free(tex); wk_tensor_free(tey); wk_tensor_free(order);
    free(ord);
    free(losses);
    if (o.check && acc < 0.97) {
        fprintf(stderr, "digits_cnn: test accuracy %.2f%% is below 97%%\n", 100.0 * acc);
        return 1;
    }
    return 0;
}
