#!/usr/bin/python3
"""The reference renderer for nuvec's chat-template tests: Jinja2 set up as transformers' apply_chat_template sets it
up (chat_template_utils._compile_jinja_template), rendering every case of one JSON file in one process.

usage: render_chat_template.py CASES.json RESULTS.json
CASES.json: a list of {template, messages, tools, documents, add_generation_prompt, bos_token, eos_token, extra}.
RESULTS.json: a list, one {"output": text} or {"error": message} per case.
strftime_now uses NUVEC_CHAT_TEMPLATE_NOW (seconds since the epoch) when set, as nuvec does.
"""
import json
import os
import sys
from datetime import datetime

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class AssistantTracker(Extension):
    """transformers' {% generation %} block; only marks assistant text, so here it renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    fixed = os.environ.get("NUVEC_CHAT_TEMPLATE_NOW")
    now = datetime.fromtimestamp(int(fixed)) if fixed else datetime.now()
    return now.strftime(format)


def make_environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    env = make_environment()
    compiled = {}
    results = []
    for case in cases:
        try:
            source = case["template"]
            if source not in compiled:
                compiled[source] = env.from_string(source)
            output = compiled[source].render(
                messages=case.get("messages"), tools=case.get("tools"), documents=case.get("documents"),
                add_generation_prompt=case.get("add_generation_prompt", False),
                **{"bos_token": case.get("bos_token", ""), "eos_token": case.get("eos_token", ""),
                   **case.get("extra", {})})
            results.append({"output": output})
        except Exception as e:  # every failure is a result to compare, not a crash
            results.append({"error": f"{type(e).__name__}: {e}"})
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
