// `zerotune chat`: an interactive conversation with a model on the terminal. Each answer
// streams as it is generated, a thinking model's reasoning apart from its answer
// (text/reasoning_stream.h); the history goes back in with every turn through the model's
// chat template. A line of three double quotes opens a turn of several lines, closed by the
// next such line. /reset (or LLaMA-Factory's `clear`) forgets the history, /exit (or its
// `exit`, or end of input) leaves, and Ctrl-C
// stops the answer being written, not the program. With --tp N the model is split over N
// ranks: rank 0 talks with the terminal and sends every turn to the others (cli/chat_ranks.h).
#include <unistd.h>
#include <atomic>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string_view>

#include "cli/chat_ranks.h"
#include "cli/command.h"
#include "cli/generation_flags.h"
#include "infer/engine.h"
#include "infer/tensor_parallel_engine.h"
#include "runtime/error.h"
#include "text/reasoning_stream.h"
#include "text/stream_decoder.h"

namespace zt::cli {
namespace {

constexpr const char* kDescription =
    "Reads your turns from stdin and streams the model's answers. A line of three double quotes\n"
    "(\"\"\") starts a turn of several lines, sent when the next such line ends it. /reset (or clear,\n"
    "as llamafactory-cli chat reads it) starts a new conversation, /exit (or exit) leaves; Ctrl-C\n"
    "stops the current answer. A thinking model's reasoning (Qwen3's <think> block) is shown after\n"
    "'reasoning:', dimmed on a terminal, and its answer after 'answer:'. An answer cut at its length\n"
    "limit is followed by a line saying so and what raises the limit (by default an answer gets up\n"
    "to 2048 new tokens, fewer where the context ends first).\n";

FlagTable flag_table() {
  return generation_table({.command = "chat",
                           .description = kDescription,
                           .groups = {{"Conversation",
                                       {{.name = "--system",
                                         .value = "TEXT",
                                         .help = "a system prompt put ahead of every conversation",
                                         .aliases = {"--default_system"}}}}}});
}

// Opens and closes a turn of several lines.
constexpr std::string_view kBlockDelimiter = R"(""")";

// While rank 0 waits for the user, the other ranks wait in a collective: well inside its timeout.
constexpr std::chrono::seconds kKeepAliveInterval{60};

std::atomic<bool> interrupted{false};

extern "C" void on_interrupt(int) { interrupted = true; }

// SIGINT sets `interrupted` while an answer is written, and is back to its default after.
class InterruptScope {
 public:
  InterruptScope() {
    interrupted = false;
    previous_ = std::signal(SIGINT, on_interrupt);
  }
  ~InterruptScope() { std::signal(SIGINT, previous_); }

 private:
  void (*previous_)(int);
};

// What came of a turn: the answer's new tokens, and a line for the user when the answer was
// cut at its length limit or the conversation has no room left for one.
struct ChatAnswer {
  std::vector<std::int64_t> ids;
  std::string note;
  bool no_room = false;  // nothing was generated: the conversation fills the context
};

// One prompt's answer: its new tokens, each streamed through `sink`, stopping early once
// `cancelled` says so.
using Answer = std::function<ChatAnswer(const std::vector<std::int64_t>& prompt, const infer::TokenSink& sink,
                                        const std::function<bool()>& cancelled)>;

// The terminal's side of the chat: tokenizer, template and history.
class Conversation {
 public:
  Conversation(const Flags& flags, const std::string& dir)
      : tokenizer_(models::load_tokenizer(dir)),
        template_(chat_template_from(flags, dir)),
        system_(flags.text("--system")) {
    reset();
  }

  const models::Tokenizer& tokenizer() const { return *tokenizer_; }
  const models::ChatTemplate* chat_template() const { return template_.get(); }

  void reset() {
    history_.clear();
    if (!system_.empty()) history_.push_back({"system", system_});
  }

  // Streams the answer to `question` and keeps both in the history.
  void answer(const std::string& question, const Answer& generate) {
    history_.push_back({"user", question});
    models::EncodedConversation prompt = template_->encode(*tokenizer_, history_, /*add_generation_prompt=*/true);
    models::StreamDecoder stream(*tokenizer_, /*skip_special_tokens=*/true);
    // A generation prompt that opens the think block (Qwen3's Thinking-2507, QwQ) starts the answer in it.
    const bool in_reasoning = models::prompt_opens_think(template_->render(history_, /*add_generation_prompt=*/true));
    models::ReasoningPrinter printer(std::cout, isatty(STDOUT_FILENO) == 1 && std::getenv("NO_COLOR") == nullptr,
                                     in_reasoning);
    std::string text;
    auto print = [&](std::size_t, std::int64_t token) {
      std::string piece = stream.put(token);
      text += piece;
      printer.put(piece);
    };
    ChatAnswer answer;
    {
      InterruptScope scope;
      answer = generate({prompt.ids.begin(), prompt.ids.end()}, print, [] { return interrupted.load(); });
      const std::string rest = stream.finish();
      text += rest;
      printer.put(rest);
      printer.finish();
      if (interrupted) std::cout << " [stopped]";
    }
    std::cout << "\n";
    if (!interrupted && !answer.note.empty()) std::cout << answer.note << "\n";
    if (answer.no_room) {
      history_.pop_back();  // the question was never answered: leave it out of the next turn's prompt
      return;
    }
    history_.push_back({"assistant", text});
  }

 private:
  std::unique_ptr<models::Tokenizer> tokenizer_;
  std::unique_ptr<models::ChatTemplate> template_;
  std::string system_;
  std::vector<models::ChatMessage> history_;
};

using LineReader = std::function<std::optional<std::string>()>;

bool is_block_delimiter(std::string_view line) {
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
  return line == kBlockDelimiter;
}

// One turn: a line, or the lines between two delimiter lines joined by newlines (the end of
// the input also closes a block).
std::optional<std::string> read_turn(const LineReader& read_line) {
  std::optional<std::string> line = read_line();
  if (!line || !is_block_delimiter(*line)) return line;
  const bool prompts = isatty(STDIN_FILENO) == 1;
  std::string block;
  for (bool first = true;; first = false) {
    if (prompts) std::cout << "...> " << std::flush;
    line = read_line();
    if (!line || is_block_delimiter(*line)) return block;
    block += (first ? "" : "\n") + *line;
  }
}

// A turn that is one of the chat's commands, written as zerotune writes it or as
// llamafactory-cli chat reads it (`exit`, `clear`, surrounding spaces ignored), so a
// LLaMA-Factory user's habit works.
bool is_command(const std::string& turn, std::string_view ours, std::string_view llama_factory) {
  const std::size_t first = turn.find_first_not_of(" \t"), last = turn.find_last_not_of(" \t");
  const std::string_view word =
      first == std::string::npos ? std::string_view() : std::string_view(turn).substr(first, last - first + 1);
  return word == ours || word == llama_factory;
}

// Turns from `read_line` until /exit or the end of input.
void converse(Conversation& conversation, const LineReader& read_line, const Answer& generate) {
  std::cerr << "chat: /reset (or clear) starts over, /exit (or exit) leaves, Ctrl-C stops an answer; a line of \"\"\" "
               "starts a turn of several lines and another ends it\n";
  while (true) {
    std::cout << "user> " << std::flush;
    const std::optional<std::string> line = read_turn(read_line);
    if (!line || is_command(*line, "/exit", "exit")) break;
    if (is_command(*line, "/reset", "clear")) {
      conversation.reset();
      std::cout << "(history cleared)\n";
      continue;
    }
    if (line->empty()) continue;
    std::cout << "assistant> " << std::flush;
    conversation.answer(*line, generate);
  }
}

// Generates the answer to `prompt` through `run`, its length fitted to the room the
// conversation leaves, and says so when the answer is cut or there is no room.
ChatAnswer answer_turn(const Flags& flags, const models::CausalLM& model, const models::GenerationOptions& options,
                       const std::vector<std::int64_t>& prompt,
                       const std::function<std::vector<std::int64_t>(const models::GenerationOptions&)>& run) {
  const models::FittedAnswer fitted = answer_options(options, model, prompt.size());
  ChatAnswer answer;
  if (fitted.limit == models::AnswerLimit::kContext && fitted.options.max_new_tokens == 0) {
    answer.no_room = true;
    answer.note = "[no room for an answer: the conversation (" + std::to_string(prompt.size()) +
                  " tokens) fills the model's context of " + std::to_string(models::context_length(model.config())) +
                  " tokens; /reset starts a new conversation]";
    return answer;
  }
  answer.ids = run(fitted.options);
  if (cut_at_limit(fitted.options, answer.ids))
    answer.note = "[answer cut at " + std::to_string(answer.ids.size()) +
                  " new tokens: " + limit_reason(fitted, flags, model) +
                  (fitted.limit == models::AnswerLimit::kContext ? "; /reset starts a new conversation]" : "]");
  return answer;
}

int chat_on_one_device(Flags& flags) {
  const std::string dir = flags["--model_name_or_path"];
  Conversation conversation(flags, dir);
  const models::CausalLM model = load_generation_model(flags);
  const models::GenerationOptions options =
      generation_options_from(flags, dir, model, conversation.tokenizer(), conversation.chat_template());
  const infer::Engine engine(model, engine_options_from(flags));
  auto read_line = []() -> std::optional<std::string> {
    std::string line;
    if (!std::getline(std::cin, line)) return std::nullopt;
    return line;
  };
  converse(conversation, read_line, [&](const auto& prompt, const auto& sink, const auto& cancelled) {
    return answer_turn(flags, model, options, prompt, [&](const models::GenerationOptions& fitted) {
      return engine.run({{prompt, fitted}}, sink, cancelled)[0];
    });
  });
  return 0;
}

// Rank 0 talks with the terminal; every other rank generates what rank 0 sends it.
void chat_on_rank(const Flags& flags, Conversation& conversation, infer::TensorParallelRank& rank) {
  const models::GenerationOptions options = generation_options_from(
      flags, flags.at("--model_name_or_path"), rank.shard, conversation.tokenizer(), conversation.chat_template());
  infer::TensorParallelEngine engine(rank.shard, rank.comm, tensor_parallel_options_from(flags, rank));
  TurnBroadcast turns(rank.comm, rank.shard.device());
  if (rank.comm.rank() != 0) {
    // Rank 0 acts on Ctrl-C for all (a launcher forwards it to every process).
    if (infer::launched_as_ranks()) std::signal(SIGINT, SIG_IGN);
    // The same fitted length as rank 0's: the same prompt on the same model.
    while (std::optional<std::vector<std::int64_t>> prompt = turns.receive()) {
      const models::FittedAnswer fitted = answer_options(options, rank.shard, prompt->size());
      if (fitted.limit != models::AnswerLimit::kContext || fitted.options.max_new_tokens > 0)
        engine.run({{*prompt, fitted.options}});
    }
    return;
  }
  // A rank of `zerotune launch` runs in a process group of its own, which the terminal stops
  // when it reads: say so rather than hang.
  ZT_REQUIRE(!isatty(STDIN_FILENO) || tcgetpgrp(STDIN_FILENO) == getpgrp(),
             "chat --tp under this launcher cannot read the terminal (rank 0 is not in its foreground process "
             "group): pipe the turns in (zerotune launch ... zerotune chat ... < turns.txt), start the ranks with "
             "torchrun, or leave out the launcher to run the ranks in-process");
  StdinLines lines;
  auto read_line = [&] { return lines.next(kKeepAliveInterval, [&] { turns.send_keep_alive(); }); };
  converse(conversation, read_line, [&](const auto& prompt, const auto& sink, const auto& cancelled) {
    turns.send_turn(prompt);
    return answer_turn(flags, rank.shard, options, prompt, [&](const models::GenerationOptions& fitted) {
      return engine.run({{prompt, fitted}}, sink, cancelled)[0];
    });
  });
  turns.send_end();
}

int chat(Flags& flags) {
  if (tensor_parallel_size(flags) == 1) return chat_on_one_device(flags);
  Conversation conversation(flags, flags["--model_name_or_path"]);
  run_tensor_parallel_from_flags(flags,
                                 [&](infer::TensorParallelRank& rank) { chat_on_rank(flags, conversation, rank); });
  return 0;
}

int run_chat(const std::vector<std::string>& args) { return run_generation_command(args, flag_table(), chat); }

const Registration registration{
    {"chat", "talk with a model on the terminal (streaming, multi-turn)", run_chat, flag_table}};

}  // namespace
}  // namespace zt::cli
