#!/usr/bin/env python3
"""Oracle for the layer kit's cached attention (src/nn/layers.h:
wk__rope_cached_attention) with the per-layer options the newer model
families need: no RoPE on a layer (rope_skip, SmolLM3), partial rotary
(rope_dims < head_dim: only the first rope_dims of each head rotate, as
GPT-NeoX / Phi's partial_rotary_factor), a sliding window, soft-capping and
an explicit scale. numpy in float64.

    /usr/bin/python3 tests/oracle/gen_attn_kit.py OUTDIR

writes only OUTDIR/attn_kit/manifest.txt and OUTDIR/attn_kit/kNNNNN.npy;
read by tests/test_attention_window.c (WICK_ORACLE_DIR=OUTDIR).

manifest.txt: '#' lines are comments; every other line is one case of
seventeen space-separated fields:

    name inter skip rdims window softcap scale H Hkv D n1 n2 q k v cs sn out

  inter    1: interleaved pairs (x[2i], x[2i+1]); 0: halves (x[i], x[i + R/2])
           of the rotated part
  skip     1: no RoPE (cs / sn unused)
  rdims    rope_dims (0: the whole head)
  window, softcap, scale   as wk__attn_heads (0: off / default)
  H Hkv D  query heads, kv heads, head dim
  n1 n2    the sequence runs as a prefill of n1 positions at pos 0, then
           n2 decode steps of one position each
  q k v    f32 (n1 + n2, H*D) / (n1 + n2, Hkv*D) projections
  cs sn    f32 (n1 + n2, R/2) RoPE tables (R = rdims or D)
  out      f64 (n1 + n2, H*D): every position's attention output
"""
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402

SEED = 0xA77


def rope(x, c, s, inter):
    """x (T, H, R), c / s (T, R/2): the whole of x rotates."""
    c, s = c[:, None, :], s[:, None, :]
    if inter:
        a, b = x[..., 0::2], x[..., 1::2]
        return np.stack([a * c - b * s, a * s + b * c], -1).reshape(x.shape)
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    return np.concatenate([a * c - b * s, a * s + b * c], -1)


def rope_part(x, c, s, inter, skip, rdims):
    if skip:
        return x
    r = rdims if rdims > 0 else x.shape[-1]
    return np.concatenate([rope(x[..., :r], c, s, inter), x[..., r:]], -1)


def reference(q, k, v, c, s, inter, skip, rdims, window, softcap, scale, H, Hkv, D):
    T = q.shape[0]
    qh = rope_part(q.reshape(T, H, D), c, s, inter, skip, rdims)
    kh = rope_part(k.reshape(T, Hkv, D), c, s, inter, skip, rdims)
    vh = v.reshape(T, Hkv, D)
    group = H // Hkv
    sc = scale if scale > 0 else 1.0 / np.sqrt(D)
    out = np.zeros((T, H, D))
    for h in range(H):
        sco = qh[:, h, :] @ kh[:, h // group, :].T * sc  # (T, T)
        if softcap > 0:
            sco = softcap * np.tanh(sco / softcap)
        i, j = np.arange(T)[:, None], np.arange(T)[None, :]
        keep = j <= i
        if window > 0:
            keep &= i - j < window
        sco = np.where(keep, sco, -np.inf)
        p = np.exp(sco - sco.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        out[:, h, :] = p @ vh[:, h // group, :]
    return out.reshape(T, H * D)


def main():
    if len(sys.argv) != 2:
        print('usage: gen_attn_kit.py OUTDIR', file=sys.stderr)
        return 2
    folder = os.path.join(sys.argv[1], 'attn_kit')
    files = oc.NpyFiles(folder, 'k')
    rng = np.random.default_rng(SEED)
    lines = []
    # name inter skip rdims window softcap scale H Hkv D n1 n2
    cases = [('plain', 0, 0, 0, 0, 0.0, 0.0, 4, 2, 8, 5, 3),
             ('nope', 0, 1, 0, 0, 0.0, 0.0, 4, 2, 8, 5, 3),
             ('partial-half', 0, 0, 4, 0, 0.0, 0.0, 4, 2, 8, 5, 3),
             ('partial-inter', 1, 0, 4, 0, 0.0, 0.0, 4, 1, 8, 5, 3),
             ('partial-quarter', 0, 0, 4, 0, 0.0, 0.0, 2, 1, 16, 4, 2),
             ('window-cap-scale', 0, 0, 0, 3, 1.5, 0.2, 4, 2, 8, 6, 4),
             ('window-partial', 1, 0, 6, 2, 0.0, 0.0, 2, 2, 8, 4, 3)]
    for (name, inter, skip, rdims, window, softcap, scale, H, Hkv, D, n1, n2) in cases:
        T = n1 + n2
        r = rdims if rdims > 0 else D
        q = oc.round_float(rng.standard_normal((T, H * D)) * 2, 'f32')
        k = oc.round_float(rng.standard_normal((T, Hkv * D)) * 2, 'f32')
        v = oc.round_float(rng.standard_normal((T, Hkv * D)), 'f32')
        inv = 10000.0 ** (-np.arange(0, r, 2) / r)
        ang = np.arange(T)[:, None] * inv[None, :]
        c = oc.round_float(np.cos(ang), 'f32')
        s = oc.round_float(np.sin(ang), 'f32')
        out = reference(q, k, v, c, s, inter, skip, rdims, window, softcap, scale, H, Hkv, D)
        names = [files.save(x.astype(np.float32)) for x in (q, k, v, c, s)] + [files.save(out)]
        lines.append(' '.join([name] + [str(x) for x in (inter, skip, rdims, window, repr(softcap), repr(scale), H,
                                                          Hkv, D, n1, n2)] + names))
    oc.write_manifest(folder, [' attn_kit oracle (numpy, float64), seed %#x' % SEED], lines)
    return 0


if __name__ == '__main__':
    sys.exit(main())
