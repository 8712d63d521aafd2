// `zerotune chat`: an interactive conversation with a model on the terminal. Each answer
// streams as it is generated; the history goes back in with every turn through the model's
// chat template. /reset forgets the history, /exit (or end of input) leaves, and Ctrl-C
// stops the answer being written, not the program.
#include <atomic>
#include <csignal>
#include <iostream>

#include "cli/command.h"
#include "cli/generation_flags.h"
#include "infer/engine.h"
#include "models/stream_decoder.h"
#include "runtime/error.h"

namespace zt::cli {
namespace {

constexpr const char* kUsage =
    "usage: zerotune chat --model_name_or_path DIR [--system TEXT] [--template NAME]\n"
    "                     [sampling flags below] [--adapter_name_or_path ADAPTER] [--ptuning_checkpoint DIR]\n"
    "                     [--device cpu|cuda|cuda:N] [--dtype D]\n\n"
    "Reads your turns from stdin and streams the model's answers. /reset starts a new\n"
    "conversation, /exit leaves; Ctrl-C stops the current answer.\n"
    "  --system   a system prompt put ahead of every conversation\n";

FlagSpec flag_spec() {
  FlagSpec spec{.command = "chat", .value_flags = kModelFlags, .bool_flags = kGenerationBoolFlags,
                .required = {"--model_name_or_path"}};
  spec.value_flags.insert(kGenerationFlags.begin(), kGenerationFlags.end());
  spec.value_flags.insert("--system");
  return spec;
}

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

class Chat {
 public:
  Chat(Flags& flags, const std::string& dir)
      : tokenizer_(models::load_tokenizer(dir)),
        template_(chat_template_from(flags, dir)),
        model_(load_model_from_flags(flags)),
        options_(generation_options_from(flags, dir, model_, *tokenizer_, template_.get())),
        engine_(model_, engine_options_from(flags)),
        system_(flags.count("--system") ? flags["--system"] : "") {
    reset();
  }

  void reset() {
    history_.clear();
    if (!system_.empty()) history_.push_back({"system", system_});
  }

  // Streams the answer to `question` and keeps both in the history.
  void answer(const std::string& question) {
    history_.push_back({"user", question});
    models::EncodedConversation prompt = template_->encode(*tokenizer_, history_, /*add_generation_prompt=*/true);
    models::StreamDecoder stream(*tokenizer_, /*skip_special_tokens=*/true);
    std::string text;
    auto print = [&](std::size_t, std::int64_t token) {
      std::string piece = stream.put(token);
      text += piece;
      std::cout << piece << std::flush;
    };
    {
      InterruptScope scope;
      engine_.run({{{prompt.ids.begin(), prompt.ids.end()}, options_}}, print, [] { return interrupted.load(); });
      if (interrupted) std::cout << " [stopped]";
    }
    text += stream.finish();
    std::cout << "\n";
    history_.push_back({"assistant", text});
  }

 private:
  std::unique_ptr<models::Tokenizer> tokenizer_;
  std::unique_ptr<models::ChatTemplate> template_;
  models::CausalLM model_;
  models::GenerationOptions options_;
  infer::Engine engine_;
  std::string system_;
  std::vector<models::ChatMessage> history_;
};

int chat(Flags& flags) {
  Chat session(flags, flags["--model_name_or_path"]);
  std::cerr << "chat: /reset starts over, /exit leaves, Ctrl-C stops an answer\n";
  std::string line;
  while (true) {
    std::cout << "user> " << std::flush;
    if (!std::getline(std::cin, line) || line == "/exit") break;
    if (line == "/reset") {
      session.reset();
      std::cout << "(history cleared)\n";
      continue;
    }
    if (line.empty()) continue;
    std::cout << "assistant> " << std::flush;
    session.answer(line);
  }
  return 0;
}

int run_chat(const std::vector<std::string>& args) {
  static const std::string usage = std::string(kUsage) + kGenerationUsage;
  return run_with_flags(args, flag_spec(), usage.c_str(), chat);
}

const Registration registration{{"chat", "talk with a model on the terminal (streaming, multi-turn)", run_chat}};

}  // namespace
}  // namespace zt::cli
