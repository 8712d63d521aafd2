#include "serve/generation_route.h"

#include <algorithm>
#include <chrono>
#include <iomanip>

#include "runtime/log.h"
#include "serve/answer_parts.h"
#include "serve/answer_text.h"
#include "serve/api_error.h"
#include "serve/openai_format.h"

namespace zt::serve {
namespace {

using Clock = std::chrono::steady_clock;

// Counts an answer in RouteContext::active for as long as it lives; none starts once the
// server drains.
class Active {
 public:
  explicit Active(RouteContext& context) : context_(context) {
    ++context_.active;  // before the check: a drain that began sees this answer or refuses it
    if (context_.draining) {
      --context_.active;
      throw ApiError(503, "the server is shutting down", "server_error");
    }
  }
  ~Active() { --context_.active; }
  Active(const Active&) = delete;
  Active& operator=(const Active&) = delete;

 private:
  RouteContext& context_;
};

// One request in flight: its place in the engine, its text so far, and what the log says.
struct Answer {
  Answer(RouteContext& context, const ApiRequest& request, infer::GenerationRequest engine_request,
         std::optional<bool> reasoning_start)
      : active(context),
        context(context),
        format(!request.messages.empty(), context.model.name, request.include_usage),
        parts(format, reasoning_start, request.tools.parse_calls, request.tools.parallel_tool_calls ? SIZE_MAX : 1),
        text(*context.model.tokenizer, request.sampling.stop, request.sampling.include_stop_str_in_output,
             request.sampling.skip_special_tokens),
        include_stop(request.sampling.include_stop_str_in_output),
        eos(engine_request.options.eos_token_ids),
        usage{.prompt_tokens = static_cast<std::int64_t>(engine_request.prompt.size())},
        submitted(context.engine.submit(std::move(engine_request))) {}

  // The text of the next tokens; finished once the engine ended the request or a stop
  // string did (the engine is then told to drop it).
  std::string next() {
    TokenQueue::Update update = submitted.tokens->next();
    if (!update.error.empty()) throw ApiError(500, "generation failed: " + update.error, "server_error");
    std::string piece;
    for (std::int64_t token : update.tokens) {
      if (usage.completion_tokens++ == 0) first_token = Clock::now();
      last_token = token;
      // An eos or stop_token_ids token ends the answer (the engine bars them before min_tokens,
      // and the finish may come in a later update) and adds no text unless
      // include_stop_str_in_output, as in vLLM: a stop token of plain text would otherwise end
      // the answer with the very text that was asked to stop it.
      if (include_stop || std::find(eos.begin(), eos.end(), token) == eos.end()) piece += text.put(token);
    }
    finished = update.finished || text.stopped();
    if (text.stopped() && !update.finished) context.engine.cancel(submitted.id);
    if (finished) piece += text.finish();
    return piece;
  }

  std::string finish_reason() const {
    if (parts.called()) return "tool_calls";
    const bool at_eos = std::find(eos.begin(), eos.end(), last_token) != eos.end();
    return text.stopped() || (usage.completion_tokens > 0 && at_eos) ? "stop" : "length";
  }

  // What a failure while answering becomes: the request leaves the engine (if still there),
  // the log says why, and the client gets the ApiError (a 500 unless it already is one).
  ApiError failure(const std::exception& error) {
    failed = true;
    context.engine.cancel(submitted.id);
    ZT_ERROR("serve: " << format.id() << " failed: " << error.what());
    log("failed");
    if (const auto* api_error = dynamic_cast<const ApiError*>(&error)) return *api_error;
    return ApiError(500, std::string("generation failed: ") + error.what(), "server_error");
  }

  void log(const char* outcome) const {
    const double total = std::chrono::duration<double>(Clock::now() - started).count();
    const double first = std::chrono::duration<double>(first_token - started).count();
    const double decode = total - first;
    ZT_INFO("serve: " << format.id() << " " << outcome << ": " << usage.prompt_tokens << " tokens in, "
                      << usage.completion_tokens << " out, first token after " << std::fixed << std::setprecision(3)
                      << (usage.completion_tokens > 0 ? first : 0.0) << " s, " << std::setprecision(1)
                      << (usage.completion_tokens > 1 && decode > 0 ? (usage.completion_tokens - 1) / decode : 0.0)
                      << " tokens/s");
  }

  Active active;
  RouteContext& context;
  ResponseFormat format;
  AnswerParts parts;  // the text as the response carries it
  AnswerText text;
  bool include_stop = false;  // include_stop_str_in_output
  std::vector<std::int64_t> eos;
  Usage usage;
  EngineLoop::Submitted submitted;
  Clock::time_point started = Clock::now(), first_token = started;
  std::int64_t last_token = -1;
  bool finished = false;
  bool failed = false;  // answered with an error
};

void respond_whole(Answer& answer, httplib::Response& response) {
  std::string text;
  try {
    while (!answer.finished) text += answer.next();
  } catch (const std::exception& error) {
    throw answer.failure(error);
  }
  answer.log("done");
  const nlohmann::json body = answer.parts.whole(text, answer.finish_reason(), answer.usage);
  response.set_content(json_text(body), "application/json");
}

// Server-sent events: the role first (chat), then a chunk per piece of text (or of tool calls,
// when the request offers tools; reasoning split off comes as its own chunks) as it comes, the finish reason, the usage
// when asked, and [DONE]. Each call of the provider sends what the next tokens bring; a write that fails means the
// client went away. A failure once the stream has begun (its status is already 200) is sent as an event holding the
// OpenAI error body, then [DONE]: nothing may leave the provider, which cpp-httplib calls outside the route's handler
// (an exception there ends the process).
void respond_streamed(std::shared_ptr<Answer> answer, bool chat, httplib::Response& response) {
  auto next_events = [answer, chat, role_sent = !chat](httplib::DataSink& sink) mutable {
    auto send = [&](const nlohmann::json& chunk) {
      const std::string event = server_sent_event(chunk);
      return sink.write(event.data(), event.size());
    };
    if (!role_sent && !(role_sent = send(answer->format.role_chunk()))) return false;
    const std::string piece = answer->next();
    for (const nlohmann::json& chunk : answer->parts.chunks(piece, answer->finished))
      if (!send(chunk)) return false;
    if (!answer->finished) return true;
    if (!send(answer->format.finish_chunk(answer->finish_reason()))) return false;
    if (answer->format.include_usage() && !send(answer->format.usage_chunk(answer->usage))) return false;
    if (!sink.write(kServerSentDone, std::char_traits<char>::length(kServerSentDone))) return false;
    sink.done();
    return true;
  };
  auto provider = [answer, next_events = std::move(next_events)](std::size_t, httplib::DataSink& sink) mutable {
    try {
      return next_events(sink);
    } catch (const std::exception& error) {
      const std::string events = server_sent_event(answer->failure(error).body()) + kServerSentDone;
      if (!sink.write(events.data(), events.size())) return false;
      sink.done();
      return true;
    }
  };
  // Runs when the response is done with, sent or not: an unfinished answer's client left.
  auto released = [answer](bool) {
    if (answer->failed) return;  // logged when it failed
    if (answer->finished) return answer->log("done");
    answer->context.engine.cancel(answer->submitted.id);
    answer->log("cancelled (the client went away)");
  };
  response.set_header("Cache-Control", "no-cache");
  response.set_chunked_content_provider("text/event-stream", std::move(provider), std::move(released));
}

}  // namespace

void respond_with_generation(RouteContext& context, const ApiRequest& request, httplib::Response& response) {
  if (!request.model.empty() && request.model != context.model.name)
    throw model_not_found(request.model, context.model.name);
  infer::GenerationRequest engine_request = serve::engine_request(request, context.model);
  auto answer =
      std::make_shared<Answer>(context, request, std::move(engine_request), reasoning_start(request, context.model));
  if (request.stream)
    respond_streamed(answer, !request.messages.empty(), response);
  else
    respond_whole(*answer, response);
}

}  // namespace zt::serve
