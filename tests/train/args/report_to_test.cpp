// --report_to and --logging_dir: tensorboard (and all) is honoured, HF's other integrations
// are warned about by name, names HF does not know are refused as HF refuses them, in every
// form the value takes (flag words, commas, a file's list); training_args.json records them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/common/op_test_util.h"
#include "tests/common/training_arguments_test_util.h"
#include "train/args/report_to.h"
#include "train/args/training_arguments.h"

namespace zt::train {
namespace {

using nlohmann::json;

TrainingArguments parse(const std::vector<std::string>& extra) { return testing::parse_minimal(extra); }

using testing::joined;

TEST(ReportTo, NoneIsTheDefaultAndTensorboardOrAllTurnsTheEventFilesOn) {
  EXPECT_EQ(parse({}).report_to, "none");  // transformers 5's default
  EXPECT_FALSE(reports_to_tensorboard(parse({})));
  EXPECT_FALSE(reports_to_tensorboard(parse({"--report_to", "none"})));
  for (const char* value : {"tensorboard", "all"}) {
    const TrainingArguments args = parse({"--report_to", value});
    EXPECT_TRUE(reports_to_tensorboard(args)) << value;
    EXPECT_TRUE(args.warnings.empty()) << joined(args.warnings);
  }
  EXPECT_EQ(report_to_integrations("all"), std::vector<std::string>{"tensorboard"});
  EXPECT_TRUE(report_to_integrations("none").empty());
}

TEST(ReportTo, OtherIntegrationsAreWarnedAboutByNameInOneLine) {
  for (const std::vector<std::string>& given : std::vector<std::vector<std::string>>{
           {"--report_to", "wandb", "tensorboard", "mlflow"}, {"--report_to", "wandb,tensorboard,mlflow"}}) {
    const TrainingArguments args = parse(given);
    EXPECT_EQ(args.report_to, "wandb,tensorboard,mlflow");
    EXPECT_TRUE(reports_to_tensorboard(args));
    ASSERT_EQ(args.warnings.size(), 1u) << joined(args.warnings);
    testing::expect_mentions(args.warnings[0], {"--report_to wandb, mlflow has no effect in zerotune",
                                                "it does not report to Weights & Biases, MLflow",
                                                "--report_to tensorboard writes TensorBoard event files"});
  }
  const TrainingArguments comet = parse({"--report_to", "comet_ml"});
  EXPECT_FALSE(reports_to_tensorboard(comet));
  testing::expect_mentions(joined(comet.warnings), {"--report_to comet_ml has no effect", "Comet"});
}

TEST(ReportTo, UnknownNamesAndNoneOrAllInAListAreRefused) {
  testing::expect_mentions(testing::error_of([] {
                             parse({"--report_to", "tensorbord"});
                           }),
                           {"--report_to tensorbord is not an integration HF knows", "tensorboard", "wandb"});
  testing::expect_mentions(testing::error_of([] {
                             parse({"--report_to", "none", "wandb"});
                           }),
                           {"--report_to none stands alone"});
}

TEST(ReportTo, AFilesListIsTheSameList) {
  const TrainingArguments args = parse_training_arguments_text(
      "model_name_or_path: m\noutput_dir: o\ntrain_file: t\nreport_to: [wandb, tensorboard]\n",
      ArgumentsFileFormat::kYaml, "args.yaml");
  EXPECT_EQ(args.report_to, "wandb,tensorboard");
  EXPECT_TRUE(reports_to_tensorboard(args));
  const TrainingArguments json_file = parse_training_arguments_text(
      R"({"model_name_or_path": "m", "output_dir": "o", "train_file": "t", "report_to": "tensorboard"})",
      ArgumentsFileFormat::kJson, "args.json");
  EXPECT_TRUE(reports_to_tensorboard(json_file));
}

TEST(ReportTo, TrainingArgsJsonRecordsOneNameAsTextAndSeveralAsAList) {
  EXPECT_EQ(json::parse(training_arguments_json(parse({"--report_to", "tensorboard"})))["report_to"], "tensorboard");
  EXPECT_EQ(json::parse(training_arguments_json(parse({"--report_to", "wandb", "tensorboard"})))["report_to"],
            json({"wandb", "tensorboard"}));
  EXPECT_EQ(
      json::parse(training_arguments_json(parse({"--logging_dir", "tb", "--report_to", "tensorboard"})))["logging_dir"],
      "tb");
}

TEST(LoggingDir, WithoutTensorboardNothingReadsItAndItSaysSo) {
  const TrainingArguments args = parse({"--logging_dir", "tb"});
  ASSERT_EQ(args.warnings.size(), 1u) << joined(args.warnings);
  testing::expect_mentions(args.warnings[0], {"--logging_dir tb has no effect without --report_to tensorboard"});
  EXPECT_TRUE(parse({"--logging_dir", "tb", "--report_to", "tensorboard"}).warnings.empty());
}

}  // namespace
}  // namespace zt::train
