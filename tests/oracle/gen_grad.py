#!/usr/bin/env python3
"""wick oracle generator: PyTorch autograd's gradients of every op the op
table (op_table.def) marks GRAD 1 (and of scatter, EXTRA below).

    /usr/bin/python3 tests/oracle/gen_grad.py OUTDIR

writes OUTDIR/grad/manifest.txt and OUTDIR/grad/gNNNNN.npy. tests/
test_oracle_grad.c reads them: it runs wick on the same inputs, runs wick's
backward with R as the output's gradient, and compares with torch's. Nothing
generated is committed; the output is fully determined by SEED.

For each GRAD 1 entry, its first cases (the table's backend cases "bk", or
the kind's default, or CASES below where those are too big or miss a
parameter) within BUDGET elements, each declared layout of c t n b e 1 0
(as tests/op_cases.c builds them: t transposes every operand, n narrows
every operand out of a longer dim 0, b broadcasts operand 0 along dim 0, e
makes dim 0 empty, 1 every dim 1, 0 rank 0), on f64 and f32 and, in the
contiguous layout, on f16 and bf16 where the table declares them: inputs
drawn from the entry's domain (half-integer domains, there to hit kinks in
the forward tests, become uniform over the same range), rounded onto the
dtype's grid; R uniform in [-1, 1] on the result dtype's grid; torch computes
in float64 (f64) or float32 (f32, f16, bf16: from the rounded inputs) the
gradients of sum(f(inputs) * R) wrt every float input.

manifest.txt: '#' lines are comments; every other line is one case, nine
fields separated by single spaces:

    id op dtype layout params inputs R grads tol

  id       NNNNN.op.dtype.layout
  op       the op table's name
  dtype    the dtype wick runs in (float inputs without #DTYPE go to it)
  layout   the layout letter the inputs are in
  params   the case's k=v;k=v parameters ('-' if none)
  inputs   ','-joined FILE[@VIEW][#DTYPE] (tests/oracle_util.h's
           ou_load_input; views as gen_oracle.py's manifest)
  R        FILE: the result's gradient (the result's shape, f64 values on the
           result dtype's grid)
  grads    ','-joined per input: FILE (torch's gradient, f64, the input's
           logical shape) or '-' (an integer input: no gradient)
  tol      the op table's tolerance class (exact trans tol acc pow, :S)
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402
import op_table  # noqa: E402

SEED = 20261201
BUDGET = 4096      # elements of the float inputs of one case
MAX_CASES = 3      # cases per op
LAYOUTS = ['c', 't', 'n', 'b', 'e', '1', '0']
HALF_LAYOUTS = ['c']  # f16 / bf16

# Cases of our own where the table's are all too big (the same as
# tests/test_grad_table.c's k_fd_cases where both need them).
CASES = {
    'cumsum': '4x5|dim=0 / 4x5|dim=1 / 1x1|dim=1',
    'cumprod': '4x5|dim=0 / 4x5|dim=1 / 1x1|dim=0',
    'sort': '4x5|dim=1;desc=0 / 5x3|dim=0;desc=1',
    'topk': '4x6|dim=1;k=3;largest=1 / 6x4|dim=0;k=2;largest=0',
    'norm': '3x4x5|p=2.0;dims=1;keep=0 / 5x6|p=inf;dims=1;keep=0 / 5x6|p=0.5;dims=;keep=0 / 5x6|p=3.0;dims=0;keep=1',
    'index_add': '5x4,7#i64~i:0:5,7x4|dim=0 / 4x5,6#i64~i:0:5,4x6|dim=1',
    'scatter_add': '6,9#i64~i:0:6,9|dim=0 / 3x4,3x5#i64~i:0:4,3x5|dim=1',
    'conv2d': '1x2x5x6,3x2x3x3~u:-1.5:1.5|padding=1 / 1x4x6x6,4x2x3x3~u:-1.5:1.5|padding=1;stride=2;groups=2 / '
              '2x2x7x6,2x1x3x2~u:-1.5:1.5|padding=2;dilation=2;groups=2',
    'conv_transpose2d': '1x2x5x6,2x3x3x3~u:-1.5:1.5|padding=1 / 1x4x4x4,4x2x3x3~u:-1.5:1.5|padding=1;stride=2;'
                        'groups=2;output_padding=1 / 2x2x5x4,2x1x3x2~u:-1.5:1.5|padding=2;dilation=2;groups=2',
    'cast': '3x4|to=f64 / 3x4|to=f32 / 3x4|to=f16 / 3x4|to=bf16',
}
# GRAD 0 entries compared with torch all the same: differentiable, but not by
# finite differences (scatter's repeated ids: torch's rule, which wick
# follows, gives src the gathered gradient of every id).
EXTRA = {'scatter': '6,9#i64~i:0:6,9|dim=0 / 3x4,3x5#i64~i:0:4,3x5|dim=1'}
# The broadcast layout repeats values: ties, where these ops' gradients
# depend on which of the equal elements the sort picked.
NO_B = {'sort', 'topk'}


def default_bk(kind):
    return {
        'unary': '3x7 / 4x1000',
        'binary': '3x4,3x4 / 3x1x5,4x5 / 2x3,1 / 40x300,300',
        'cmp': '3x4,3x4 / 3x1x5,4x5 / 2x3,1 / 40x300,300',
        'reduce': '3x4x5|dims=1;keep=0 / 3x4x5|dims=0|2;keep=1 / 7x300|dims=1;keep=0',
        'reduce_all': '3x4x5 / 300x70',
    }.get(kind, '')


def parse_shape(s):
    if s == '_' or s == '':
        return ()
    return tuple(int(z) for z in s.split('x'))


def parse_case(case):
    """'IN,IN|k=v;k=v' -> ([(shape, dtype or None, dom or None, force_t)], params str, params dict)"""
    ins, _, params = case.partition('|')
    specs = []
    for tok in ins.split(','):
        if not tok:
            continue
        force_t = tok.endswith('@t')
        tok = tok[:-2] if force_t else tok
        dom = None
        if '~' in tok:
            tok, dom = tok.split('~')
        dt = None
        if '#' in tok:
            tok, dt = tok.split('#')
        specs.append((parse_shape(tok), dt, dom, force_t))
    pd = {}
    for kv in params.split(';'):
        if kv:
            k, _, v = kv.partition('=')
            pd[k] = v
    return specs, params, pd


def draw(rng, shape, dom):
    """Values of an op-table domain; h (half-integers) drawn uniform."""
    n = int(np.prod(shape)) if shape else 1
    kind = dom[0] if dom else 'u'
    if kind == 'r':
        v = rng.uniform(0.1, 10.0, n) * rng.choice([-1.0, 1.0], n)
    elif kind == 'i':
        _, lo, hi = dom.split(':')
        v = rng.integers(int(float(lo)), int(float(hi)), n).astype(np.float64)
    else:
        lo, hi = (-4.0, 4.0) if not dom else (float(z) for z in dom.split(':')[1:])
        v = rng.uniform(lo, hi, n)
    return v.reshape(shape)


def ints(pd, key):
    v = pd.get(key, '')
    return [int(z) for z in v.split('|')] if v else []


def pair(pd, key):
    a, b = pd[key].split('x')
    return int(a), int(b)


def prod_dims(x, dims, keep):
    nd = x.dim()
    dims = sorted(((d + nd) % nd for d in dims), reverse=True)
    for d in dims:
        x = torch.prod(x, d, keepdim=True)
    if not keep:
        for d in dims:
            x = x.squeeze(d)
    return x


def rope(x, c, s, inter):
    d = x.shape[-1]
    if inter:
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * c - b * s, a * s + b * c], -1).flatten(-2)
    a, b = x[..., :d // 2], x[..., d // 2:]
    return torch.cat([a * c - b * s, a * s + b * c], -1)


def sdpa(q, k, v, mask, scale, causal):
    d = q.shape[-1]
    s = q @ k.transpose(-1, -2) * (scale if scale > 0 else 1.0 / math.sqrt(d))
    if mask is not None:
        s = s + mask
    if causal:
        keep = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).tril()
        s = s.masked_fill(~keep, float('-inf'))
    return torch.softmax(s, -1) @ v


def pad_same(x, dim, left, right):
    n = x.shape[dim]
    idx = torch.clamp(torch.arange(-left, n + right), 0, n - 1)
    return torch.index_select(x, dim, idx)


def pad_zeros(x, dim, left, right):
    sl = list(x.shape)
    sl[dim] = left
    sr = list(x.shape)
    sr[dim] = right
    return torch.cat([x.new_zeros(sl), x, x.new_zeros(sr)], dim)


def slice_scatter(x, src, dim, start):
    # Debian's torch 1.13 (1.13.0a0) sizes torch.slice_scatter's slice wrongly
    y = x.clone()
    y.narrow(dim, start, src.shape[dim]).copy_(src)
    return y


def slice_assign(dst, src, pd):
    st, en = ints(pd, 'starts'), ints(pd, 'ends')
    sp = ints(pd, 'steps') or [1] * len(st)
    y = dst.clone()
    y[tuple(slice(a, b, c) for a, b, c in zip(st, en, sp))] = src
    return y


UNARY = {
    'exp': torch.exp, 'log': torch.log, 'sin': torch.sin, 'cos': torch.cos, 'tanh': torch.tanh, 'abs': torch.abs,
    'neg': torch.neg, 'recip': torch.reciprocal, 'sqr': lambda x: x * x, 'sqrt': torch.sqrt,
    'gelu': lambda x: F.gelu(x, approximate='tanh'), 'gelu_erf': F.gelu, 'erf': torch.erf, 'relu': torch.relu,
    'silu': F.silu, 'sigmoid': torch.sigmoid,
}
BINARY = {'add': torch.add, 'sub': torch.sub, 'mul': torch.mul, 'div': torch.div, 'maximum': torch.maximum,
          'minimum': torch.minimum}


def torch_op(name, x, pd):
    """torch's meaning of op `name` on inputs x (tensors; integer inputs as
    int64 tensors; absent optional inputs past the end)."""
    P = lambda k: float(pd[k])  # noqa: E731
    I = lambda k: int(pd[k])    # noqa: E731
    fam, _, sub = name.partition('.')
    if name == 'binary.pow':
        return torch.pow(x[0], x[1])
    if fam == 'unary':
        return UNARY[sub](x[0])
    if fam == 'binary':
        return BINARY[sub](x[0], x[1])
    if fam == 'binary_scalar':
        s = torch.tensor(P('s'), dtype=x[0].dtype)
        return BINARY[sub](x[0], s)
    if fam == 'reduce':
        dims, keep = ints(pd, 'dims'), bool(I('keep'))
        f = {'sum': torch.sum, 'mean': torch.mean, 'max': torch.amax, 'min': torch.amin}[sub]
        return f(x[0], dims, keepdim=keep)
    if fam == 'reduce_all':
        f = {'sum': torch.sum, 'mean': torch.mean, 'max': torch.amax, 'min': torch.amin}[sub]
        return f(x[0]) if sub in ('sum', 'mean') else f(x[0], list(range(x[0].dim())))
    t = {
        'affine': lambda: x[0] * P('mul') + P('add'),
        'powf': lambda: torch.pow(x[0], P('e')),
        'elu': lambda: F.elu(x[0], P('alpha')),
        'clamp': lambda: torch.clamp(x[0], P('lo'), P('hi')),
        'where': lambda: torch.where(x[0] != 0, x[1], x[2]),
        'cast': lambda: x[0].to({'f64': torch.float64, 'f32': torch.float32, 'f16': torch.float16,
                                 'bf16': torch.bfloat16}[pd['to']]),
        'cat': lambda: torch.cat(x, I('dim')),
        'stack': lambda: torch.stack(x, I('dim')),
        'matmul': lambda: torch.matmul(x[0], x[1]),
        'bmatmul': lambda: torch.matmul(x[0], x[1]),
        'conv2d': lambda: F.conv2d(x[0], x[1], None, int(pd.get('stride', 1)),
                                   int(pd.get('padding', 0)), int(pd.get('dilation', 1)), int(pd.get('groups', 1))),
        'conv1d': lambda: F.conv1d(x[0], x[1], None, int(pd.get('stride', 1)), int(pd.get('padding', 0)),
                                   int(pd.get('dilation', 1)), int(pd.get('groups', 1))),
        'conv_transpose2d': lambda: F.conv_transpose2d(x[0], x[1], None, int(pd.get('stride', 1)),
                                                       int(pd.get('padding', 0)), int(pd.get('output_padding', 0)),
                                                       int(pd.get('groups', 1)), int(pd.get('dilation', 1))),
        'conv_transpose1d': lambda: F.conv_transpose1d(x[0], x[1], None, int(pd.get('stride', 1)),
                                                       int(pd.get('padding', 0)), int(pd.get('output_padding', 0)),
                                                       int(pd.get('groups', 1)), int(pd.get('dilation', 1))),
        'max_pool2d': lambda: F.max_pool2d(x[0], pair(pd, 'k'), pair(pd, 's'), pair(pd, 'p')),
        'avg_pool2d': lambda: F.avg_pool2d(x[0], pair(pd, 'k'), pair(pd, 's'), pair(pd, 'p'),
                                           count_include_pad=bool(I('cip'))),
        'upsample_nearest1d': lambda: F.interpolate(x[0], size=I('size'), mode='nearest'),
        'upsample_nearest2d': lambda: F.interpolate(x[0], size=pair(pd, 'size'), mode='nearest'),
        'upsample_bilinear2d': lambda: F.interpolate(x[0], size=pair(pd, 'size'), mode='bilinear',
                                                     align_corners=bool(I('ac'))),
        'cumsum': lambda: torch.cumsum(x[0], I('dim')),
        'cumprod': lambda: torch.cumprod(x[0], I('dim')),
        'sort': lambda: torch.sort(x[0], I('dim'), bool(I('desc'))).values,
        'topk': lambda: torch.topk(x[0], I('k'), I('dim'), bool(I('largest'))).values,
        'var': lambda: torch.var(x[0], ints(pd, 'dims'), unbiased=bool(I('unb')), keepdim=bool(I('keep'))),
        'std': lambda: torch.std(x[0], ints(pd, 'dims'), unbiased=bool(I('unb')), keepdim=bool(I('keep'))),
        'lse': lambda: torch.logsumexp(x[0], ints(pd, 'dims'), keepdim=bool(I('keep'))),
        'prod': lambda: prod_dims(x[0], ints(pd, 'dims'), bool(I('keep'))),
        'index_add': lambda: x[0].index_add(I('dim'), x[1], x[2]),
        'scatter_add': lambda: x[0].scatter_add(I('dim'), x[1], x[2]),
        'scatter': lambda: x[0].scatter(I('dim'), x[1], x[2]),
        'index_select': lambda: torch.index_select(x[0], I('dim'), x[1]),
        'embedding': lambda: F.embedding(x[0], x[1]),
        'gather': lambda: torch.gather(x[0], I('dim'), x[1]),
        'slice_scatter': lambda: slice_scatter(x[0], x[1], I('dim'), I('start')),
        'flip': lambda: torch.flip(x[0], ints(pd, 'dims')),
        'roll': lambda: torch.roll(x[0], I('shift'), I('dim')),
        'repeat': lambda: x[0].repeat(*ints(pd, 'reps')),
        'pad_zeros': lambda: pad_zeros(x[0], I('dim'), I('left'), I('right')),
        'pad_same': lambda: pad_same(x[0], I('dim'), I('left'), I('right')),
        'masked_fill': lambda: x[0].masked_fill(x[1] != 0, P('value')),
        'norm': lambda: torch.linalg.vector_norm(x[0], ord=P('p'), dim=ints(pd, 'dims') or None,
                                                 keepdim=bool(I('keep'))),
        'dot': lambda: torch.dot(x[0], x[1]),
        'mv': lambda: torch.mv(x[0], x[1]),
        'tril': lambda: torch.tril(x[0], I('k')),
        'triu': lambda: torch.triu(x[0], I('k')),
        'meshgrid': lambda: torch.meshgrid(*x, indexing=pd.get('idx', 'ij'))[0],
        'slice_assign': lambda: slice_assign(x[0], x[1], pd),
        'upsample_nearest1d_scale': lambda: F.interpolate(x[0], scale_factor=P('s'), mode='nearest'),
        'upsample_nearest2d_scale': lambda: F.interpolate(x[0], scale_factor=(P('sh'), P('sw')), mode='nearest'),
        'upsample_bilinear2d_scale': lambda: F.interpolate(x[0], scale_factor=(P('sh'), P('sw')), mode='bilinear',
                                                           align_corners=bool(I('ac'))),
        'softmax': lambda: torch.softmax(x[0], I('dim')),
        'log_softmax': lambda: torch.log_softmax(x[0], I('dim')),
        'rms_norm': lambda: (x[0] / torch.sqrt((x[0] * x[0]).mean(-1, keepdim=True) + P('eps')))
        * (x[1] if len(x) > 1 else 1.0),
        'layer_norm': lambda: F.layer_norm(x[0], (x[0].shape[-1],), x[1] if len(x) > 1 else None,
                                           x[2] if len(x) > 2 else None, P('eps')),
        'rope': lambda: rope(x[0], x[1], x[2], bool(I('inter'))),
        'sdpa': lambda: sdpa(x[0], x[1], x[2], x[3] if len(x) > 3 else None, P('scale'), bool(I('causal'))),
    }
    return t[name]()


def layout_shape(shape, operand, lay, shape0):
    shape = list(shape)
    if not operand:
        return tuple(shape)
    if lay == 'e' and shape and shape0 and shape[0] == shape0[0]:
        shape[0] = 0
    if lay == '1':
        shape = [1] * len(shape)
    if lay == '0':
        shape = []
    return tuple(shape)


def stored_and_view(x, idx, lay, force_t, operand):
    """(stored array, view chain) whose view is the logical x, as
    op_cases.c's oc_make_input lays the inputs out; None: not applicable."""
    r = x.ndim
    t = force_t or (operand and lay == 't')
    n = operand and lay == 'n'
    b = operand and lay == 'b' and idx == 0
    if (t and r < 2) or ((n or b) and r < 1) or (b and x.shape[0] < 2):
        return None
    views, s = [], x
    if b:  # x is constant along dim 0 (drawn so)
        s = x[:1]
        views.append('b' + 'x'.join(str(z) for z in x.shape))
    if n:
        pad = np.full((2,) + x.shape[1:], 7.25)
        s = np.concatenate([pad, s, pad[:1]], 0)
        views.insert(0, 'n0:2:%d' % x.shape[0])
    if t:
        s = np.swapaxes(s, -2, -1)
        views.insert(0, 't')
    return np.array(s, order='C', copy=True), '+'.join(views) if views else ''


TDT = {'f64': torch.float64, 'f32': torch.float32, 'f16': torch.float32, 'bf16': torch.float32}


def main():
    out = os.path.join(sys.argv[1] if len(sys.argv) > 1 else 'oracle_out', 'grad')
    files = oc.NpyFiles(out, 'g')
    lines = []
    rng = np.random.default_rng(SEED)
    torch.manual_seed(SEED)
    skipped = []
    for e in op_table.load():
        name = e['name']
        if not e['grad'] and name not in EXTRA:
            continue
        cases = EXTRA.get(name) or CASES.get(name) or e['bk'] or default_bk(e['kind'])
        chosen = []
        for case in cases.split(' / '):
            specs, _, _ = parse_case(case)
            if sum(int(np.prod(s[0])) for s in specs if s[1] is None) <= BUDGET:
                chosen.append(case)
        chosen = chosen[:MAX_CASES]
        dts = [d for d in ('f64', 'f32', 'f16', 'bf16') if d in e['dtype_list']]
        dom_default = e['dom'] or None
        for case in chosen:
            specs, params, pd = parse_case(case)
            for lay in LAYOUTS:
                if lay not in e['layout_list'] or (lay == 'b' and name in NO_B):
                    continue
                shape0 = specs[0][0] if specs else ()
                # logical values, once per (case, layout): f64
                vals = []
                for i, (shape, dt, dom, force_t) in enumerate(specs):
                    operand = dt is None
                    shp = layout_shape(shape, operand, lay, shape0)
                    d = dom or dom_default
                    if d and d[0] == 'h':
                        d = 'u' + d[1:]
                    v = draw(rng, shp, d if (operand or dt not in oc.NP_INT) else (dom or 'i:0:2'))
                    if lay == 'b' and i == 0 and operand and v.ndim >= 1 and v.shape[0] >= 2:
                        v = np.broadcast_to(v[:1], v.shape).copy()
                    vals.append(v)
                for dt in dts:
                    if dt in ('f16', 'bf16') and lay not in HALF_LAYOUTS:
                        continue
                    line = one_case(files, name, e, dt, lay, params, pd, specs, vals, rng)
                    if line is None:
                        skipped.append('%s %s %s [%s]' % (name, dt, lay, case))
                    else:
                        lines.append('%05d.%s.%s.%s %s' % (len(lines), name, dt, lay, line))
    header = [' gen_grad.py: torch %s autograd gradients of sum(f(x) * R), seed %d' % (torch.__version__, SEED),
              ' id op dtype layout params inputs R grads tol',
              ' %d cases; %d not applicable (the layout or torch refuses): %s' % (len(lines), len(skipped), '; '.join(skipped[:20]))]
    oc.write_manifest(out, header, lines)
    print('gen_grad: %d cases into %s (%d not applicable)' % (len(lines), out, len(skipped)))


def one_case(files, name, e, dt, lay, params, pd, specs, vals, rng):
    """One manifest line (after the id), or None when torch refuses the case."""
    tin, fin, specs_out = [], [], []
    for i, ((shape, idt, dom, force_t), v) in enumerate(zip(specs, vals)):
        operand = idt is None
        if idt is not None and idt in oc.NP_INT:
            tin.append(torch.from_numpy(v.astype(np.int64)))
            fin.append(False)
            arr = v.astype(oc.NP_INT[idt])
            sv = stored_and_view(arr, i, lay, force_t, False)
            if sv is None:
                return None
            s, view = sv
            specs_out.append(files.save(s) + ('@' + view if view else '') + '#' + idt)
            continue
        sdt = idt or dt
        r = oc.round_float(v, sdt)
        tt = torch.tensor(r, dtype=TDT[dt] if sdt == dt else torch.float64, requires_grad=True)
        tin.append(tt)
        fin.append(True)
        sv = stored_and_view(r, i, lay, force_t, operand)
        if sv is None:
            return None
        s, view = sv
        specs_out.append(files.save(s) + ('@' + view if view else '') + ('#' + idt if idt else ''))
    try:
        y = torch_op(name, tin, pd)
    except (RuntimeError, IndexError, ValueError):
        return None
    ydt = pd['to'] if name == 'cast' else dt
    if ydt not in ('f64', 'f32', 'f16', 'bf16'):
        return None
    R = oc.round_float(rng.uniform(-1, 1, tuple(y.shape)), ydt)
    grads = torch.autograd.grad((y.to(torch.float64) * torch.from_numpy(R)).sum(), [t for t, f in zip(tin, fin) if f],
                                allow_unused=True)
    gfiles, k = [], 0
    for t, f in zip(tin, fin):
        if not f:
            gfiles.append('-')
            continue
        g = grads[k]
        k += 1
        g = torch.zeros_like(t) if g is None else g
        gfiles.append(files.save(g.detach().to(torch.float64).numpy()))
    return '%s %s %s %s %s %s' % (name, dt, lay, params or '-', ','.join(specs_out), files.save(R)) + \
        ' %s %s' % (','.join(gfiles), e['tol'])


if __name__ == '__main__':
    main()
