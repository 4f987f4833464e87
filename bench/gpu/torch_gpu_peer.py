#!/usr/bin/env python3
"""PyTorch on CUDA, measured the way bench/gpu/bench_gpu.c measures wick.

    python3 bench/gpu/torch_gpu_peer.py [--quick] [--gemm-sizes 4096,8192] [--device cpu]

Prints ONE JSON object (flat: key -> number or null, plus "torch", "device"
and, when it cannot measure, "error") on its last line of stdout; bench_gpu
runs it after its own experiments and reads that line. Keys and sizes match
bench_gpu's rows:

  b) open_ms, first_<family>_ms   first call + synchronize + item() of one
                                  element, right after CUDA init, this process
  a) queue_{big,small}_{queue,sync,read}_ms   chained x = x + y
  c) mm1024_run0_{ret,sync,read}_ms, mm1024_{ret,sync,read}_ms
  d) gemm_{bf16,f32}_{N}_tflops   wall clock around N products + one sync
  e) add_gbs (3 x bytes), copy_gbs (dst.copy_(src), 2 x bytes), add_pct_copy
  f) tiny_add_us                  host time per queued c = a + b of 16 f32
  i) ix_chain_us                  host time per step of h = h + table[ids]
                                  (index_select of one id from [4096, 576]
                                  f32, then an add), queued, no sync
  h) nn_att_dec512_us, nn_att_dec2048_us, nn_att_pre512_us, nn_rms_us,
     nn_rope_us                   us per call, N calls + one sync (attention:
                                  F.scaled_dot_product_attention with the kv
                                  heads repeated, or softmax(q k^T) v where
                                  torch has none; rms_norm and rope as torch
                                  ops: torch has no fused rope)
  g) cached_mb, peak_mb, device_allocs, alloc_failures (caching allocator)

f32 matmul runs in full f32 (TF32 off), as wick's does unless WICK_CUDA_TF32=1.
"""
import json
import math
import statistics
import sys
import time

def arg(name, default):
    a = sys.argv[1:]
    return a[a.index(name) + 1] if name in a and a.index(name) + 1 < len(a) else default


QUICK = "--quick" in sys.argv[1:]
GEMM_SIZES = [int(v) for v in arg("--gemm-sizes", "1024,2048" if QUICK else "4096,8192").split(",")]
# --device cpu: bench_gpu --cpu-dry-run checks this script where there is no GPU
ON_CPU = arg("--device", "cuda") == "cpu"
out = {}


def emit():
    print(json.dumps(out, allow_nan=False, default=str), flush=True)


def now():
    return time.perf_counter()


try:
    import torch
    import torch.nn.functional as F
except Exception as e:  # no torch: bench_gpu prints n/a
    out["error"] = "cannot import torch: %s" % e
    emit()
    sys.exit(0)

out["torch"] = torch.__version__
if not ON_CPU and not torch.cuda.is_available():
    out["error"] = "torch %s has no usable CUDA device" % torch.__version__
    emit()
    sys.exit(0)

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
try:  # newer releases: the same switch, not deprecated
    torch.backends.cuda.matmul.fp32_precision = "ieee"
except Exception:
    pass
dev = torch.device("cpu") if ON_CPU else torch.device("cuda", 0)


def sync():
    if not ON_CPU:
        torch.cuda.synchronize()


def ms(t0):
    return (now() - t0) * 1e3


def put(key, value):
    out[key] = None if value is None or (isinstance(value, float) and not math.isfinite(value)) else value


# ---- b) open + first use (must come first in the process)
t0 = now()
if not ON_CPU:
    torch.cuda.init()
torch.empty(1, device=dev)
sync()
put("open_ms", ms(t0))
out["device"] = "cpu (dry run)" if ON_CPU else torch.cuda.get_device_name(0)

g = torch.Generator().manual_seed(7)
h = torch.rand(256 * 256, generator=g) * 2 - 1
x = h[:1024].to(dev)
m32 = h.reshape(256, 256).to(dev)
mb = h.reshape(256, 256).to(torch.bfloat16).to(dev)  # rounded on the host, as bench_gpu does
table = h[: 64 * 32].reshape(64, 32).to(dev)
ids = torch.tensor([3, 0, 63, 7, 7, 12, 40, 1], dtype=torch.int32, device=dev)
img = h[: 3 * 16 * 16].reshape(1, 3, 16, 16).to(dev)
wconv = h[1000 : 1000 + 8 * 27].reshape(8, 3, 3, 3).to(dev)
fmap = h[3000 : 3000 + 8 * 256].reshape(1, 8, 16, 16).to(dev)
sync()

first_ops = [
    ("zeros", lambda: torch.zeros(1024, device=dev)),
    ("fill", lambda: torch.full((1024,), 2.5, device=dev)),
    ("cast", lambda: x.to(torch.bfloat16)),
    ("unary", lambda: torch.exp(x)),
    ("binary", lambda: x + x),
    ("reduce", lambda: torch.sum(x, -1)),
    ("matmul_f32", lambda: m32 @ m32),
    ("matmul_bf16", lambda: mb @ mb),
    ("index_select", lambda: torch.index_select(table, 0, ids)),
    ("conv2d", lambda: F.conv2d(img, wconv, padding=1)),
    ("max_pool2d", lambda: F.max_pool2d(fmap, 2, 2)),
    ("cumsum", lambda: torch.cumsum(x, 0)),
    ("sort", lambda: torch.sort(x, 0)[0]),
    ("rand", lambda: torch.rand(1024, device=dev)),
]
for name, fn in first_ops:
    try:
        t0 = now()
        r = fn()
        sync()
        r.reshape(-1)[0].item()
        put("first_%s_ms" % name, ms(t0))
    except Exception as e:
        print("torch_gpu_peer: first use of %s failed: %s" % (name, e), file=sys.stderr)
        put("first_%s_ms" % name, None)


# ---- a) queue
def queue_chain(n, steps):
    y = torch.ones(n, device=dev)
    xx = torch.zeros(n, device=dev)
    sync()
    t0 = now()
    for _ in range(steps):
        xx = xx + y
    q = ms(t0)
    t1 = now()
    sync()
    s = ms(t1)
    t2 = now()
    xx.cpu()
    return q, s, ms(t2)


for key, n, steps in (("queue_big", 1 << 20, 50 if QUICK else 500), ("queue_small", 1024, 500 if QUICK else 5000)):
    queue_chain(n, 10)
    res = [queue_chain(n, steps) for _ in range(3 if QUICK else 5)]
    for i, phase in enumerate(("queue", "sync", "read")):
        put("%s_%s_ms" % (key, phase), statistics.median(r[i] for r in res))

# ---- c) 1024^2 f32 matmul timeline
a = (torch.rand(1024, 1024, generator=g) * 2 - 1).to(dev)
b = (torch.rand(1024, 1024, generator=g) * 2 - 1).to(dev)
sync()
ret, syn, rd = [], [], []
for run in range(6):
    t0 = now()
    c = a @ b
    ret.append(ms(t0))
    sync()
    syn.append(ms(t0))
    c[0, 0].item()
    rd.append(ms(t0))
put("mm1024_run0_ret_ms", ret[0])
put("mm1024_run0_sync_ms", syn[0])
put("mm1024_run0_read_ms", rd[0])
put("mm1024_ret_ms", statistics.median(ret[1:]))
put("mm1024_sync_ms", statistics.median(syn[1:]))
put("mm1024_read_ms", statistics.median(rd[1:]))
del a, b, c

# ---- d) GEMM
for dtname, dt in (("bf16", torch.bfloat16), ("f32", torch.float32)):
    for n in GEMM_SIZES:
        a = (torch.rand(n, n, device=dev) * 2 - 1).to(dt)
        b = (torch.rand(n, n, device=dev) * 2 - 1).to(dt)
        t1 = 0.0
        for _ in range(3):
            t0 = now()
            c = a @ b
            sync()
            t1 = now() - t0
        iters = max(1, min(500, math.ceil((0.02 if QUICK else 0.05) / t1))) if t1 > 0 else 10
        tf = []
        for _ in range(2 if QUICK else 5):
            t0 = now()
            for _ in range(iters):
                c = a @ b
            sync()
            tf.append(2.0 * n**3 * iters / (now() - t0) / 1e12)
        put("gemm_%s_%d_tflops" % (dtname, n), statistics.median(tf))
        del a, b, c

# ---- e) add vs D2D copy (dst.copy_(src) is one cudaMemcpyAsync device to device)
nbytes = (16 << 20) if QUICK else (256 << 20)
n = nbytes // 4
iters, reps = (10, 3) if QUICK else (20, 5)
src = torch.ones(n, device=dev)
dst = torch.empty(n, device=dev)
dst.copy_(src)
sync()
v = []
for _ in range(reps):
    t0 = now()
    for _ in range(iters):
        dst.copy_(src)
    sync()
    v.append(2.0 * nbytes * iters / (now() - t0) / 1e9)
put("copy_gbs", statistics.median(v))
a = torch.full((n,), 1.0, device=dev)
b = torch.full((n,), 2.0, device=dev)
c = a + b
sync()
del c
v = []
for _ in range(reps):
    t0 = now()
    for _ in range(iters):
        c = a + b
        del c
    sync()
    v.append(3.0 * nbytes * iters / (now() - t0) / 1e9)
put("add_gbs", statistics.median(v))
put("add_pct_copy", 100.0 * out["add_gbs"] / out["copy_gbs"])
del a, b, src, dst

# ---- f) host cost per tiny op
n_ops = 1000 if QUICK else 10000
a = torch.ones(16, device=dev)
b = torch.ones(16, device=dev)
for _ in range(100):
    c = a + b
sync()
per = []
for _ in range(3 if QUICK else 5):
    t0 = now()
    for _ in range(n_ops):
        c = a + b
    per.append((now() - t0) * 1e6 / n_ops)
    sync()
put("tiny_add_us", statistics.median(per))

# ---- i) index_select inside a chain of queued ops (as bench_gpu's exp_index_chain)
steps = 200 if QUICK else 2000
table = torch.ones(4096, 576, device=dev)
ids = [torch.tensor([17 + 1000 * i], dtype=torch.int64, device=dev) for i in range(4)]
per = []
for rep in range(-1, 3 if QUICK else 5):
    h = torch.zeros(1, 576, device=dev)
    sync()
    n = 20 if rep < 0 else steps
    t0 = now()
    for i in range(n):
        h = h + torch.index_select(table, 0, ids[i % 4])
    if rep >= 0:
        per.append((now() - t0) * 1e6 / n)
    sync()
put("ix_chain_us", statistics.median(per))
del table, ids, h

# ---- h) fused nn ops at SmolLM2-135M's sizes (as bench_gpu's exp_nn)
nn_dt = torch.float32 if ON_CPU else torch.float16
def nn_attn(q, k, v, causal_off):
    k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    lq, lk = q.shape[2], k.shape[2]
    if hasattr(F, "scaled_dot_product_attention"):
        if lq == lk:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v)  # decode: every cached key is visible
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if lq == lk:
        s = s.masked_fill(torch.ones(lq, lk, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v
def nn_rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w
def nn_rope(x, c, s):
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    c = c[:, None, :]
    s = s[:, None, :]
    return torch.cat([a * c - b * s, a * s + b * c], -1)
kc = torch.rand(1, 3, 4096, 64, device=dev, dtype=nn_dt) * 2 - 1
vc = torch.rand(1, 3, 4096, 64, device=dev, dtype=nn_dt) * 2 - 1
q1 = torch.rand(1, 9, 1, 64, device=dev, dtype=nn_dt) * 2 - 1
qp = torch.rand(1, 9, 512, 64, device=dev, dtype=nn_dt) * 2 - 1
xn = torch.rand(128, 576, device=dev, dtype=nn_dt) * 4 - 2
wn = torch.rand(576, device=dev, dtype=nn_dt)
xr = torch.rand(1, 128, 9, 64, device=dev, dtype=nn_dt)
tc = torch.rand(4096, 32, device=dev, dtype=nn_dt)
ts = torch.rand(4096, 32, device=dev, dtype=nn_dt)
nn_ops = [
    ("nn_att_dec512_us", lambda: nn_attn(q1, kc[:, :, :512], vc[:, :, :512], 511)),
    ("nn_att_dec2048_us", lambda: nn_attn(q1, kc[:, :, :2048], vc[:, :, :2048], 2047)),
    ("nn_att_pre512_us", lambda: nn_attn(qp, kc[:, :, :512], vc[:, :, :512], 0)),
    ("nn_rms_us", lambda: nn_rms(xn, wn)),
    ("nn_rope_us", lambda: nn_rope(xr, tc[1000:1128], ts[1000:1128])),
]
for key, fn in nn_ops:
    n = 3 if ON_CPU else (20 if QUICK else 200)
    for _ in range(3):
        fn()
    sync()
    per = []
    for _ in range(3 if QUICK else 5):
        t0 = now()
        for _ in range(n):
            fn()
        sync()
        per.append((now() - t0) * 1e6 / n)
    put(key, statistics.median(per))

# ---- g) the caching allocator's counters after the run
if ON_CPU:
    emit()
    sys.exit(0)
st = torch.cuda.memory_stats(dev)
put("cached_mb", (torch.cuda.memory_reserved(dev) - torch.cuda.memory_allocated(dev)) / 1048576.0)
put("peak_mb", torch.cuda.max_memory_allocated(dev) / 1048576.0)
put("device_allocs", st.get("segment.all.allocated"))
put("alloc_failures", st.get("num_ooms"))
emit()
