#!/usr/bin/env python3
"""bench/serve's load generator: N concurrent streaming clients against an
OpenAI-compatible server (wick serve or llama-server), standard library only
(threads + http.client), loopback.

  python3 bench/serve/loadgen.py --url http://127.0.0.1:8080 -c 16 -n 64
        [--mode chat|completions] [--max-tokens 64] [--duration S]
        [--ignore-eos] [--api-key K] [--json]

Each of the C client threads takes the next request number from a shared
counter until N requests were sent (or --duration seconds passed), and sends
request i with prompt PROMPTS[i % len(PROMPTS)] (a fixed list of short to
long prompts, so the same run sends the same work to every server),
temperature 0, max_tokens fixed, stream: true. Per request it measures:
  TTFT   send -> first SSE chunk that carries text (a role-only chunk does
         not count: no token was sampled for it);
  ITL    the gaps between successive text-carrying chunks (one chunk may
         carry more than one token when a server holds text back, e.g. a
         partial UTF-8 character or a possible stop string: ITL is by chunk
         arrival, as a client sees it);
  tokens usage.completion_tokens from the final chunk when the server sends
         one (stream_options.include_usage), else the count of text chunks.
Aggregate tokens/s = all generated tokens / wall time from the first send to
the last request's end. Failed requests (a status other than 200, a broken
stream) are counted and reported, not timed.

--ignore-eos sends "ignore_eos": true (llama-server's extension; wick serve
accepts the same field) so that every request generates max_tokens tokens
on both servers and the work is equal.

Output: a human line, or with --json one JSON object (run.py reads it).
"""
import argparse
import http.client
import json
import statistics
import sys
import threading
import time
import urllib.parse

# Fixed prompts of varied lengths (about 5 to 300 tokens with a BPE vocabulary).
_BASE = ("The history of computing is a story of ever smaller machines doing ever more work. "
         "Early computers filled rooms and used vacuum tubes; transistors and then integrated "
         "circuits made them cheaper, faster and more reliable. ")
PROMPTS = [
    "Hello!",
    "What is the capital of France?",
    "Write a short poem about the sea.",
    "Explain in simple words how a rainbow forms.",
    "List three uses of a paperclip and explain each one briefly.",
    "Summarize the following text in two sentences: " + _BASE * 2,
    "Translate to French: The weather is nice today and we are going to the park.",
    "Read this and answer the question at the end. " + _BASE * 6 + "Question: what replaced vacuum tubes?",
    "Write a Python function that returns the n-th Fibonacci number, with a docstring.",
    "Continue the story: " + _BASE * 10,
]


def percentile(xs, p):
    """p-th percentile (0..100) by linear interpolation; None for no data."""
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def build_body(mode, prompt, max_tokens, ignore_eos, model):
    body = {"max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    if model:
        body["model"] = model
    if ignore_eos:
        body["ignore_eos"] = True
    if mode == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    return body


def chunk_text(obj, mode):
    """The text one SSE chunk carries ('' for none)."""
    out = []
    for ch in obj.get("choices") or []:
        if mode == "chat":
            d = ch.get("delta") or {}
            t = d.get("content")
        else:
            t = ch.get("text")
        if t:
            out.append(t)
    return "".join(out)


def one_request(host, port, path, headers, body, mode, timeout):
    """Send one streaming request; returns a dict of measurements, or raises."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        data = json.dumps(body).encode()
        t0 = time.perf_counter()
        conn.request("POST", path, body=data, headers=headers)
        resp = conn.getresponse()
        if resp.status != 200:
            msg = resp.read()[:200]
            raise RuntimeError("HTTP %d: %r" % (resp.status, msg))
        arrivals = []
        usage = None
        text = []
        done = False
        # SSE: "data: {...}\n\n" events, "data: [DONE]" at the end
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if payload == b"[DONE]":
                done = True
                break
            now = time.perf_counter()
            obj = json.loads(payload)
            if obj.get("error"):
                raise RuntimeError("stream error: %r" % (obj["error"],))
            if obj.get("usage"):
                usage = obj["usage"]
            t = chunk_text(obj, mode)
            if t:
                arrivals.append(now)
                text.append(t)
        t_end = time.perf_counter()
        if not done:
            raise RuntimeError("stream ended without [DONE]")
        if not arrivals:
            raise RuntimeError("no text generated")
        ntok = len(arrivals)
        if usage and usage.get("completion_tokens"):
            ntok = int(usage["completion_tokens"])
        return {"ttft": arrivals[0] - t0,
                "itl": [b - a for a, b in zip(arrivals, arrivals[1:])],
                "tokens": ntok, "chunks": len(arrivals), "t0": t0, "t_end": t_end,
                "text": "".join(text)}
    finally:
        conn.close()


def run_load(url, concurrency, n_requests, max_tokens=64, mode="chat", duration=None,
             ignore_eos=False, api_key=None, model=None, timeout=600.0):
    """Runs the load; returns the summary dict (see summarize)."""
    u = urllib.parse.urlparse(url)
    host, port = u.hostname, u.port or 80
    path = "/v1/chat/completions" if mode == "chat" else "/v1/completions"
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = "Bearer " + api_key
    lock = threading.Lock()
    state = {"next": 0}
    results, errors = [], []
    t_start = time.perf_counter()
    deadline = t_start + duration if duration else None

    def client():
        while True:
            with lock:
                i = state["next"]
                if i >= n_requests or (deadline and time.perf_counter() >= deadline):
                    return
                state["next"] = i + 1
            body = build_body(mode, PROMPTS[i % len(PROMPTS)], max_tokens, ignore_eos, model)
            try:
                r = one_request(host, port, path, headers, body, mode, timeout)
                with lock:
                    results.append(r)
            except Exception as e:  # counted and reported, the client goes on
                with lock:
                    errors.append(str(e))

    threads = [threading.Thread(target=client, daemon=True) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return summarize(results, errors, concurrency, t_start, max_tokens)


def summarize(results, errors, concurrency, t_start, max_tokens=None):
    wall = (max(r["t_end"] for r in results) - t_start) if results else 0.0
    toks = sum(r["tokens"] for r in results)
    ttft = [r["ttft"] for r in results]
    itl = [x for r in results for x in r["itl"]]
    ms = lambda v: None if v is None else round(v * 1000.0, 2)  # noqa: E731
    return {"concurrency": concurrency, "requests": len(results), "errors": len(errors),
            "first_errors": errors[:3], "tokens": toks,
            # requests that ended before max_tokens (EOS or a stop: ignore_eos not honoured)
            "short": sum(1 for r in results if max_tokens and r["tokens"] < max_tokens), "wall_s": round(wall, 3),
            "tok_s": round(toks / wall, 2) if wall > 0 else 0.0,
            "ttft_p50_ms": ms(percentile(ttft, 50)), "ttft_p99_ms": ms(percentile(ttft, 99)),
            "itl_p50_ms": ms(percentile(itl, 50)), "itl_p99_ms": ms(percentile(itl, 99)),
            "itl_mean_ms": ms(statistics.fmean(itl)) if itl else None}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("-c", "--concurrency", type=int, default=1)
    ap.add_argument("-n", "--requests", type=int, default=None,
                    help="requests in all (default 4 per client, at least 8)")
    ap.add_argument("--duration", type=float, default=None, help="stop sending after S seconds")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--mode", choices=["chat", "completions"], default="chat")
    ap.add_argument("--ignore-eos", action="store_true")
    ap.add_argument("--api-key", default=None)
    ap.add_argument("--model", default=None)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    n = a.requests if a.requests is not None else max(8, 4 * a.concurrency)
    s = run_load(a.url, a.concurrency, n, a.max_tokens, a.mode, a.duration, a.ignore_eos,
                 a.api_key, a.model)
    if a.json:
        print(json.dumps(s))
    else:
        print("c=%d requests=%d errors=%d tokens=%d wall=%.2fs tok/s=%.1f TTFT p50/p99=%s/%s ms "
              "ITL p50/p99=%s/%s ms" % (s["concurrency"], s["requests"], s["errors"], s["tokens"],
                                        s["wall_s"], s["tok_s"], s["ttft_p50_ms"], s["ttft_p99_ms"],
                                        s["itl_p50_ms"], s["itl_p99_ms"]))
        for e in s["first_errors"]:
            print("  error:", e)
    return 0 if s["errors"] == 0 and s["requests"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
