"""wick.distributed over MPI with several ranks: run under mpirun (ctest
py_test_distributed_mpi_np2:
    mpirun --oversubscribe -np 2 .venv/bin/python -m pytest tests/python/test_distributed_mpi.py
). Every rank runs every test in the same order (the collectives pair up);
each checks its own results against numpy references it computes for all
ranks locally. WICK_DIST_TIMEOUT (set by the ctest) bounds a hang when one
rank fails an assertion while the others wait in a collective."""
import pytest

import wick
import wick.distributed as dist
import wick.nn as nn
import wick.nn.functional as F

np = pytest.importorskip("numpy")


@pytest.fixture(scope="module", autouse=True)
def world():
    dist.init_process_group("mpi")
    yield
    dist.barrier()
    dist.destroy_process_group()


def ranks():
    return dist.get_rank(), dist.get_world_size()


def data(r, shape=(3, 4), dtype=np.float64):
    """Rank r's tensor: distinct per rank, exactly representable."""
    return (np.arange(np.prod(shape)).reshape(shape) * (r + 1) - 5 * r).astype(dtype)


def test_launched_with_several_ranks():
    r, n = ranks()
    assert n >= 2, "run this file under mpirun -np 2 (or more)"
    assert dist.get_backend() == "mpi"


@pytest.mark.parametrize("op, ref", [
    (dist.ReduceOp.SUM, lambda xs: np.sum(xs, 0)),
    (dist.ReduceOp.AVG, lambda xs: np.mean(xs, 0)),
    (dist.ReduceOp.MAX, lambda xs: np.max(xs, 0)),
    (dist.ReduceOp.MIN, lambda xs: np.min(xs, 0)),
    (dist.ReduceOp.PRODUCT, lambda xs: np.prod(xs, 0)),
])
def test_all_reduce_in_place(op, ref):
    r, n = ranks()
    x = wick.tensor(data(r))
    keep = x
    dist.all_reduce(x, op=op)
    assert x is keep
    np.testing.assert_allclose(np.asarray(x.tolist()), ref([data(q) for q in range(n)]), rtol=1e-12)


def test_all_reduce_async_and_views():
    r, n = ranks()
    x = wick.tensor(data(r, dtype=np.float32))
    w = dist.all_reduce(x, async_op=True)
    w.wait()
    assert w.is_completed()
    np.testing.assert_allclose(np.asarray(x.tolist()), sum(data(q, dtype=np.float32) for q in range(n)))
    base = wick.tensor(data(r))
    col = base[:, 1]  # a strided view: written through
    dist.all_reduce(col)
    want = data(r)
    want[:, 1] = sum(data(q)[:, 1] for q in range(n))
    assert np.array_equal(np.asarray(base.tolist()), want)


def test_all_gather_and_into_tensor():
    r, n = ranks()
    x = wick.tensor(data(r, (2, 3), np.int32))
    outs = [wick.zeros(2, 3, dtype=wick.i32) for _ in range(n)]
    dist.all_gather(outs, x)
    for q in range(n):
        assert np.array_equal(np.asarray(outs[q].tolist()), data(q, (2, 3), np.int32))
    cat = wick.zeros(2 * n, 3, dtype=wick.i32)
    dist.all_gather_into_tensor(cat, x, async_op=True).wait()
    assert np.array_equal(np.asarray(cat.tolist()), np.concatenate([data(q, (2, 3), np.int32) for q in range(n)]))


def test_reduce_scatter():
    r, n = ranks()
    inputs = [wick.tensor(data(r + 10 * k, (2, 2))) for k in range(n)]
    out = wick.zeros(2, 2, dtype=wick.f64)
    dist.reduce_scatter(out, inputs)
    assert np.array_equal(np.asarray(out.tolist()), sum(data(q + 10 * r, (2, 2)) for q in range(n)))
    big = wick.tensor(data(r, (2 * n, 3)))
    o = wick.zeros(2, 3, dtype=wick.f64)
    dist.reduce_scatter_tensor(o, big, op=dist.ReduceOp.MAX)
    want = np.max([data(q, (2 * n, 3)) for q in range(n)], 0)[2 * r:2 * r + 2]
    assert np.array_equal(np.asarray(o.tolist()), want)


def test_broadcast():
    r, n = ranks()
    src = n - 1
    x = wick.tensor(data(r))
    dist.broadcast(x, src=src)
    assert np.array_equal(np.asarray(x.tolist()), data(src))


def test_send_recv_ring():
    """Each rank sends to the next and receives from the previous one. A
    communicator runs its operations in issue order (dist.h), so a pair must
    not both wait in a receive first: even ranks send first, odd ranks
    receive first (with 2 ranks: a ping-pong), blocking and async forms."""
    r, n = ranks()
    nxt, prv = (r + 1) % n, (r - 1) % n
    out = wick.tensor(data(r, (5,)))
    got = wick.zeros(5, dtype=wick.f64)
    if r % 2 == 0:
        w = dist.isend(out, nxt, tag=3)
        w.wait()
        assert w.is_completed()
        assert dist.recv(got, src=prv, tag=3) == prv
    else:
        rw = dist.irecv(got, src=prv, tag=3)
        rw.wait()
        dist.send(out, nxt, tag=3)
    assert np.array_equal(np.asarray(got.tolist()), data(prv, (5,)))
    if r == 0:
        dist.send(out, 1, tag=4)
    elif r == 1:
        with pytest.raises(wick.ShapeError):  # the message arrives, then does not fit
            dist.recv(wick.zeros(4, dtype=wick.f64), src=0, tag=4)


def test_new_group_and_non_members():
    r, n = ranks()
    members = [0, n - 1]
    g = dist.new_group(members)
    x = wick.tensor([float(r + 1)])
    dist.all_reduce(x, group=g)
    if r in members:
        assert dist.get_rank(g) == members.index(r)
        assert x.tolist() == [float(sum(m + 1 for m in members))]
        b = wick.tensor([float(r)])
        dist.broadcast(b, src=n - 1, group=g)  # src: a world rank
        assert b.tolist() == [float(n - 1)]
    else:
        assert dist.get_rank(g) == -1 and x.tolist() == [float(r + 1)]  # non-members: nothing happens
    dist.destroy_process_group(g)


def test_shape_mismatch_is_an_error():
    r, n = ranks()
    outs = [wick.zeros(4) for _ in range(n)]
    with pytest.raises(wick.ShapeError):
        dist.all_gather(outs, wick.zeros(3))  # every rank gathers (3,), the outputs are (4,)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 16, dtype=wick.f64)
        self.fc2 = nn.Linear(16, 16, dtype=wick.f64)
        self.fc3 = nn.Linear(16, 1, dtype=wick.f64)

    def forward(self, x):
        return self.fc3(F.tanh(self.fc2(F.tanh(self.fc1(x)))))


def set_weights(m, seed):
    rng = np.random.default_rng(seed)
    with wick.no_grad():
        for p in m.parameters():
            p.copy_(wick.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape))))


def test_ddp_matches_the_one_rank_run():
    """A global batch of 8n split into n equal shards: 20 SGD steps of the
    DDP model on every rank equal the one-process run over the whole batch
    (computed here too) to 1e-6, and the ranks stay bit-identical."""
    r, n = ranks()
    rng = np.random.default_rng(42)
    steps, per = 20, 8
    xs = rng.standard_normal((steps, per * n, 3))
    ys = np.sin(xs.sum(-1, keepdims=True))
    ref = Net()
    set_weights(ref, 7)
    mine = Net()
    set_weights(mine, 7 if r == 0 else 100 + r)  # DDP must replace these with rank 0's
    ddp = dist.DistributedDataParallel(mine, bucket_cap_mb=0.002)  # small buckets: several in flight
    o_ref = wick.optim.SGD(ref.parameters(), lr=0.2, momentum=0.9)
    o_ddp = wick.optim.SGD(ddp.parameters(), lr=0.2, momentum=0.9)
    for s in range(steps):
        o_ref.zero_grad()
        F.mse_loss(ref(wick.tensor(xs[s])), wick.tensor(ys[s])).backward()
        o_ref.step()
        o_ddp.zero_grad()
        sl = slice(r * per, (r + 1) * per)
        F.mse_loss(ddp(wick.tensor(xs[s, sl])), wick.tensor(ys[s, sl])).backward()
        o_ddp.step()
    worst = 0.0
    for (name, a), b in zip(ref.named_parameters(), mine.parameters()):
        d = np.max(np.abs(np.asarray(a.tolist()) - np.asarray(b.tolist())))
        worst = max(worst, d)
        assert d < 1e-6, (name, d)
        # every rank holds the same bits
        outs = [wick.zeros(*tuple(b.shape), dtype=wick.f64) for _ in range(n)]
        dist.all_gather(outs, b.detach())
        for q in range(1, n):
            assert np.array_equal(np.asarray(outs[0].tolist()), np.asarray(outs[q].tolist())), name
    print(f"rank {r}: DDP vs one-rank max |diff| after {steps} steps: {worst:.3g}")


def test_ddp_no_sync_accumulates():
    """Two micro-batches per step, the first under no_sync: the reduced
    gradient is the average of the accumulated sums (the one-rank run over
    both micro-batches of every rank, summed)."""
    r, n = ranks()
    rng = np.random.default_rng(5)
    per = 4
    xs = rng.standard_normal((3, 2, per * n, 3))
    ys = np.cos(xs.sum(-1, keepdims=True))
    ref, mine = Net(), Net()
    set_weights(ref, 11)
    set_weights(mine, 11)
    ddp = dist.DistributedDataParallel(mine)
    o_ref = wick.optim.SGD(ref.parameters(), lr=0.1)
    o_ddp = wick.optim.SGD(ddp.parameters(), lr=0.1)
    sl = slice(r * per, (r + 1) * per)
    for s in range(3):
        o_ref.zero_grad()
        for m in range(2):
            F.mse_loss(ref(wick.tensor(xs[s, m])), wick.tensor(ys[s, m])).backward()
        o_ref.step()
        o_ddp.zero_grad()
        with ddp.no_sync():
            F.mse_loss(ddp(wick.tensor(xs[s, 0, sl])), wick.tensor(ys[s, 0, sl])).backward()
        g = mine.fc3.bias.grad  # local only so far: differs between the ranks' shards
        outs = [wick.zeros(1, dtype=wick.f64) for _ in range(n)]
        dist.all_gather(outs, g)
        assert outs[0].tolist() != outs[1].tolist()
        F.mse_loss(ddp(wick.tensor(xs[s, 1, sl])), wick.tensor(ys[s, 1, sl])).backward()
        o_ddp.step()
    for (name, a), b in zip(ref.named_parameters(), mine.parameters()):
        d = np.max(np.abs(np.asarray(a.tolist()) - np.asarray(b.tolist())))
        assert d < 1e-9, (name, d)
