#!/usr/bin/env python3
"""Reference renders for tests/test_chat_template.c: every template in a
folder (llama.cpp's models/templates/*.jinja, .cache/chat-templates) over a
set of conversations, rendered with jinja2 configured as transformers
configures it for chat templates (ImmutableSandboxedEnvironment,
trim_blocks, lstrip_blocks, loop controls, a {% generation %} tag that
renders its body, globals raise_exception / strftime_now / dict /
namespace, and json.dumps as tojson). strftime_now reads a fixed clock
(NOW, also given to wick). Writes JSON: the cases, each with jinja2's
output or the fact that it raised.

    python chat_template_oracle.py TEMPLATE_DIR OUT.json
"""
import datetime, json, os, sys
import jinja2, jinja2.ext, jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

NOW = 1721995200  # 2024-07-26 12:00:00 UTC


class Generation(jinja2.ext.Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


class Namespace(jinja2.utils.Namespace):
    def __init__(*args, **kwargs):
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for k in attrs:
            if isinstance(k, str) and k.startswith("_"):
                raise jinja2.exceptions.SecurityError("underscore attribute")
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, k, v):
        if isinstance(k, str) and k.startswith("_"):
            raise jinja2.exceptions.SecurityError("underscore attribute")
        jinja2.utils.Namespace.__setitem__(self, k, v)


def env():
    e = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                      extensions=[Generation, jinja2.ext.loopcontrols])

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(NOW, datetime.timezone.utc).strftime(fmt)

    e.filters["tojson"] = tojson
    e.globals["raise_exception"] = raise_exception
    e.globals["strftime_now"] = strftime_now
    e.globals["dict"] = lambda *a, **k: dict(*a, **k)
    e.globals["namespace"] = Namespace
    return e


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}]
CALLS = [{"id": "call_1", "type": "function",
          "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]

CONVS = [
    ("system+user", [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is 2+2?"}], None),
    ("user only", [{"role": "user", "content": "Hello, how are you?"}], None),
    ("multi-turn", [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi!"},
                    {"role": "assistant", "content": "Hello! How can I help?"},
                    {"role": "user", "content": "Tell me a joke about \"quotes\" & 'apostrophes'.\nTwo lines, ünïcode ✓."}], None),
    ("no system multi", [{"role": "user", "content": "A"}, {"role": "assistant", "content": "B"},
                         {"role": "user", "content": "C"}], None),
    ("tools", [{"role": "user", "content": "Weather in Paris?"},
               {"role": "assistant", "content": "", "tool_calls": CALLS},
               {"role": "tool", "content": "{\"temp\": 21}", "tool_call_id": "call_1", "name": "get_weather"},
               {"role": "user", "content": "Thanks"}], TOOLS),
    ("tools list only", [{"role": "system", "content": "Use tools."}, {"role": "user", "content": "Weather?"}], TOOLS),
]


def main():
    tdir, out = sys.argv[1], sys.argv[2]
    e = env()
    cases = []
    for name in sorted(os.listdir(tdir)):
        if not name.endswith(".jinja"):
            continue
        src = open(os.path.join(tdir, name), encoding="utf-8").read()
        try:
            tmpl = e.from_string(src)
            cerr = None
        except Exception as ex:
            tmpl, cerr = None, f"{type(ex).__name__}: {ex}"
        for cname, msgs, tools in CONVS:
            for agp in (True, False):
                kw = dict(messages=json.loads(json.dumps(msgs)), tools=tools, documents=None,
                          add_generation_prompt=agp, bos_token="<s>", eos_token="</s>")
                c = {"template": name, "conv": cname, "agp": agp, "bos": "<s>", "eos": "</s>",
                     "tools": json.dumps(tools) if tools is not None else None,
                     "messages": [{"role": m["role"], "content": m.get("content"),
                                   "tool_calls": json.dumps(m["tool_calls"]) if "tool_calls" in m else None,
                                   "tool_call_id": m.get("tool_call_id"), "name": m.get("name")} for m in msgs]}
                if tmpl is None:
                    c.update(ok=False, out=cerr)
                else:
                    try:
                        c.update(ok=True, out=tmpl.render(**kw))
                    except Exception as ex:
                        c.update(ok=False, out=f"{type(ex).__name__}: {ex}")
                cases.append(c)
    json.dump({"now": NOW, "cases": cases}, open(out, "w"), ensure_ascii=False)


main()
