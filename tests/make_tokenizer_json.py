#!/usr/bin/env python3
"""make_tokenizer_json.py GGUF OUT -- write an HF tokenizer.json from a GGUF's
tokenizer.ggml.* metadata (run with the project venv: needs gguf==0.19.0).

Covers the byte-level BPE vocabularies (tokenizer.ggml.model = "gpt2") with
the SmolLM2 pre-tokenizer (tokenizer.ggml.pre = "smollm"): HF's
Sequence[Digits(individual_digits), ByteLevel(use_regex)], the ByteLevel
post-processor and decoder, and every control token (token_type 3) or
user-defined token (4) as an added token. This is the layout of SmolLM2's own
tokenizer.json, so HF `tokenizers` on the result gives the ids llama.cpp
gives on the GGUF (checked against the table in models.md).

Other `pre` values map to HF's equivalent pre-tokenizers where one exists
(gpt-2 and llama-bpe); anything else is refused rather than guessed.
"""
import json
import sys

import gguf

# token_type values of llama.cpp's vocab (llama_token_type)
TT_NORMAL, TT_UNKNOWN, TT_CONTROL, TT_USER_DEFINED, TT_UNUSED, TT_BYTE = 1, 2, 3, 4, 5, 6

LLAMA3_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


def byte_level(use_regex):
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": use_regex}


def pre_tokenizer(pre):
    if pre == "smollm":
        return {
            "type": "Sequence",
            "pretokenizers": [{"type": "Digits", "individual_digits": True}, byte_level(True)],
        }
    if pre in ("gpt-2", "gpt2", "default"):
        return byte_level(True)
    if pre == "llama-bpe":
        return {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": LLAMA3_REGEX}, "behavior": "Isolated", "invert": False},
                byte_level(False),
            ],
        }
    raise SystemExit(f"make_tokenizer_json: tokenizer.ggml.pre={pre!r} is not supported")


def main(argv):
    if len(argv) != 3:
        raise SystemExit("usage: make_tokenizer_json.py GGUF OUT")
    reader = gguf.GGUFReader(argv[1])
    model = field(reader, "tokenizer.ggml.model")
    if model != "gpt2":
        raise SystemExit(f"make_tokenizer_json: tokenizer.ggml.model={model!r} (only gpt2 byte-level BPE)")
    tokens = field(reader, "tokenizer.ggml.tokens")
    merges = field(reader, "tokenizer.ggml.merges") or []
    types = field(reader, "tokenizer.ggml.token_type") or [TT_NORMAL] * len(tokens)
    pre = field(reader, "tokenizer.ggml.pre", "default")
    bos = field(reader, "tokenizer.ggml.bos_token_id")
    add_bos = bool(field(reader, "tokenizer.ggml.add_bos_token", False))

    added = []
    for i, (tok, tt) in enumerate(zip(tokens, types)):
        if tt in (TT_CONTROL, TT_USER_DEFINED):
            added.append(
                {
                    "id": i,
                    "content": tok,
                    "single_word": False,
                    "lstrip": False,
                    "rstrip": False,
                    "normalized": tt == TT_USER_DEFINED,
                    "special": tt == TT_CONTROL,
                }
            )

    post = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
    if add_bos and bos is not None:
        b = tokens[bos]
        post = {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": b, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [
                {"SpecialToken": {"id": b, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": b, "type_id": 1}},
                {"Sequence": {"id": "B", "type_id": 1}},
            ],
            "special_tokens": {b: {"id": b, "ids": [bos], "tokens": [b]}},
        }

    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": pre_tokenizer(pre),
        "post_processor": post,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {tok: i for i, tok in enumerate(tokens)},
            "merges": [m.split(" ", 1) for m in merges],
        },
    }
    with open(argv[2], "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)


if __name__ == "__main__":
    main(sys.argv)
