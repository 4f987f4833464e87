"""wick.distributed: torch.distributed's shapes over wick's communicators
(C: include/wick/dist.h, python/src/dist.c).

    import wick, wick.distributed as dist
    dist.init_process_group("mpi")           # under mpirun; "self": one process
    x = wick.tensor([1.0, 2.0])
    dist.all_reduce(x)                       # in place, as torch: x is now the sum
    model = dist.DistributedDataParallel(net)
    loss = loss_fn(model(xb), yb); loss.backward()   # gradients averaged over the ranks

As in torch, collectives write into the tensors they are given (the
results of wick's collectives, new tensors, are copied in: the shapes and
dtypes must match, wick.ShapeError / wick.DTypeError otherwise). Every rank
must issue the same collectives in the same order. async_op=True returns a
Work (wait(), is_completed()) whose wait() does that copy. A peer that fails
or does not answer within the timeout (init_process_group(timeout=...) in
seconds or a datetime.timedelta; default: WICK_DIST_TIMEOUT, else 60 s)
raises wick.CommError, after which the group is broken.

Groups: new_group(ranks) (every rank calls it, as in torch) over
wk_comm_split; a rank outside the group gets a group whose collectives do
nothing and whose get_rank is -1 (torch's non-member behaviour).
"""
import atexit
import datetime

from . import _wick
from ._wick import CommError, DTypeError, ShapeError, Tensor  # noqa: F401
from . import autograd as _autograd
from .nn_module import Module

__all__ = [
    "ReduceOp", "ProcessGroup", "Work", "init_process_group", "init", "is_initialized", "is_available",
    "is_mpi_available", "get_rank", "get_world_size", "get_backend", "destroy_process_group", "new_group",
    "barrier", "all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
    "broadcast", "send", "recv", "isend", "irecv", "DistributedDataParallel", "CommError",
]


class ReduceOp:
    """The reductions (torch.distributed.ReduceOp): SUM, AVG (float tensors
    only), MAX, MIN, PRODUCT."""
    SUM = 0
    AVG = 1
    MAX = 2
    MIN = 3
    PRODUCT = 4


class ProcessGroup:
    """A group of ranks (one wick communicator). The world's is made by
    init_process_group, others by new_group."""

    def __init__(self, comm, ranks):
        self._comm = comm  # None: this rank is not a member
        self._ranks = list(ranks)  # world ranks of the members, by group rank

    def rank(self):
        return self._comm.rank() if self._comm is not None else -1

    def size(self):
        return len(self._ranks)

    def __repr__(self):
        return f"ProcessGroup(ranks={self._ranks}, rank={self.rank()})"


class Work:
    """A pending asynchronous operation (async_op=True, isend, irecv):
    wait() blocks until it is done and writes its result into the tensors
    it was given; is_completed() never blocks."""

    def __init__(self, work, finish=None):
        self._work = work  # a wick._Work, or None for work already done
        self._finish = finish
        self._done = work is None

    def is_completed(self):
        return self._done or self._work.is_completed()

    def wait(self, timeout=None):
        if not self._done:
            self._done = True
            r = self._work.wait()
            self._work = None
            if self._finish is not None:
                self._finish(r)
        return True


_world = None
_groups = []  # every group made, freed before the world (MPI_Finalize comes with the last)


def is_available():
    """Always True: the self backend needs no library."""
    return True


def is_mpi_available():
    """Whether this build of wick has MPI."""
    return _wick._dist_has_mpi()


def is_initialized():
    return _world is not None


def _seconds(timeout):
    if timeout is None:
        return 0.0
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


def init_process_group(backend="mpi", init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """init_process_group(backend="mpi", ..., timeout=None, world_size=-1, rank=-1)

    backend "mpi" (MPI_COMM_WORLD: launch with mpirun; without it a world
    of one) or "self" (one process, no library). "gloo" is taken as "mpi"
    (both are CPU backends). world_size / rank, when given, must agree with
    the launcher's; init_method / store are ignored (mpirun wires the
    ranks)."""
    global _world
    if _world is not None:
        raise RuntimeError("init_process_group: the default process group is already initialized")
    b = str(backend).lower()
    if b == "gloo":
        b = "mpi"
    comm = _wick._comm_init(b, _seconds(timeout))
    n, r = comm.size(), comm.rank()
    if (world_size not in (-1, None) and world_size != n) or (rank not in (-1, None) and rank != r):
        comm.free()
        raise ValueError(f"init_process_group: world_size={world_size}, rank={rank} given but the launcher "
                         f"made rank {r} of {n}")
    _world = ProcessGroup(comm, range(n))


init = init_process_group


def destroy_process_group(group=None):
    """destroy_process_group(group=None)

    Free group, or (None) every group and the world: MPI is finalized then,
    if wick initialized it."""
    global _world
    if group is not None and group is not _world:
        if group._comm is not None:
            group._comm.free()
        if group in _groups:
            _groups.remove(group)
        return
    for g in _groups:
        if g._comm is not None:
            g._comm.free()
    _groups.clear()
    if _world is not None:
        _world._comm.free()
        _world = None


atexit.register(destroy_process_group)  # MPI_Finalize before exit: mpirun wants it


def _group(group):
    if _world is None:
        raise RuntimeError("wick.distributed: call init_process_group() first")
    return _world if group is None else group


def get_rank(group=None):
    return _group(group).rank()


def get_world_size(group=None):
    g = _group(group)
    return g.size() if g._comm is not None else -1


def get_backend(group=None):
    g = _group(group)
    return g._comm.backend() if g._comm is not None else None


def new_group(ranks=None, timeout=None, backend=None, pg_options=None):
    """new_group(ranks=None, ...)

    A group of the given world ranks (None: all of them). Every rank of the
    world must call it, members or not (as in torch)."""
    w = _group(None)
    n = w.size()
    ranks = list(range(n)) if ranks is None else [int(r) for r in ranks]
    if len(set(ranks)) != len(ranks) or any(r < 0 or r >= n for r in ranks):
        raise ValueError(f"new_group: ranks {ranks} must be distinct ranks of the world (0 .. {n - 1})")
    me = w.rank()
    member = me in ranks
    comm = w._comm.split(0 if member else -1, ranks.index(me) if member else 0)
    g = ProcessGroup(comm, ranks)
    _groups.append(g)
    return g


def _comm(group):
    """The communicator, or None for a non-member (torch: the call does nothing)."""
    return _group(group)._comm


def _into(dst, src, what):
    """src (a collective's new tensor) written into dst, shapes and dtypes checked."""
    if tuple(dst.shape) != tuple(src.shape):
        raise ShapeError(f"{what}: the tensor has shape {tuple(dst.shape)}, the result {tuple(src.shape)}")
    if dst.dtype != src.dtype:
        raise DTypeError(f"{what}: the tensor is {dst.dtype}, the result {src.dtype}")
    with _autograd.no_grad():
        dst.copy_(src)


def _check_tensor(t, fname):
    if not isinstance(t, Tensor):
        raise TypeError(f"{fname}: expected a wick.Tensor, got {type(t).__name__}")


def _run(comm, name, args, finish, async_op):
    """One collective, blocking or as a Work; finish(result) writes it back."""
    if async_op:
        return Work(getattr(comm, name + "_async")(*args), finish)
    r = getattr(comm, name)(*args)
    if finish is not None:
        finish(r)
    return None


def barrier(group=None, async_op=False, device_ids=None):
    c = _comm(group)
    if c is not None:
        c.barrier()
    return Work(None) if async_op else None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False)

    tensor becomes op over every rank's tensor, in place."""
    _check_tensor(tensor, "all_reduce")
    c = _comm(group)
    if c is None:
        return None
    return _run(c, "all_reduce", (tensor, int(op)), lambda r: _into(tensor, r, "all_reduce"), async_op)


def broadcast(tensor, src, group=None, async_op=False):
    """broadcast(tensor, src, group=None, async_op=False)

    Rank src's tensor into tensor on every rank (src: a world rank, as in
    torch)."""
    _check_tensor(tensor, "broadcast")
    g = _group(group)
    if g._comm is None:
        return None
    root = _group_rank(g, src, "broadcast")
    mine = g.rank() == root
    return _run(g._comm, "broadcast", (tensor, root), None if mine else (lambda r: _into(tensor, r, "broadcast")),
                async_op)


def _group_rank(g, world_rank, fname):
    if g is _world:
        if not 0 <= world_rank < g.size():
            raise ValueError(f"{fname}: rank {world_rank} is not in the world of {g.size()}")
        return world_rank
    if world_rank not in g._ranks:
        raise ValueError(f"{fname}: rank {world_rank} is not in the group {g._ranks}")
    return g._ranks.index(world_rank)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """all_gather(tensor_list, tensor, group=None, async_op=False)

    tensor_list[r] becomes rank r's tensor (every rank's of one shape)."""
    _check_tensor(tensor, "all_gather")
    g = _group(group)
    if g._comm is None:
        return None
    n = g.size()
    if len(tensor_list) != n:
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors for a group of {n}")

    def finish(r):
        for i, t in enumerate(tensor_list):
            _into(t, r[i], "all_gather")

    return _run(g._comm, "all_gather", (tensor.unsqueeze(0), 0), finish, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False)

    Every rank's input concatenated along dim 0 into output_tensor (or
    stacked: output of shape (world, *input.shape))."""
    _check_tensor(input_tensor, "all_gather_into_tensor")
    c = _comm(group)
    if c is None:
        return None

    def finish(r):
        if tuple(output_tensor.shape) != tuple(r.shape) and output_tensor.numel() == r.numel():
            r = r.reshape(tuple(output_tensor.shape))  # the stacked form
        _into(output_tensor, r, "all_gather_into_tensor")

    return _run(c, "all_gather", (input_tensor, 0), finish, async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False)

    output becomes op over every rank's input_list[r], r this rank."""
    _check_tensor(output, "reduce_scatter")
    g = _group(group)
    if g._comm is None:
        return None
    if len(input_list) != g.size():
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors for a group of {g.size()}")
    for t in input_list:
        _check_tensor(t, "reduce_scatter")
        if tuple(t.shape) != tuple(output.shape):
            raise ShapeError(f"reduce_scatter: an input has shape {tuple(t.shape)}, the output {tuple(output.shape)}")
    x = _wick.stack(list(input_list), 0)
    return _run(g._comm, "reduce_scatter", (x, 0, int(op)), lambda r: _into(output, r[0], "reduce_scatter"),
                async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False)

    op over every rank's input (dim 0 = world * output's dim 0), this
    rank's chunk of dim 0 into output."""
    _check_tensor(output, "reduce_scatter_tensor")
    _check_tensor(input, "reduce_scatter_tensor")
    g = _group(group)
    if g._comm is None:
        return None
    n = g.size()
    if input.dim() == 0 or input.shape[0] % n:
        raise ShapeError(f"reduce_scatter_tensor: input of shape {tuple(input.shape)} does not split into {n} "
                         "equal chunks along dim 0")
    return _run(g._comm, "reduce_scatter", (input, 0, int(op)), lambda r: _into(output, r, "reduce_scatter_tensor"),
                async_op)


def send(tensor, dst, group=None, tag=0):
    """send(tensor, dst, group=None, tag=0)"""
    w = isend(tensor, dst, group, tag)
    if w is not None:
        w.wait()


def recv(tensor, src=None, group=None, tag=0):
    """recv(tensor, src, group=None, tag=0)

    Rank src's tensor (sent with the same tag) into tensor; returns src.
    src must be given (wick has no receive-from-any)."""
    w = irecv(tensor, src, group, tag)
    if w is not None:
        w.wait()
    return src


def isend(tensor, dst, group=None, tag=0):
    """isend(tensor, dst, group=None, tag=0) -> Work"""
    _check_tensor(tensor, "isend")
    g = _group(group)
    if g._comm is None:
        return None
    return Work(g._comm.send_async(tensor, _group_rank(g, dst, "send"), int(tag)))


def irecv(tensor, src=None, group=None, tag=0):
    """irecv(tensor, src, group=None, tag=0) -> Work"""
    _check_tensor(tensor, "irecv")
    if src is None:
        raise ValueError("recv: src must be given (wick has no receive from any rank)")
    g = _group(group)
    if g._comm is None:
        return None
    w = g._comm.recv_async(_group_rank(g, src, "recv"), int(tag))
    return Work(w, lambda r: _into(tensor, r, "recv"))


class DistributedDataParallel(Module):
    """DistributedDataParallel(module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
    process_group=None, bucket_cap_mb=25, find_unused_parameters=False, ...)

    Data-parallel training (torch's DDP) over wick's wk_ddp (train.h): every
    rank runs the same module on its own shard of each batch. Construction
    overwrites the parameters and (broadcast_buffers) the buffers with rank
    0's (collective; buffers only then, not at every forward as torch).
    Calling it runs module (self.module) and arms the next Tensor.backward,
    which then runs as wk_ddp_backward: each bucket of bucket_cap_mb MiB
    (reverse parameter order) is all-reduced as soon as backward has its
    gradients, while the pass goes on, and after it every parameter's .grad
    is the average over the ranks (bit-identical on every rank), so one
    optimizer step keeps the ranks identical. A parameter no rank's
    graph reached keeps no gradient; one some ranks reached gets zeros from
    the others (find_unused_parameters is accepted and not needed). Within
    no_sync() forwards do not arm: gradients accumulate locally and the next
    synchronized backward reduces the accumulated sum."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=25, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be a wick.nn.Module, got {type(module).__name__}")
        g = _group(process_group)
        if g._comm is None:
            raise ValueError("DistributedDataParallel: this rank is not in process_group")
        self.module = module
        object.__setattr__(self, "process_group", g)
        object.__setattr__(self, "broadcast_buffers", broadcast_buffers)
        object.__setattr__(self, "require_backward_grad_sync", True)
        params = [p for p in module.parameters() if p.requires_grad]
        # wk_ddp_new puts rank 0's parameter values everywhere; the buffers here
        object.__setattr__(self, "_reducer",
                           _wick._DDPReducer(g._comm, params, float(bucket_cap_mb or 25), False) if params else None)
        if broadcast_buffers:
            with _autograd.no_grad():
                for b in module.buffers():
                    if b is not None:
                        r = g._comm.broadcast(b, 0)
                        if g.rank() != 0:
                            b.copy_(r)

    def forward(self, *inputs, **kwargs):
        if self._reducer is not None and self.require_backward_grad_sync and _autograd.is_grad_enabled():
            self._reducer.arm()
        try:
            return self.module(*inputs, **kwargs)
        except BaseException:
            if self._reducer is not None:
                self._reducer.disarm()
            raise

    def no_sync(self):
        """no_sync()

        A context manager: forwards inside it do not arm the gradient
        reduction (accumulate locally; the first backward after it reduces)."""
        ddp = self

        class _NoSync:
            def __enter__(self):
                self._old = ddp.require_backward_grad_sync
                object.__setattr__(ddp, "require_backward_grad_sync", False)

            def __exit__(self, *exc):
                object.__setattr__(ddp, "require_backward_grad_sync", self._old)
                return False

        return _NoSync()

    def extra_repr(self):
        return f"world_size={self.process_group.size()}"
