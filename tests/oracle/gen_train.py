#!/usr/bin/env python3
"""Oracle for the training pieces (include/wick/train.h), from torch
(Debian's python3-torch): optimizer trajectories, losses with their
gradients, gradient clipping and layer forwards.

    /usr/bin/python3 tests/oracle/gen_train.py OUTDIR

writes OUTDIR/train/*.npy and two manifests read by tests/test_train.c
(WICK_ORACLE_DIR=OUTDIR):

optim.txt, one line per optimizer config:
    id kind lr weight_decay momentum dampening nesterov beta1 beta2 eps
  kind sgd|adam|adamw; files opt<id>_fixed.npy and opt<id>_quad.npy: the
  parameter after each of 10 steps (10, 3, 4) f64, starting from p0.npy,
    fixed: step k uses gradient grads.npy[k]
    quad:  the gradient of sum(qa * (p - qc)^2) at the current p
losses.txt, one line per loss case:
    id loss reduction ignore smoothing delta x target gout value grad
  loss mse|huber|bce|ce|nll; reduction mean|sum|none; ignore: an index or
  '-' (none); gout: the output gradient file for 'none' ('-' otherwise);
  value, grad: the loss and d/dx (f64).
clip_g{0,1,2}.npy gradients; clip_<max>_g{i}.npy after clip_grad_norm_,
clip_<max>_total.npy the norm before. Layers: lin_{w,b,x,y}.npy (Linear),
conv_{w,b,x,y}.npy (Conv2d, stride 2, padding 1, groups 2).
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)

OPTIMS = [  # kind lr wd momentum dampening nesterov beta1 beta2 eps
    ('sgd', 0.1, 0.0, 0.0, 0.0, False, 0, 0, 0),
    ('sgd', 0.05, 0.0, 0.9, 0.0, False, 0, 0, 0),
    ('sgd', 0.05, 0.0, 0.9, 0.3, False, 0, 0, 0),
    ('sgd', 0.05, 0.01, 0.9, 0.0, True, 0, 0, 0),
    ('sgd', 0.1, 0.05, 0.0, 0.0, False, 0, 0, 0),
    ('adam', 0.01, 0.0, 0, 0, False, 0.9, 0.999, 1e-8),
    ('adam', 0.02, 0.1, 0, 0, False, 0.8, 0.99, 1e-6),
    ('adamw', 0.01, 0.01, 0, 0, False, 0.9, 0.999, 1e-8),
    ('adamw', 0.03, 0.2, 0, 0, False, 0.85, 0.995, 1e-7),
]


def make_opt(cfg, p):
    kind, lr, wd, mom, damp, nest, b1, b2, eps = cfg
    if kind == 'sgd':
        return torch.optim.SGD([p], lr=lr, momentum=mom, dampening=damp, weight_decay=wd, nesterov=nest)
    cls = torch.optim.Adam if kind == 'adam' else torch.optim.AdamW
    return cls([p], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)


def save(d, name, a):
    np.save(os.path.join(d, name), np.ascontiguousarray(a))


def optim_cases(d, rng):
    p0 = rng.uniform(-1, 1, (3, 4))
    grads = rng.uniform(-1, 1, (10, 3, 4))
    qa = rng.uniform(0.5, 2.0, (3, 4))
    qc = rng.uniform(-1, 1, (3, 4))
    for n, a in [('p0', p0), ('grads', grads), ('qa', qa), ('qc', qc)]:
        save(d, n + '.npy', a)
    lines = []
    for i, cfg in enumerate(OPTIMS):
        for mode in ('fixed', 'quad'):
            p = torch.tensor(p0, requires_grad=True)
            opt = make_opt(cfg, p)
            traj = []
            for k in range(10):
                opt.zero_grad()
                if mode == 'fixed':
                    p.grad = torch.tensor(grads[k])
                else:
                    (torch.tensor(qa) * (p - torch.tensor(qc)) ** 2).sum().backward()
                opt.step()
                traj.append(p.detach().numpy().copy())
            save(d, 'opt%d_%s.npy' % (i, mode), np.stack(traj))
        kind, lr, wd, mom, damp, nest, b1, b2, eps = cfg
        lines.append('%d %s %r %r %r %r %d %r %r %r' % (i, kind, lr, wd, mom, damp, int(nest), b1, b2, eps))
    with open(os.path.join(d, 'optim.txt'), 'w') as f:
        f.write('# id kind lr weight_decay momentum dampening nesterov beta1 beta2 eps\n')
        f.write('\n'.join(lines) + '\n')


def loss_cases(d, rng):
    lines = []
    n = [0]

    def case(loss, red, x, target, fn, ignore='-', smoothing=0.0, delta=0.0):
        i = n[0]
        n[0] += 1
        xt = torch.tensor(x, requires_grad=True)
        tt = torch.tensor(target)
        out = fn(xt, tt)
        gout = '-'
        if red == 'none':
            go = rng.uniform(-1, 1, out.shape)
            gout = 'l%d_gout.npy' % i
            save(d, gout, go)
            out.backward(torch.tensor(go))
        else:
            out.backward()
        save(d, 'l%d_x.npy' % i, x)
        save(d, 'l%d_t.npy' % i, target)
        save(d, 'l%d_v.npy' % i, out.detach().numpy())
        save(d, 'l%d_g.npy' % i, xt.grad.numpy())
        lines.append('%d %s %s %s %r %r l%d_x.npy l%d_t.npy %s l%d_v.npy l%d_g.npy' %
                     (i, loss, red, ignore, smoothing, delta, i, i, gout, i, i))

    pred = rng.uniform(-2, 2, (4, 5))
    tgt = rng.uniform(-2, 2, (4, 5))
    logits = rng.uniform(-3, 3, (4, 5))
    logits[0, :] = [50.0, -50.0, 100.0, -100.0, 0.0]   # large |logit| and exactly 0
    probs = rng.uniform(0, 1, (4, 5))
    probs[0, :] = [1.0, 0.0, 0.0, 1.0, 0.5]
    x = rng.uniform(-3, 3, (6, 5))
    ids = np.array([1, 4, 0, 2, 2, 3], np.int64)
    ids_ign = np.array([1, -100, 0, 2, -100, 3], np.int64)
    ids_ign2 = np.array([1, 2, 0, 2, 2, 3], np.int64)  # ignore_index = 2
    logp = torch.log_softmax(torch.tensor(x), 1).numpy()
    for red in ('mean', 'sum', 'none'):
        case('mse', red, pred, tgt, lambda a, b: F.mse_loss(a, b, reduction=red))
        for delta in (1.0, 0.5):
            case('huber', red, pred, tgt, lambda a, b: F.huber_loss(a, b, reduction=red, delta=delta), delta=delta)
        case('bce', red, logits, probs, lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=red))
        case('ce', red, x, ids, lambda a, b: F.cross_entropy(a, b, reduction=red))
        case('ce', red, x, ids_ign, lambda a, b: F.cross_entropy(a, b, reduction=red, ignore_index=-100), ignore='-100')
        case('ce', red, x, ids_ign2, lambda a, b: F.cross_entropy(a, b, reduction=red, ignore_index=2), ignore='2')
        for sm in (0.1, 0.3):
            case('ce', red, x, ids, lambda a, b: F.cross_entropy(a, b, reduction=red, label_smoothing=sm), smoothing=sm)
            case('ce', red, x, ids_ign,
                 lambda a, b: F.cross_entropy(a, b, reduction=red, ignore_index=-100, label_smoothing=sm),
                 ignore='-100', smoothing=sm)
        case('nll', red, logp, ids, lambda a, b: F.nll_loss(a, b, reduction=red))
        case('nll', red, logp, ids_ign, lambda a, b: F.nll_loss(a, b, reduction=red, ignore_index=-100), ignore='-100')
    with open(os.path.join(d, 'losses.txt'), 'w') as f:
        f.write('# id loss reduction ignore smoothing delta x target gout value grad\n')
        f.write('\n'.join(lines) + '\n')


def clip_cases(d, rng):
    gs = [rng.uniform(-1, 1, s) for s in ((3, 4), (5,), (2, 2, 2))]
    for i, g in enumerate(gs):
        save(d, 'clip_g%d.npy' % i, g)
    for mx in (1, 100):
        ps = [torch.zeros(g.shape, requires_grad=True) for g in gs]
        for p, g in zip(ps, gs):
            p.grad = torch.tensor(g)
        total = torch.nn.utils.clip_grad_norm_(ps, float(mx))
        save(d, 'clip_%d_total.npy' % mx, np.array(total.item()))
        for i, p in enumerate(ps):
            save(d, 'clip_%d_g%d.npy' % (mx, i), p.grad.numpy())


def layer_cases(d, rng):
    lin = torch.nn.Linear(6, 3)
    x = torch.tensor(rng.uniform(-1, 1, (2, 4, 6)))
    for n, a in [('w', lin.weight), ('b', lin.bias), ('x', x), ('y', lin(x))]:
        save(d, 'lin_%s.npy' % n, a.detach().numpy())
    conv = torch.nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2)
    x = torch.tensor(rng.uniform(-1, 1, (2, 4, 7, 6)))
    for n, a in [('w', conv.weight), ('b', conv.bias), ('x', x), ('y', conv(x))]:
        save(d, 'conv_%s.npy' % n, a.detach().numpy())


def main():
    d = os.path.join(sys.argv[1], 'train')
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(1313)
    optim_cases(d, rng)
    loss_cases(d, rng)
    clip_cases(d, rng)
    layer_cases(d, rng)


if __name__ == '__main__':
    main()
