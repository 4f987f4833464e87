#!/usr/bin/env python3
"""bench/generate's table: read the key=value lines that bench_generate
("peer=wick ...") and llama_cpp_peer.py ("peer=llama.cpp ...") printed, one
per process run, and print the medians over the runs of each (file, threads,
prompt length, depth) as markdown tables: tokens/s of both phases with the
ratio wick / llama.cpp (above 1: wick is faster), decode's share of the DRAM
read bandwidth (bench_membw's "peer=membw" lines in the same log), then time
to first token, load time and memory.

  python3 table.py LOG...

Any other line in the logs is ignored. Medians are of the per-process
figures (each itself the median of that process's timed repetitions).
"""
import statistics
import sys
from collections import defaultdict

PEERS = ("wick", "llama.cpp")


def parse(lines):
    rows = []
    for line in lines:
        line = line.strip()
        if not line.startswith("peer="):
            continue
        kv = dict(f.split("=", 1) for f in line.split() if "=" in f)
        rows.append(kv)
    return rows


def med(rows, key):
    vals = [float(r[key]) for r in rows if key in r]
    return statistics.median(vals) if vals else None


def fmt(v, spec=".1f"):
    return "n/a" if v is None else format(v, spec)


def ratio(a, b):
    return "n/a" if a is None or b is None or b <= 0 else f"{a / b:.2f}"


def short(name):
    """SmolLM2-135M-Instruct.Q4_1.gguf -> Q4_1 (the type is what differs between the SmolLM2 files);
    another model's file keeps its whole name (qwen2.5-coder-0.5b-instruct-Q4_K_M: its dots are not
    a type's)."""
    name = name[:-5] if name.endswith(".gguf") else name
    tail = name.rsplit(".", 1)[-1]
    return tail if "." in name and tail.replace("_", "").isalnum() and tail.upper() == tail else name


def main(paths):
    lines = []
    for p in paths:
        with open(p) as f:
            lines += f.readlines()
    rows = parse(lines)
    membw = defaultdict(list)
    for r in [r for r in rows if r["peer"] == "membw"]:
        membw[int(r["threads"])].append(float(r["read_gbs"]))
    rows = [r for r in rows if r["peer"] != "membw"]
    if not rows:
        print("bench-generate: no results", file=sys.stderr)
        return 1
    groups = defaultdict(lambda: defaultdict(list))
    order = []
    for r in rows:
        key = (short(r["file"]), int(r["threads"]), int(r["prefill"]), int(r.get("depth", 0)))
        if key not in groups:
            order.append(key)
        groups[key][r["peer"]].append(r)
    files = list(dict.fromkeys(k[0] for k in order))
    keys = sorted(order, key=lambda k: (files.index(k[0]), k[3], k[2], k[1]))
    any_row = rows[0]
    isa = next((r["isa"] for r in rows if "isa" in r), "?")
    runs = max(len(v) for g in groups.values() for v in g.values())

    names = ", ".join(dict.fromkeys(r["file"] for r in rows))
    print(f"files: {names}")
    print(f"prefill N tokens as one forward, then decode {any_row['decode']} tokens one at a time, both after "
          f"`depth` tokens already in the cache; wick ISA {isa}; medians of up to {runs} alternating runs per cell")
    print()
    print("| file | phase | prompt | depth | threads | wick tok/s | llama.cpp tok/s | wick / llama.cpp | runs |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for phase, key in (("prefill", "prefill_tok_s"), ("decode", "decode_tok_s")):
        for f, t, p, d in keys:
            g = groups[(f, t, p, d)]
            w, l = med(g["wick"], key), med(g["llama.cpp"], key)
            n = f"{len(g['wick'])}/{len(g['llama.cpp'])}"
            print(f"| {f} | {phase} | {p} | {d} | {t} | {fmt(w)} | {fmt(l)} | {ratio(w, l)} | {n} |")
    if membw:
        print()
        print("decode against the DRAM read bandwidth (bench_membw in the same run, median GB/s per thread count): "
              "bytes per token taken as the file's size (every weight read once per token; exact for tied "
              "embeddings, where the lm head reads the embedding table, an overestimate by the embedding table "
              "otherwise)")
        print()
        print("| file | depth | threads | DRAM GB/s | wick GB/s | wick % of DRAM | llama.cpp GB/s | llama.cpp % of DRAM |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        seen = set()
        for f, t, p, d in keys:
            if (f, t, d) in seen or t not in membw:
                continue
            seen.add((f, t, d))
            g = groups[(f, t, p, d)]
            bw = statistics.median(membw[t])
            fb = med(g["wick"] or g["llama.cpp"], "file_bytes")
            cells = [f, str(d), str(t), f"{bw:.1f}"]
            for who in PEERS:
                v = med(g[who], "decode_tok_s")
                gbs = None if v is None or fb is None else v * fb / 1e9
                cells += [fmt(gbs), fmt(None if gbs is None else 100 * gbs / bw, ".0f")]
            print("| " + " | ".join(cells) + " |")
    one = [k for k in keys if k[1] == 1]
    if one:
        print()
        print("the 1-thread rows again in tokens per CPU second of the process (leaves out time spent waiting "
              "for a core on a loaded machine)")
        print()
        print("| file | phase | prompt | depth | wick tok/CPU-s | llama.cpp tok/CPU-s | wick / llama.cpp |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
        for phase in ("prefill", "decode"):
            for k in one:
                g = groups[k]
                w, l = med(g["wick"], phase + "_cpu_tok_s"), med(g["llama.cpp"], phase + "_cpu_tok_s")
                print(f"| {k[0]} | {phase} | {k[2]} | {k[3]} | {fmt(w)} | {fmt(l)} | {ratio(w, l)} |")
    print()
    print("time to first token: prompt forward + argmax, cold (the first after the load) and warm (median of "
          "the later ones); load (model + KV cache / "
          "context), peak RSS (getrusage; llama.cpp's includes its Python interpreter) and what the load "
          "added to RSS (peak - before the load) beside file + KV bytes; wick's heap: what its CPU allocator held "
          "for the model after the load (copies, not views of the file) and its peak in use")
    print()
    print("| file | prompt | depth | threads | TTFT cold ms wick | TTFT cold ms llama.cpp | TTFT warm ms wick "
          "| TTFT warm ms llama.cpp | load ms wick | load ms llama.cpp "
          "| peak RSS MiB wick | peak RSS MiB llama.cpp | RSS growth MiB wick | RSS growth MiB llama.cpp "
          "| file MiB | KV MiB wick | KV MiB llama.cpp | wick heap: model MiB | wick heap: peak MiB |")
    print("| --- |" + " ---: |" * 18)
    MiB = 1024.0 * 1024.0
    for f, t, p, d in keys:
        g = groups[(f, t, p, d)]
        cells = [f, str(p), str(d), str(t)]
        for key, scale, spec in (("ttft_ms", 1, ".1f"), ("ttft_warm_ms", 1, ".1f"), ("load_ms", 1, ".0f"),
                                 ("rss_peak_kb", 1 / 1024, ".1f")):
            for p in PEERS:
                v = med(g[p], key)
                cells.append(fmt(None if v is None else v * scale, spec))
        for p in PEERS:
            pk, base = med(g[p], "rss_peak_kb"), med(g[p], "rss_base_kb")
            cells.append(fmt(None if pk is None or base is None else (pk - base) / 1024))
        fb = med(g["wick"] or g["llama.cpp"], "file_bytes")
        cells.append(fmt(None if fb is None else fb / MiB))
        for p in PEERS:
            kv = med(g[p], "kv_bytes")
            cells.append(fmt(None if kv is None else kv / MiB, ".2f"))
        for key in ("model_heap_bytes", "heap_peak_bytes"):
            v = med(g["wick"], key)
            cells.append(fmt(None if v is None else v / MiB))
        print("| " + " | ".join(cells) + " |")
    print()
    print('greedy ids after "The capital of France is" (f32 reference: 7042,30,198,198; llama.cpp quantizes '
          'activations, so quantized files may differ)')
    print()
    print("| file | wick | llama.cpp |")
    print("| --- | --- | --- |")
    for f in dict.fromkeys(k[0] for k in keys):
        cell = []
        for p in PEERS:
            vals = [r.get("check", "-") for k in keys if k[0] == f for r in groups[k].get(p, [])]
            vals = list(dict.fromkeys(vals)) or ["n/a"]
            cell.append(" / ".join(vals))
        print(f"| {f} | {cell[0]} | {cell[1]} |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
