"""The language model from Python on the packaged SmolLM2-135M Q4_1 GGUF
(label `model`): greedy generation gives the CLI's known answer, stream()
pieces join to generate()'s text with the same settings, the tokenizer
matches HF `tokenizers` on a tokenizer.json made from the same GGUF
(tests/make_tokenizer_json.py), forward() and the KV cache, errors, threads,
and a leak check. A few tokens per test: seconds, not minutes."""
import os
import sys
import threading
import types

import pytest

import wick

PROMPT = "The capital of France is"
PARIS = 7042  # the id of " Paris": transformers' and llama.cpp's first greedy token (models.md)
GREEDY = dict(max_new_tokens=8, temperature=0)


@pytest.fixture(scope="module")
def model(smollm2_gguf):
    return wick.Llama(smollm2_gguf)


class _Field:
    def __init__(self, value):
        self.value = value

    def contents(self):
        return self.value


class _Reader:
    """gguf.GGUFReader's .fields[key].contents() over wick.GGUF's metadata
    (checked against gguf-py itself in test_gguf_model.py): gguf-py needs
    ~10 s for this vocabulary, wick.GGUF milliseconds."""

    def __init__(self, path):
        self.fields = {k: _Field(v) for k, v in wick.GGUF(path).metadata.items()}


@pytest.fixture(scope="module")
def hf_tok(smollm2_gguf, source_dir, tmp_path_factory):
    """HF tokenizers on the tokenizer.json tests/make_tokenizer_json.py writes
    for the GGUF (SmolLM2's own layout)."""
    tokenizers = pytest.importorskip("tokenizers")
    pytest.importorskip("gguf")
    sys.path.insert(0, os.path.join(source_dir, "tests"))
    try:
        import make_tokenizer_json as mtj
    finally:
        sys.path.pop(0)
    mtj.gguf = types.SimpleNamespace(GGUFReader=_Reader)
    out = str(tmp_path_factory.mktemp("tok") / "tokenizer.json")
    mtj.main(["make_tokenizer_json.py", smollm2_gguf, out])
    return out, tokenizers.Tokenizer.from_file(out)


def test_greedy_knows_paris(model):
    text = wick.generate(model, PROMPT, **GREEDY)
    assert "Paris" in text
    assert text.startswith(" Paris.")
    assert model.generate(PROMPT, **GREEDY) == text


SETTINGS = [
    GREEDY,
    dict(max_new_tokens=12, temperature=0.9, seed=5),
    dict(max_new_tokens=10, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=11, repeat_penalty=1.3),
    dict(max_new_tokens=8, temperature=0, stop=["is:", "."]),
    dict(max_new_tokens=6, temperature=0, chat=True),
]


@pytest.mark.parametrize("kw", SETTINGS, ids=["greedy", "sampled", "penalty", "stop", "chat"])
def test_stream_joins_to_generate(model, kw):
    want = wick.generate(model, PROMPT, **kw)
    s = wick.stream(model, PROMPT, **kw)
    assert s.stop_reason is None and s.n_prompt > 0
    pieces = list(s)
    assert all(isinstance(p, str) and p for p in pieces)
    assert "".join(pieces) == want
    assert s.stop_reason in ("length", "eos", "stop")
    assert list(s) == []  # exhausted
    assert "".join(model.stream(PROMPT, **kw)) == want


def test_stream_details(model):
    s = model.stream(PROMPT, **GREEDY)
    first = next(s)
    assert first == " Paris"  # one piece per token as it is sampled
    assert s.n_generated == 1 and s.stop_reason is None
    rest = list(s)
    assert len(rest) == 7 and s.n_generated == 8 and s.stop_reason == "length"
    assert s.n_prompt == 5  # [504, 3575, 282, 4649, 314]
    st = wick.stream(model, PROMPT, max_new_tokens=8, temperature=0, stop=".")
    assert "".join(st) == " Paris" and st.stop_reason == "stop"
    c = wick.stream(model, PROMPT, **GREEDY)
    next(c)
    c.close()
    assert c.stop_reason == "closed" and list(c) == []
    # stop at EOS in chat mode; the end-of-turn token is not printed
    chat = wick.stream(model, "What is the capital of France? One word.", max_new_tokens=24, temperature=0, chat=True)
    text = "".join(chat)
    assert "Paris" in text and "<|im" not in text and chat.stop_reason == "eos"


QUESTION = "What is the capital of France? One word."
STOPS = [
    (PROMPT, GREEDY, "length"),
    (PROMPT, dict(max_new_tokens=8, temperature=0, stop=["s.\n"]), "stop"),  # " Paris" "." "\n": across tokens
    (QUESTION, dict(max_new_tokens=24, temperature=0, chat=True), "eos"),
    (PROMPT, dict(max_new_tokens=0, temperature=0, max_ctx=8), "context"),
    (PROMPT, dict(max_new_tokens=6, temperature=0.9, seed=4, max_ctx=9), "context"),
]


@pytest.mark.parametrize("prompt,kw,reason", STOPS, ids=["length", "stop", "eos", "context", "sampled-context"])
def test_stream_and_generate_same_stop_reason(model, prompt, kw, reason):
    text, stats = wick.generate(model, prompt, return_stats=True, **kw)
    assert isinstance(text, str) and stats["stop_reason"] == reason
    assert wick.generate(model, prompt, **kw) == text  # a plain str without return_stats
    s = wick.stream(model, prompt, **kw)
    assert s.stats["stop_reason"] is None and s.stats["n_generated"] == 0
    assert "".join(s) == text
    assert s.stop_reason == reason
    st = s.stats
    for k in ("n_prompt", "n_generated", "stop_reason"):
        assert st[k] == stats[k], k
    assert st["prefill_ms"] > 0 and stats["first_token_ms"] >= stats["prefill_ms"] > 0
    if reason == "stop":
        assert text == " Pari" and st["n_generated"] == 3
    if reason == "context":
        assert st["n_prompt"] + st["n_generated"] == kw["max_ctx"] + 1  # the last token is never run
    with pytest.raises(TypeError):
        wick.stream(model, prompt, return_stats=True)


def test_sampling_is_seeded(model):
    kw = dict(max_new_tokens=8, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0)
    a = wick.generate(model, PROMPT, seed=1, **kw)
    assert wick.generate(model, PROMPT, seed=1, **kw) == a
    assert wick.generate(model, PROMPT, seed=2, **kw) != a


def test_generate_from_path(model, smollm2_gguf):
    assert wick.generate(smollm2_gguf, PROMPT, max_new_tokens=3, temperature=0) == \
        wick.generate(model, PROMPT, max_new_tokens=3, temperature=0)
    import pathlib
    assert "".join(wick.stream(pathlib.Path(smollm2_gguf), PROMPT, max_new_tokens=2, temperature=0)) == " Paris."


def test_model_properties(model, smollm2_gguf):
    c = model.config
    assert c["vocab"] == 49152 and c["dim"] == 576 and c["n_layers"] == 30 and c["n_kv_heads"] == 3
    assert c["max_ctx"] == 8192 and c["eos"] == 2 and c["tied_embeddings"] is True
    assert model.vocab_size == 49152
    assert "<|im_start|>" in model.chat_template
    assert "wick.Model" in repr(model)  # wick.Llama is the same type, renamed
    g = wick.GGUF(smollm2_gguf)
    assert c["rope_theta"] == g.metadata["llama.rope.freq_base"]
    assert c["n_heads"] == g.metadata["llama.attention.head_count"]


TEXTS = [
    "The capital of France is",
    "Hello, world! 12345 numbers: 3.14159",
    "naïve café 日本語 🙂 Straße",
    "  leading spaces\n\ttabs and\r\nnewlines  ",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n",
    "",
]


def test_tokenizer_matches_hf(model, hf_tok, smollm2_gguf):
    path, hf = hf_tok
    ours = [model.tokenizer, wick.Tokenizer(path), wick.Tokenizer(smollm2_gguf), wick.Tokenizer(wick.GGUF(smollm2_gguf))]
    for i, tok in enumerate(ours):
        assert tok.vocab_size == hf.get_vocab_size() == len(tok) == tok.get_vocab_size()
        for text in TEXTS:
            ids = hf.encode(text).ids
            assert tok.encode(text) == ids, text
            assert tok.decode(ids) == hf.decode(ids, skip_special_tokens=False), text
            assert tok.decode(ids, skip_special_tokens=True) == hf.decode(ids, skip_special_tokens=True), text
            assert tok.decode(ids) == text  # byte-level BPE round trip
        for t in ("<|im_end|>", "<|endoftext|>", "Paris", "Ġthe"):
            assert tok.token_to_id(t) == hf.token_to_id(t), t
        assert tok.token_to_id("no such token really") is None
        if i != 1:  # the GGUF names them; a tokenizer.json has no such field
            assert tok.eos_token_id == 2 and tok.bos_token_id == 1
        assert tok.is_special(2) and not tok.is_special(PARIS)
    tok = ours[0]
    # without parse_special, the control token is text
    assert tok.encode("<|im_end|>", parse_special=False) != [tok.token_to_id("<|im_end|>")]
    assert tok.decode(wick.tensor([PARIS, 30], dtype="i64")) == " Paris."
    with open(path, encoding="utf-8") as f:
        assert wick.Tokenizer.from_str(f.read()).encode(TEXTS[1]) == hf.encode(TEXTS[1]).ids


def test_tokenizer_errors(model, tmp_path):
    tok = model.tokenizer
    with pytest.raises(TypeError):
        tok.encode(b"bytes")
    with pytest.raises(wick.Error):
        tok.decode([10 ** 6])
    with pytest.raises(OverflowError):
        tok.decode([2 ** 40])
    with pytest.raises(TypeError):
        tok.decode(wick.ones(2))
    with pytest.raises(IndexError):
        tok.is_special(-1)
    with pytest.raises(wick.IOError):
        wick.Tokenizer(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"model": {"type": "Unigram"')
    with pytest.raises(wick.FormatError):
        wick.Tokenizer(str(bad))
    with pytest.raises(wick.Error):
        wick.Tokenizer.from_str("{}")


def test_forward_and_cache(np, model):
    tok = model.tokenizer
    ids = tok.encode(PROMPT)
    last = model.forward(ids)
    assert last.shape == (1, 49152) and last.dtype == wick.f32
    assert int(np.argmax(np.asarray(last))) == PARIS
    full = model.forward(wick.tensor(ids, dtype="i32"), all_logits=True)
    assert full.shape == (5, 49152)
    np.testing.assert_allclose(np.asarray(full)[-1], np.asarray(last)[0], rtol=1e-3, atol=1e-3)
    # token by token through a cache = the whole sequence at once
    cache = wick.KVCache(model, 16)
    assert len(cache) == 0 and cache.capacity == 16 and cache.model is model
    model.forward(ids[:3], cache=cache)
    step = model.forward(ids[3:], cache=cache)
    assert len(cache) == 5
    np.testing.assert_allclose(np.asarray(step)[0], np.asarray(last)[0], rtol=1e-3, atol=1e-3)
    # a greedy loop over forward() gives generate()'s greedy text
    out = []
    logits = step
    for _ in range(4):
        nxt = int(np.argmax(np.asarray(logits)))
        out.append(nxt)
        logits = model.forward([nxt], cache=cache)
    assert tok.decode(out) == wick.generate(model, PROMPT, max_new_tokens=4, temperature=0)
    cache.truncate(5)
    assert len(cache) == 5
    cache.clear()
    assert len(cache) == 0
    np.testing.assert_allclose(np.asarray(model.forward(ids, cache=cache))[0], np.asarray(last)[0], rtol=1e-3, atol=1e-3)


def test_model_errors(model, smollm2_gguf, tmp_path):
    with pytest.raises(wick.ArgError):
        model.forward([49152])  # outside the vocabulary
    with pytest.raises(wick.ArgError):
        model.forward([])
    with pytest.raises(TypeError):
        model.forward(wick.ones(3))
    with pytest.raises(TypeError):
        model.forward([1, "a"])
    cache = wick.KVCache(model, 4)
    model.forward([1, 2, 3], cache=cache)
    with pytest.raises(wick.ArgError):
        model.forward([4, 5], cache=cache)  # overflow
    assert len(cache) == 3  # unchanged
    other = wick.Llama(smollm2_gguf)
    with pytest.raises(ValueError):
        other.forward([1], cache=cache)
    with pytest.raises(TypeError):
        model.forward([1], cache="cache")
    with pytest.raises(TypeError):
        wick.KVCache("model")
    with pytest.raises(wick.IOError):
        wick.Llama(str(tmp_path / "missing.gguf"))
    with pytest.raises(wick.Error):
        wick.Llama(str(tmp_path))  # a directory without config.json
    with pytest.raises(ValueError):
        wick.Llama(smollm2_gguf, dtype="q4_0")
    with pytest.raises(wick.ArgError):
        wick.generate(model, PROMPT, top_p=0)
    with pytest.raises(wick.ArgError):
        wick.stream(model, PROMPT, repeat_penalty=-1)
    with pytest.raises(ValueError):
        wick.generate(model, PROMPT, stop=[""])
    with pytest.raises(TypeError):
        wick.generate(model, PROMPT, stop=[1])
    with pytest.raises(TypeError):
        wick.generate(model, 3)
    with pytest.raises(TypeError):
        wick.generate(3, PROMPT)
    with pytest.raises(TypeError):
        wick.generate()
    with pytest.raises(TypeError):
        wick.generate(model, PROMPT, bogus=1)
    with pytest.raises(wick.ArgError):
        wick.stream(model, "x" * 100, max_ctx=10)  # the prompt does not fit
    with pytest.raises(wick.IOError):
        wick.generate(str(tmp_path / "missing.gguf"), PROMPT)


def test_threads_share_a_model(model):
    kw = dict(max_new_tokens=4, temperature=0.8, seed=3)
    want = wick.generate(model, PROMPT, **kw)
    got = [None] * 3

    def run(i):
        got[i] = wick.generate(model, PROMPT, **kw) if i else "".join(wick.stream(model, PROMPT, **kw))
    ts = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == [want] * 3


def test_no_leak(model, rss):
    tok = model.tokenizer
    for _ in range(2000):
        tok.decode(tok.encode("Hello there"))
    before = rss()
    for _ in range(100_000):
        tok.encode("Hello there")
    for _ in range(20_000):
        tok.decode([PARIS, 30])
        model.tokenizer
    assert rss() - before < 8
    cache = wick.KVCache(model, 8)
    for _ in range(10):
        s = wick.stream(model, PROMPT, max_new_tokens=2)
        next(s)
        model.forward([1], cache=cache)
        cache.clear()
    before = rss()
    for _ in range(500):  # set up (tokenize, sampler, buffers), then freed
        wick.stream(model, PROMPT, max_new_tokens=2, stop=["x", "y"]).close()
        wick.stream(model, PROMPT, max_new_tokens=2)
    for _ in range(20):  # run a step (cache, logits), dropped mid-way
        s = wick.stream(model, PROMPT, max_new_tokens=2)
        next(s)
        del s
        model.forward([1], cache=cache)
        cache.clear()
    assert rss() - before < 8
