#!/usr/bin/env python3
"""Write the expected renderings of zerotune's built-in chat templates.

For each model family this renders a fixed set of conversations (with and without a system
prompt, several turns, tools with tool calls and tool results, reasoning for Qwen3,
add_generation_prompt true and false, enable_thinking true and false) with the family's own
chat template, the real Jinja text kept in tests/data/chat_templates/<file>.jinja (its README says
where each came from; DeepSeek's templates get the tokenizer's bos_token, as transformers passes
the special tokens), and writes
tests/data/chat_templates/<family>.expected.json: each conversation, the built-in template
that must render it the same, and the text. tests/text/chat_template/family_templates_test.cpp
renders the same conversations in C++ and compares the text byte for byte.

The renderer is transformers' own (render_jinja_template, tokenizer-free) when transformers
is installed, else plain jinja2 set up as transformers sets it up (a sandboxed environment
with trim_blocks, lstrip_blocks and loopcontrols; tojson as json.dumps with
ensure_ascii=False and keys unsorted; raise_exception; strftime_now). Each file says which.

Where a family's Jinja text has no place for something its model was trained on, the
family's own code stands in, and the case names that code as its renderer:
  - GLM-4's template takes tools as a `tools` key of a message and a tool call as an
    assistant message whose `metadata` is the tool's name (as glm-4's OpenAI server passes
    them); the conversations are handed over in that shape.
  - ChatGLM3's template renders neither tools nor calls; its fine-tuning code
    (finetune_demo's format_conversation and the tokenizer's build_single_message) puts the
    tools in a system turn and writes a call as <|assistant|>name\\n```python\\ntool_call(...)```.
    Conversations without calls go through the Jinja (tools as that system turn); with calls
    through a port of that code, checked equal to the Jinja on the conversations without.
  - ChatGLM2 ships no Jinja template: its tokenizer's build_prompt is the layout.

    python3 tools/chat_template_fixtures.py            # writes tests/data/chat_templates/*.expected.json
    python3 tools/chat_template_fixtures.py qwen3_instruct   # only the families named
"""
import copy
import json
import pathlib
import sys
from datetime import datetime

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "chat_templates"

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city, e.g. 北京"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "calculate_area", "description": "Calculate the area of a given shape",
        "parameters": {"type": "object", "properties": {
            "shape": {"type": "string", "description": "The shape"},
            "dimensions": {"type": "array", "items": {"type": "number"}}}, "required": ["shape", "dimensions"]}}},
]


def call(name, arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def user(text):
    return {"role": "user", "content": text}


def assistant(text, tool_calls=None, reasoning=None):
    message = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return message


def system(text):
    return {"role": "system", "content": text}


def tool(text):
    return {"role": "tool", "content": text}


BEIJING = call("get_weather", {"city": "北京", "unit": "celsius"})
PARIS = call("get_weather", {"city": "Paris"})
RICH = call("calculate_area", {"shape": "circle", "dimensions": [4.5, 2], "precision": 1e-05, "limit": 1e16,
                               "exact": False, "note": None, "quote": "it's \"fine\"\ttab"})

# name: (messages, tools, add_generation_prompt, kind); kind plain, tools or reasoning.
CASES = {
    "user_only": ([user("Hello!")], None, True, "plain"),
    "user_only_no_prompt": ([user("Hello!")], None, False, "plain"),
    "system_user": ([system("You are a pirate."), user("Where is the treasure?")], None, True, "plain"),
    "single_answer": ([user("Name a colour."), assistant("Blue.")], None, False, "plain"),
    "multi_turn_answer": ([user("你好"), assistant("你好！有什么可以帮你？"), user("讲个笑话。"),
                           assistant("为什么数学书很难过？因为它有太多问题。")], None, False, "plain"),
    "system_multi_turn_answer": ([system("Be brief."), user("2+2?"), assistant("4"), user("And 3+3?"),
                                  assistant("6")], None, False, "plain"),
    "multi_turn_prompt": ([user("Hi"), assistant("Hello."), user("How are you?")], None, True, "plain"),
    "whitespace": ([user("  spaced  \n"), assistant("\nline one\nline two\n")], None, False, "plain"),
    "tools_prompt": ([user("What's the weather in Beijing?")], TOOLS, True, "tools"),
    "tool_round": ([user("What's the weather in Beijing?"), assistant("", [BEIJING]), tool('{"temperature": 21}'),
                    assistant("It is 21 °C in Beijing.")], TOOLS, False, "tools"),
    "parallel_calls": ([system("Answer in English."), user("Weather in Beijing and Paris?"),
                        assistant("Let me check both.", [BEIJING, PARIS]), tool('{"temperature": 21}'),
                        tool('{"temperature": 17}'), assistant("Beijing 21 °C, Paris 17 °C.")], TOOLS, False, "tools"),
    "rich_arguments": ([user("Area of that circle?"), assistant("", [RICH]), tool("63.6"), assistant("About 63.6.")],
                       TOOLS, False, "tools"),
    "prompt_after_tool_result": ([user("Weather in Paris?"), assistant("", [PARIS]), tool('{"temperature": 17}')],
                                 TOOLS, True, "tools"),
    "reasoning_last": ([user("What is 2+2?"), assistant("It is 4.", reasoning="2 plus 2 makes 4.")], None, False,
                       "reasoning"),
    "reasoning_earlier_dropped": ([user("Q1"), assistant("A1", reasoning="r1"), user("Q2"),
                                   assistant("A2", reasoning="\nr2\n")], None, False, "reasoning"),
    "reasoning_inline": ([user("Why?"), assistant("<think>\nbecause\n\n</think>\n\nSo.")], None, False, "reasoning"),
    "reasoning_empty_field": ([user("Hm?"), assistant("<think>x</think>y", reasoning="")], None, False, "reasoning"),
    "reasoning_tool_steps": ([user("Weather in Paris?"), assistant("", [PARIS], reasoning="I should look it up."),
                              tool('{"temperature": 17}'), assistant("17 °C.", reasoning="The tool says 17.")], TOOLS,
                             False, "reasoning"),
}

TOOL_PREFIX = "Answer the following questions as best as you can. You have access to the following tools:\n"


def unwrap(tools):
    return [t["function"] if t.get("type") == "function" else t for t in tools or []]


# Each family's conversations in the shape its template (or code) takes them.
def as_is(messages, tools):
    return messages, tools


def glm4_shape(messages, tools):
    shaped = [{"role": "system", "content": "", "tools": tools}] if tools else []
    for m in messages:
        if m["role"] == "tool":
            shaped.append({"role": "observation", "content": m["content"]})
        elif m.get("tool_calls"):
            if m["content"]:
                shaped.append({"role": "assistant", "content": m["content"]})
            for c in m["tool_calls"]:
                f = c["function"]
                arguments = f["arguments"] if isinstance(f["arguments"], str) else json.dumps(f["arguments"],
                                                                                             ensure_ascii=False)
                shaped.append({"role": "assistant", "metadata": f["name"], "content": arguments})
        else:
            shaped.append({"role": m["role"], "content": m["content"]})
    return shaped, None


def chatglm3_turns(messages, tools):
    """(role, metadata, content) as ChatGLM3's fine-tuning code builds them."""
    turns = [("system", "", TOOL_PREFIX + json.dumps(unwrap(tools), indent=4, ensure_ascii=False))] if tools else []
    for m in messages:
        if m.get("tool_calls"):
            if m["content"]:
                turns.append(("assistant", "", m["content"]))
            for c in m["tool_calls"]:
                f = c["function"]
                keywords = ", ".join(f"{k}={v!r}" for k, v in f["arguments"].items())
                turns.append(("assistant", f["name"], f"```python\ntool_call({keywords})\n```"))
        else:
            turns.append(("observation" if m["role"] == "tool" else m["role"], "", m["content"]))
    return turns


def chatglm3_shape(messages, tools):
    return [{"role": r, "content": c} for r, _, c in chatglm3_turns(messages, tools)], None


def chatglm3_code(messages, tools, add_generation_prompt):
    """build_single_message's pieces written as ChatGLM3's Jinja writes them: <|role|>metadata\\n content."""
    text = "[gMASK]sop" + "".join(f"<|{r}|>{meta}\n {c}" for r, meta, c in chatglm3_turns(messages, tools))
    return text + ("<|assistant|>" if add_generation_prompt else "")


def chatglm2_code(messages, tools, add_generation_prompt):
    """The tokenizer's build_prompt; a conversation ending with an answer is that prompt and the answer."""
    def build_prompt(query, history):
        prompt = ""
        for i, (old_query, response) in enumerate(history):
            prompt += "[Round {}]\n\n问：{}\n\n答：{}\n\n".format(i + 1, old_query, response)
        return prompt + "[Round {}]\n\n问：{}\n\n答：".format(len(history) + 1, query)
    pairs = [(messages[i]["content"], messages[i + 1]["content"]) for i in range(0, len(messages) - 1, 2)]
    if messages[-1]["role"] == "user":
        return build_prompt(messages[-1]["content"], pairs)
    return build_prompt(messages[-2]["content"], pairs[:-1]) + messages[-1]["content"]


# The tokenizer's bos_token, which transformers hands to the template with the other special tokens.
DEEPSEEK_BOS = "<｜begin▁of▁sentence｜>"

# family: (jinja file, source, [(built-in template, kwargs)], kinds, shape, code that stands in for tool calls)
FAMILIES = {
    "qwen2": ("qwen2.jinja", "Qwen/Qwen2-7B-Instruct tokenizer_config.json", [("qwen2", {})], {"plain"}, as_is, None),
    "qwen2_5_base": ("qwen2_5_base.jinja", "Qwen/Qwen2.5-0.5B tokenizer_config.json", [("qwen2", {})],
                     {"plain", "tools"}, as_is, None),
    "qwen2_5": ("qwen2_5.jinja", "Qwen/Qwen2.5-0.5B-Instruct tokenizer_config.json", [("qwen", {})],
                {"plain", "tools", "reasoning"}, as_is, None),
    "qwen3": ("qwen3.jinja", "Qwen/Qwen3-8B tokenizer_config.json",
              [("qwen3", {}), ("qwen3_nothink", {"enable_thinking": False})],
              {"plain", "tools", "reasoning"}, as_is, None),
    "qwen2_5_math": ("qwen2_5_math.jinja", "Qwen/Qwen2.5-Math-7B-Instruct tokenizer_config.json",
                     [("qwen2.5_math", {})], {"plain", "tools", "reasoning"}, as_is, None),
    "qwen3_instruct": ("qwen3_instruct.jinja", "Qwen3 Instruct-2507 tokenizer_config.json, Qwen3's text without enable_thinking",
                       [("qwen3_instruct", {})], {"plain", "tools", "reasoning"}, as_is, None),
    "qwen3_instruct_plain": ("qwen3_instruct_plain.jinja", "Qwen/Qwen3-4B-Instruct-2507 tokenizer_config.json, without think blocks",
                             [("qwen3_instruct_plain", {})], {"plain", "tools", "reasoning"}, as_is, None),
    "deepseek_r1_distill": ("deepseek_r1_distill.jinja", "deepseek-ai/DeepSeek-R1-Distill-Qwen tokenizer_config.json",
                            [("deepseek_r1_distill", {"bos_token": DEEPSEEK_BOS})], {"plain", "reasoning"}, as_is,
                            None),
    "deepseek_r1_distill_initial": ("deepseek_r1_distill_initial.jinja",
                                    "deepseek-ai/DeepSeek-R1-Distill-Qwen tokenizer_config.json, first revision (January 2025)",
                                    [("deepseek_r1_distill_initial", {"bos_token": DEEPSEEK_BOS})],
                                    {"plain", "reasoning"}, as_is, None),
    "glm4": ("glm4.jinja", "THUDM/glm-4-9b-chat tokenizer_config.json", [("glm4", {})], {"plain", "tools"},
             glm4_shape, None),
    "chatglm3": ("chatglm3.jinja", "THUDM/chatglm3-6b tokenizer_config.json", [("chatglm3", {})],
                 {"plain", "tools"}, chatglm3_shape, chatglm3_code),
    "chatglm2": (None, "THUDM/chatglm2-6b tokenization_chatglm.py build_prompt", [("chatglm2", {})], {"plain"},
                 None, chatglm2_code),
}


def jinja_renderer():
    """(render(template, messages, tools, add_generation_prompt, kwargs) -> text, description)."""
    try:
        import transformers
        from transformers.utils.chat_template_utils import render_jinja_template

        def render(template, messages, tools, add_generation_prompt, kwargs):
            result = render_jinja_template(conversations=[messages], tools=tools, chat_template=template,
                                           add_generation_prompt=add_generation_prompt, **kwargs)
            rendered = result[0] if isinstance(result, tuple) else result  # (texts, generation indices)
            return rendered[0] if isinstance(rendered, list) else rendered
        return render, f"transformers {transformers.__version__} render_jinja_template"
    except ImportError:
        pass
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)

    def render(template, messages, tools, add_generation_prompt, kwargs):
        return env.from_string(template).render(messages=messages, tools=tools, documents=None,
                                                add_generation_prompt=add_generation_prompt, **kwargs)
    return render, f"jinja2 {jinja2.__version__} set up as transformers' apply_chat_template"


def has_calls(messages):
    return any(m.get("tool_calls") for m in messages)


def family_cases(family, render, renderer):
    jinja_file, source, templates, kinds, shape, code = FAMILIES[family]
    template_text = (DATA / jinja_file).read_text(encoding="utf-8") if jinja_file else None
    cases = []
    for name, (messages, tools, generation_prompt, kind) in CASES.items():
        if kind not in kinds or (family == "chatglm2" and messages[0]["role"] == "system"):
            continue
        if tools and "tools" not in kinds:
            continue  # a template without tools: its reasoning cases that call tools too
        for built_in, kwargs in templates:
            if kwargs.get("enable_thinking") is not None and not generation_prompt and kind == "plain":
                continue  # enable_thinking changes only the generation prompt; one plain case each is enough
            by_code = template_text is None or (code is not None and has_calls(messages))
            if by_code:
                text = code(messages, tools, generation_prompt)
            else:
                shaped, shaped_tools = shape(copy.deepcopy(messages), copy.deepcopy(tools))
                text = render(template_text, shaped, shaped_tools, generation_prompt, kwargs)
                if code is not None:
                    assert text == code(messages, tools, generation_prompt), f"{family}/{name}: the port differs"
            case = {"name": name, "template": built_in, "messages": messages, "add_generation_prompt": generation_prompt,
                    "text": text}
            if tools:
                case["tools"] = tools
            if "enable_thinking" in kwargs:
                case["enable_thinking"] = kwargs["enable_thinking"]
            if by_code:
                case["renderer"] = source if template_text is None else "ChatGLM3's fine-tuning code (tool calls)"
            cases.append(case)
    return {"family": family, "source": source, "jinja": jinja_file, "renderer": renderer, "cases": cases}


def main(families):
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        sys.exit(f"unknown families {unknown}; known: {', '.join(FAMILIES)}")
    render, renderer = jinja_renderer()
    for family in families or FAMILIES:
        expected = family_cases(family, render, renderer)
        path = DATA / f"{family}.expected.json"
        path.write_text(json.dumps(expected, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"{path.relative_to(ROOT)}: {len(expected['cases'])} conversations ({renderer})")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
