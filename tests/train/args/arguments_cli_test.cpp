// `zerotune train args.yaml` as a user runs it: LLaMA-Factory's example file, pointed at the
// shipped tiny model and the test data by flags after the file, trains on the CPU; an option
// zerotune cannot honour stops it with the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/common/process_test_util.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;

const fs::path kSource(ZT_SOURCE_DIR);

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

class ArgumentsCli : public testing::FolderTest {
 protected:
  std::string llama_factory_run(const std::string& extra) {
    return "train " + (kSource / "tests/data/args/llama_factory/qwen3_lora_sft.yaml").string() +
           " --model_name_or_path " + (kSource / "examples/tiny-qwen").string() + " --dataset_dir " +
           (kSource / "tests/data/args/llama_factory/data").string() + " --output_dir " + (dir_ / "out").string() +
           " --template qwen cutoff_len=64 --max_steps 2 --gradient_accumulation_steps 1 --device cpu"
           " --save_strategy no " +
           extra;
  }
};

TEST_F(ArgumentsCli, LlamaFactoryExampleTrains) {
  const testing::CliRun run = testing::run_zerotune(llama_factory_run(""), dir_);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // A name run_clm.py shares names no program; preprocessing_num_workers sets the tokenizing threads.
  EXPECT_EQ(count_of(run.output, "--trust_remote_code has no effect"), 1u) << run.output;
  EXPECT_EQ(count_of(run.output, "--preprocessing_num_workers"), 0u) << run.output;
  EXPECT_NE(run.output.find("run " + (dir_ / "out").string() + ": model"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("9 samples"), std::string::npos) << run.output;  // identity's 3 + alpaca_en_demo's 6
  for (const char* file : {"adapter_config.json", "adapter_model.safetensors", "train_log.jsonl"})
    EXPECT_TRUE(fs::exists(dir_ / "out" / file)) << file;
}

// LLaMA-Factory's QLoRA (its examples/train_qlora/ files add quantization_bit: 4 to the LoRA
// file): the base's linears in NF4 with double quantization, the adapter saved as usual.
TEST_F(ArgumentsCli, QuantizationBitFourTrainsQlora) {
  const testing::CliRun run = testing::run_zerotune(llama_factory_run("quantization_bit=4"), dir_);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("4-bit base (nf4, double quantization, blocks of 64)"), std::string::npos) << run.output;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "adapter_model.safetensors"));
}

TEST_F(ArgumentsCli, UnsupportedOptionStopsTheRunWithTheReason) {
  const testing::CliRun run = testing::run_zerotune(llama_factory_run("use_dora=true"), dir_);
  EXPECT_EQ(run.exit_code, 2) << run.output;  // the arguments are refused: bad usage
  EXPECT_NE(run.output.find("--use_dora true (LLaMA-Factory): DoRA is not supported by zerotune"), std::string::npos)
      << run.output;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "train_log.jsonl"));
}

// Files of the methods and backends zerotune does not offer: a usage error naming the feature,
// not an unknown option.
TEST_F(ArgumentsCli, MethodFilesAreRefusedNamingTheFeature) {
  const std::vector<std::pair<const char*, const char*>> files = {
      {"galore_full_sft.yaml",
       "--use_galore true (LLaMA-Factory): GaLore (gradient low-rank projection) is not "
       "supported by zerotune; zerotune trains with AdamW"},
      {"apollo_full_sft.yaml", "--use_apollo true (LLaMA-Factory): APOLLO"},
      {"badam_full_sft.yaml", "--use_badam true (LLaMA-Factory): BAdam (block-coordinate Adam) is not supported"},
      {"kt_lora_sft.yaml",
       "--use_kt true (LLaMA-Factory): KTransformers (MoE experts computed on the CPU) is not "
       "supported"},
      {"mca_moe_full.json",
       "--pipeline_model_parallel_size 4 (LLaMA-Factory): pipeline parallelism is not "
       "supported by zerotune; zerotune trains data parallel with ZeRO"}};
  for (const auto& [file, part] : files) {
    const testing::CliRun run =
        testing::run_zerotune("train " + (kSource / "tests/data/args/llama_factory/methods" / file).string() +
                                  " --output_dir " + (dir_ / "out").string(),
                              dir_);
    EXPECT_EQ(run.exit_code, 2) << file << "\n" << run.output;
    EXPECT_NE(run.output.find(part), std::string::npos) << file << "\n" << run.output;
    EXPECT_EQ(run.output.find("unknown option"), std::string::npos) << file << "\n" << run.output;
  }
}

// LLaMA-Factory's examples/extras/nlg_eval/llama3_lora_predict.yaml predicts with an adapter and
// trains nothing: refused, pointing at the commands that generate and evaluate, before any work.
TEST_F(ArgumentsCli, PredictionFileIsRefusedPointingAtGenerate) {
  const testing::CliRun run =
      testing::run_zerotune("train " + (kSource / "tests/data/args/llama_factory/llama3_lora_predict.yaml").string() +
                                " --output_dir " + (dir_ / "out").string(),
                            dir_);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("--do_predict without --do_train: LLaMA-Factory then predicts with the model and trains "
                            "nothing; zerotune train trains: generate the answers to a dataset's prompts with "
                            "`zerotune generate"),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

// Settings of features zerotune does not use are warned about by name, and the run trains.
TEST_F(ArgumentsCli, SettingsWithoutEffectWarnAndTrainingGoesOn) {
  const testing::CliRun run = testing::run_zerotune(
      llama_factory_run("galore_rank=128 badam_verbose=2 kt_cpu_activation=retain recompute_granularity=full "
                        "sequence_parallel=true"),
      dir_);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* name :
       {"galore_rank", "badam_verbose", "kt_cpu_activation", "recompute_granularity", "sequence_parallel"})
    EXPECT_EQ(count_of(run.output, std::string("--") + name + " (LLaMA-Factory) has no effect in zerotune"), 1u)
        << name << "\n"
        << run.output;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "train_log.jsonl"));
}

}  // namespace
}  // namespace zt::train
