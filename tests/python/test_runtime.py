"""Runtime queries (allocator statistics, caches, storage facts), the
token Sampler for custom decoding loops, and chat_render."""
import math

import pytest

import wick


def test_memory_stats_follow_allocations():
    before = wick.memory_stats()
    assert set(before) == {"bytes_in_use", "bytes_cached", "peak_bytes_in_use", "cache_hits", "cache_misses",
                           "alloc_failures"}
    t = wick.zeros(1 << 20)  # 4 MiB
    during = wick.memory_stats("cpu")
    assert during["bytes_in_use"] >= before["bytes_in_use"] + (4 << 20)
    assert during["peak_bytes_in_use"] >= during["bytes_in_use"]
    del t
    after = wick.memory_stats(wick.cpu)
    assert after["bytes_in_use"] <= during["bytes_in_use"] - (4 << 20)
    released = wick.empty_cache()
    assert isinstance(released, int) and released >= 0 and wick.memory_stats()["bytes_cached"] == 0
    wick.set_cpu_cache_limit(64 << 20)
    with pytest.raises(ValueError):
        wick.set_cpu_cache_limit(-1)
    with pytest.raises(ValueError, match="unknown device"):
        wick.memory_stats("tpu")


def test_backends():
    b = wick.backends()
    assert "cpu" in b and all(isinstance(x, str) for x in b)


def test_storage_facts(np, torch):
    t = wick.arange(12, dtype="f32").reshape(3, 4)
    v = t[1:, 2:]
    ref = torch.arange(12, dtype=torch.float32).reshape(3, 4)[1:, 2:]
    assert v.storage_offset() == ref.storage_offset() == 6
    assert v.shares_storage(t) and wick.shares_storage(t, v.T)
    assert not t.clone().shares_storage(t) and not wick.shares_storage(t, t[::2])  # a stepped slice copies
    a = np.zeros(3, np.float32)
    a.setflags(write=False)
    ro = wick.from_numpy(a)
    assert ro.is_read_only and not t.is_read_only
    with pytest.raises(TypeError):
        t.shares_storage("x")


def test_greedy_sampler_is_argmax_with_low_id_ties(np):
    s = wick.Sampler(temperature=0)
    rng = np.random.default_rng(1)
    for _ in range(20):
        logits = rng.standard_normal(50).astype(np.float32)
        assert s.sample(wick.from_numpy(logits)) == int(np.argmax(logits))
    tie = np.array([0.0, 3.0, 1.0, 3.0], np.float32)
    assert s.sample(tie) == 1  # numpy arrays work directly
    assert s.sample(wick.tensor([0.0, 3.0, 1.0, 3.0]).to("f16")) == 1  # any float dtype


def test_sampling_follows_the_softmax_and_the_seed(np):
    logits = np.array([0.0, 1.0, 2.0, -1.0], np.float32)
    p = np.exp(logits) / np.exp(logits).sum()
    s = wick.Sampler(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=7)
    n = 4000
    counts = np.bincount([s.sample(logits) for _ in range(n)], minlength=4)
    chi2 = float((((counts - n * p) ** 2) / (n * p)).sum())
    assert chi2 < 20, (counts, n * p)  # 3 degrees of freedom: p < 0.001 when wrong
    a = [wick.Sampler(temperature=1.0, seed=3).sample(logits) for _ in range(1)]
    s1, s2 = wick.Sampler(temperature=1.0, seed=3), wick.Sampler(temperature=1.0, seed=3)
    assert [s1.sample(logits) for _ in range(50)] == [s2.sample(logits) for _ in range(50)] and a


def test_top_k_and_repeat_penalty(np):
    logits = np.array([5.0, 4.9, 0.0, -3.0], np.float32)
    s = wick.Sampler(temperature=1.0, top_k=2, top_p=1.0, min_p=0.0, seed=1)
    assert {s.sample(logits) for _ in range(200)} <= {0, 1}
    g = wick.Sampler(temperature=0, repeat_penalty=2.0, repeat_last_n=-1)
    assert g.sample(logits) == 0 and g.sample(logits, history=[0]) == 1  # 5.0 / 2 < 4.9


def test_sampler_errors():
    for bad in ({"top_p": 0.0}, {"min_p": 1.5}, {"repeat_penalty": 0.0}, {"temperature": math.nan}):
        with pytest.raises(wick.ArgError):
            wick.Sampler(**bad)
    s = wick.Sampler(temperature=0)
    with pytest.raises(wick.Error):
        s.sample(wick.tensor([math.nan, 1.0]))
    with pytest.raises(wick.Error):  # an id beyond the vocabulary, where the penalty reads it
        wick.Sampler(temperature=0, repeat_penalty=1.5).sample(wick.tensor([1.0, 2.0]), history=[5])
    with pytest.raises(TypeError):
        s.sample("logits")
    with pytest.raises(TypeError):
        wick.Sampler(top_k="many")


def test_sampler_in_a_decoding_loop(smollm2_gguf):
    m = wick.Llama(smollm2_gguf)
    tok = m.tokenizer
    ids = tok.encode("The capital of France is")
    cache = wick.KVCache(m, 64)
    s = wick.Sampler(temperature=0)
    logits = m.forward(ids, cache=cache)
    out = []
    for _ in range(4):
        nxt = s.sample(logits.reshape(-1)[-m.vocab_size:])
        out.append(nxt)
        logits = m.forward([nxt], cache=cache)
    text = tok.decode(out)
    assert text == wick.generate(m, "The capital of France is", max_new_tokens=4, temperature=0)


def test_chat_render(smollm2_gguf):
    tmpl = wick.Llama(smollm2_gguf).chat_template
    r = wick.chat_render(tmpl, "Hi", system="Be brief.")
    assert r.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert r.startswith("<|im_start|>system\nBe brief.<|im_end|>\n")
    assert "<|im_start|>system" in wick.chat_render(tmpl, "Hi")  # the template's default system message
    with pytest.raises(ValueError, match="not one wick can render"):
        wick.chat_render("{{ nonsense }}", "Hi")
    with pytest.raises(TypeError):
        wick.chat_render(tmpl, 3)


def test_no_leak_over_many_samples(np, rss):
    s = wick.Sampler(temperature=0.5, seed=2)
    logits = np.zeros(100, np.float32)
    for _ in range(2000):
        s.sample(logits, history=[1, 2, 3])
    r0 = rss()
    for _ in range(100_000):
        s.sample(logits, history=[1, 2, 3])
    assert rss() - r0 < 4
