"""The packaged SmolLM2 GGUF read by wick.GGUF against the PyPI `gguf`
package (gguf-py 0.19): every metadata key and value, the tensor table, and a
Q4_1 tensor's values against gguf.quants' numpy dequantization. Label
`model`: gguf-py needs ~10 s to parse the 49152-token vocabulary (once)."""
import pytest

import wick


@pytest.fixture(scope="module")
def gguf():
    return pytest.importorskip("gguf")


@pytest.fixture(scope="module")
def reader(gguf, smollm2_gguf):
    return gguf.GGUFReader(smollm2_gguf)


def test_gguf_metadata_matches_gguf_py(gguf, reader, smollm2_gguf):
    r = reader
    with wick.GGUF(smollm2_gguf) as g:
        meta = g.metadata
        fields = {k: f for k, f in r.fields.items() if not k.startswith("GGUF.")}
        assert sorted(meta) == sorted(fields)
        assert g.version == 3
        for k, f in fields.items():
            want = f.contents()
            got = meta[k]
            if isinstance(want, float):
                assert got == pytest.approx(want, rel=1e-7), k
            else:
                assert got == want, k
        assert meta["general.architecture"] == "llama"
        assert len(meta["tokenizer.ggml.tokens"]) == 49152
        assert g.types["tokenizer.ggml.tokens"] == "array[string]"
        assert g.types["llama.block_count"] == "u32"
        assert g.types["llama.rope.freq_base"] == "f32"
        assert g.tensor_names == [t.name for t in r.tensors]
        assert g.alignment == 32
        for t in r.tensors[:40]:
            info = g.tensor_info(t.name)
            assert info["shape"] == tuple(int(x) for x in reversed(t.shape.tolist()))
            assert info["ggml_type"].lower() == t.tensor_type.name.lower()
            assert info["nbytes"] == t.n_bytes
            assert info["offset"] == t.data_offset
        with pytest.raises(KeyError):
            g.tensor("no.such.tensor")
    assert g.closed
    with pytest.raises(ValueError):
        g.metadata


def test_gguf_q4_1_dequantizes_like_gguf_py(np, gguf, reader, smollm2_gguf):
    from gguf import quants
    r = reader
    t = next(t for t in r.tensors if t.tensor_type == gguf.GGMLQuantizationType.Q4_1)
    ref = quants.dequantize(t.data, t.tensor_type)
    g = wick.GGUF(smollm2_gguf)
    w = g.tensor(t.name)
    g.close()
    assert w.dtype == wick.q4_1 and w.dtype.is_quantized
    assert w.shape == ref.shape
    deq = w.dequantize()
    assert deq.dtype == wick.f32
    np.testing.assert_array_equal(np.asarray(deq), ref)
    # a row view of the block tensor dequantizes to the same rows
    np.testing.assert_array_equal(np.asarray(w[2:5].dequantize()), ref[2:5])
    g2 = wick.load_gguf(smollm2_gguf)
    norm = g2.tensor("blk.0.attn_norm.weight")
    ref_norm = next(x for x in r.tensors if x.name == "blk.0.attn_norm.weight").data
    np.testing.assert_array_equal(np.asarray(norm), ref_norm)
    assert len(g2.tensors()) == len(r.tensors)
