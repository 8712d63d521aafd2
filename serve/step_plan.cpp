#include "serve/step_plan.h"

#include <nlohmann/json.hpp>

#include "distributed/integer_collectives.h"

namespace zt::serve {
namespace {

using nlohmann::json;

// The header of each message: what follows.
constexpr std::int64_t kNothing = 0;  // an empty plan
constexpr std::int64_t kPlan = 1;     // a plan, as text
constexpr std::int64_t kEnd = -1;     // the loop has ended

json options_json(const models::GenerationOptions& o) {
  return {{"max_new_tokens", o.max_new_tokens},
          {"min_new_tokens", o.min_new_tokens},
          {"do_sample", o.do_sample},
          {"temperature", o.temperature},
          {"top_k", o.top_k},
          {"top_p", o.top_p},
          {"min_p", o.min_p},
          {"repetition_penalty", o.repetition_penalty},
          {"seed", o.seed},
          {"eos_token_ids", o.eos_token_ids}};
}

models::GenerationOptions options_from(const json& j) {
  return {.max_new_tokens = j.at("max_new_tokens"),
          .min_new_tokens = j.at("min_new_tokens"),
          .do_sample = j.at("do_sample"),
          .temperature = j.at("temperature"),
          .top_k = j.at("top_k"),
          .top_p = j.at("top_p"),
          .min_p = j.at("min_p"),
          .repetition_penalty = j.at("repetition_penalty"),
          .seed = j.at("seed"),
          .eos_token_ids = j.at("eos_token_ids")};
}

}  // namespace

std::string encode_step_plan(const StepPlan& plan) {
  json added = json::array();
  for (const auto& [id, request] : plan.added)
    added.push_back({{"id", id}, {"prompt", request.prompt}, {"options", options_json(request.options)}});
  // Doubles are written with 17 significant digits, which read back to the same value.
  return json{{"added", added}, {"cancelled", plan.cancelled}}.dump();
}

StepPlan decode_step_plan(const std::string& text) {
  const json j = json::parse(text);
  StepPlan plan;
  for (const json& a : j.at("added"))
    plan.added.emplace_back(
        a.at("id").get<std::size_t>(),
        infer::GenerationRequest{a.at("prompt").get<std::vector<std::int64_t>>(), options_from(a.at("options"))});
  plan.cancelled = j.at("cancelled").get<std::vector<std::size_t>>();
  return plan;
}

void apply_step_plan(StepPlan plan, infer::ContinuousBatch& batch,
                     const std::function<void(std::size_t id, const std::string& why)>& refused) {
  for (auto& [id, request] : plan.added) {
    try {
      batch.add(id, std::move(request));
    } catch (const std::exception& e) {
      refused(id, e.what());
    }
  }
  for (std::size_t id : plan.cancelled) batch.cancel(id);
}

void StepBroadcast::send(const StepPlan& plan) {
  if (plan.empty()) {
    distributed::broadcast_integer(comm_, kNothing, 0, device_);
    return;
  }
  distributed::broadcast_integer(comm_, kPlan, 0, device_);
  distributed::broadcast_text(comm_, encode_step_plan(plan), 0, device_);
}

void StepBroadcast::send_end() { distributed::broadcast_integer(comm_, kEnd, 0, device_); }

std::optional<StepPlan> StepBroadcast::receive() {
  const std::int64_t header = distributed::broadcast_integer(comm_, kNothing, 0, device_);
  if (header == kEnd) return std::nullopt;
  if (header == kNothing) return StepPlan{};
  return decode_step_plan(distributed::broadcast_text(comm_, "", 0, device_));
}

}  // namespace zt::serve
