"""wick.nn's module layer (python/wick/nn.py): Parameters, Module's
registration and state, the layers against torch.nn's modules with copied
weights, containers, losses, and errors. Layers whose ops come from other
parts of the binding (activations, embedding, conv2d, autograd) skip when the
build does not have them."""
import collections
import math

import pytest

import wick
import wick.nn as nn
import wick.nn.functional as F

needs = {
    "relu": pytest.mark.skipif(not hasattr(wick.Tensor, "relu"), reason="elementwise methods not in this build"),
    "embedding": pytest.mark.skipif(not hasattr(wick, "embedding"), reason="wick.embedding not in this build"),
    "conv2d": pytest.mark.skipif(not hasattr(wick, "conv2d"), reason="wick.conv2d not in this build"),
    "backward": pytest.mark.skipif(not hasattr(wick.Tensor, "backward"), reason="autograd not in this build"),
}


def arr(np, t):
    return np.array(t.tolist(), dtype=np.float64).reshape(t.shape)


def from_torch(t):
    return wick.tensor(t.detach().numpy())


def close(np, got, want, tol=1e-5):
    np.testing.assert_allclose(arr(np, got), want.detach().double().numpy(), atol=tol, rtol=tol)


def randn(np, *shape, seed=0, dtype=None):
    a = np.random.default_rng(seed).standard_normal(shape)
    return wick.tensor(a, dtype=dtype or "f32")


# ------------------------------------------------------------- parameters


def test_parameter(np):
    src = wick.ones(2, 3)
    p = nn.Parameter(src)
    assert isinstance(p, wick.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.shape == (2, 3) and p.dtype == wick.f32
    src += 1  # a copy: the source's memory is not shared
    assert arr(np, p).max() == 1.0
    assert not isinstance(src, nn.Parameter) and not isinstance(wick.zeros(1), nn.Parameter)
    assert not isinstance(np.zeros(2), nn.Parameter)
    q = nn.Parameter(wick.zeros(3, dtype="f64"), requires_grad=False)
    assert isinstance(q, nn.Parameter) and not q.requires_grad and q.dtype == wick.f64
    assert nn.Parameter(np.ones(3)).dtype == wick.f64 and nn.Parameter([1.0, 2.0]).tolist() == [1.0, 2.0]
    assert nn.Parameter().shape == (0,)
    t = randn(np, 4, 3)
    assert nn.Parameter(t.mT).tolist() == t.mT.tolist()  # any layout in, contiguous copy out
    with pytest.raises(wick.DTypeError):
        nn.Parameter(wick.tensor([1, 2]))  # parameters are float
    assert nn.Parameter(wick.tensor([1, 2]), requires_grad=False).dtype == wick.i64


# ------------------------------------------------------------ registration


class Block(nn.Module):
    def __init__(self, n_in):
        super().__init__()
        self.fc = nn.Linear(n_in, 4)
        self.norm = nn.LayerNorm(4)
        self.scale = nn.Parameter(wick.ones(4))
        self.register_buffer("steps", wick.zeros(1))
        self.register_buffer("cache", wick.zeros(2), persistent=False)
        self.note = "plain attribute"

    def forward(self, x):
        return self.norm(self.fc(x)) * self.scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Block(3)
        self.b = Block(4)
        self.head = nn.Linear(4, 2, bias=False)
        self.tied = self.head  # the same module twice: its parameters count once

    def forward(self, x):
        return self.head(self.b(self.a(x)))


def test_module_registration(np):
    m = Net()
    names = [n for n, _ in m.named_parameters()]
    # torch's order: each module's own parameters, then its submodules' (pre-order)
    assert names == ["a.scale", "a.fc.weight", "a.fc.bias", "a.norm.weight", "a.norm.bias",
                     "b.scale", "b.fc.weight", "b.fc.bias", "b.norm.weight", "b.norm.bias", "head.weight"]
    assert len(list(m.parameters())) == 11 and all(isinstance(p, nn.Parameter) for p in m.parameters())
    assert [n for n, _ in m.named_buffers()] == ["a.steps", "a.cache", "b.steps", "b.cache"]
    # state_dict keeps every path to a module (as torch's): the tied head twice
    assert list(m.state_dict()) == names[:1] + ["a.steps"] + names[1:6] + ["b.steps"] + names[6:] + ["tied.weight"]
    assert [n for n, _ in m.named_children()] == ["a", "b", "head"]
    assert [n for n, _ in m.named_modules()] == ["", "a", "a.fc", "a.norm", "b", "b.fc", "b.norm", "head"]
    assert len(list(m.a.parameters(recurse=False))) == 1 and m.a.note == "plain attribute"
    assert m.head.bias is None and "bias" not in dict(m.head.named_parameters())
    assert m(randn(np, 5, 3)).shape == (5, 2)
    # assignment rules
    with pytest.raises(TypeError, match="parameter 'scale'"):
        m.a.scale = wick.ones(4)  # a plain tensor where a parameter lives
    with pytest.raises(TypeError, match="child module 'fc'"):
        m.a.fc = 3
    with pytest.raises(TypeError, match="buffer"):
        m.a.steps = [1]
    m.a.steps = wick.ones(1)
    assert m.a.steps.tolist() == [1.0]
    m.a.scale = None
    assert "a.scale" not in dict(m.named_parameters())
    del m.b.norm
    assert not hasattr(m.b, "norm") and "b.norm.weight" not in m.state_dict()
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        m.nope
    with pytest.raises(TypeError):
        m.register_parameter("x", wick.ones(2))
    with pytest.raises(TypeError):
        m.add_module("x", 5)

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(wick.ones(1))  # before super().__init__()

    with pytest.raises(AttributeError, match="__init__"):
        Early()
    with pytest.raises(NotImplementedError):
        nn.Module()(1)


def test_repr():
    m = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.1), nn.LayerNorm(4))
    r = repr(m)
    assert r.startswith("Sequential(\n  (0): Linear(in_features=3, out_features=4, bias=True)")
    assert "(1): Dropout(p=0.1, inplace=False)" in r and "(2): LayerNorm((4,), eps=1e-05" in r


# ----------------------------------------------------------- layers vs torch


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(np, torch, dt, bias):
    tdt = torch.float32 if dt == "f32" else torch.float64
    torch.manual_seed(0)
    tl = torch.nn.Linear(5, 3, bias=bias).to(tdt)
    m = nn.Linear(5, 3, bias=bias, dtype=dt)
    assert m.weight.dtype == wick.dtype(dt) and m.weight.shape == (3, 5)
    m.load_state_dict(tl.state_dict())  # torch tensors load directly
    x = randn(np, 2, 4, 5, dtype=dt)
    xr = torch.tensor(arr(np, x), dtype=tdt)
    close(np, m(x), tl(xr), 1e-5)
    close(np, m(x[:, 1:3]), tl(xr[:, 1:3]), 1e-5)
    assert repr(m) == f"Linear(in_features=5, out_features=3, bias={bias})"


@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_half_precision_layers(np, torch, dt):
    m = nn.Sequential(nn.Linear(8, 6, dtype=dt), nn.LayerNorm(6, dtype=dt), nn.Linear(6, 3, dtype=dt))
    assert all(p.dtype == wick.dtype(dt) for p in m.parameters())
    x = randn(np, 5, 8, dtype=dt)
    sd = {k: torch.tensor(arr(np, v)) for k, v in m.state_dict().items()}  # the rounded weights, exactly
    tm = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.LayerNorm(6), torch.nn.Linear(6, 3)).double()
    tm.load_state_dict(sd)
    got = m(x)
    assert got.dtype == wick.dtype(dt)
    np.testing.assert_allclose(arr(np, got), tm(torch.tensor(arr(np, x))).detach().numpy(), atol=0.05, rtol=0.05)


def test_linear_init_is_torchs_default(np):
    wick.manual_seed(1)
    m = nn.Linear(400, 300)
    w, b = arr(np, m.weight), arr(np, m.bias)
    bound = 1 / math.sqrt(400)  # kaiming_uniform(a=sqrt(5)) and the bias rule: both 1/sqrt(fan_in)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.mean()) < 0.02 * bound and abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    assert np.abs(b).max() > 0.9 * bound and b.std() > 0.4 * bound
    wick.manual_seed(1)
    assert nn.Linear(400, 300).weight.tolist()[0][:5] == m.weight.tolist()[0][:5]  # the seeded generator
    assert nn.Linear(0, 2).weight.shape == (2, 0)


def test_layer_norm_and_rms_norm_modules(np, torch):
    torch.manual_seed(0)
    tln = torch.nn.LayerNorm((3, 4), eps=1e-4).double()
    with torch.no_grad():
        tln.weight.normal_()
        tln.bias.normal_()
    m = nn.LayerNorm((3, 4), eps=1e-4, dtype="f64")
    assert arr(np, m.weight).tolist() == np.ones((3, 4)).tolist() and arr(np, m.bias).max() == 0
    m.load_state_dict(tln.state_dict())
    x = randn(np, 2, 3, 4, dtype="f64")
    xr = torch.tensor(arr(np, x))
    close(np, m(x), tln(xr), 1e-10)
    plain = nn.LayerNorm(4, elementwise_affine=False)
    assert list(plain.parameters()) == []
    close(np, plain(randn(np, 5, 4, seed=2)),
          torch.nn.functional.layer_norm(torch.tensor(arr(np, randn(np, 5, 4, seed=2))), (4,)), 1e-5)
    nob = nn.LayerNorm(4, bias=False)
    assert [n for n, _ in nob.named_parameters()] == ["weight"]
    # RMSNorm: llama's x / sqrt(mean(x^2) + eps) * w
    r = nn.RMSNorm(4, eps=1e-5, dtype="f64")
    r.load_state_dict({"weight": np.array([0.5, 1.0, 2.0, -1.0])})
    xr4 = torch.tensor(arr(np, x))
    want = xr4 / torch.sqrt((xr4 ** 2).mean(-1, keepdim=True) + 1e-5) * torch.tensor([0.5, 1.0, 2.0, -1.0])
    close(np, r(x), want, 1e-10)
    assert list(nn.RMSNorm(4, elementwise_affine=False).parameters()) == []
    with pytest.raises(ValueError, match="last dim only"):
        nn.RMSNorm((3, 4))


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_modules_match_torch(np, torch, momentum):
    for ours_cls, theirs_cls, shape in [(nn.BatchNorm1d, torch.nn.BatchNorm1d, (8, 3)),
                                        (nn.BatchNorm1d, torch.nn.BatchNorm1d, (4, 3, 5)),
                                        (nn.BatchNorm2d, torch.nn.BatchNorm2d, (2, 3, 4, 4))]:
        theirs = theirs_cls(3, momentum=momentum).double()
        with torch.no_grad():
            theirs.weight.normal_()
            theirs.bias.normal_()
        ours = ours_cls(3, momentum=momentum, dtype="f64")
        assert list(ours.state_dict()) == list(theirs.state_dict())
        ours.load_state_dict(theirs.state_dict())
        for step in range(3):
            x = randn(np, *shape, seed=step, dtype="f64")
            close(np, ours(x), theirs(torch.tensor(arr(np, x))), 1e-10)
        close(np, ours.running_mean, theirs.running_mean, 1e-12)
        close(np, ours.running_var, theirs.running_var, 1e-12)
        assert ours.num_batches_tracked.item() == theirs.num_batches_tracked.item() == 3
        ours.eval()
        theirs.eval()
        x = randn(np, *shape, seed=9, dtype="f64")
        close(np, ours(x), theirs(torch.tensor(arr(np, x))), 1e-10)
        assert ours.num_batches_tracked.item() == 3  # eval leaves the counters alone
    free = nn.BatchNorm1d(3, affine=False, track_running_stats=False)
    assert list(free.state_dict()) == [] and list(free.parameters()) == []
    x = randn(np, 5, 3)
    close(np, free.eval()(x), torch.nn.BatchNorm1d(3, affine=False, track_running_stats=False).eval()(
        torch.tensor(arr(np, x), dtype=torch.float32)), 1e-5)
    with pytest.raises(ValueError, match="rank"):
        nn.BatchNorm2d(3)(randn(np, 4, 3))
    assert repr(nn.BatchNorm2d(4)) == "BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"


def test_group_norm_module(np, torch):
    torch.manual_seed(1)
    theirs = torch.nn.GroupNorm(2, 6).double()
    with torch.no_grad():
        theirs.weight.normal_()
        theirs.bias.normal_()
    ours = nn.GroupNorm(2, 6, dtype="f64")
    assert arr(np, ours.weight).tolist() == [1.0] * 6
    ours.load_state_dict(theirs.state_dict())
    x = randn(np, 3, 6, 5, dtype="f64")
    close(np, ours(x), theirs(torch.tensor(arr(np, x))), 1e-10)
    assert list(nn.GroupNorm(3, 6, affine=False).parameters()) == []
    with pytest.raises(ValueError, match="divisible"):
        nn.GroupNorm(4, 6)


def test_sequential_matches_torch(np, torch):
    torch.manual_seed(3)
    tm = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.LayerNorm(8), torch.nn.Dropout(0.5),
                             torch.nn.Linear(8, 3), torch.nn.LogSoftmax(-1)).eval()
    m = nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.Dropout(0.5), nn.Linear(8, 3), nn.LogSoftmax(-1)).eval()
    m.load_state_dict(tm.state_dict())
    x = randn(np, 5, 6)
    close(np, m(x), tm(torch.tensor(arr(np, x), dtype=torch.float32)), 1e-5)
    assert len(m) == 5 and isinstance(m[1], nn.LayerNorm) and isinstance(m[-1], nn.LogSoftmax)
    head = m[3:]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is m[3]
    m.append(nn.Softmax(1))
    assert len(m) == 6 and [n for n, _ in m.named_children()][-1] == "5"
    named = nn.Sequential(collections.OrderedDict([("inp", nn.Linear(2, 2)), ("out", nn.Linear(2, 1))]))
    assert [n for n, _ in named.named_parameters()] == ["inp.weight", "inp.bias", "out.weight", "out.bias"]
    assert [type(s).__name__ for s in named] == ["Linear", "Linear"]


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(ml) == 3 and len(list(ml.parameters())) == 6 and ml[-1] is ml[2]
    ml.append(nn.LayerNorm(2))
    ml += [nn.Identity()]
    ml.insert(0, nn.Linear(2, 5))
    assert [type(m).__name__ for m in ml] == ["Linear", "Linear", "Linear", "Linear", "LayerNorm", "Identity"]
    assert [n for n, _ in ml.named_children()] == ["0", "1", "2", "3", "4", "5"]
    ml[1] = nn.Identity()
    assert isinstance(ml[1], nn.Identity) and len(ml[1:3]) == 2
    with pytest.raises(IndexError):
        ml[6]

    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(1, 1), nn.Linear(1, 1)])

    assert [n for n, _ in Holder().named_parameters()] == ["layers.0.weight", "layers.0.bias", "layers.1.weight",
                                                           "layers.1.bias"]
    md = nn.ModuleDict({"enc": nn.Linear(2, 3), "dec": nn.Linear(3, 2)})
    assert list(md) == ["enc", "dec"] and "enc" in md and len(md) == 2
    md["norm"] = nn.LayerNorm(3)
    del md["dec"]
    assert list(md.keys()) == ["enc", "norm"] and [n for n, _ in md.named_parameters()][0] == "enc.weight"


def test_train_eval_and_dropout(np):
    m = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.Dropout(0.5)))
    assert m.training and m[1][0].training
    assert m.eval() is m and not m.training and not m[1][0].training
    x = wick.ones(64, 64)
    assert m[1](x) is x  # eval: identity, the input itself
    m.train()
    y = arr(np, m[1](x))
    assert set(np.unique(y)) == {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    assert nn.Dropout(0.0)(x) is x
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


# ---------------------------------------------------------------- state


def test_state_dict_round_trip(np):
    wick.manual_seed(0)
    a = Net()
    wick.manual_seed(1)
    b = Net()
    x = randn(np, 3, 3)
    assert arr(np, a(x)).tolist() != arr(np, b(x)).tolist()
    ids = {n: id(p) for n, p in b.named_parameters()}
    w_before = b.a.fc.weight
    res = b.load_state_dict(a.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    np.testing.assert_array_equal(arr(np, a(x)), arr(np, b(x)))
    # in place: the parameter objects (which optimizers hold) are the same ones
    assert {n: id(p) for n, p in b.named_parameters()} == ids and b.a.fc.weight is w_before
    assert b.a.steps.tolist() == a.a.steps.tolist()
    # through numpy, and a float64 checkpoint cast to the f32 model
    sd = {k: np.array(v.tolist(), dtype=np.float64) for k, v in a.state_dict().items()}
    c = Net()
    c.load_state_dict(sd)
    assert c.a.fc.weight.dtype == wick.f32
    np.testing.assert_allclose(arr(np, c(x)), arr(np, a(x)), rtol=1e-6, atol=1e-6)
    # the values are detached copies of nothing: state_dict shares the parameters' memory
    if hasattr(wick.Tensor, "detach"):
        assert not a.state_dict()["head.weight"].requires_grad
    assert a.state_dict(keep_vars=True)["head.weight"] is a.head.weight


def test_load_state_dict_errors(np):
    m = nn.Linear(3, 2)
    sd = dict(m.state_dict())
    with pytest.raises(KeyError, match="missing keys \\['bias'\\]"):
        m.load_state_dict({"weight": sd["weight"]})
    with pytest.raises(KeyError, match="unexpected keys \\['extra'\\]"):
        m.load_state_dict(dict(sd, extra=wick.ones(1)))
    res = m.load_state_dict({"weight": wick.zeros(2, 3), "extra": wick.ones(1)}, strict=False)
    assert res.missing_keys == ["bias"] and res.unexpected_keys == ["extra"]
    assert arr(np, m.weight).max() == 0.0
    with pytest.raises(wick.ShapeError, match="size mismatch for weight"):
        m.load_state_dict({"weight": wick.zeros(3, 2), "bias": wick.zeros(2)})
    with pytest.raises(TypeError):
        m.load_state_dict({"weight": object(), "bias": wick.zeros(2)})


# ---------------------------------------------------------------- losses


def test_loss_modules_match_torch(np, torch):
    x = randn(np, 6, 4, dtype="f64")
    y = randn(np, 6, 4, seed=1, dtype="f64")
    t = wick.tensor([0, 3, -100, 1, 2, 3])
    w = wick.tensor([1.0, 0.5, 2.0, 1.5], dtype="f64")
    wr = torch.tensor([1.0, 0.5, 2.0, 1.5], dtype=torch.float64)
    p = wick.tensor(np.random.default_rng(4).random((6, 4)))
    pairs = [
        (nn.MSELoss(), torch.nn.MSELoss(), x, y),
        (nn.L1Loss(reduction="sum"), torch.nn.L1Loss(reduction="sum"), x, y),
        (nn.HuberLoss(delta=0.5), torch.nn.HuberLoss(delta=0.5), x, y),
        (nn.SmoothL1Loss(reduction="none", beta=0.3), torch.nn.SmoothL1Loss(reduction="none", beta=0.3), x, y),
        (nn.BCEWithLogitsLoss(pos_weight=w), torch.nn.BCEWithLogitsLoss(pos_weight=wr), x, p),
        (nn.BCELoss(reduction="sum"), torch.nn.BCELoss(reduction="sum"), p, p * 0.5),
        (nn.CrossEntropyLoss(weight=w, label_smoothing=0.1), torch.nn.CrossEntropyLoss(weight=wr, label_smoothing=0.1),
         x, t),
        (nn.CrossEntropyLoss(ignore_index=3, reduction="none"),
         torch.nn.CrossEntropyLoss(ignore_index=3, reduction="none"), x, wick.tensor([0, 3, 3, 1, 2, 3])),
        (nn.NLLLoss(weight=w), torch.nn.NLLLoss(weight=wr), x, t),
        (nn.KLDivLoss(reduction="batchmean"), torch.nn.KLDivLoss(reduction="batchmean"), x, p),
        (nn.KLDivLoss(reduction="sum", log_target=True), torch.nn.KLDivLoss(reduction="sum", log_target=True), x, y),
    ]
    for ours, theirs, a, b in pairs:
        # class ids go to torch as int64, values as float64
        br = torch.tensor(b.tolist()) if b.dtype == wick.i64 else torch.tensor(arr(np, b))
        close(np, ours(a, b), theirs(torch.tensor(arr(np, a)), br), 1e-10)
    assert "weight" in nn.CrossEntropyLoss(weight=w).state_dict()
    assert repr(nn.MSELoss(reduction="sum")) == "MSELoss(reduction='sum')"
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="avg")


# ----------------------------------------------- layers over other parts' ops


@needs["relu"]
def test_activation_modules_match_torch(np, torch):
    x = randn(np, 4, 5, dtype="f64")
    xr = torch.tensor(arr(np, x))
    tf = torch.nn.functional
    pairs = [(nn.ReLU(), tf.relu), (nn.GELU(), tf.gelu), (nn.GELU("tanh"), lambda v: tf.gelu(v, approximate="tanh")),
             (nn.SiLU(), tf.silu), (nn.Sigmoid(), torch.sigmoid), (nn.Tanh(), torch.tanh), (nn.Identity(), lambda v: v),
             (nn.Softmax(0), lambda v: tf.softmax(v, 0))]
    for ours, theirs in pairs:
        close(np, ours(x), theirs(xr), 1e-6)
    close(np, F.leaky_relu(x, 0.2), tf.leaky_relu(xr, 0.2), 1e-12)
    close(np, F.elu(x, 0.7), tf.elu(xr, 0.7), 1e-12)
    close(np, F.relu(x.mT), tf.relu(xr.T), 0)
    y = randn(np, 3, seed=5, dtype="f64")
    want = tf.relu(torch.tensor(arr(np, y)))
    assert F.relu(y, inplace=True) is y
    close(np, y, want, 0)
    with pytest.raises(ValueError, match="approximate"):
        nn.GELU("erf")
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(x, approximate="fast")
    mlp = nn.Sequential(nn.Linear(5, 7), nn.GELU(), nn.Linear(7, 2))
    tmlp = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.GELU(), torch.nn.Linear(7, 2)).double()
    mlp.load_state_dict(tmlp.state_dict())
    if hasattr(wick.Tensor, "to") and hasattr(wick.Tensor, "detach"):
        assert mlp.double() is mlp
        assert mlp[0].weight.dtype == wick.f64 and isinstance(mlp[0].weight, nn.Parameter)
        assert mlp[0].weight.requires_grad and mlp[0].weight.is_leaf
        close(np, mlp(x), tmlp(xr), 1e-10)
        assert mlp.bfloat16()[2].bias.dtype == wick.bf16 and mlp.float()[0].weight.dtype == wick.f32


@needs["embedding"]
def test_embedding_matches_torch(np, torch):
    torch.manual_seed(0)
    te = torch.nn.Embedding(10, 4)
    e = nn.Embedding(10, 4)
    assert e.weight.shape == (10, 4) and abs(arr(np, e.weight).std() - 1) < 0.5
    e.load_state_dict(te.state_dict())
    ids = wick.tensor([[1, 2, 9], [0, 0, 5]])
    close(np, e(ids), te(torch.tensor(ids.tolist())), 1e-6)
    assert e(wick.tensor([3], dtype="i32")).shape == (1, 4)
    pad = nn.Embedding(5, 3, padding_idx=-1)
    assert pad.padding_idx == 4 and arr(np, pad.weight)[4].tolist() == [0, 0, 0]
    frozen = nn.Embedding.from_pretrained(wick.eye(3))
    assert not frozen.weight.requires_grad and frozen(wick.tensor([2])).tolist() == [[0, 0, 1]]
    with pytest.raises(wick.IndexError):
        e(wick.tensor([10]))
    with pytest.raises(ValueError):
        nn.Embedding(3, 2, padding_idx=3)


@needs["conv2d"]
def test_conv2d_matches_torch(np, torch):
    torch.manual_seed(0)
    for kw in [dict(), dict(stride=2, padding=1), dict(groups=2, dilation=2, bias=False)]:
        tc = torch.nn.Conv2d(4, 6, 3, **kw)
        c = nn.Conv2d(4, 6, 3, **kw)
        assert c.weight.shape == tuple(tc.weight.shape)
        bound = 1 / math.sqrt(c.weight.shape[1] * 9)
        assert np.abs(arr(np, c.weight)).max() <= bound
        c.load_state_dict(tc.state_dict())
        x = randn(np, 2, 4, 9, 9)
        close(np, c(x), tc(torch.tensor(arr(np, x), dtype=torch.float32)), 1e-4)
    with pytest.raises(ValueError, match="groups"):
        nn.Conv2d(3, 4, 3, groups=2)


@needs["backward"]
def test_training_step_gradients_match_torch(np, torch):
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.LayerNorm(6), torch.nn.Linear(6, 3)).double()
    m = nn.Sequential(nn.Linear(4, 6, dtype="f64"), nn.LayerNorm(6, dtype="f64"), nn.Linear(6, 3, dtype="f64"))
    m.load_state_dict(tm.state_dict())
    x = randn(np, 5, 4, dtype="f64")
    t = wick.tensor([0, 2, 1, 1, 0])
    F.cross_entropy(m(x), t).backward()
    torch.nn.functional.cross_entropy(tm(torch.tensor(arr(np, x))), torch.tensor(t.tolist())).backward()
    for (name, p), (tname, tp) in zip(m.named_parameters(), tm.named_parameters()):
        assert name == tname
        close(np, p.grad, tp.grad, 1e-10)
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_init(np, torch):
    import wick.nn.init as init

    assert init is nn.init
    wick.manual_seed(2)
    p = nn.Parameter(wick.zeros(300, 200))
    assert init.uniform_(p, -0.5, 2.0) is p and p.requires_grad and p.is_leaf
    a = arr(np, p)
    assert a.min() >= -0.5 and a.max() < 2.0 and abs(a.mean() - 0.75) < 0.02
    a = arr(np, init.normal_(p, 1.0, 0.5))
    assert abs(a.mean() - 1.0) < 0.01 and abs(a.std() - 0.5) < 0.01
    assert arr(np, init.constant_(p, 3.0)).min() == 3.0 and arr(np, init.zeros_(p)).max() == 0.0
    assert arr(np, init.ones_(p)).min() == 1.0
    bound = math.sqrt(6.0 / 500)
    a = arr(np, init.xavier_uniform_(p))
    assert np.abs(a).max() <= bound and abs(a.std() - bound / math.sqrt(3)) < 0.02 * bound
    a = arr(np, init.xavier_normal_(p, gain=2.0))
    assert abs(a.std() - 2.0 * math.sqrt(2.0 / 500)) < 0.01
    c = nn.Parameter(wick.zeros(16, 8, 3, 3, dtype="f64"))
    a = arr(np, init.kaiming_normal_(c, mode="fan_out", nonlinearity="relu"))
    assert abs(a.std() - math.sqrt(2.0) / math.sqrt(16 * 9)) < 0.05 * a.std() and c.dtype == wick.f64
    a = arr(np, init.kaiming_uniform_(c, a=math.sqrt(5)))  # torch's Linear / Conv default
    assert np.abs(a).max() <= 1 / math.sqrt(8 * 9)
    for nl, param in [("relu", None), ("tanh", None), ("leaky_relu", 0.2), ("sigmoid", None), ("selu", None)]:
        assert init.calculate_gain(nl, param) == pytest.approx(torch.nn.init.calculate_gain(nl, param))
    with pytest.raises(ValueError, match="2 dims"):
        init.xavier_uniform_(wick.zeros(5))
    with pytest.raises(ValueError, match="mode"):
        init.kaiming_uniform_(p, mode="fan_avg")
    with pytest.raises(ValueError):
        init.calculate_gain("swish")


def test_functional_forwards_other_parts():
    for name in F._FORWARDED:
        if hasattr(wick, name):
            assert getattr(F, name) is getattr(wick, name)
        else:
            with pytest.raises(AttributeError, match=f"needs wick.{name}"):
                getattr(F, name)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        F.nope
    from wick.nn.functional import cross_entropy, softmax

    assert cross_entropy is wick.cross_entropy and softmax is wick.softmax


# ---------------------------------------------------------------- errors


def test_layer_errors(np):
    lin = nn.Linear(3, 2)
    with pytest.raises(wick.ShapeError):
        lin(randn(np, 4, 5))
    with pytest.raises(wick.DTypeError):
        lin(randn(np, 4, 3, dtype="f64"))
    with pytest.raises(TypeError):
        lin([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="trailing dims"):
        nn.LayerNorm(4)(randn(np, 2, 3))
    with pytest.raises(wick.DTypeError):
        nn.Linear(2, 2, dtype="i32")
    with pytest.raises(TypeError):
        nn.Linear(2, 2, dtype="nope")


# ----------------------------------------------------------------- leaks


def test_no_leak_creating_parameters_and_modules(np, rss):
    t = wick.ones(4, 4)
    x = randn(np, 2, 4)
    lin = nn.Linear(4, 3)
    for _ in range(1000):
        nn.Parameter(t)
        lin(x)
    before = rss()
    for _ in range(100_000):
        nn.Parameter(t)
    for _ in range(20_000):
        lin(x)
    for _ in range(2_000):
        nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4)).state_dict()
    assert rss() - before < 8.0
    assert len(nn._parameters) < 50  # the registry forgets dead parameters
