#include "train/args/report_to.h"

#include <algorithm>
#include <cstring>

#include "runtime/terminal/text_list.h"

namespace zt::train {
namespace {

// transformers' INTEGRATION_TO_CALLBACK (4.40 to 5.x), each with the product it reports to.
struct Integration {
  const char* name;
  const char* product;
};
constexpr Integration kIntegrations[] = {
    {"azure_ml", "Azure ML"}, {"clearml", "ClearML"},        {"codecarbon", "CodeCarbon"},
    {"comet_ml", "Comet"},    {"dagshub", "DagsHub"},        {"dvclive", "DVCLive"},
    {"flyte", "Flyte"},       {"logfire", "Logfire"},        {"mlflow", "MLflow"},
    {"neptune", "Neptune"},   {"swanlab", "SwanLab"},        {"tensorboard", "TensorBoard"},
    {"trackio", "Trackio"},   {"wandb", "Weights & Biases"},
};

const Integration* find_integration(const std::string& name) {
  for (const Integration& integration : kIntegrations)
    if (name == integration.name) return &integration;
  return nullptr;
}

std::vector<std::string> split_names(const std::string& value) {
  std::vector<std::string> names;
  std::string name;
  for (const char c : value + ",") {
    if (c == ',' || c == ' ') {
      if (!name.empty()) names.push_back(name);
      name.clear();
    } else {
      name.push_back(c);
    }
  }
  return names;
}

}  // namespace

std::vector<std::string> report_to_integrations(const std::string& value) {
  const std::vector<std::string> names = split_names(value);
  if (names == std::vector<std::string>{"none"}) return {};
  if (names == std::vector<std::string>{"all"}) return {"tensorboard"};  // the one integration zerotune has
  return names;
}

bool reports_to_tensorboard(const TrainingArguments& args) {
  const std::vector<std::string> names = report_to_integrations(args.report_to);
  return std::find(names.begin(), names.end(), "tensorboard") != names.end();
}

void judge_report_to(TrainingArguments& args, std::vector<std::string>& errors) {
  const std::vector<std::string> names = report_to_integrations(args.report_to);
  std::vector<std::string> ignored, products;
  for (const std::string& name : names) {
    const Integration* integration = find_integration(name);
    if (name == "none" || name == "all") {
      errors.push_back("--report_to " + name + " stands alone: it cannot be listed with other integrations (" +
                       args.report_to + ")");
    } else if (integration == nullptr) {
      std::vector<std::string> known;
      for (const Integration& each : kIntegrations) known.push_back(each.name);
      errors.push_back("--report_to " + name + " is not an integration HF knows; choose from none, all, " +
                       join_list(known));
    } else if (std::strcmp(integration->name, "tensorboard") != 0 &&
               std::find(ignored.begin(), ignored.end(), name) == ignored.end()) {
      ignored.push_back(name);
      products.push_back(integration->product);
    }
  }
  if (!ignored.empty())
    args.warnings.push_back("--report_to " + join_list(ignored) + " has no effect in zerotune: it does not report to " +
                            join_list(products) +
                            "; every log entry is in output_dir/train_log.jsonl, and --report_to tensorboard writes "
                            "TensorBoard event files");
  if (args.was_given("logging_dir") && !reports_to_tensorboard(args))
    args.warnings.push_back("--logging_dir " + args.logging_dir +
                            " has no effect without --report_to tensorboard: only TensorBoard's event files go there");
}

TensorBoardRequest tensorboard_request(const TrainingArguments& args, std::optional<std::string> deepspeed_folder) {
  return {.report_to_tensorboard = reports_to_tensorboard(args),
          .logging_dir = args.logging_dir,
          .output_dir = args.output_dir,
          .deepspeed_folder = std::move(deepspeed_folder)};
}

}  // namespace zt::train
