#!/usr/bin/env python3
"""Render the conversations of tests/text/chat_template/llama_factory_templates_test.cpp through
LLaMA-Factory's own template code, to check the test's expectations against it.

    python3 tools/llama_factory_templates.py LLAMA_FACTORY/src > rendered.json

LLAMA_FACTORY/src is a LLaMA-Factory checkout's src folder. Its data/template.py, formatter.py
and tool_utils.py are loaded as they are; the modules they import that need torch or
transformers (logging, data_utils, mm_plugin) are replaced by stand-ins. A tokenizer that
returns each encoded element whole shows where LLaMA-Factory's tokenizer calls fall. For each
conversation the output has the rendered text (template tokens by name, the tokenizer's eos as
given) or the generation prompt, and the runs of labelled elements as
SupervisedDatasetProcessor labels them ([element→eos] where efficient_eos labels eos on a
prompt element).
"""
import copy
import json
import pathlib
import shutil
import sys
import tempfile

STAND_INS = {
    "extras/logging.py": "class _Logger:\n    def __getattr__(self, name):\n        return lambda *a, **k: None\n\n"
    "def get_logger(name=None):\n    return _Logger()\n",
    "data/data_utils.py": "from enum import Enum\nfrom typing import Union\n\n"
    "class Role(str, Enum):\n    USER = 'user'\n    ASSISTANT = 'assistant'\n    SYSTEM = 'system'\n"
    "    FUNCTION = 'function'\n    OBSERVATION = 'observation'\n\n"
    "SLOTS = list[Union[str, set[str], dict[str, str]]]\n",
    "data/mm_plugin.py": "class BasePlugin:\n    pass\n\ndef get_mm_plugin(name=None, **kwargs):\n"
    "    return BasePlugin()\n",
}


def load_templates(src: pathlib.Path):
    package = pathlib.Path(tempfile.mkdtemp()) / "llamafactory"
    for folder in ("", "data", "extras"):
        (package / folder).mkdir(parents=True, exist_ok=True)
        (package / folder / "__init__.py").write_text("")
    for name in ("template.py", "formatter.py", "tool_utils.py"):
        shutil.copy(src / "llamafactory" / "data" / name, package / "data" / name)
    for path, text in STAND_INS.items():
        (package / path).write_text(text)
    sys.path.insert(0, str(package.parent))
    from llamafactory.data import template  # noqa: E402

    return template.TEMPLATES


class ElementTokenizer:
    """encode() returns its text as one element; tokens and eos by name."""

    def __init__(self, eos):
        self.eos_token = eos
        self.eos_token_id = ("token", eos)
        self.bos_token_id = None

    def encode(self, text, add_special_tokens=False):
        return [("text", text)]

    def convert_tokens_to_ids(self, token):
        return ("token", token)


def supervised(template, tokenizer, messages, system, tools):
    """SupervisedDatasetProcessor._encode_data_example, without cutoff_len or mask_history."""
    ids, labels = [], []
    for turn, (source, target) in enumerate(template.encode_multiturn(tokenizer, messages, system, tools)):
        if template.efficient_eos and turn != 0:
            source_labels = [tokenizer.eos_token_id] + [None] * (len(source) - 1)
        else:
            source_labels = [None] * len(source)
        ids += source + target
        labels += source_labels + target
    if template.efficient_eos:
        ids.append(tokenizer.eos_token_id)
        labels.append(tokenizer.eos_token_id)
    return ids, labels


def runs_of(ids, labels):
    runs, run = [], ""
    for element, label in zip(ids, labels):
        if label is None:
            if run:
                runs.append(run)
            run = ""
        elif label == element:
            run += element[1]
        else:
            run += "[%s→%s]" % (element[1], label[1])
    return runs + ([run] if run else [])


def cases():
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "天气 of a city",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    call = {"name": "get_weather", "arguments": {"city": "Paris"}}

    def msg(role, content):
        return {"role": role, "content": content if isinstance(content, str) else json.dumps(content)}

    think = [msg("user", "q1"), msg("assistant", "<think>\nr1\n</think>\n\na1"), msg("user", "q2"), msg("assistant", "a2")]
    tool_round = [msg("user", "Weather in Paris?"), msg("function", call), msg("observation", "17"),
                  msg("assistant", "It is 17.")]
    for name in ("qwen", "qwen3", "qwen3_nothink", "glm4", "chatglm3", "empty"):
        eos = {"glm4": "<|endoftext|>", "chatglm3": "</s>"}.get(name, "<eos>")
        yield dict(template=name, eos=eos, case="single", messages=[msg("user", "Hi"), msg("assistant", "Hello.")])
        yield dict(template=name, eos=eos, case="system", system="Be brief.",
                   messages=[msg("user", "Hi"), msg("assistant", "Hello.")])
        yield dict(template=name, eos=eos, case="multi", messages=[msg("user", "q1"), msg("assistant", "a1"),
                                                                   msg("user", "q2"), msg("assistant", "a2")])
        yield dict(template=name, eos=eos, case="tools", tools=tools, messages=tool_round)
        yield dict(template=name, eos=eos, case="tools_system", tools=tools, system="Be brief.", messages=tool_round)
        yield dict(template=name, eos=eos, case="think", messages=think)
        yield dict(template=name, eos=eos, case="generation", generate=True, messages=[msg("user", "Hi")])
        yield dict(template=name, eos=eos, case="generation_history", generate=True, system="S", messages=think[:3])
        if name == "qwen3":
            for setting in (False, None):
                yield dict(template=name, eos=eos, case="think enable_thinking=%s" % setting,
                           enable_thinking=setting, messages=think)
            yield dict(template=name, eos=eos, case="generation enable_thinking=False", enable_thinking=False,
                       generate=True, messages=think[:3])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    templates = load_templates(pathlib.Path(sys.argv[1]))
    out = []
    for case in cases():
        template = copy.deepcopy(templates[case["template"]])
        if "enable_thinking" in case:
            template.enable_thinking = case["enable_thinking"]
        tokenizer = ElementTokenizer(case["eos"])
        tools = json.dumps(case["tools"], ensure_ascii=False) if case.get("tools") else ""
        entry = {"template": case["template"], "case": case["case"]}
        if case.get("generate"):
            messages = case["messages"] + [{"role": "assistant", "content": ""}]
            prompt, _ = template.encode_oneturn(tokenizer, messages, case.get("system"), tools)
            entry["prompt"] = "".join(element[1] for element in prompt)
        else:
            ids, labels = supervised(template, tokenizer, case["messages"], case.get("system"), tools)
            entry["text"] = "".join(element[1] for element in ids)
            entry["trained"] = runs_of(ids, labels)
        out.append(entry)
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    print()


if __name__ == "__main__":
    main()
