/*
 * char_transformer: a character-level transformer (examples/char_model.h)
 * trained with AdamW on a text Debian always ships.
 *
 *   build/examples/char_transformer [--text /usr/share/common-licenses/GPL-3]
 *
 * Deterministic: the weights come from the device generator seeded with
 * --seed, the batches from splitmix64 seeded with --data-seed, so
 * examples/char_transformer_torch.py can replay the run in PyTorch from the
 * initial weights written by --init-out and compare the loss curves
 * written by --losses-out.
 *
 * Options: --steps N (300), --batch B (16), --ctx T (64), --dim d (64),
 * --heads H (4), --layers L (2), --lr (3e-3), --weight-decay (1e-2),
 * --seed (0), --data-seed (1), --threads T, --init-out F, --losses-out F,
 * --check (exit 1 unless the mean loss of the last tenth of the steps is
 * below 80% of the first step's).
 *
 * Data parallel (wk_ddp, wick/train.h): --ddp under mpirun gives each rank
 * its contiguous B / ranks rows of every global batch of B (the same
 * batches as one process draws); gradients are averaged in buckets of
 * --bucket-mb MiB (default 25) while backward runs. Rank 0 prints and
 * writes the files; the loss printed is the mean over the ranks.
 *
 *   mpirun -np 2 build/examples/char_transformer --ddp --steps 100
 */
#include <stdio.h>
#include "wick/train.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "char_model.h"

typedef struct char_opts {
    const char *text, *init_out, *losses_out;
    char_config cfg;
    int64_t steps, batch;
    int threads;
    double lr, wd, bucket_mb;
    uint64_t seed, data_seed;
    bool check, ddp;
} char_opts;

static bool parse(int argc, char **argv, char_opts *o) {
    *o = (char_opts){.text = "/usr/share/common-licenses/GPL-3", .cfg = {64, 4, 2, 64}, .steps = 300,
                     .batch = 16, .lr = 3e-3, .wd = 1e-2, .data_seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--check")) { o->check = true; continue; }
        if (!strcmp(a, "--ddp")) { o->ddp = true; continue; }
        if (!v) return false;
        i++;
        if (!strcmp(a, "--text")) o->text = v;
        else if (!strcmp(a, "--init-out")) o->init_out = v;
        else if (!strcmp(a, "--losses-out")) o->losses_out = v;
        else if (!strcmp(a, "--steps")) o->steps = atoll(v);
        else if (!strcmp(a, "--batch")) o->batch = atoll(v);
        else if (!strcmp(a, "--ctx")) o->cfg.ctx = atoll(v);
        else if (!strcmp(a, "--dim")) o->cfg.dim = atoll(v);
        else if (!strcmp(a, "--heads")) o->cfg.heads = atoll(v);
        else if (!strcmp(a, "--layers")) o->cfg.layers = atoll(v);
        else if (!strcmp(a, "--threads")) o->threads = atoi(v);
        else if (!strcmp(a, "--lr")) o->lr = atof(v);
        else if (!strcmp(a, "--weight-decay")) o->wd = atof(v);
        else if (!strcmp(a, "--bucket-mb")) o->bucket_mb = atof(v);
        else if (!strcmp(a, "--seed")) o->seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--data-seed")) o->data_seed = strtoull(v, NULL, 10);
        else return false;
    }
    return o->steps > 0 && o->batch > 0 && o->cfg.ctx > 0 && o->cfg.dim > 0 && o->cfg.heads > 0;
}

int main(int argc, char **argv) {
    char_opts o;
    if (!parse(argc, argv, &o)) {
        fprintf(stderr, "usage: char_transformer [--text F] [--steps N] [--batch B] [--ctx T] [--dim d] [--heads H] "
                        "[--layers L] [--lr LR] [--weight-decay WD] [--seed S] [--data-seed S] [--threads T] "
                        "[--init-out F] [--losses-out F] [--check] [--ddp] [--bucket-mb MB]\n");
        return 2;
    }
    if (o.threads > 0) wk_set_num_threads(o.threads);
    wk_comm *comm = NULL;
    int rank = 0, world = 1;
    if (o.ddp) {
        comm = wk_comm_init_mpi(&argc, &argv, NULL);
        if (!comm) {
            fprintf(stderr, "char_transformer: --ddp: %s\n", wk_last_error());
            return 1;
        }
        rank = wk_comm_rank(comm);
        world = wk_comm_size(comm);
        if (o.batch % world) {
            fprintf(stderr, "char_transformer: --batch %lld does not split evenly over %d ranks\n",
                    (long long)o.batch, world);
            return 2;
        }
    }
    int64_t local = o.batch / world;
    int64_t len = 0;
    unsigned char *text = char_read_text(o.text, &len);
    if (!text || len < o.cfg.ctx + 2) {
        fprintf(stderr, "char_transformer: %s: cannot read, not 7-bit ASCII, or shorter than the window\n", o.text);
        return 1;
    }
    wk_device *dev = wk_cpu();
    char_model m;
    if (char_model_init(&m, &o.cfg, o.seed, dev) != WK_OK) {
        fprintf(stderr, "char_transformer: init: %s\n", wk_last_error());
        return 1;
    }
    if (rank == 0 && o.init_out && wk_checkpoint_save(o.init_out, m.name_ptrs, m.params, m.nparams, NULL) != WK_OK) {
        fprintf(stderr, "char_transformer: %s: %s\n", o.init_out, wk_last_error());
        return 1;
    }
    wk_optim_config oc = {.kind = WK_ADAMW, .lr = o.lr, .weight_decay = o.wd};
    wk_optimizer *opt = wk_optimizer_new(&oc, m.params, m.nparams);
    wk_grad_store *gs = wk_grad_store_new();
    size_t n = (size_t)(o.batch * o.cfg.ctx);
    int64_t *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *losses = malloc((size_t)o.steps * sizeof *losses);
    wk_ddp_opts dop = {.bucket_mb = o.bucket_mb};
    wk_ddp *ddp = comm ? wk_ddp_new(comm, m.params, m.nparams, &dop) : NULL;
    if (!opt || !gs || !x || !y || !losses || (comm && !ddp)) {
        fprintf(stderr, "char_transformer: optimizer: %s\n", wk_last_error());
        return 1;
    }
    uint64_t rng = o.data_seed;
    if (rank == 0)
        printf("char_transformer: %lld bytes of %s, d %lld, %lld heads, %lld layers, window %lld, batch %lld, %d params\n",
           (long long)len, o.text, (long long)o.cfg.dim, (long long)o.cfg.heads, (long long)o.cfg.layers,
           (long long)o.cfg.ctx, (long long)o.batch, m.nparams);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int64_t s = 0; s < o.steps; s++) {
        char_batch(text, len, o.batch, o.cfg.ctx, &rng, x, y);
        int64_t at = (int64_t)rank * local * o.cfg.ctx;
        wk_status st = char_train_step_ddp(&m, opt, gs, ddp, x + at, y + at, local, &losses[s]);
        if (st == WK_OK && comm) { /* the global batch's loss: the mean of the ranks' */
            int64_t one = 1;
            wk_tensor *lt = wk_full(&one, 1, losses[s], WK_F64, dev), *la = lt ? wk_all_reduce(comm, lt, WK_DIST_AVG) : NULL;
            st = la ? wk_item(la, &losses[s]) : wk_last_status();
            wk_tensor_free(lt);
            wk_tensor_free(la);
        }
        if (st != WK_OK) {
            fprintf(stderr, "char_transformer: step %lld: %s\n", (long long)s, wk_last_error());
            return 1;
        }
        if (rank == 0 && (s == 0 || (s + 1) % 50 == 0 || s == o.steps - 1))
            printf("step %lld loss %.4f\n", (long long)s + 1, losses[s]);
    }
    int64_t tail = o.steps / 10 > 0 ? o.steps / 10 : 1;
    double last = 0;
    for (int64_t s = o.steps - tail; s < o.steps; s++) last += losses[s] / (double)tail;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) / (double)o.steps;
    if (rank == 0)
        printf("loss %.4f at step 1, %.4f over the last %lld steps (%.2f ms/step on %d rank%s)\n", losses[0], last,
               (long long)tail, ms, world, world > 1 ? "s" : "");
    if (rank == 0 && o.losses_out) {
        FILE *f = fopen(o.losses_out, "w");
        if (!f) {
            fprintf(stderr, "char_transformer: cannot write %s\n", o.losses_out);
            return 1;
        }
        fprintf(f, "{\"losses\": [");
        for (int64_t s = 0; s < o.steps; s++) fprintf(f, "%s%.9g", s ? ", " : "", losses[s]);
        fprintf(f, "]}\n");
        if (fclose(f) != 0) return 1;
    }
    wk_grad_store_free(gs);
    wk_optimizer_free(opt);
    wk_ddp_free(ddp);
    wk_comm_free(comm);
    char_model_free(&m);
    free(x); free(y); free(text);
    bool fell = last < 0.8 * losses[0];
    free(losses);
    if (o.check && !fell) {
        fprintf(stderr, "char_transformer: the loss did not fall enough\n");
        return 1;
    }
    return 0;
}
