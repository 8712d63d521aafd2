#include "train/data/chat_sample.h"

#include <optional>

#include "runtime/error.h"

namespace zt::train {
namespace {

using json = nlohmann::ordered_json;
using models::ChatMessage;
using models::ToolCall;

// A turn's role as ShareGPT (LLaMA-Factory) and OpenAI spell them.
std::optional<std::string> role_of(const std::string& speaker) {
  if (speaker == "human" || speaker == "user") return "user";
  if (speaker == "gpt" || speaker == "assistant" || speaker == "model") return "assistant";
  if (speaker == "system") return "system";
  if (speaker == "function_call") return "function_call";
  // OpenAI's legacy function-calling layout (still its fine-tuning format's) names a
  // function's result "function".
  if (speaker == "observation" || speaker == "tool" || speaker == "function") return "tool";
  return std::nullopt;
}

std::string turn_str(const SampleSource& where, std::size_t turn) {
  return where.str() + ", turn " + std::to_string(turn);
}

ToolCall tool_call_of(const json& call, const SampleSource& where, std::size_t index);

// One content part's text: OpenAI's {"type": "text", "text": ...} or LLaMA-Factory v1's
// {"type": ..., "value": ...}.
std::string part_text(const json& part, const char* type, const SampleSource& where, std::size_t index) {
  const char* key = part.contains("text") ? "text" : "value";
  ZT_REQUIRE(part.contains(key) && part[key].is_string(),
             turn_str(where, index) + ": a \"" + type + "\" content part must carry its text in \"text\" (OpenAI) or " +
                 "\"value\" (LLaMA-Factory), got " + part.dump().substr(0, 200));
  return part[key].get<std::string>();
}

// A turn's text: a string, or a list of parts (OpenAI's, LLaMA-Factory v1's) whose text parts
// are concatenated in order, as templates that take parts write them and as LLaMA-Factory v1's
// renderers do; not with the newline the server puts between a request's parts
// (text/chat_template/openai_message.h, vLLM's join for string-content templates), so that a
// LLaMA-Factory file trains on the tokens LLaMA-Factory trains on. Where `message` is
// given (an assistant's turn), v1's "reasoning" parts become its reasoning and its
// "tool_call" parts (a call's JSON text) its tool calls. Null or absent only where `optional`.
std::string content_of(const json& turn, const char* key, const SampleSource& where, std::size_t index, bool optional,
                       ChatMessage* message = nullptr) {
  if (!turn.contains(key) || turn[key].is_null()) {
    ZT_REQUIRE(optional, turn_str(where, index) + " has no \"" + key + "\"");
    return "";
  }
  const json& value = turn[key];
  if (value.is_string()) return value.get<std::string>();
  ZT_REQUIRE(value.is_array(), turn_str(where, index) + ": \"" + key +
                                   "\" must be a string or a list of text parts, got " + value.dump().substr(0, 200));
  std::string text;
  for (const json& part : value) {
    ZT_REQUIRE(part.is_object() && part.contains("type") && part["type"].is_string(),
               turn_str(where, index) + ": every content part must be an object with a \"type\", such as " +
                   "{\"type\": \"text\", \"text\": ...}, got " + part.dump().substr(0, 200));
    const std::string type = part["type"].get<std::string>();
    if (type == "text") {
      text += part_text(part, "text", where, index);
    } else if (message && type == "reasoning") {
      message->reasoning_content = message->reasoning_content.value_or("") + part_text(part, "reasoning", where, index);
    } else if (message && type == "tool_call") {
      const std::string call = part_text(part, "tool_call", where, index);
      const json parsed = json::parse(call, nullptr, false);
      ZT_REQUIRE(!parsed.is_discarded(), turn_str(where, index) +
                                             ": a \"tool_call\" part holds JSON, {\"name\": ..., " +
                                             "\"arguments\": {...}}; got " + call.substr(0, 200));
      message->tool_calls.push_back(tool_call_of(parsed, where, index));
    } else {
      const bool media = type.find("image") != std::string::npos || type.find("video") != std::string::npos ||
                         type.find("audio") != std::string::npos;
      fail(turn_str(where, index) + ": a content part of type \"" + type + "\"" +
           (media ? " (zerotune trains text models; images, videos and audio are not read)"
            : (type == "reasoning" || type == "tool_call") ? " outside an assistant's message"
                                                           : "") +
           "; it reads \"text\" parts, and an assistant's \"reasoning\" and \"tool_call\" parts");
    }
  }
  return text;
}

// {"name", "arguments"} (ShareGPT's function_call) or {"type": "function", "function":
// {"name", "arguments"}} (OpenAI's tool_calls). OpenAI's arguments are JSON text, parsed.
ToolCall tool_call_of(const json& call, const SampleSource& where, std::size_t index) {
  const json& function = call.is_object() && call.contains("function") ? call["function"] : call;
  ZT_REQUIRE(function.is_object() && function.contains("name") && function["name"].is_string(),
             turn_str(where, index) + ": a tool call must be {\"name\": ..., \"arguments\": {...}}, got " +
                 call.dump().substr(0, 200));
  const std::string name = function["name"].get<std::string>();
  json arguments = function.contains("arguments") ? function["arguments"] : json::object();
  if (arguments.is_string()) {
    arguments = json::parse(arguments.get<std::string>(), nullptr, false);
    ZT_REQUIRE(!arguments.is_discarded(), turn_str(where, index) + ": the arguments of the call of '" + name +
                                              "' are text that is not JSON: " + function["arguments"].dump());
  }
  return {name, arguments.dump()};
}

// ShareGPT's function_call value: one call or a list of calls, as JSON text.
std::vector<ToolCall> function_calls(const std::string& value, const SampleSource& where, std::size_t index) {
  const json calls = json::parse(value, nullptr, false);
  ZT_REQUIRE(!calls.is_discarded(), turn_str(where, index) +
                                        ": a function_call turn holds JSON, {\"name\": ..., \"arguments\": {...}} or a "
                                        "list of them; got " +
                                        value.substr(0, 200));
  std::vector<ToolCall> out;
  for (const json& call : calls.is_array() ? calls : json::array({calls}))
    out.push_back(tool_call_of(call, where, index));
  ZT_REQUIRE(!out.empty(), turn_str(where, index) + ": a function_call turn calls no function");
  return out;
}

// The sample's `tools` (or OpenAI's legacy `functions`): a list or its JSON text, each a
// function or OpenAI's {"type": "function", "function": ...}; kept in OpenAI's layout, as
// LLaMA-Factory wraps them.
models::ChatTools tools_of(const json& sample, const SampleSource& where, const char* key = "tools") {
  if (!sample.contains(key) || sample[key].is_null()) return {};
  json tools = sample[key];
  if (tools.is_string()) {
    if (tools.get<std::string>().empty()) return {};
    tools = json::parse(tools.get<std::string>(), nullptr, false);
  }
  ZT_REQUIRE(tools.is_array(), where.str() + ": \"" + key + "\" must be a list of functions (or its JSON text), got " +
                                   sample[key].dump().substr(0, 200));
  models::ChatTools out;
  for (const json& tool : tools) {
    ZT_REQUIRE(tool.is_object(), where.str() + ": every tool must be an object, got " + tool.dump().substr(0, 200));
    out.push_back(tool.value("type", "") == "function" ? tool.dump()
                                                       : json({{"type", "function"}, {"function", tool}}).dump());
  }
  return out;
}

// After an optional system turn the turns alternate between the user's side (a user message,
// or the results of the tools the assistant called) and the assistant's, ending with it.
void check_turns(const std::vector<ChatMessage>& messages, const SampleSource& where) {
  const std::size_t first = messages.front().role == "system" ? 1 : 0;
  bool users_side = true;
  for (std::size_t i = first; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    const bool more_results = role == "tool" && i > first && messages[i - 1].role == "tool";
    if (more_results) continue;
    const bool fits = users_side ? role == "user" || (role == "tool" && i > first) : role == "assistant";
    ZT_REQUIRE(fits, where.str() + ": turn " + std::to_string(i - first) + " is from " + role + " but should be from " +
                         (users_side ? "user" : "assistant") +
                         " (turns alternate user, assistant, ...; tool results take the user's place after tool "
                         "calls)");
    users_side = !users_side;
  }
  ZT_REQUIRE(messages.back().role == "assistant", where.str() + ": the last turn must be the assistant's");
}

ChatMessage message_of(const json& turn, const std::string& role, bool openai, const SampleSource& where,
                       std::size_t index) {
  const char* text_key = openai ? "content" : "value";
  if (role == "function_call")
    return {"assistant", "", function_calls(content_of(turn, text_key, where, index, false), where, index)};
  auto has = [&](const char* key) { return role == "assistant" && turn.contains(key) && !turn[key].is_null(); };
  // OpenAI's legacy layout: one call, {"name", "arguments"}, in the message's "function_call".
  const bool legacy_call = openai && has("function_call");
  ZT_REQUIRE(!(legacy_call && has("tool_calls")),
             turn_str(where, index) + " has both \"function_call\" and \"tool_calls\"; keep one of them");
  const bool calls = has("tool_calls") || legacy_call;
  ChatMessage message{role, ""};
  message.content = content_of(turn, text_key, where, index, calls, role == "assistant" ? &message : nullptr);
  if (legacy_call) message.tool_calls.push_back(tool_call_of(turn["function_call"], where, index));
  if (has("tool_calls")) {
    ZT_REQUIRE(turn["tool_calls"].is_array(), turn_str(where, index) + ": \"tool_calls\" must be a list");
    for (const json& call : turn["tool_calls"]) message.tool_calls.push_back(tool_call_of(call, where, index));
  }
  if (role == "assistant" && turn.contains("reasoning_content") && turn["reasoning_content"].is_string() &&
      !message.reasoning_content)
    message.reasoning_content = turn["reasoning_content"].get<std::string>();
  return message;
}

}  // namespace

std::string SampleSource::str() const {
  return path + ": sample " + std::to_string(index) + (line ? " (line " + std::to_string(line) + ")" : "");
}

std::string text_field(const json& sample, const char* key, const SampleSource& where, bool required) {
  if (!sample.contains(key) || sample[key].is_null()) {
    ZT_REQUIRE(!required, where.str() + " has no \"" + key + "\"");
    return "";
  }
  ZT_REQUIRE(sample[key].is_string(), where.str() + ": \"" + key + "\" must be a string, got " + sample[key].dump());
  return sample[key].get<std::string>();
}

Conversation from_alpaca(const json& sample, const SampleSource& where) {
  Conversation conversation{{}, tools_of(sample, where), where.str()};
  if (std::string system = text_field(sample, "system", where, false); !system.empty())
    conversation.messages.push_back({"system", system});
  if (sample.contains("history") && !sample["history"].is_null()) {
    ZT_REQUIRE(sample["history"].is_array(), where.str() + ": \"history\" must be a list of [prompt, answer] pairs");
    for (const json& turn : sample["history"]) {
      ZT_REQUIRE(turn.is_array() && turn.size() == 2 && turn[0].is_string() && turn[1].is_string(),
                 where.str() + ": every \"history\" entry must be a [prompt, answer] pair of strings");
      conversation.messages.push_back({"user", turn[0].get<std::string>()});
      conversation.messages.push_back({"assistant", turn[1].get<std::string>()});
    }
  }
  // The instruction and the input, each when not empty, joined by a newline (LLaMA-Factory's
  // "\n".join of its prompt and query columns, which skips a null one as it skips "").
  ZT_REQUIRE(sample.contains("instruction"), where.str() + " has no \"instruction\"");
  std::string prompt = text_field(sample, "instruction", where, false);
  if (std::string input = text_field(sample, "input", where, false); !input.empty())
    prompt.append(prompt.empty() ? "" : "\n").append(input);
  conversation.messages.push_back({"user", prompt});
  conversation.messages.push_back({"assistant", text_field(sample, "output", where, true)});
  return conversation;
}

// ChatGLM3's finetune_demo keys on a role/content turn: a per-message "loss" other than its
// default (the assistant's messages trained, no other), and its own tool turn.
void check_chatglm3_keys(const json& turn, const std::string& role, const SampleSource& where, std::size_t index) {
  if (turn.contains("loss") && !turn["loss"].is_null())
    ZT_REQUIRE(turn["loss"] == json(role == "assistant"),
               turn_str(where, index) + ": \"loss\": " + turn["loss"].dump() + " on a " + role +
                   " message: zerotune trains every assistant message and no other (--train_on_prompt: all); drop "
                   "the key, or the message");
  ZT_REQUIRE(role != "tool" || !(turn.contains("parameters") || turn.contains("observation")),
             turn_str(where, index) +
                 ": a tool turn with \"name\", \"parameters\" and \"observation\" (ChatGLM3's finetune_demo) is "
                 "not read: write the call as an assistant message with \"tool_calls\" and the result as a tool "
                 "message with \"content\" (OpenAI's layout)");
}

// A reply's weight per message: LLaMA-Factory v1's "loss_weight" (1 by default), OpenAI
// fine-tuning's "weight" (on assistant messages) and axolotl's "train" (true or false, read
// where its config names it message_field_training). 0 (false) leaves an assistant's reply
// untrained, 1 (true) trains it; the other messages are never trained (--train_on_prompt trains
// every one), so only 0 suits them. Other weights, and axolotl's "train_detail" (spans of a
// message), are refused: a message is trained whole or not at all. True when the message is an
// untrained reply.
bool untrained_by_weight(const json& turn, const std::string& role, const SampleSource& where, std::size_t index) {
  ZT_REQUIRE(!turn.contains("train_detail") || turn["train_detail"].is_null(),
             turn_str(where, index) +
                 ": \"train_detail\" (axolotl's spans of a message to train) is not read: zerotune trains a "
                 "message whole or not at all; drop it, or set the message's \"train\" to true or false");
  bool untrained = false;
  for (const char* key : {"loss_weight", "weight", "train"}) {
    if (!turn.contains(key) || turn[key].is_null()) continue;
    const bool flag = std::string(key) == "train";
    const json& weight = turn[key];
    const std::string named = std::string("\"") + key + "\": ";
    ZT_REQUIRE(
        flag ? weight.is_boolean() : weight.is_number() && (weight.get<double>() == 0.0 || weight.get<double>() == 1.0),
        turn_str(where, index) + ": " + named + weight.dump() +
            (flag ? "; a message's train must be true or false"
                  : "; zerotune trains a message whole or not at all, so a message's " + std::string(key) +
                        " must be 0 or 1"));
    const bool trained = flag ? weight.get<bool>() : weight.get<double>() == 1.0;
    ZT_REQUIRE(role == "assistant" || !trained,
               turn_str(where, index) + ": " + named + (flag ? "true" : "1") + " on a " + role +
                   " message: zerotune trains assistant messages only (--train_on_prompt: all of them); make it " +
                   (flag ? "false" : "0"));
    untrained = untrained || (role == "assistant" && !trained);
  }
  return untrained;
}

// GLM-4's finetune_demo offers the tools on the system message, not beside the messages.
void take_system_tools(const json& turn, Conversation& conversation, const SampleSource& where, std::size_t index) {
  if (!turn.contains("tools") || turn["tools"].is_null()) return;
  ZT_REQUIRE(conversation.tools.empty(), turn_str(where, index) +
                                             ": the system message has \"tools\" and so has the sample; a "
                                             "conversation offers one list of tools: keep one of them");
  conversation.tools = tools_of(turn, where);
}

Conversation from_sharegpt(const json& sample, const SampleSource& where) {
  const bool openai = sample.contains("messages");
  const char* list_key = openai ? "messages" : "conversations";
  ZT_REQUIRE(sample[list_key].is_array() && !sample[list_key].empty(),
             where.str() + ": \"" + list_key + "\" must be a non-empty list of turns");
  // "conversations" of role/content turns (ChatGLM3's finetune_demo, LLaMA-Factory's sharegpt
  // with OpenAI's tags) read as messages are.
  const bool role_content = openai || (sample[list_key][0].is_object() && sample[list_key][0].contains("role"));
  const char* role_key = role_content ? "role" : "from";
  Conversation conversation{{}, tools_of(sample, where), where.str()};
  // OpenAI's legacy function-calling layout lists bare functions in "functions".
  if (role_content && sample.contains("functions") && !sample["functions"].is_null()) {
    ZT_REQUIRE(conversation.tools.empty(), where.str() +
                                               " has both \"tools\" and \"functions\"; a conversation "
                                               "offers one list of tools: keep one of them");
    conversation.tools = tools_of(sample, where, "functions");
  }
  // A system turn that opens the conversation is its system prompt, over the sample's
  // "system": LLaMA-Factory's sharegpt converter reads that column only when the turns do not
  // open with one.
  const json& first = sample[list_key][0];
  const bool opens_with_system = first.is_object() && first.contains(role_key) && first[role_key].is_string() &&
                                 role_of(first[role_key].get<std::string>()) == "system";
  if (std::string system = text_field(sample, "system", where, false); !system.empty() && !opens_with_system)
    conversation.messages.push_back({"system", system});
  for (std::size_t i = 0; i < sample[list_key].size(); ++i) {
    const json& turn = sample[list_key][i];
    ZT_REQUIRE(turn.is_object(), where.str() + ": every turn must be an object with \"" + role_key + "\" and \"" +
                                     (role_content ? "content" : "value") + "\"");
    const std::string speaker = text_field(turn, role_key, where, true);
    const std::optional<std::string> role = role_of(speaker);
    ZT_REQUIRE(role, where.str() + ": unknown speaker \"" + speaker +
                         "\"; accepted: human/user, gpt/assistant, system, function_call, observation/tool/function");
    ZT_REQUIRE(*role != "system" || conversation.messages.empty(), where.str() + ": a system turn may only come first");
    if (role_content) check_chatglm3_keys(turn, *role, where, i);
    if (role_content && *role == "system") take_system_tools(turn, conversation, where, i);
    if (untrained_by_weight(turn, *role, where, i)) {
      std::size_t replies = 0;
      for (const ChatMessage& message : conversation.messages) replies += message.role == "assistant";
      conversation.untrained_replies.push_back(replies);
    }
    conversation.messages.push_back(message_of(turn, *role, role_content, where, i));
  }
  check_turns(conversation.messages, where);
  return conversation;
}

}  // namespace zt::train
