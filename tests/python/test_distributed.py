"""wick.distributed in one process (the "self" backend, a world of 1): the
torch.distributed surface, in-place semantics, errors, and DDP being the
plain module's training. The 2-rank runs under mpirun are in
test_distributed_mpi.py (ctest py_test_distributed_mpi_np2)."""
import pytest

import wick
import wick.distributed as dist
import wick.nn as nn
import wick.nn.functional as F


@pytest.fixture
def world():
    dist.init_process_group("self")
    yield
    dist.destroy_process_group()


def test_not_initialized():
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.get_rank()
    with pytest.raises(RuntimeError):
        dist.all_reduce(wick.tensor([1.0]))
    with pytest.raises(ValueError, match="backend"):
        dist.init_process_group("carrier-pigeon")
    assert not dist.is_initialized()


def test_world_of_one(world):
    assert dist.is_initialized() and dist.is_available()
    assert dist.get_rank() == 0 and dist.get_world_size() == 1
    assert dist.get_backend() == "self"
    with pytest.raises(RuntimeError, match="already"):
        dist.init_process_group("self")
    dist.barrier()
    with pytest.raises(ValueError, match="world_size"):
        dist.destroy_process_group()
        dist.init_process_group("self", world_size=2)
    dist.init_process_group("self", timeout=5)


@pytest.mark.parametrize("op", [dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX, dist.ReduceOp.MIN,
                                dist.ReduceOp.PRODUCT])
def test_all_reduce_in_place(world, op):
    x = wick.tensor([[1.5, -2.0], [3.0, 4.0]], dtype=wick.f64)
    before = x
    assert dist.all_reduce(x, op=op) is None
    assert x is before and x.tolist() == [[1.5, -2.0], [3.0, 4.0]]
    # a view: the base is written through it
    base = wick.zeros(2, 3)
    v = base[:, 1]
    w = dist.all_reduce(v, async_op=True)
    w.wait()
    assert w.is_completed()


def test_all_reduce_writes_views(world):
    base = wick.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    col = base[:, 1]
    dist.all_reduce(col, op=dist.ReduceOp.SUM)
    assert base.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def test_gathers_and_scatters(world):
    x = wick.tensor([1, 2, 3], dtype=wick.i32)
    out = [wick.zeros(3, dtype=wick.i32)]
    dist.all_gather(out, x)
    assert out[0].tolist() == [1, 2, 3]
    cat = wick.zeros(3, dtype=wick.i32)
    dist.all_gather_into_tensor(cat, x)
    assert cat.tolist() == [1, 2, 3]
    stacked = wick.zeros(1, 3, dtype=wick.i32)
    dist.all_gather_into_tensor(stacked, x, async_op=True).wait()
    assert stacked.tolist() == [[1, 2, 3]]
    o = wick.zeros(3, dtype=wick.i32)
    dist.reduce_scatter(o, [x])
    assert o.tolist() == [1, 2, 3]
    o2 = wick.zeros(3, dtype=wick.i32)
    dist.reduce_scatter_tensor(o2, x, op=dist.ReduceOp.MAX)
    assert o2.tolist() == [1, 2, 3]
    b = wick.tensor([7.0, 8.0])
    dist.broadcast(b, src=0)
    assert b.tolist() == [7.0, 8.0]


def test_errors(world):
    with pytest.raises(wick.DTypeError):
        dist.all_reduce(wick.tensor([1, 2]), op=dist.ReduceOp.AVG)  # AVG: float tensors only
    with pytest.raises(ValueError, match="reduce op"):
        dist.all_reduce(wick.tensor([1.0]), op=17)
    with pytest.raises(ValueError, match="tensor_list"):
        dist.all_gather([wick.zeros(2), wick.zeros(2)], wick.zeros(2))
    with pytest.raises(wick.ShapeError):
        dist.all_gather([wick.zeros(3)], wick.zeros(2))
    with pytest.raises(wick.DTypeError):
        dist.all_gather([wick.zeros(2, dtype=wick.f64)], wick.zeros(2))
    with pytest.raises(TypeError, match="wick.Tensor"):
        dist.all_reduce([1.0, 2.0])
    with pytest.raises(ValueError, match="rank 1"):
        dist.broadcast(wick.zeros(2), src=1)
    with pytest.raises(wick.Error):
        dist.send(wick.zeros(2), dst=0)  # the self backend refuses send / recv to itself
    with pytest.raises(ValueError, match="src"):
        dist.recv(wick.zeros(2))
    with pytest.raises(ValueError, match="ranks"):
        dist.new_group([0, 1])


def test_new_group(world):
    g = dist.new_group([0])
    assert dist.get_rank(g) == 0 and dist.get_world_size(g) == 1
    x = wick.tensor([2.0, 3.0])
    dist.all_reduce(x, group=g)
    assert x.tolist() == [2.0, 3.0]
    dist.destroy_process_group(g)
    assert dist.is_initialized()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 5, dtype=wick.f64)
        self.fc2 = nn.Linear(5, 1, dtype=wick.f64)
        self.unused = nn.Linear(2, 2, dtype=wick.f64)

    def forward(self, x):
        return self.fc2(F.tanh(self.fc1(x)))


def test_ddp_world_of_one_is_the_module(world, np):
    rng = np.random.default_rng(0)
    xs = wick.tensor(rng.standard_normal((8, 3)))
    ys = wick.tensor(rng.standard_normal((8, 1)))
    a, b = Net(), Net()
    b.load_state_dict(a.state_dict())
    ddp = dist.DistributedDataParallel(b, bucket_cap_mb=0.0001)  # tiny buckets: several of them
    assert ddp.module is b
    assert sorted(ddp.state_dict()) == sorted("module." + k for k in a.state_dict())
    oa, ob = wick.optim.SGD(a.parameters(), lr=0.1), wick.optim.SGD(ddp.parameters(), lr=0.1)
    for _ in range(5):
        for m, o in ((a, oa), (ddp, ob)):
            o.zero_grad()
            F.mse_loss(m(xs), ys).backward()
            o.step()
    for (ka, pa), (kb, pb) in zip(a.named_parameters(), ddp.named_parameters()):
        assert "module." + ka == kb
        assert np.array_equal(np.asarray(pa.tolist()), np.asarray(pb.tolist())), ka
    assert b.unused.weight.grad is None  # no rank reached it: it keeps none
    # no_sync: the forward does not arm, the backward is the plain one
    with ddp.no_sync():
        F.mse_loss(ddp(xs), ys).backward()


def test_ddp_errors(world):
    with pytest.raises(TypeError, match="wick.nn.Module"):
        dist.DistributedDataParallel(object())
