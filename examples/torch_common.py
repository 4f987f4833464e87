"""Helpers shared by the PyTorch replays of wick's training examples
(digits_torch.py, char_transformer_torch.py) and bench/train_peer.py.
Debian's python3-torch only: the safetensors reader below is the file
format's few lines (8-byte little-endian header length, JSON header, raw
little-endian data), so no PyPI package is needed."""
import json
import struct

import numpy as np
import torch

_DT = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def load_safetensors(path):
    """{name: torch tensor} of a .safetensors file (element dtypes above)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        arr = np.frombuffer(blob[base + lo:base + hi], dtype=_DT[info["dtype"]]).reshape(info["shape"])
        out[name] = torch.from_numpy(arr.copy())
    return out


def load_into(module, path):
    """Copy wick's initial weights into module (every parameter must be there)."""
    sd = load_safetensors(path)
    missing = [k for k in module.state_dict() if k not in sd]
    if missing:
        raise SystemExit(f"{path}: missing {missing}")
    module.load_state_dict({k: sd[k] for k in module.state_dict()})


def curve_gap(a, b, n):
    """Max relative gap |a-b| / |b| over the first n steps, and its step."""
    n = min(n, len(a), len(b))
    gaps = [abs(a[i] - b[i]) / max(abs(b[i]), 1e-12) for i in range(n)]
    i = int(np.argmax(gaps)) if gaps else 0
    return (gaps[i] if gaps else 0.0), i, n
