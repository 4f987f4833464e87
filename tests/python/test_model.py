"""wick.Model (every decoder family behind one type; wick.Llama is the same
type) and wick.ChatSession on the packaged SmolLM2-135M Q4_1 GGUF, and on
the Qwen2.5-Coder 0.5B GGUF of .cache/models when it is there (skipped
otherwise). Label `model`: a few tokens per reply."""
import os

import pytest

import wick

GREEDY = dict(temperature=0, max_new_tokens=24)
SYSTEM = "You are a concise assistant."
Q1, Q2 = "What is the capital of France?", "And what river flows through it?"
FEATURES = ["attn_bias", "qk_norm", "post_norms", "gelu_mlp", "fused_qkv", "embed_scale", "attn_scale",
            "attn_softcap", "final_softcap", "sliding_window", "rope_dims", "rope_local_theta", "layer_flags"]


@pytest.fixture(scope="module")
def smol(smollm2_gguf):
    return wick.Model(smollm2_gguf)


@pytest.fixture(scope="module")
def qwen(source_dir):
    p = os.path.join(source_dir, ".cache", "models", "qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf")
    if not os.path.exists(p):
        pytest.skip("the Qwen2.5-Coder GGUF is not in .cache/models")
    return wick.Model(p)


def test_llama_is_model(smol):
    assert wick.Llama is wick.Model
    assert isinstance(smol, wick.Llama)
    assert repr(smol).startswith("wick.Model(arch='llama'")
    assert wick.KVCache(smol, 8).capacity == 8


def test_config_smollm2(smol):
    c = smol.config
    assert smol.arch == c["arch"] == "llama"
    for k in FEATURES:
        assert k in c, k
    assert c["attn_bias"] is False and c["qk_norm"] is False
    assert c["attn_scale"] == pytest.approx(c["head_dim"] ** -0.5)
    assert c["rope_dims"] == c["head_dim"]
    assert c["layer_flags"] == [[]] * c["n_layers"]
    assert "im_start" in smol.chat_template


def test_config_qwen(qwen):
    c = qwen.config
    assert qwen.arch == "qwen2"
    assert c["attn_bias"] is True
    assert len(c["layer_flags"]) == c["n_layers"]
    assert "<|im_start|>" in qwen.chat_template


def conversation(model, **kw):
    s = wick.ChatSession(model, system=SYSTEM, **GREEDY, **kw)
    r1, st1 = s.send(Q1, return_stats=True)
    r2, st2 = s.send(Q2, return_stats=True)
    return s, (r1, st1), (r2, st2)


@pytest.mark.parametrize("which", ["smol", "qwen"])
def test_chat_session_keeps_the_cache(which, request):
    model = request.getfixturevalue(which)
    s, (r1, st1), (r2, st2) = conversation(model)
    assert r1 and r2
    assert st1["n_prefill"] == st1["n_prompt"]
    assert st2["n_prompt"] > st1["n_prompt"]
    assert st2["n_prefill"] < st2["n_prompt"] - st1["n_prompt"]  # the history came from the cache
    assert s.stats == st2
    assert [m["role"] for m in s.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert s.messages[2]["content"] == r1 and s.messages[4]["content"] == r2
    assert s.cached >= st2["n_prompt"]
    # the same conversation from scratch (Model.chat: a one-off session): the same reply
    msgs = [("system", SYSTEM), ("user", Q1), ("assistant", r1), {"role": "user", "content": Q2}]
    fresh, st = model.chat(msgs, return_stats=True, **GREEDY)
    assert st["n_prefill"] == st["n_prompt"] == st2["n_prompt"]
    assert fresh == r2


def test_pop_reset_and_errors(smol):
    s = wick.ChatSession(smol, system=SYSTEM, max_ctx=64, **GREEDY)
    assert s.stats is None and s.model is smol
    s.send(Q1)
    with pytest.raises(ValueError, match="context of 64"):
        s.send("tell me more about it " * 40)
    assert len(s.messages) == 3  # the turn that did not fit was dropped
    s.pop()
    assert [m["role"] for m in s.messages] == ["system", "user"]
    again = s.reply()
    assert again and s.stats["n_prefill"] == 1  # the whole prompt was cached
    s.reset()
    assert s.messages == [{"role": "system", "content": SYSTEM}]
    s.add("user", Q2)
    assert s.reply()
    assert s.stats["n_prefill"] < s.stats["n_prompt"]  # the system prompt's prefix is reused
    with pytest.raises(TypeError):
        wick.ChatSession(smol, chat=True)
    with pytest.raises(TypeError):
        wick.ChatSession("not a model")
    with pytest.raises(TypeError):
        smol.chat([1, 2])
    with pytest.raises(TypeError):
        s.add("user", 3)
    with pytest.raises(ValueError):
        wick.ChatSession(smol, top_p=0)


def test_generate_stats_have_n_prefill(smol):
    text, st = smol.generate("The capital of France is", max_new_tokens=2, temperature=0, return_stats=True)
    assert st["n_prefill"] == st["n_prompt"]


def test_kv_dtype(smollm2_gguf, smol):
    # an f16 cache: the same greedy words as the f32 one on a short prompt
    half = wick.Model(smollm2_gguf, kv_dtype="f16")
    prompt = "The capital of France is"
    assert half.generate(prompt, temperature=0, max_new_tokens=4) == smol.generate(prompt, temperature=0,
                                                                                     max_new_tokens=4)
    with pytest.raises(ValueError, match="kv_dtype"):
        wick.Model(smollm2_gguf, kv_dtype="q8_0")
