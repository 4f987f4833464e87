#!/usr/bin/env python3
"""ctest tiny_models_check: the tiny-model tooling still makes what the references were made from.

    tiny_check.py PYTHON3 WORKDIR      (run with the project venv's python: gguf + numpy)

For every arch: PYTHON3 (Debian's, numpy only) runs tests/tiny_models.py into WORKDIR/<arch>; the three
files must hash to tests/data/tiny/sha256.json (the bytes transformers and llama.cpp saw when
tests/data/tiny/*.json were made: a changed weight formula or numpy stream shows here, not as a
mysterious logit mismatch). Then tests/tiny_gguf.py writes WORKDIR/<arch>.gguf, read back with gguf:
one tensor per checkpoint tensor (+ rope_freqs / rope_factors), and the reference JSONs must have
their documented shape (tests/data/README.md).
"""
import hashlib
import json
import os
import subprocess
import sys

import gguf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tiny_gguf  # noqa: E402

py3, work = sys.argv[1], sys.argv[2]
data = os.path.join(HERE, "data", "tiny")
want = json.load(open(os.path.join(data, "sha256.json")))
archs = subprocess.run([py3, os.path.join(HERE, "tiny_models.py"), "--list"], check=True,
                       capture_output=True, text=True).stdout.split()
assert archs == sorted(want, key=archs.index) and set(archs) == set(want), (archs, sorted(want))
fail = 0
for a in archs:
    before = fail
    d = os.path.join(work, a)
    subprocess.run([py3, os.path.join(HERE, "tiny_models.py"), a, d], check=True)
    for f, h in want[a].items():
        got = hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest()
        if got != h:
            print(f"{a}/{f}: sha256 {got}, the references were made from {h}")
            fail = 1
    cfg = json.load(open(os.path.join(d, "config.json")))
    n_st = len(tiny_gguf.read_safetensors(os.path.join(d, "model.safetensors")))
    out = os.path.join(work, f"{a}.gguf")
    tiny_gguf.convert(d, out)
    r = gguf.GGUFReader(out)
    extra = {"llama3": 1, "phi3": 2}.get(a, 0)
    if len(r.tensors) != n_st + extra:
        print(f"{a}: {len(r.tensors)} GGUF tensors for {n_st} checkpoint tensors")
        fail = 1
    for ref in ("json", "llamacpp.json"):
        p = os.path.join(data, f"{a}.{ref}")
        if not os.path.exists(p):
            if ref == "json":
                print(f"{a}: no {p}")
                fail = 1
            continue
        j = json.load(open(p))
        ok = (j["arch"] == a and len(j["ids"]) == 24 and len(j["logits_rows"]) == len(j["rows"]) == 4
              and all(len(row) == cfg["vocab_size"] for row in j["logits_rows"])
              and len(j["greedy"]) == len(j["greedy_top2"]) == 8)
        if not ok:
            print(f"{a}: {p} does not have the documented shape")
            fail = 1
    print(f"{a}: ok" if fail == before else f"{a}: FAILED")
sys.exit(fail)
