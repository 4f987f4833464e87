#!/usr/bin/env python3
"""Reference logits of the tiny models (tests/tiny_models.py) from transformers. By hand only:

    /work/peers/hf-venv/bin/python tools/make_tiny_refs.py [ARCH...]    (default: all)

needs transformers 5.24.0 + torch 2.15.0 (PyPI; never in tests or CI). For each ARCH it writes the
tiny checkpoint into a temporary folder, checks that transformers saves the same config.json back
and loads every tensor (none missing or unexpected), runs float32 eager attention on CPU and writes
tests/data/tiny/<arch>.json:

  "arch", "model_type", "transformers", "torch"   versions that made the file
  "ids"            the 24 input ids: ids[i] = 3 + (5*i*i + 17*i + 11) % 317 (no BOS; 0..2 are special)
  "rows"           the positions whose logits are kept: [0, 7, 15, 23]
  "logits_rows"    for each of "rows", all vocab_size (320) logits of the full-sequence forward pass
                   (one call, causal), 6 significant digits
  "greedy"         8 ids continuing "ids" greedily: argmax of the last row, then one token at a time
                   through the KV cache (past_key_values), argmax each step (ties: lowest id)
  "greedy_top2"    for each greedy step, the largest and second-largest logit of the row it came from
                   (so a test can tell a near-tie split from a real difference)
  "features"       {feature: max |logit difference| over all 24x320 logits when transformers runs the
                   same weights with that feature switched off} -- proof that it bites
  "notes"          free text (e.g. which longrope factor applies)
  phi3 only: "short" = {"ids": ids[:12], "rows": [0, 11], "logits_rows": [...]} -- 12 <= 16 =
                   original_max_position_embeddings, so longrope's short_factor applies there
  mistral, gemma2, gemma3 only: "as_llamacpp" = {"overrides": {config field: value}, "logits_rows":
                   [...]} -- transformers with the fields llama.cpp's converter drops set the way
                   llama.cpp then computes (no sliding window; 1/sqrt(head_dim) scaling; Gemma 2's
                   rope_theta 10000): the logits tests/data/tiny/<arch>.llamacpp.json should match
"""
import importlib.util
import json
import os
import sys
import tempfile

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("tiny_models", os.path.join(ROOT, "tests", "tiny_models.py"))
tm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tm)

IDS = [3 + (5 * i * i + 17 * i + 11) % 317 for i in range(24)]
ROWS = [0, 7, 15, 23]


def sig6(x):
    return float(f"{x:.6g}")


def load(d, **over):
    cfg = AutoConfig.from_pretrained(d)
    for k, v in over.items():
        setattr(cfg, k, v)
    m, info = AutoModelForCausalLM.from_pretrained(d, config=cfg, attn_implementation="eager",
                                                   dtype=torch.float32, output_loading_info=True)
    bad = {k: v for k, v in info.items() if v and k != "mismatched_keys" or (k == "mismatched_keys" and v)}
    if bad:
        sys.exit(f"make_tiny_refs: {d}: loading problems {bad}")
    return m.eval()


@torch.no_grad()
def logits(m, ids):
    return m(torch.tensor([ids])).logits[0].float()


@torch.no_grad()
def greedy(m, ids, n):
    out = m(torch.tensor([ids]), use_cache=True)
    toks, top2 = [], []
    for _ in range(n):
        row = out.logits[0, -1].float()
        t = int(torch.argmax(row))
        v = torch.topk(row, 2).values
        toks.append(t)
        top2.append([sig6(float(v[0])), sig6(float(v[1]))])
        out = m(torch.tensor([[t]]), past_key_values=out.past_key_values, use_cache=True)
    return toks, top2


def rope_off_layers(c):
    return {"no_rope_layers": [1] * c.num_hidden_layers}


# feature -> config overrides that switch it off (same weights)
def feature_offs(arch, d):
    c = AutoConfig.from_pretrained(d)
    rp = dict(c.rope_parameters)
    f = {}
    if arch == "llama3":
        f["rope_type llama3"] = {"rope_parameters": {"rope_type": "default", "rope_theta": rp["rope_theta"]}}
    if arch in ("mistral", "gemma2", "gemma3"):
        f["sliding_window"] = {"sliding_window": 4096}
    if arch in ("gemma2", "gemma3"):
        f["query_pre_attn_scalar"] = {"query_pre_attn_scalar": c.head_dim}
    if arch == "gemma2":
        f["attn_logit_softcapping"] = {"attn_logit_softcapping": None}
        f["final_logit_softcapping"] = {"final_logit_softcapping": None}
    if arch == "gemma3":
        g = rp["full_attention"]
        f["local rope_theta"] = {"rope_parameters": {"full_attention": dict(g), "sliding_attention": dict(g)}}
    if arch == "phi3":
        f["partial_rotary_factor"] = None  # shape of the factors depends on it: not switchable
        f["longrope long_factor"] = {"rope_parameters": {**rp, "long_factor": [1.0] * len(rp["long_factor"])}}
    if arch == "smollm3":
        f["no_rope_layers"] = rope_off_layers(c)
    return {k: v for k, v in f.items() if v is not None}


# what llama.cpp computes instead of the fields its converter drops (see tests/tiny_gguf.py)
def llamacpp_overrides(arch, cfg):
    if arch == "mistral":
        return {"sliding_window": None}
    if arch == "gemma2":
        return {"query_pre_attn_scalar": cfg.head_dim,
                "rope_parameters": {**dict(cfg.rope_parameters), "rope_theta": 10000.0}}
    if arch == "gemma3":
        return {"query_pre_attn_scalar": cfg.head_dim}
    return None


def one(arch):
    with tempfile.TemporaryDirectory() as d:
        tm.write(arch, d)
        cfg = AutoConfig.from_pretrained(d)
        with tempfile.TemporaryDirectory() as d2:
            cfg.save_pretrained(d2)
            back = json.load(open(os.path.join(d2, "config.json")))
        if back != tm.CONFIGS[arch]:
            diff = {k for k in set(back) | set(tm.CONFIGS[arch]) if back.get(k) != tm.CONFIGS[arch].get(k)}
            sys.exit(f"make_tiny_refs: {arch}: config does not round-trip through transformers: {sorted(diff)}")
        m = load(d)
        full = logits(m, IDS)
        toks, top2 = greedy(m, IDS, 8)
        # the cached path must agree with the full forward pass
        ext = logits(m, IDS + toks[:-1])
        assert [int(torch.argmax(ext[len(IDS) - 1 + k])) for k in range(8)] == toks, arch
        rec = {"arch": arch, "model_type": tm.CONFIGS[arch]["model_type"],
               "transformers": transformers.__version__, "torch": torch.__version__.split("+")[0],
               "ids": IDS, "rows": ROWS,
               "logits_rows": [[sig6(x) for x in full[r].tolist()] for r in ROWS],
               "greedy": toks, "greedy_top2": top2, "features": {}, "notes": []}
        for name, over in feature_offs(arch, d).items():
            alt = logits(load(d, **over), IDS)
            rec["features"][name] = sig6(float((alt - full).abs().max()))
        over = llamacpp_overrides(arch, cfg)
        if over:
            alt = logits(load(d, **over), IDS)
            rec["as_llamacpp"] = {"overrides": over,
                                  "logits_rows": [[sig6(x) for x in alt[r].tolist()] for r in ROWS]}
        if arch == "phi3":
            short = IDS[:12]
            sl = logits(m, short)
            rec["short"] = {"ids": short, "rows": [0, 11],
                            "logits_rows": [[sig6(x) for x in sl[r].tolist()] for r in (0, 11)]}
            rec["notes"].append("longrope: transformers picks the factors by sequence length: 24 > 16 = "
                                "original_max_position_embeddings -> long_factor for 'ids' (and every greedy "
                                "step); 'short' (12 ids) -> short_factor. Both scale cos/sin by "
                                "sqrt(1 + ln(64/16) / ln(16)).")
        return rec


def main():
    archs = sys.argv[1:] or tm.ARCHS
    out = os.path.join(ROOT, "tests", "data", "tiny")
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(2)
    for a in archs:
        rec = one(a)
        p = os.path.join(out, f"{a}.json")
        with open(p, "w") as f:
            json.dump(rec, f, separators=(",", ":"))
            f.write("\n")
        print(a, os.path.getsize(p), "bytes; greedy", rec["greedy"], "features", rec["features"])


if __name__ == "__main__":
    main()
