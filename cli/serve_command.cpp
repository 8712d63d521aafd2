// `zerotune serve`: the model behind an OpenAI-compatible HTTP API (serve/), every request
// joining one continuously batched engine. Built only with cpp-httplib; without it the
// command says so.
#include <algorithm>
#include <csignal>
#include <filesystem>

#include "cli/command.h"
#include "cli/generation_flags.h"
#include "runtime/error.h"
#include "runtime/usage_error.h"

#if ZT_HAVE_HTTPLIB
#include "infer/tensor_parallel_engine.h"
#include "infer/tensor_parallel_ranks.h"
#include "serve/server.h"
#endif

namespace zt::cli {
namespace {

constexpr const char* kDescription =
    "Serves the model over the OpenAI API: POST /v1/chat/completions, POST /v1/completions (both\n"
    "streaming with \"stream\": true), GET /v1/models, GET /health. Ctrl-C stops accepting, answers\n"
    "the requests in flight and exits. The sampling flags set the defaults of requests that do not\n"
    "say (max_new_tokens: the rest of the context unless given). See docs/SERVE.md.\n";

FlagTable flag_table() {
  return generation_table(
      {.command = "serve",
       .description = kDescription,
       .groups = {{"Server",
                   {{.name = "--host",
                     .value = "ADDRESS",
                     .help = "the address to listen on (127.0.0.1: this machine only)",
                     .default_value = "127.0.0.1"},
                    {.name = "--port",
                     .kind = FlagKind::kInteger,
                     .value = "N",
                     .help = "the port (0 picks a free one, printed)",
                     .default_value = "8000"},
                    {.name = "--api_key",
                     .value = "KEY",
                     .help = "require 'Authorization: Bearer KEY' on every /v1 "
                             "request"},
                    {.name = "--served_model_name",
                     .value = "NAME",
                     .help = "the model id clients send (default: the model folder's name)"},
                    {.name = "--max_model_len",
                     .kind = FlagKind::kInteger,
                     .value = "N",
                     .help = "the most prompt and new tokens of one request (default: the model's context)"},
                    {.name = "--reasoning_parser",
                     .kind = FlagKind::kChoice,
                     .value = "NAME",
                     .help = "chat answers whose <think> block is sent apart as reasoning_content: auto (those of "
                             "a thinking template: qwen3, qwen3_thinking, qwq, DeepSeek-R1-Distill's), none, or vLLM's "
                             "names qwen3 and "
                             "deepseek_r1 (every chat answer)",
                     .default_value = "auto",
                     .choices = {"auto", "none", "qwen3", "deepseek_r1"}},
                    {.name = "--allowed_origins",
                     .kind = FlagKind::kList,
                     .value = "LIST",
                     .help = "CORS: origins browsers may call from, a JSON list as vLLM's or words joined by commas",
                     .default_value = "[\"*\"]"},
                    {.name = "--allowed_methods",
                     .kind = FlagKind::kList,
                     .value = "LIST",
                     .help = "CORS: methods allowed to other origins",
                     .default_value = "[\"*\"]"},
                    {.name = "--allowed_headers",
                     .kind = FlagKind::kList,
                     .value = "LIST",
                     .help = "CORS: request headers allowed to other origins",
                     .default_value = "[\"*\"]"},
                    {.name = "--allow_credentials",
                     .kind = FlagKind::kBool,
                     .help = "CORS: allow credentials (cookies, authorization) from other origins",
                     .default_value = "false"}}}}});
}

#if ZT_HAVE_HTTPLIB

std::string served_model_name(const Flags& flags) {
  if (flags.count("--served_model_name")) return flags.at("--served_model_name");
  const std::filesystem::path dir = std::filesystem::path(flags.at("--model_name_or_path")).lexically_normal();
  return (dir.has_filename() ? dir.filename() : dir.parent_path().filename()).string();
}

serve::ServerOptions server_options(const Flags& flags, const infer::EngineOptions& engine) {
  serve::ServerOptions options;
  options.host = flags.text("--host");  // as given, else the table's default
  const std::int64_t port = flags.integer("--port");
  ZT_REQUIRE_USAGE(port >= 0 && port <= 65535, "--port must be from 0 to 65535, got " + flags.text("--port"));
  options.port = static_cast<int>(port);
  if (flags.count("--api_key")) options.api_key = flags.at("--api_key");
  options.http_threads = static_cast<std::size_t>(2 * engine.max_batch + 8);
  for (const auto& [flag, list] : {std::pair{"--allowed_origins", &options.cors.allowed_origins},
                                   {"--allowed_methods", &options.cors.allowed_methods},
                                   {"--allowed_headers", &options.cors.allowed_headers}})
    if (flags.count(flag)) *list = serve::cors_list(flags.at(flag), flag);
  options.cors.allow_credentials = flags.is_true("--allow_credentials");
  return options;
}

serve::ReasoningParser reasoning_parser(const Flags& flags) {
  const std::string name = flags.text("--reasoning_parser");
  if (name == "auto") return serve::ReasoningParser::kAuto;
  return name == "none" ? serve::ReasoningParser::kNone : serve::ReasoningParser::kAlways;
}

// The prompt and new tokens one request may have: the context after any prefix, or less.
std::int64_t max_request_tokens(const Flags& flags, const models::CausalLM& model) {
  const std::int64_t context = models::context_length(model.config());
  std::int64_t limit = context;
  if (flags.count("--max_model_len")) {
    limit = flags.integer("--max_model_len");
    ZT_REQUIRE(limit >= 2 && (context == 0 || limit <= context),
               "--max_model_len must be from 2 to the model's context of " + std::to_string(context));
  }
  ZT_REQUIRE(limit > 0, "the model's config.json gives no context length: set --max_model_len");
  return limit;
}

// What every rank's model is served with: the tokenizer and chat template rank 0 uses.
struct ServedFiles {
  std::string dir;
  std::unique_ptr<models::Tokenizer> tokenizer;
  std::unique_ptr<models::ChatTemplate> chat_template;
  std::unique_ptr<models::ChatTemplate> other_thinking_template;  // enable_thinking the other way
};

// The HTTP server over `engine` until SIGINT or SIGTERM drains it.
void serve_with(const Flags& flags, const ServedFiles& files, const models::CausalLM& model, serve::EngineLoop& engine,
                const infer::EngineOptions& engine_options) {
  serve::ServedModel served{
      .name = served_model_name(flags),
      .tokenizer = files.tokenizer.get(),
      .chat_template = files.chat_template.get(),
      .enable_thinking = enable_thinking_from(flags),
      .other_thinking_template = files.other_thinking_template.get(),
      .defaults = generation_options_from(flags, files.dir, model, *files.tokenizer, files.chat_template.get()),
      .limits_new_tokens = flags.count("--max_new_tokens") > 0,
      .max_request_tokens = engine.max_request_tokens() - engine.first_position(),
      .vocab_size = std::min(files.tokenizer->vocab_size(), model.config().vocab_size),
      .reasoning_parser = reasoning_parser(flags)};
  serve::run_server(served, engine, server_options(flags, engine_options));
}

// --tp N: rank 0 serves HTTP over its engine loop; every other rank follows its steps.
void serve_on_rank(const Flags& flags, const ServedFiles& files, infer::TensorParallelRank& rank) {
  const infer::PartialSumsOverRanks partial_sums(rank.shard, rank.comm);
  const infer::EngineOptions engine_options = engine_options_from(flags);
  const serve::LoopRanks ranks{.comm = &rank.comm, .ranks_per_device = rank.ranks_per_device};
  const std::int64_t limit = max_request_tokens(flags, rank.shard);
  if (rank.comm.rank() != 0) {
    // Rank 0 drains on Ctrl-C or SIGTERM and then ends every rank (a launcher forwards the
    // signal to every process).
    if (infer::launched_as_ranks()) {
      std::signal(SIGINT, SIG_IGN);
      std::signal(SIGTERM, SIG_IGN);
    }
    serve::follow_engine_loop(rank.shard, engine_options, limit, ranks);
    return;
  }
  serve::EngineLoop engine(rank.shard, engine_options, limit, ranks);
  serve_with(flags, files, rank.shard, engine, engine_options);
}

int serve_model(Flags& flags) {
  ServedFiles files{
      .dir = flags.at("--model_name_or_path"), .tokenizer = {}, .chat_template = {}, .other_thinking_template = {}};
  files.tokenizer = models::load_tokenizer(files.dir);
  files.chat_template = chat_template_from(flags, files.dir);
  files.other_thinking_template = chat_template_from(flags, files.dir, !enable_thinking_from(flags));
  if (tensor_parallel_size(flags) > 1) {
    run_tensor_parallel_from_flags(flags, [&](infer::TensorParallelRank& rank) { serve_on_rank(flags, files, rank); });
    return 0;
  }
  const models::CausalLM model = load_generation_model(flags);
  const infer::EngineOptions engine_options = engine_options_from(flags);
  serve::EngineLoop engine(model, engine_options, max_request_tokens(flags, model));
  serve_with(flags, files, model, engine, engine_options);
  return 0;
}

#else

int serve_model(Flags&) {
  fail(
      "this zerotune was built without the server (cpp-httplib was not found): install libcpp-httplib-dev "
      "(scripts/setup.sh does) and build again");
}

#endif

int run_serve(const std::vector<std::string>& args) { return run_generation_command(args, flag_table(), serve_model); }

const Registration registration{
    {"serve", "serve a model over the OpenAI API (continuous batching)", run_serve, flag_table}};

}  // namespace
}  // namespace zt::cli
