"""Regression tests for text-layer defects (see tests/test_text_defects.c):
long words whose BPE merge queue outgrew its 64-entry stack array (a segfault
from Python too), a 200k-character WordPiece word (was O(n^2)), and integer
tensors of ids outside int32 given to decode. The BPE ids are HF tokenizers'
on the same vocabularies (llama.cpp's ggml-vocab-*.gguf, scripts/setup.sh)."""
import json
import os

import pytest

import wick

WORDS = [
    "Supercalifragilisticexpialidociousnessfulnesslessnessishnessly",
    "thisisaverylongidentifierwithoutanyseparatorsinsidecodebase",
    "ha" * 30,
]
EXPECT = {
    "gpt-2": [
        [12442, 9948, 361, 22562, 346, 396, 501, 42372, 498, 312, 32346, 1108, 15538, 17587, 680, 1108, 306],
        [5661, 9160, 548, 6511, 738, 7483, 19419, 1092, 25512, 2024, 48787, 8189, 8692],
        [71] + [36225] * 14 + [12236],
    ],
    "llama-bpe": [
        [10254, 3035, 278, 333, 4193, 321, 4633, 4683, 532, 307, 78287, 2136, 31514, 33028, 819, 2136, 398],
        [576, 285, 25727, 4930, 16288, 30096, 3852, 325, 1768, 3046, 42450, 1889, 3231],
        [71] + [1494] * 27 + [74635],
    ],
    "starcoder": [
        [11086, 1299, 344, 2471, 354, 5440, 2858, 583, 333, 561, 2424, 4342, 2812, 4342, 2290, 4342, 1729, 4342, 651],
        [597, 13664, 2274, 3239, 7907, 12670, 1831, 17655, 4079, 20030, 707, 1460],
        [109] + [2389] * 28 + [17097],
    ],
}


@pytest.fixture(scope="session")
def vocab_dir(source_dir):
    d = os.environ.get("WICK_LLAMA_VOCAB_DIR") or os.path.join(source_dir, ".cache", "llama-vocab")
    if not os.path.exists(os.path.join(d, "ggml-vocab-gpt-2.gguf")):
        pytest.skip("llama.cpp's vocab files are not in .cache/llama-vocab (scripts/setup.sh)")
    return d


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_bpe_long_words(vocab_dir, name):
    tok = wick.Tokenizer(os.path.join(vocab_dir, f"ggml-vocab-{name}.gguf"))
    for word, ids in zip(WORDS, EXPECT[name]):
        assert tok.encode(word, add_special_tokens=False) == ids, word
        assert tok.decode(ids) == word
        for k in range(1, len(word) + 1):
            assert tok.decode(tok.encode(word[:k], add_special_tokens=False)) == word[:k]
        text = f"say {word}, twice: {word}!"
        assert tok.decode(tok.encode(text, add_special_tokens=False)) == text


def test_wordpiece_long_word():
    doc = {
        "added_tokens": [],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": None,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 10 ** 6,
                  "vocab": {"[UNK]": 0, "a": 1, "##a": 2, "##aaa": 3, "aaaa": 4}},
    }
    tok = wick.Tokenizer.from_str(json.dumps(doc))
    n = 200000
    assert tok.encode("a" * n) == [4] + [3] * ((n - 4) // 3) + [2]


def test_decode_tensor_ids_outside_int32(vocab_dir):
    tok = wick.Tokenizer(os.path.join(vocab_dir, "ggml-vocab-gpt-2.gguf"))
    with pytest.raises(OverflowError):
        tok.decode(wick.tensor([2 ** 40], dtype="i64"))
    with pytest.raises(OverflowError):
        tok.decode(wick.tensor([-(2 ** 40)], dtype="i64"))
    assert tok.decode(wick.tensor(EXPECT["gpt-2"][2], dtype="i64")) == "ha" * 30
