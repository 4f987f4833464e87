#!/usr/bin/env python3
"""By hand: tests/tiny_gguf.py's GGUF against llama.cpp's converter, every arch.

    PYTHONPATH=<llama.cpp>/gguf-py /work/peers/hf-venv/bin/python tools/check_tiny_gguf.py TINYDIR CONVDIR OURDIR

TINYDIR/<arch>/ from tests/tiny_models.py; CONVDIR/<arch>.gguf from `convert_hf_to_gguf.py --outtype f32
--outfile CONVDIR/<arch>.gguf TINYDIR/<arch>`; OURDIR/<arch>.gguf from tests/tiny_gguf.py. Checks: the
same metadata keys, types and values (general.name / general.size_label aside), the same tensor names
in the same order, shapes, types and bytes. Prints one line per arch; exit 1 on any difference.
"""
import sys

import gguf
import numpy as np

ARCHS = ["llama", "llama3", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "smollm3"]
SKIP = {"general.name", "general.size_label"}


def fields(r):
    return {k: ([t.name for t in f.types], f.contents()) for k, f in r.fields.items()
            if not k.startswith("GGUF.") and k not in SKIP}


bad = 0
tiny, conv, ours = sys.argv[1:4]
for a in ARCHS:
    rc, ro = gguf.GGUFReader(f"{conv}/{a}.gguf"), gguf.GGUFReader(f"{ours}/{a}.gguf")
    fc, fo = fields(rc), fields(ro)
    diffs = [k for k in sorted(set(fc) | set(fo)) if fc.get(k) != fo.get(k)]
    if [t.name for t in rc.tensors] != [t.name for t in ro.tensors]:
        diffs.append("tensor list")
    else:
        for tc, to in zip(rc.tensors, ro.tensors):
            if (tc.tensor_type != to.tensor_type or list(tc.shape) != list(to.shape)
                    or np.asarray(tc.data).tobytes() != np.asarray(to.data).tobytes()):
                diffs.append(tc.name)
    bad += bool(diffs)
    print(f"{a}: {len(fc)} keys, {len(rc.tensors)} tensors: " + ("identical" if not diffs else f"DIFFER {diffs}"))
sys.exit(1 if bad else 0)
