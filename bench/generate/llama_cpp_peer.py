#!/usr/bin/env python3
"""bench/generate's peer: llama.cpp (llama-cpp-python 0.3.36, its low-level
ctypes API) doing what bench_generate does with wick, on the same file.

  python llama_cpp_peer.py -m MODEL.gguf [--threads T] [--prefill N]
                           [--decode M] [--depth D] [--reps R]

Run it with the peer venv's python (scripts/bench-generate.sh picks it). Per
process: load (model + context, timed), then R repetitions of: clear the KV
cache, eval the N prompt ids as one batch (llama_decode of one llama_batch),
take the argmax of the last row of logits, then M single-token evals, each
followed by reading that token's logits. --depth D (llama-bench's -d) first
fills D positions of the cache once, untimed (batches of up to 512 ids), and
each repetition removes the positions after D instead of clearing the cache,
as bench_generate.c does. The first repetition after the load
is the cold one: its prompt eval + argmax is the time to first token; the
timed prefill/decode figures and the warm time to first token are the medians
over the repetitions after it (with R = 1 the cold run is the only one).

The ids are the ones bench/bench_generate.c uses (bench_ids below restates its
formula): ordinary tokens (ids 300 .. 31999: none of the special or byte
tokens of SmolLM2, Gemma 3 or Qwen2.5), the same on both sides
so the work is the same. Decode feeds the continuation of that sequence
rather than sampled ids, so wick and llama.cpp see identical inputs even
where their quantized arithmetic would pick different tokens.

Process CPU time is taken over the same spans as wall time (tokens per CPU
second; at one thread it leaves out waiting for a core on a loaded machine).

After the timing, the 4 greedy ids after "The capital of France is" are
printed (check=...), as bench_generate does for SmolLM2, to show both forwards
are the model's (CHECK_PROMPTS holds the prompt's ids per vocabulary).

Output: one line of key=value pairs beginning "peer=llama.cpp", the same keys
as bench_generate prints, parsed by bench/generate/table.py. Peak RSS is
getrusage's ru_maxrss (it includes the Python interpreter; rss_base_kb is
the resident size just before the model is loaded, so the difference is what
the model, context and KV cache added). KV bytes: llama.cpp's cache is
2 (K and V) * layers * kv heads * head dim * n_ctx * the cache type's size
(f16 unless changed), n_ctx as the context reports it (it rounds up).
"""
import argparse
import ctypes
import os
import resource
import statistics
import sys
import time


# "The capital of France is" by vocabulary size, as llama.cpp tokenizes it (BOS where the model adds
# one): SmolLM2 -> " Paris" first (7042); Gemma 3 (BOS 2) and Qwen2.5 (0.5B and 1.5B share the
# vocabulary): tests/data/llama_cpp_gemma3_270m.json / llama_cpp_qwen25_coder_05b.json
CHECK_PROMPTS = {
    49152: (504, 3575, 282, 4649, 314),
    262144: (2, 818, 5279, 529, 7001, 563),
    151936: (785, 6722, 315, 9625, 374),
}


def bench_ids(n, vocab):
    """Same formula as bench_generate.c's bench_id(): a fixed pseudo-random
    walk over the ids 300 .. min(vocab, 32000)-1 (ordinary tokens in SmolLM2,
    Gemma 3 and Qwen2.5: their special and byte tokens lie below 300 or at
    the end of the vocabulary)."""
    span = min(vocab, 32000) - 300
    return [300 + (i * 7919 + 104729) % span for i in range(n)]


def rss_now_kb():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prefill", type=int, default=128)
    ap.add_argument("--decode", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--depth", type=int, default=0)
    a = ap.parse_args()
    if a.prefill < 1 or a.decode < 0 or a.reps < 1 or a.threads < 1 or a.depth < 0:
        ap.error("need --prefill >= 1, --decode >= 0, --depth >= 0, --reps >= 1, --threads >= 1")

    try:
        import numpy as np
        import llama_cpp as L
    except ImportError as e:
        print(f"llama_cpp_peer: cannot import {e.name} ({e}); run it with the peer venv's python",
              file=sys.stderr)
        return 3

    # Silence llama.cpp's load log (it goes to stderr in large amounts).
    @L.llama_log_callback
    def quiet(level, text, user_data):
        if level == 3:  # GGML_LOG_LEVEL_ERROR
            sys.stderr.write(text.decode("utf-8", "replace"))

    L.llama_log_set(quiet, ctypes.c_void_p(0))
    L.llama_backend_init()

    rss_base = rss_now_kb()
    t0 = time.perf_counter()
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = 0
    model = L.llama_model_load_from_file(a.model.encode(), mp)
    if not model:
        print(f"llama_cpp_peer: cannot load {a.model}", file=sys.stderr)
        return 1
    cp = L.llama_context_default_params()
    cp.n_ctx = a.depth + a.prefill + a.decode
    chunk = 512 if a.depth else 1
    cp.n_batch = max(a.prefill, chunk)
    cp.n_ubatch = max(a.prefill, chunk)
    cp.n_seq_max = 1
    cp.n_threads = a.threads
    cp.n_threads_batch = a.threads
    ctx = L.llama_init_from_model(model, cp)
    if not ctx:
        print("llama_cpp_peer: cannot make a context", file=sys.stderr)
        return 1
    load_ms = (time.perf_counter() - t0) * 1e3

    vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
    all_ids = bench_ids(a.depth + a.prefill + a.decode, vocab)
    ids = all_ids[a.depth:]
    prompt = (L.llama_token * a.prefill)(*ids[: a.prefill])
    one = (L.llama_token * 1)()
    mem = L.llama_get_memory(ctx)

    def argmax_last():
        # numpy over the logits in place (~20 us, as wick's C loop); a ctypes
        # slice + max() would add ~1 ms a token to llama.cpp's time
        row = L.llama_get_logits_ith(ctx, -1)
        return int(np.ctypeslib.as_array(row, shape=(vocab,)).argmax())

    def fill_depth():
        for p in range(0, a.depth, 512):
            n = min(512, a.depth - p)
            part = (L.llama_token * n)(*all_ids[p:p + n])
            if L.llama_decode(ctx, L.llama_batch_get_one(part, n)) != 0:
                raise RuntimeError("llama_decode (depth) failed")

    def run():
        if a.depth:
            L.llama_memory_seq_rm(mem, 0, a.depth, -1)
        else:
            L.llama_memory_clear(mem, True)
        t, c = time.perf_counter(), time.process_time()
        if L.llama_decode(ctx, L.llama_batch_get_one(prompt, a.prefill)) != 0:
            raise RuntimeError("llama_decode (prompt) failed")
        t_prefill, c_prefill = time.perf_counter() - t, time.process_time() - c
        argmax_last()
        t_first = time.perf_counter() - t
        t, c = time.perf_counter(), time.process_time()
        for j in range(a.decode):
            one[0] = ids[a.prefill + j]
            if L.llama_decode(ctx, L.llama_batch_get_one(one, 1)) != 0:
                raise RuntimeError("llama_decode (token) failed")
            argmax_last()
        t_decode, c_decode = time.perf_counter() - t, time.process_time() - c
        return t_prefill, t_first, t_decode, c_prefill, c_decode

    def greedy_check():
        """4 greedy ids after "The capital of France is", tokenized for the file's
        vocabulary (CHECK_PROMPTS; "-" for a vocabulary not listed there).
        bench_generate.c checks SmolLM2's only."""
        ids = CHECK_PROMPTS.get(vocab)
        if ids is None:
            return "-"
        L.llama_memory_clear(mem, True)
        # the array must outlive the decode: the batch only points at it
        check = (L.llama_token * len(ids))(*ids)
        if L.llama_decode(ctx, L.llama_batch_get_one(check, len(ids))) != 0:
            return "-"
        out = [argmax_last()]
        while len(out) < 4:
            one[0] = out[-1]
            if L.llama_decode(ctx, L.llama_batch_get_one(one, 1)) != 0:
                return "-"
            out.append(argmax_last())
        return ",".join(map(str, out))

    fill_depth()
    runs = [run() for _ in range(a.reps)]
    check = greedy_check()
    ttft_ms = runs[0][1] * 1e3
    timed = runs[1:] if len(runs) > 1 else runs
    prefill_s = statistics.median(r[0] for r in timed)
    decode_s = statistics.median(r[2] for r in timed)
    ttft_warm_ms = statistics.median(r[1] for r in timed) * 1e3
    prefill_cpu_s = statistics.median(r[3] for r in timed)
    decode_cpu_s = statistics.median(r[4] for r in timed)

    n_ctx = L.llama_n_ctx(ctx)
    n_layer = L.llama_model_n_layer(model)
    n_head_kv = L.llama_model_n_head_kv(model)
    n_embd = L.llama_model_n_embd(model)
    n_head = L.llama_model_n_head(model)
    head_dim = n_embd // n_head
    kv_bytes = 2 * n_layer * n_head_kv * head_dim * n_ctx * 2  # f16 K and V
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    print(
        "peer=llama.cpp"
        f" file={os.path.basename(a.model)} file_bytes={os.path.getsize(a.model)}"
        f" threads={a.threads} prefill={a.prefill} decode={a.decode} depth={a.depth} reps={a.reps}"
        f" load_ms={load_ms:.1f} ttft_ms={ttft_ms:.2f} ttft_warm_ms={ttft_warm_ms:.2f}"
        f" prefill_tok_s={a.prefill / prefill_s:.2f}"
        f" decode_tok_s={(a.decode / decode_s) if a.decode else 0:.2f}"
        f" rss_peak_kb={peak_kb} rss_base_kb={rss_base} kv_bytes={kv_bytes} kv_type=f16 n_ctx={n_ctx} check={check}"
        f" prefill_cpu_tok_s={a.prefill / prefill_cpu_s:.2f}"
        f" decode_cpu_tok_s={(a.decode / decode_cpu_s) if a.decode else 0:.2f}"
    )
    L.llama_free(ctx)
    L.llama_model_free(model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
