#!/usr/bin/env python3
"""make_tokenizer_json.py GGUF OUT -- write an HF tokenizer.json from a GGUF's
tokenizer.ggml.* metadata (its own reader of the GGUF header; any python3).

Covers the byte-level BPE vocabularies (tokenizer.ggml.model = "gpt2") with
the SmolLM2 pre-tokenizer (tokenizer.ggml.pre = "smollm"): HF's
Sequence[Digits(individual_digits), ByteLevel(use_regex)], the ByteLevel
post-processor and decoder, and every control token (token_type 3) or
user-defined token (4) as an added token. This is the layout of SmolLM2's own
tokenizer.json, so HF `tokenizers` on the result gives the ids llama.cpp
gives on the GGUF (checked against the table in models.md).

Other `pre` values map to HF's equivalent pre-tokenizers where one exists
(gpt-2 and llama-bpe); anything else is refused rather than guessed.

SentencePiece vocabularies (tokenizer.ggml.model = "llama", merged by score
in llama.cpp; "gemma4", merged by the file's merge ranks) become HF's
SentencePiece-form BPE: byte_fallback, normalizer Replace(" ", "▁")
after Prepend("▁") when add_space_prefix (default true for "llama"),
decoder Replace + ByteFallback + Fuse (+ Strip of the prefix space). For
"llama" the merge list is derived from the scores, as HF's converter does
for a SentencePiece model: every split of a token into two tokens is a
merge, ranked by the merged token's score (highest first), so rank-BPE picks
the pair SentencePiece's score-BPE would. gemma4 splits into runs of
newlines and of other text first (llama.cpp's Gemma 4 pre-tokenizer).
"""
import json
import struct
import sys

# token_type values of llama.cpp's vocab (llama_token_type)
TT_NORMAL, TT_UNKNOWN, TT_CONTROL, TT_USER_DEFINED, TT_UNUSED, TT_BYTE = 1, 2, 3, 4, 5, 6

LLAMA3_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)


# GGUF value types (the spec's numbering) -> struct formats of the scalars
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
T_STRING, T_ARRAY = 8, 9


def read_kv(path):
    """The metadata key/values of a GGUF file (v2/v3, little-endian) as a
    dict. Written out here because gguf.GGUFReader takes close to a minute to
    index a 262k-token vocabulary; only the header is read, not tensors."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"GGUF":
        raise SystemExit(f"make_tokenizer_json: {path} is not a GGUF file")
    _, _, n_kv = struct.unpack_from("<IQQ", data, 4)
    off = 24

    def string():
        nonlocal off
        (n,) = struct.unpack_from("<Q", data, off)
        off += 8 + n
        return data[off - n:off].decode("utf-8", errors="surrogateescape")

    def value(t):
        nonlocal off
        if t == T_STRING:
            return string()
        if t == T_ARRAY:
            et, n = struct.unpack_from("<IQ", data, off)
            off += 12
            if et == T_STRING:
                return [string() for _ in range(n)]
            fmt = SCALAR[et]
            size = struct.calcsize(fmt)
            out = list(struct.unpack_from(f"<{n}{fmt}", data, off))
            off += n * size
            return out
        fmt = SCALAR[t]
        (v,) = struct.unpack_from("<" + fmt, data, off)
        off += struct.calcsize(fmt)
        return v

    kv = {}
    for _ in range(n_kv):
        key = string()
        (t,) = struct.unpack_from("<I", data, off)
        off += 4
        kv[key] = value(t)
    return kv


def field(reader, key, default=None):
    return reader.get(key, default)


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


def score_merges(tokens, scores):
    """Every (left, right) whose concatenation is a token, best score first
    (ties: by the merged token's id, then the left part's length)."""
    ids = {}
    for i, tok in enumerate(tokens):
        ids.setdefault(tok, i)
    found = []
    for i, tok in enumerate(tokens):
        if ids[tok] != i or len(tok) < 2:
            continue
        for k in range(1, len(tok)):
            a, b = tok[:k], tok[k:]
            if a in ids and b in ids:
                found.append((-scores[i], i, k, a, b))
    found.sort()
    return [[a, b] for _, _, _, a, b in found]


def template(tokens, bos, add_bos, eos, add_eos):
    single, specials = [], {}
    if add_bos and bos is not None:
        single.append({"SpecialToken": {"id": tokens[bos], "type_id": 0}})
        specials[tokens[bos]] = {"id": tokens[bos], "ids": [bos], "tokens": [tokens[bos]]}
    single.append({"Sequence": {"id": "A", "type_id": 0}})
    if add_eos and eos is not None:
        single.append({"SpecialToken": {"id": tokens[eos], "type_id": 0}})
        specials[tokens[eos]] = {"id": tokens[eos], "ids": [eos], "tokens": [tokens[eos]]}
    return {"type": "TemplateProcessing", "single": single, "pair": single, "special_tokens": specials}


def spm_doc(reader, model):
    tokens = field(reader, "tokenizer.ggml.tokens")
    types = field(reader, "tokenizer.ggml.token_type") or [TT_NORMAL] * len(tokens)
    by_rank = model == "gemma4"
    prefix = bool(field(reader, "tokenizer.ggml.add_space_prefix", not by_rank))
    bos = field(reader, "tokenizer.ggml.bos_token_id")
    eos = field(reader, "tokenizer.ggml.eos_token_id")
    unk = field(reader, "tokenizer.ggml.unknown_token_id")
    add_bos = by_rank or bool(field(reader, "tokenizer.ggml.add_bos_token", True))
    add_eos = bool(field(reader, "tokenizer.ggml.add_eos_token", False))
    if by_rank:
        merges = []
        for m in field(reader, "tokenizer.ggml.merges"):
            sp = m.index(" ", 1)
            merges.append([m[:sp], m[sp + 1:]])
    else:
        merges = score_merges(tokens, field(reader, "tokenizer.ggml.scores"))
    # unknown / control / user-defined tokens are matched on the raw text
    # before the model, as llama.cpp does (normalized=False)
    added = [
        {"id": i, "content": tok, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
         "special": tt != TT_USER_DEFINED}
        for i, (tok, tt) in enumerate(zip(tokens, types)) if tt in (TT_UNKNOWN, TT_CONTROL, TT_USER_DEFINED)
    ]
    norms = ([{"type": "Prepend", "prepend": "\u2581"}] if prefix else []) + [
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]
    decs = [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}]
    if prefix:
        decs.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    pre = None
    if by_rank:
        pre = {"type": "Split", "pattern": {"Regex": "[^\n]+|[\n]+"}, "behavior": "Isolated", "invert": False}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": norms},
        "pre_tokenizer": pre,
        "post_processor": template(tokens, bos, add_bos, eos, add_eos),
        "decoder": {"type": "Sequence", "decoders": decs},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": tokens[unk] if unk is not None else None,
            "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": True,
            "byte_fallback": True, "ignore_merges": False,
            "vocab": {tok: i for i, tok in reversed(list(enumerate(tokens)))}, "merges": merges,
        },
    }


def main(argv):
    if len(argv) != 3:
        raise SystemExit("usage: make_tokenizer_json.py GGUF OUT")
    reader = read_kv(argv[1])
    model = field(reader, "tokenizer.ggml.model")
    if model in ("llama", "gemma4"):
        with open(argv[2], "w", encoding="utf-8") as f:
            json.dump(spm_doc(reader, model), f, ensure_ascii=False)
        return
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
