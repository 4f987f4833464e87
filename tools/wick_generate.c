/* `wick generate -m MODEL -p PROMPT [options]`: text from a llama-family
 * model (a .gguf file or an HF directory) through wk_generate.
 *
 * stdout gets only the generated text, streamed and flushed piece by piece
 * (plus one newline at the end when stdout is a terminal). stderr gets a
 * loading bar while the weights are read (only when stderr is a terminal;
 * it is erased afterwards) and, after the text, the timings. Every error is
 * one line "wick generate: ..." on stderr, exit status 1, nothing on stdout:
 * the timings are printed only after generation succeeded. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "tools/wick_cli.h"
#include "tools/wick_lm_args.h"
#include "wick/generate.h"
#include "wick/lm.h"

#define DEFAULT_N 128

static const char USAGE[] =
    "usage: wick generate -m MODEL -p PROMPT [options]\n"
    "  -m, --model PATH        a .gguf file or an HF directory (config.json, *.safetensors, tokenizer.json)\n"
    "  -p, --prompt TEXT       the prompt (special tokens such as <|im_start|> are parsed)\n"
    "  -n, --n-predict N       tokens to generate (default 128; -1: until EOS or the context is full)\n"
    "  --temp T                temperature (default 0.8; <= 0: greedy)\n"
    "  --top-k K               keep the K most likely (default 40; 0: off)\n"
    "  --top-p P               nucleus sampling, P in (0, 1] (default 0.95; 1: off)\n"
    "  --min-p P               keep p >= P * p_max, P in [0, 1] (default 0.05; 0: off)\n"
    "  --repeat-penalty R      llama.cpp's repetition penalty (default 1: off)\n"
    "  --repeat-last-n N       ids the penalty looks back over (default 64; -1: all)\n"
    "  --seed S                the same seed gives the same text (default 0)\n"
    "  --chat                  wrap the prompt in the model's chat template (ChatML)\n"
    "  --system TEXT           the chat's system message (implies --chat)\n"
    "  --stop STR              stop before STR (not printed); up to 16\n"
    "  --ignore-eos            do not stop at the end-of-sequence token\n"
    "  --ctx N                 use at most N positions of the context\n"
    "  --dtype f32|f16|bf16    dtype of the unquantized weights and activations (default f32)\n"
    "  --kv-type f32|f16|bf16  dtype of the KV cache (default f32; f16 halves what decode reads\n"
    "                          over a long context, as llama.cpp's default cache does)\n"
    "  --threads N             CPU threads\n"
    "  --device cpu|cuda[:N]   where the model runs (default cpu)\n"
    "  --tp N                  tensor parallel over N processes: 'mpirun -np N wick generate --tp N ...'\n"
    "                          (each holds 1/N of the weights; rank 0 prints)\n"
    "  --pp N                  pipeline parallel over the N ranks of `mpirun -np N wick generate --pp N ...`\n"
    "                          (each rank holds 1/N of the layers; rank 0 prints)\n"
    "\n"
    "Generation stops at -n tokens, at the end-of-sequence token, before a --stop string, or when\n"
    "the prompt and the new tokens fill the context (the model's, or --ctx); stderr then ends with\n"
    "\"stopped: context full\" and the exit status is still 0: that is a normal end, not an error.\n"
    "Exit status: 0 when the text was generated (whatever stopped it), 1 on any error.\n";

/* ---- output ---- */

typedef struct {
    bool wrote, failed;
    bool quiet; /* --tp / --pp: ranks other than 0 print nothing */
} out_state;

static int on_text(void *ctx, const char *bytes, size_t n) {
    out_state *o = ctx;
    if (o->quiet) return 0;
    if (fwrite(bytes, 1, n, stdout) != n || fflush(stdout) != 0) {
        o->failed = true;
        return 1;
    }
    o->wrote = true;
    return 0;
}

int wk__cli_generate(int argc, char **argv) {
    wk__cli_lm_args a = {.cmd = "generate", .usage = USAGE, .n = DEFAULT_N};
    int rc = wk__cli_lm_parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    wk_device *dev;
    double load_ms;
    wk_lm *m = wk__cli_lm_load(&a, &dev, &load_ms);
    if (!m) {
        wk__cli_lm_done(&a);
        return 1;
    }

    out_state os = {.quiet = a.rank != 0};
    a.g.on_text = on_text;
    a.g.ctx = &os;
    wk_generate_stats st;
    wk_status s = wk_generate(m, a.prompt, &a.g, &st);
    if (s != WK_OK) {
        rc = wk__cli_fail("generate");
    } else if (os.failed) {
        rc = wk__cli_lm_fail(&a, "writing the text failed: %s", strerror(errno));
    } else if (a.rank == 0) {
        if (os.wrote && isatty(STDOUT_FILENO)) fputc('\n', stdout);
        fflush(stdout);
        const wk_lm_config *c = wk_lm_config_of(m);
        int64_t nd = st.n_generated > 0 ? st.n_generated - 1 : 0;
        fprintf(stderr, "wick generate: load %.1f ms (%lld layers, %s, %d threads", load_ms, (long long)c->n_layers,
                wk_device_name(dev), wk_num_threads());
        if (a.tp > 1) fprintf(stderr, " per rank, tensor parallel over %lld ranks", (long long)a.tp);
        if (a.pp > 1) fprintf(stderr, " per rank, %lld pipeline ranks", (long long)a.pp);
        fputs(")\n", stderr);
        fprintf(stderr, "wick generate: prompt %lld tokens, prefill %.1f ms (%.1f tok/s), first token after %.1f ms\n",
                (long long)st.n_prompt, st.prefill_ms, st.prefill_ms > 0 ? st.n_prompt * 1e3 / st.prefill_ms : 0.0,
                st.first_token_ms);
        fprintf(stderr, "wick generate: %lld tokens, decode %lld in %.1f ms (%.1f tok/s), stopped: %s\n",
                (long long)st.n_generated, (long long)nd, st.decode_ms,
                st.decode_ms > 0 ? nd * 1e3 / st.decode_ms : 0.0, wk__cli_stop_name(st.stop_reason));
    }
    wk_lm_free(m);
    wk__cli_lm_done(&a);
    return rc;
}
