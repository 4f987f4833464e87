"""`wick serve` through the real `openai` client (3.63.0, the project venv).

The server is started here (build/wick serve --port 0 on loopback) and
killed at the end. Greedy output through the server must equal `wick
generate --temp 0` for the same prompt, alone and with other requests in
flight (batch invariance); embeddings equal `wick embed`'s. Kept quick:
small max_tokens, a small context. The load and fault tests live in bench/.
"""
import json
import os
import urllib.error
import urllib.request
import re
import signal
import subprocess
import threading
import time

import pytest

openai = pytest.importorskip("openai")


class _Resp:
    def __init__(self, status, headers, body):
        self.status_code, self.headers, self.content = status, headers, body
        self.text = body.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.text)


class httpx:  # noqa: N801  (a tiny stand-in over urllib: status, headers, body; no exceptions for 4xx)
    @staticmethod
    def request(method, url, content=None, json_body=None, headers=None, timeout=120):
        h = dict(headers or {})
        if json_body is not None:
            content = json.dumps(json_body).encode()
            h.setdefault("Content-Type", "application/json")
        req = urllib.request.Request(url, data=content, headers=h, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return _Resp(r.status, r.headers, r.read())
        except urllib.error.HTTPError as e:
            return _Resp(e.code, e.headers, e.read())

    @staticmethod
    def get(url, headers=None, timeout=120):
        return httpx.request("GET", url, headers=headers, timeout=timeout)

    @staticmethod
    def post(url, content=None, json=None, headers=None, timeout=120):  # noqa: A002
        return httpx.request("POST", url, content=content, json_body=json, headers=headers, timeout=timeout)

BUILD = os.environ.get("WICK_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
WICK = os.environ.get("WICK_SERVE_BIN", os.path.join(BUILD, "wick"))


def _start(args, timeout=120):
    p = subprocess.Popen([WICK, "serve", "--port", "0"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    deadline = time.time() + timeout
    line = ""
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        m = re.match(r"listening on (http://\S+)", line)
        if m:
            return p, m.group(1)
    p.kill()
    out, err = p.communicate()
    if "not compiled in" in err:
        pytest.skip("wick serve is not compiled in (no libmicrohttpd)")
    raise AssertionError("wick serve did not start: %r %s" % (line, err))


def _stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        raise
    err = p.stderr.read()
    assert rc == 0, err
    return err


@pytest.fixture(scope="module")
def server(smollm2_gguf, minilm_dir):
    if not os.path.exists(WICK):
        pytest.skip("build/wick is not built")
    p, url = _start(["-m", smollm2_gguf, "--ctx", "512", "--slots", "8", "--embedding-model", minilm_dir])
    yield {"url": url, "gguf": smollm2_gguf, "minilm": minilm_dir}
    err = _stop(p)
    assert "ERROR: AddressSanitizer" not in err and "runtime error" not in err, err


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server["url"] + "/v1", api_key="unused", max_retries=0, timeout=120)


def _generate(gguf, prompt, n, chat):
    cmd = [WICK, "generate", "-m", gguf, "-p", prompt, "-n", str(n), "--temp", "0", "--ctx", "512"]
    if chat:
        cmd.append("--chat")
    r = subprocess.run(cmd, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


def test_health_models(server, client):
    r = httpx.get(server["url"] + "/health")
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    ids = [m.id for m in client.models.list().data]
    assert ids == [os.path.basename(server["gguf"]), os.path.basename(server["minilm"].rstrip("/"))]


def test_greedy_equals_generate(server, client):
    q = "What is the capital of France?"
    want = _generate(server["gguf"], q, 12, chat=True)
    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": q}], max_tokens=12,
                                       temperature=0)
    c = r.choices[0]
    assert c.message.role == "assistant" and c.message.content == want
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
    assert r.usage.completion_tokens <= 12 and r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    assert c.finish_reason in ("stop", "length")

    p = "The capital of France is"
    want = _generate(server["gguf"], p, 10, chat=False)
    r = client.completions.create(model="m", prompt=p, max_tokens=10, temperature=0)
    assert r.object == "text_completion" and r.choices[0].text == want


def test_greedy_with_others_in_flight(server, client):
    """Batch invariance through the server: the same greedy text with 7 other requests running."""
    q = "Name three colors."
    want = _generate(server["gguf"], q, 12, chat=True)
    errors = []

    def other(i):
        try:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Tell me a story %d" % i}],
                                           max_tokens=16, temperature=0.8, seed=i)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    ts = [threading.Thread(target=other, args=(i,)) for i in range(7)]
    for t in ts:
        t.start()
    time.sleep(0.2)
    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": q}], max_tokens=12,
                                       temperature=0)
    for t in ts:
        t.join()
    assert not errors, errors
    assert r.choices[0].message.content == want


def test_streaming_chat(client):
    msgs = [{"role": "user", "content": "Say hello."}]
    whole = client.chat.completions.create(model="m", messages=msgs, max_tokens=10, temperature=0)
    chunks = list(client.chat.completions.create(model="m", messages=msgs, max_tokens=10, temperature=0, stream=True,
                                                 stream_options={"include_usage": True}))
    assert chunks[0].object == "chat.completion.chunk" and chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    finals = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finals == [whole.choices[0].finish_reason]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    assert len({c.id for c in chunks}) == 1


def test_streaming_completion(client):
    s = client.completions.create(model="m", prompt="One, two, three,", max_tokens=6, temperature=0, stream=True)
    whole = client.completions.create(model="m", prompt="One, two, three,", max_tokens=6, temperature=0)
    assert "".join(c.choices[0].text for c in s) == whole.choices[0].text


def test_stop_and_length(client):
    r = client.completions.create(model="m", prompt="One, two, three, four,", max_tokens=3, temperature=0)
    assert r.choices[0].finish_reason == "length" and r.usage.completion_tokens == 3
    r = client.completions.create(model="m", prompt="One, two, three, four,", max_tokens=16, temperature=0,
                                  stop=[","])
    assert r.choices[0].finish_reason == "stop" and "," not in r.choices[0].text
    e = client.completions.create(model="m", prompt="One, two,", max_tokens=3, temperature=0, echo=True)
    g = client.completions.create(model="m", prompt="One, two,", max_tokens=3, temperature=0)
    assert e.choices[0].text == "One, two," + g.choices[0].text


def test_n_choices_and_logprobs(client):
    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Pick a number."}],
                                       max_tokens=5, temperature=1.0, seed=7, n=2)
    assert [c.index for c in r.choices] == [0, 1]
    r2 = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Pick a number."}],
                                        max_tokens=5, temperature=1.0, seed=7, n=2)
    assert [c.message.content for c in r.choices] == [c.message.content for c in r2.choices]  # seeds are per choice

    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}], max_tokens=4,
                                       temperature=0, logprobs=True, top_logprobs=3)
    lp = r.choices[0].logprobs.content
    assert len(lp) == r.usage.completion_tokens
    for e in lp:
        assert e.logprob <= 0 and len(e.top_logprobs) == 3 and isinstance(e.bytes, list)
        assert e.top_logprobs[0].logprob == e.logprob  # greedy: the sampled id is the most likely
        assert e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob >= e.top_logprobs[2].logprob
    r = client.completions.create(model="m", prompt="Hello", max_tokens=3, temperature=0, logprobs=2)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == 3
    assert all(len(t) <= 2 for t in lp.top_logprobs)


def test_embeddings_equal_wick_embed(server, client):
    texts = ["hello world", "The cat sat on the mat."]
    r = client.embeddings.create(model="minilm", input=texts)
    out = subprocess.run([WICK, "embed", "-m", server["minilm"]] + texts, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    want = [[float(v) for v in line.split()] for line in out.stdout.splitlines()]
    assert [d.index for d in r.data] == [0, 1] and r.usage.prompt_tokens > 0
    for d, w in zip(r.data, want):
        assert len(d.embedding) == len(w)
        # wick embed prints %.7g, the server the f32 exactly (%.9g)
        assert all(abs(a - b) <= 1e-6 * max(1.0, abs(b)) for a, b in zip(d.embedding, w))
    # encoding_format float: the same f32 values as the client's default base64
    r2 = httpx.post(server["url"] + "/v1/embeddings", json={"input": texts, "encoding_format": "float"}).json()
    import array
    as_f32 = [list(array.array("f", x["embedding"])) for x in r2["data"]]  # %.9g text back to the exact f32
    assert as_f32 == [d.embedding for d in r.data]


def test_disconnect_cancels(server):
    """A client that hangs up mid-stream cancels its engine request."""
    import http.client

    def cancelled():
        m = re.search(r"^wick_engine_requests_cancelled_total (\d+)$", httpx.get(server["url"] + "/metrics").text, re.M)
        return int(m.group(1))

    before = cancelled()
    host, port = server["url"][len("http://"):].split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    c.request("POST", "/v1/completions", body=json.dumps({"prompt": "Once upon a time", "max_tokens": 400,
                                                          "temperature": 0, "stream": True}),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200 and r.getheader("Content-Type") == "text/event-stream"
    assert r.read(6) == b"data: "
    c.sock.shutdown(2)
    c.close()
    deadline = time.time() + 20
    while cancelled() == before and time.time() < deadline:
        time.sleep(0.1)
    assert cancelled() == before + 1


def test_metrics(server, client):
    client.completions.create(model="m", prompt="Hi", max_tokens=2, temperature=0)
    text = httpx.get(server["url"] + "/metrics").text
    vals = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        name, v = line.rsplit(" ", 1)
        vals[name] = float(v)
    assert vals['wick_requests_total{endpoint="/v1/completions",status="200"}'] >= 1
    assert vals["wick_generated_tokens_total"] >= 2 and vals["wick_prompt_tokens_total"] >= 1
    for k in ("wick_requests_running", "wick_requests_queued", "wick_kv_blocks_total", "wick_kv_blocks_used"):
        assert k in vals


def _err(r, status, param=None):
    assert r.status_code == status, r.text
    e = r.json()["error"]
    assert set(e) == {"message", "type", "param", "code"} and e["message"]
    if param is not None:
        assert e["param"] == param, e
    return e


def test_errors(server, client):
    u = server["url"]
    _err(httpx.post(u + "/v1/chat/completions", content=b'{"messages": [', headers={"content-type": "application/json"}),
         400)
    e = _err(httpx.post(u + "/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}],
                                                          "max_tokens": "5"}), 400, "max_tokens")
    assert e["type"] == "invalid_request_error"
    _err(httpx.post(u + "/v1/chat/completions", json={"messages": "hi"}), 400, "messages")
    _err(httpx.post(u + "/v1/completions", json={"prompt": "x", "temperature": "hot"}), 400, "temperature")
    _err(httpx.post(u + "/v1/embeddings", json={"input": [1, 2]}), 400, "input")
    _err(httpx.get(u + "/v1/nothing"), 404)
    _err(httpx.get(u + "/v1/chat/completions"), 405)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="m", messages=[{"role": "wizard", "content": "x"}])
    # constrained output: 200 with the grammar, or 501 while it is not compiled in
    r = httpx.post(u + "/v1/chat/completions", json={"messages": [{"role": "user", "content": "JSON please"}],
                                                     "max_tokens": 8, "temperature": 0,
                                                     "response_format": {"type": "json_object"}}, timeout=120)
    assert r.status_code in (200, 501), r.text
    if r.status_code == 501:
        _err(r, 501, "response_format")


def test_api_key_and_body_limit(smollm2_gguf):
    p, url = _start(["-m", smollm2_gguf, "--ctx", "128", "--slots", "1", "--api-key", "sekret", "--max-body", "2048"])
    try:
        assert httpx.get(url + "/health").status_code == 200  # open, for load balancers
        _err(httpx.get(url + "/v1/models"), 401)
        _err(httpx.get(url + "/v1/models", headers={"Authorization": "Bearer sekre"}), 401)
        c = openai.OpenAI(base_url=url + "/v1", api_key="sekret", max_retries=0)
        assert c.models.list().data[0].id == os.path.basename(smollm2_gguf)
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=url + "/v1", api_key="wrong", max_retries=0).models.list()
        big = {"prompt": "x" * 5000, "max_tokens": 1}
        _err(httpx.post(url + "/v1/completions", json=big, headers={"Authorization": "Bearer sekret"}), 413)
        r = c.completions.create(model="m", prompt="Hi", max_tokens=2, temperature=0)
        assert r.usage.completion_tokens == 2
        # SIGTERM drains: the request running when it comes still gets its whole answer, then exit 0
        got = {}

        def run():
            got["r"] = c.completions.create(model="m", prompt="Once upon a time", max_tokens=24, temperature=0)

        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.5)
        err = _stop(p)
        t.join()
        assert got["r"].usage.completion_tokens == 24 and "draining" in err
        p = None
    finally:
        if p:
            _stop(p)
