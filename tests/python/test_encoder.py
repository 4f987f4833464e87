"""wick.SentenceEncoder on the packaged all-MiniLM-L6-v2 (label `model`):
embeddings against sentence-transformers' published numbers and against the
numpy float64 BERT of tests/bert_oracle.py (ids from HF `tokenizers`), the
tokenizer against HF's, cosine ordering, errors, leaks."""
import json
import os
import sys

import pytest

import wick

# sentence-transformers 6.2.0 on "This is a test sentence." (tests/bert_oracle.py, models.md)
REF_TEXT = "This is a test sentence."
REF_IDS = [101, 2023, 2003, 1037, 3231, 6251, 1012, 102]
REF_EMB8 = [0.084296, 0.057954, 0.004493, 0.105821, 0.007083, -0.017845, -0.016888, -0.015228]


@pytest.fixture(scope="module")
def enc(minilm_dir):
    return wick.SentenceEncoder(minilm_dir)


@pytest.fixture(scope="module")
def hf(minilm_dir):
    tokenizers = pytest.importorskip("tokenizers")
    t = tokenizers.Tokenizer.from_file(os.path.join(minilm_dir, "tokenizer.json"))
    t.no_padding()
    t.enable_truncation(256)
    return t


@pytest.fixture(scope="module")
def oracle(source_dir):
    pytest.importorskip("safetensors")
    sys.path.insert(0, os.path.join(source_dir, "tests"))
    try:
        import bert_oracle
    finally:
        sys.path.pop(0)
    return bert_oracle


def test_embeddings_match_references(np, enc, hf, oracle, minilm_dir):
    from safetensors.numpy import load_file
    texts = [REF_TEXT, "A cat sits on the mat."]
    e = enc.embed(texts)
    assert e.shape == (2, 384) and e.dtype == wick.f32 and enc.dim == 384
    a = np.asarray(e)
    np.testing.assert_allclose(a[0, :8], REF_EMB8, atol=2e-5)
    with open(os.path.join(minilm_dir, "config.json")) as f:
        cfg = json.load(f)
    W = load_file(os.path.join(minilm_dir, "model.safetensors"))
    for i, text in enumerate(texts):
        ids = hf.encode(text).ids
        hid = oracle.forward(W, cfg, np.array(ids))
        ref = hid.mean(axis=0)
        ref /= np.linalg.norm(ref)
        np.testing.assert_allclose(a[i], ref, atol=1e-4)
        if i == 0:
            h = np.asarray(enc.hidden(ids))
            assert h.shape == (1, len(ids), 384)
            np.testing.assert_allclose(h[0], hid, atol=1e-3)
    # one str gives one vector; encode is embed
    one = enc.encode(REF_TEXT)
    assert one.shape == (384,)
    np.testing.assert_allclose(np.asarray(one), a[0], atol=1e-6)


def test_similarity_ordering(np, enc):
    texts = ["A cat sits on the mat.", "A kitten rests on a rug.", "Stock markets fell sharply today.",
             "A cat sits on the mat."]
    a = np.asarray(enc.embed(texts))
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    sim = a @ a.T
    assert sim[0, 3] == pytest.approx(1.0, abs=1e-5)  # the same sentence
    assert sim[0, 1] > sim[0, 2] + 0.2                  # cat ~ kitten, not stocks
    assert enc.embed([]).shape == (0, 384)


def test_tokenizer_matches_hf(enc, hf):
    tok = enc.tokenizer
    assert tok.encode(REF_TEXT) == REF_IDS
    for text in [REF_TEXT, "naïve café, ÜBER-cool!", "don't 12345", ""]:
        assert tok.encode(text) == hf.encode(text).ids, text
        assert tok.encode(text, add_special_tokens=False) == hf.encode(text, add_special_tokens=False).ids
    assert tok.token_to_id("[CLS]") == 101 == hf.token_to_id("[CLS]")
    assert tok.decode(REF_IDS, skip_special_tokens=True) == hf.decode(REF_IDS)


def test_encoder_errors(enc, tmp_path):
    with pytest.raises(TypeError):
        enc.embed([1, 2])
    with pytest.raises(TypeError):
        enc.embed(None)
    with pytest.raises(ValueError):
        enc.embed(["a\0b"])
    with pytest.raises(wick.IndexError):
        enc.hidden([101, 10 ** 6, 102])
    with pytest.raises(wick.IOError):
        wick.SentenceEncoder(str(tmp_path))
    (tmp_path / "config.json").write_text("{broken")
    with pytest.raises(wick.Error):
        wick.Bert(str(tmp_path))


def test_no_leak(enc, rss):
    tok = enc.tokenizer
    for _ in range(50):
        enc.embed(["short text"])
    before = rss()
    for _ in range(100_000):
        tok.encode("short text")
    for _ in range(100):
        enc.embed(["short text", "another one"])
    assert rss() - before < 8
