// `zerotune estimate` run as a user runs it: from a config.json alone or a model folder, the
// table and its recommendation, and the refusals with their exit codes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "runtime/device.h"
#include "tests/common/process_test_util.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

fs::path test_root() { return zt::testing::test_folder("estimate_cli_test"); }

zt::testing::CliRun zerotune(const std::string& arguments) { return zt::testing::run_zerotune(arguments, test_root()); }
using zt::testing::CliRun;

// Qwen2.5-0.5B's config.json alone: no weights.
std::string qwen25_config() {
  const fs::path path = test_root() / "config.json";
  fs::create_directories(test_root());
  std::ofstream(path) << R"({"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864,
    "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16"})";
  return path.string();
}

const std::string kTinyModel = (fs::path(ZT_SOURCE_DIR) / "examples/tiny-qwen").string();

TEST(EstimateCli, ConfigAloneGivesEveryStageAndARecommendation) {
  const CliRun run = zerotune("estimate --config " + qwen25_config() + " --num_gpus 8 --gpu_memory 80");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("494.0M parameters"), std::string::npos) << run.output;
  for (const char* row : {"    0     none", "    3      cpu"})
    EXPECT_NE(run.output.find(row), std::string::npos) << row;
  EXPECT_NE(run.output.find("recommended: ZeRO stage 0 without optimizer offload"), std::string::npos) << run.output;
}

TEST(EstimateCli, ASmallerGpuGetsAHigherStage) {
  // Stage 0 needs 18Ψ of model states and a bf16 gradient bucket of Ψ (9.2 GiB), stage 1
  // 2Ψ + 2Ψ + 14Ψ/8 (bf16 gradients, whole and partitioned) and the bucket with its chunk (3.7
  // GiB), plus 3 GiB of activations, loss and reserve: 6.45 GiB, inside 8 GiB's nine tenths
  // but not 7 GiB's, where stage 2 (5.53 GiB) is recommended.
  const CliRun eight = zerotune("estimate --config " + qwen25_config() + " --num_gpus 8 --gpu_memory 8");
  ASSERT_EQ(eight.exit_code, 0) << eight.output;
  EXPECT_NE(eight.output.find("recommended: ZeRO stage 1 without optimizer offload, 6.45 of 8"), std::string::npos)
      << eight.output;
  const CliRun run = zerotune("estimate --config " + qwen25_config() + " --num_gpus 8 --gpu_memory 7");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(
      run.output.find("    1     none    0.92       1.04       0.69      1.04         0.97     6.45           0.00 "
                      "       yes"),
      std::string::npos)
      << "stage 1 fits the card: " << run.output;
  EXPECT_NE(run.output.find("recommended: ZeRO stage 2 without optimizer offload, 5.53 of 7"), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("(a recommendation uses at most 90% of the GPU, 6.3 GiB here"), std::string::npos)
      << run.output;
  const CliRun none = zerotune("estimate --config " + qwen25_config() + " --num_gpus 8 --gpu_memory 1");
  ASSERT_EQ(none.exit_code, 0) << none.output;
  EXPECT_NE(none.output.find("nothing fits 1 GiB per GPU"), std::string::npos) << none.output;
}

TEST(EstimateCli, ReadsTheModelFolderAndLoraFlags) {
  const CliRun run = zerotune("estimate --model_name_or_path " + kTinyModel +
                              " --num_gpus 2 --num_nodes 2 --gpu_memory 16 --finetuning_type lora --lora_rank 4 "
                              "--gradient_checkpointing --max_length 256");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("trainable (LoRA)"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("2 node(s) x 2 GPU(s)"), std::string::npos) << run.output;
}

// QLoRA: --quantization_bit 4 counts the 4-bit base, and a card too small for the bf16 base
// gets QLoRA recommended with the flags that run it.
TEST(EstimateCli, CountsAndRecommendsAFourBitBase) {
  const CliRun four = zerotune("estimate --config " + qwen25_config() +
                               " --num_gpus 1 --gpu_memory 24 --finetuning_type lora --quantization_bit 4");
  ASSERT_EQ(four.exit_code, 0) << four.output;
  EXPECT_NE(four.output.find("4-bit base (QLoRA, double quantization)"), std::string::npos) << four.output;
  EXPECT_EQ(four.output.find("    3 "), std::string::npos) << "no stage 3 rows: " << four.output;
  EXPECT_NE(four.output.find("tokens, gradient checkpointing\n"), std::string::npos)
      << "a 4-bit base recomputes unless told otherwise: " << four.output;
  const CliRun kept = zerotune("estimate --config " + qwen25_config() +
                               " --num_gpus 1 --gpu_memory 24 --finetuning_type lora --quantization_bit 4 "
                               "--disable_gradient_checkpointing");
  ASSERT_EQ(kept.exit_code, 0) << kept.output;
  EXPECT_EQ(kept.output.find("gradient checkpointing"), std::string::npos) << kept.output;
  const CliRun small =
      zerotune("estimate --config " + qwen25_config() + " --num_gpus 1 --gpu_memory 2.2 --host_memory 4");
  ASSERT_EQ(small.exit_code, 0) << small.output;
  EXPECT_NE(small.output.find("QLoRA (LoRA on a 4-bit base"), std::string::npos) << small.output;
  EXPECT_NE(small.output.find("--finetuning_type lora --quantization_bit 4"), std::string::npos) << small.output;
  const CliRun full =
      zerotune("estimate --config " + qwen25_config() + " --num_gpus 1 --gpu_memory 24 --quantization_bit 4");
  EXPECT_EQ(full.exit_code, 2) << full.output;
  EXPECT_NE(full.output.find("--quantization_bit 4 trains LoRA"), std::string::npos) << full.output;
  const CliRun stage3 = zerotune("estimate --config " + qwen25_config() +
                                 " --num_gpus 2 --gpu_memory 24 --finetuning_type lora --quantization_bit 4 "
                                 "--deepspeed '{\"zero_optimization\": {\"stage\": 3}}'");
  EXPECT_EQ(stage3.exit_code, 2) << stage3.output;
  EXPECT_NE(stage3.output.find("ZeRO stage 3 partitions the base weights"), std::string::npos) << stage3.output;
}

// A LLaMA-Factory training file gives the run train would start: its default method (LoRA),
// micro-batch, length and dtype; the estimate's own flags and train's overrides may follow it.
TEST(EstimateCli, ReadsATrainingFileAsTrainReadsIt) {
  const fs::path file = test_root() / "lora_sft.yaml";
  fs::create_directories(test_root());
  std::ofstream(file) << "model_name_or_path: " << kTinyModel
                      << "\nstage: sft\ndo_train: true\nlora_rank: 4\ndataset: alpaca_en_demo\ntemplate: qwen\n"
                         "cutoff_len: 512\nper_device_train_batch_size: 3\nlearning_rate: 1.0e-4\nbf16: true\n"
                         "output_dir: saves/out\n";
  const CliRun lora = zerotune("estimate " + file.string() + " --num_gpus 1 --gpu_memory 24");
  ASSERT_EQ(lora.exit_code, 0) << lora.output;
  EXPECT_NE(lora.output.find("trainable (LoRA), bfloat16"), std::string::npos) << lora.output;
  EXPECT_NE(lora.output.find("micro-batch 3 x 512 tokens"), std::string::npos) << lora.output;
  EXPECT_NE(lora.output.find("24 GiB"), std::string::npos) << "--gpu_memory after the file: " << lora.output;
  const CliRun full = zerotune("estimate " + file.string() + " finetuning_type=full --num_gpus=1");
  ASSERT_EQ(full.exit_code, 0) << full.output;
  EXPECT_EQ(full.output.find("(LoRA)"), std::string::npos) << "the override trains every weight: " << full.output;
  const CliRun freeze = zerotune("estimate " + file.string() + " --finetuning_type freeze --num_gpus 1");
  EXPECT_EQ(freeze.exit_code, 2) << freeze.output;
  EXPECT_NE(freeze.output.find("counts full fine-tuning and LoRA"), std::string::npos) << freeze.output;
  const CliRun pairs = zerotune("estimate " + file.string() + " num_gpus=2 --num_gpus_per_node=2");
  ASSERT_EQ(pairs.exit_code, 0) << pairs.output;
  EXPECT_NE(pairs.output.find("1 node(s) x 2 GPU(s)"), std::string::npos)
      << "name=value after the file: " << pairs.output;
  const CliRun config = zerotune("estimate " + file.string() + " --config " + qwen25_config());
  EXPECT_EQ(config.exit_code, 2) << config.output;
  EXPECT_NE(config.output.find("drop --config"), std::string::npos) << config.output;
  // Without bf16 or fp16 train runs float32; a 4-bit base told not to recompute keeps its activations.
  const fs::path plain = test_root() / "plain.yaml";
  std::ofstream(plain) << "model_name_or_path: " << kTinyModel
                       << "\nstage: sft\ndataset: alpaca_en_demo\noutput_dir: saves/out\nquantization_bit: 4\n"
                          "gradient_checkpointing: false\n";
  const CliRun four_bit = zerotune("estimate " + plain.string() + " --num_gpus 1");
  ASSERT_EQ(four_bit.exit_code, 0) << four_bit.output;
  EXPECT_NE(four_bit.output.find("float32"), std::string::npos) << four_bit.output;
  EXPECT_EQ(four_bit.output.find("gradient checkpointing"), std::string::npos) << four_bit.output;
  const fs::path no_model = test_root() / "no_model.yaml";
  std::ofstream(no_model) << "stage: sft\ndataset: alpaca_en_demo\noutput_dir: saves/out\n";
  const CliRun missing = zerotune("estimate " + no_model.string() + " --num_gpus 1");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("model_name_or_path"), std::string::npos) << missing.output;
}

TEST(EstimateCli, RefusesBadUsageByName) {
  const CliRun unknown = zerotune("estimate --config " + qwen25_config() + " --num_gpus 8 --gpu_memory 80 --stage 2");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("unknown option '--stage'"), std::string::npos) << unknown.output;
  const CliRun both = zerotune("estimate --config " + qwen25_config() + " --model_name_or_path " + kTinyModel +
                               " --num_gpus 1 --gpu_memory 80");
  EXPECT_EQ(both.exit_code, 2) << both.output;
  const CliRun zero = zerotune("estimate --config " + qwen25_config() + " --num_gpus 0 --gpu_memory 80");
  EXPECT_EQ(zero.exit_code, 2) << zero.output;
  EXPECT_NE(zero.output.find("--num_gpus must be a positive whole number, got '0'"), std::string::npos) << zero.output;
  const CliRun missing =
      zerotune("estimate --config " + (test_root() / "absent.json").string() + " --num_gpus 1 --gpu_memory 80");
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_NE(missing.output.find("absent.json"), std::string::npos) << missing.output;
  EXPECT_EQ(zerotune("estimate --help").exit_code, 0);
}

const std::string kQwen7b = (fs::path(ZT_SOURCE_DIR) / "tests/data/models/qwen2.5-7b/config.json").string();

// The line after "recommended:" holds the flags; its --deepspeed argument is one JSON object.
nlohmann::json recommended_deepspeed(const std::string& output) {
  const std::size_t flags = output.find("  zerotune train ", output.find("recommended:"));
  const std::size_t open = output.find("--deepspeed '", flags), close = output.find("'", open + 13);
  if (flags == std::string::npos || open == std::string::npos || close == std::string::npos) return {};
  return nlohmann::json::parse(output.substr(open + 13, close - open - 13));
}

TEST(EstimateCli, SevenBillionOn24GiBCardsGetsAConfigurationAndItsFlags) {
  struct Expected {
    int gpus;
    const char* line;
    int stage;
    bool offload;
    bool offload_param;
  };
  // The optimizer offloaded with its fp32 gradient partition: stage 2 fits with gradient
  // checkpointing on two, four and eight cards.
  for (const Expected& e :
       {Expected{2, "recommended: ZeRO stage 2 with optimizer offload, gradient checkpointing, 20.38 of 24 GiB", 2,
                 true, false},
        Expected{4, "recommended: ZeRO stage 2 with optimizer offload, gradient checkpointing, 20.12 of 24 GiB", 2,
                 true, false},
        Expected{8, "recommended: ZeRO stage 2 with optimizer offload, gradient checkpointing, 19.98 of 24 GiB", 2,
                 true, false}}) {
    const CliRun run =
        zerotune("estimate --config " + kQwen7b + " --num_gpus " + std::to_string(e.gpus) + " --gpu_memory 24");
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_NE(run.output.find("7615.6M parameters"), std::string::npos) << run.output;
    EXPECT_NE(run.output.find(e.line), std::string::npos) << run.output;
    const nlohmann::json deepspeed = recommended_deepspeed(run.output);
    EXPECT_EQ(deepspeed["zero_optimization"]["stage"], e.stage) << run.output;
    EXPECT_EQ(deepspeed["zero_optimization"].contains("offload_optimizer"), e.offload) << run.output;
    EXPECT_EQ(deepspeed["zero_optimization"].contains("offload_param"), e.offload_param) << run.output;
    EXPECT_EQ(run.output.find("--finetuning_type lora"), std::string::npos) << run.output;
    // A full fine-tune says so: the command it prints must not fall back to another method.
    EXPECT_NE(run.output.find("  zerotune train --finetuning_type full "), std::string::npos) << run.output;
  }
}

// The GiB per GPU a recommendation states: "..., 37.52 of 40 GiB per GPU".
double recommended_gib(const std::string& output, const std::string& budget) {
  const std::size_t line = output.find("recommended:");
  const std::size_t of = output.find(" of " + budget + " GiB per GPU", line);
  if (line == std::string::npos || of == std::string::npos) return -1;
  return std::stod(output.substr(output.rfind(", ", of) + 2));
}

// LoRA on a 16 GiB card: the bf16 base does not fit, the 4-bit base fits with its activations
// kept, and the flags say so (a 4-bit base would recompute by default).
TEST(EstimateCli, AFourBitBaseThatKeepsItsActivationsIsRecommendedWithTheFlag) {
  const CliRun run = zerotune("estimate --config " + kQwen7b + " --num_gpus 1 --gpu_memory 16 --finetuning_type lora");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("QLoRA (LoRA on a 4-bit base"), std::string::npos) << run.output;
  EXPECT_NE(
      run.output.find("zerotune train --finetuning_type lora --quantization_bit 4 --disable_gradient_checkpointing"),
      std::string::npos)
      << run.output;
}

// One card: a 7B full fine-tune fits 24 GiB only with the weights, the optimizer and the fp32
// gradient in host memory; on 8 GiB the gathered modules and activations do not fit, so LoRA.
TEST(EstimateCli, SevenBillionOnOneCardOffloadsItsParameters) {
  const std::string one_card =
      "estimate --config " + kQwen7b + " --num_gpus 1 --gradient_checkpointing --max_length 2048";
  const CliRun run = zerotune(one_card + " --gpu_memory 24");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("parameter offload (stage 3: one process runs the stage-3 engine over one rank) moves the "
                            "weights too"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("recommended: ZeRO stage 3 with optimizer and parameter offload, 8.12 of 24 GiB per GPU, "
                            "141.85 GiB of host memory per node"),
            std::string::npos)
      << run.output;
  const double gib = recommended_gib(run.output, "24");
  EXPECT_GT(gib, 4) << "two gathered modules and the activations stay on the GPU\n" << run.output;
  EXPECT_LT(gib, 24) << run.output;
  const nlohmann::json zero = recommended_deepspeed(run.output)["zero_optimization"];
  EXPECT_EQ(zero["stage"], 3) << run.output;
  EXPECT_EQ(zero["offload_param"]["device"], "cpu") << run.output;
  EXPECT_EQ(zero["offload_optimizer"]["device"], "cpu") << run.output;
  EXPECT_EQ(run.output.find("--finetuning_type lora"), std::string::npos) << run.output;

  const CliRun small = zerotune(one_card + " --gpu_memory 8");
  ASSERT_EQ(small.exit_code, 0) << small.output;
  EXPECT_NE(small.output.find("full fine-tuning fits in no configuration within 8 GiB per GPU"), std::string::npos)
      << small.output;
  EXPECT_NE(small.output.find("--finetuning_type lora"), std::string::npos) << small.output;
}

TEST(EstimateCli, HostMemoryRulesOutOffloadThatNeedsMore) {
  const CliRun run = zerotune("estimate --config " + kQwen7b + " --num_gpus 4 --gpu_memory 24 --host_memory 64");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json lora_zero = recommended_deepspeed(run.output)["zero_optimization"];
  EXPECT_EQ(lora_zero["stage"], 0) << run.output;
  EXPECT_FALSE(lora_zero.contains("offload_param")) << "parameter offload needs 141.85 GiB of host memory\n"
                                                    << run.output;
  EXPECT_NE(run.output.find("LoRA"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("full fine-tuning fits in no configuration within 24 GiB per GPU and 64 GiB of host "
                            "memory per node"),
            std::string::npos)
      << run.output;
  const CliRun bad = zerotune("estimate --config " + kQwen7b + " --num_gpus 4 --gpu_memory 24 --host_memory lots");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--host_memory must be a number, got 'lots'"), std::string::npos) << bad.output;
}

// With neither --num_gpus nor --gpu_memory: the visible GPUs (one without any), and a column
// and a recommendation for each common GPU size (and the visible GPU's).
TEST(EstimateCli, WithoutFlagsEveryCommonGpuSizeIsShown) {
  const CliRun run = zerotune("estimate --config " + kQwen7b);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const int gpus = cuda_available() ? cuda_device_count() : 1;
  EXPECT_NE(run.output.find("1 node(s) x " + std::to_string(gpus) + " GPU(s) ("), std::string::npos) << run.output;
  if (!cuda_available()) {
    EXPECT_NE(run.output.find("(no GPU is visible; --num_gpus sets the count)"), std::string::npos) << run.output;
  }
  const std::size_t header = run.output.find("host per node  fits   24   40   48   80   96  141");
  ASSERT_NE(header, std::string::npos) << run.output;
  // Stage 0 on one GPU needs 135.40 GiB: only the 141 GiB column says yes.
  EXPECT_NE(run.output.find("135.40           0.00         no   no   no   no   no  yes"), std::string::npos)
      << run.output;
  const std::size_t list = run.output.find("recommended, by GPU memory (each within 90% of the GPU):\n");
  ASSERT_NE(list, std::string::npos) << run.output;
  // Stage 0 fits 141 GiB but not its nine tenths: part of the update moves to the CPU instead.
  for (const char* line : {"    24 GiB: ZeRO stage 3 with optimizer and parameter offload, 7.61 of 24",
                           "    80 GiB: ZeRO stage 1 with "
                           "optimizer offload",
                           "   141 GiB: ZeRO stage 1 with optimizer offload (ratio 0.1: the CPU updates that share), "
                           "126.89 of 141"})
    EXPECT_NE(run.output.find(line, list), std::string::npos) << line << "\n" << run.output;
  if (gpus == 1) {
    EXPECT_NE(run.output.find("one GPU: ZeRO has nothing to partition"), std::string::npos) << run.output;
  }
}

// Stage 3's parameter offload rows, after its optimizer offload row: the shard of the weights
// (2Ψ/N) leaves the GPU for the host, and with optimizer offload the 12Ψ/N of master and moments
// too, the host then holding 2Ψ/N + 18Ψ/N per rank (docs/ZERO.md, Parameter offload).
TEST(EstimateCli, StageThreeParameterOffloadRowsFollowTheOthers) {
  const CliRun run = zerotune("estimate --config " + kQwen7b + " --num_gpus 4 --gpu_memory 24");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::size_t optimizer = run.output.find("    3      cpu    3.55       0.00       0.00      3.30");
  const std::size_t param =
      run.output.find("    3    param    0.00       7.09      21.28      3.30         0.51    35.22          14.18");
  const std::size_t both =
      run.output.find("    3     both    0.00       0.00       0.00      3.30         0.51     6.84         141.85");
  ASSERT_NE(optimizer, std::string::npos) << run.output;
  ASSERT_NE(param, std::string::npos) << run.output;
  ASSERT_NE(both, std::string::npos) << run.output;
  EXPECT_LT(optimizer, param);
  EXPECT_LT(param, both);
}

// --deepspeed: the user's config's stage, offload and micro-batch, its fit stated before the
// table, and its rows computed with its micro-batch.
TEST(EstimateCli, DeepSpeedConfigIsReadAndItsFitReportedFirst) {
  const std::string zero3 = (fs::path(ZT_SOURCE_DIR) / "examples/ds_config_zero3.json").string();
  const CliRun run = zerotune("estimate --config " + kQwen7b + " --num_gpus 4 --gpu_memory 24 --deepspeed " + zero3);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output.find(zero3 + ": ZeRO stage 3 without optimizer offload, bfloat16, micro-batch 1: 38.76 GiB per "
                                    "GPU, 0.00 GiB of host memory per node; does not fit 24 GiB\n"),
            0u)
      << run.output;
  EXPECT_NE(run.output.find("    3     none    3.55       7.09      21.28      3.30         0.51    38.76"),
            std::string::npos)
      << run.output;

  const std::string offload =
      R"('{"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
          "optimizer": {"type": "AdamW", "params": {"lr": 3e-5}}}')";
  const CliRun inline_config = zerotune("estimate --config " + kQwen7b + " --num_gpus 8 --deepspeed " + offload);
  ASSERT_EQ(inline_config.exit_code, 0) << inline_config.output;
  EXPECT_EQ(inline_config.output.find("the deepspeed config in the arguments: ZeRO stage 2 with optimizer offload, "
                                      "bfloat16, micro-batch 2: "),
            0u)
      << inline_config.output;
  EXPECT_NE(inline_config.output.find("micro-batch 2 x 1024 tokens"), std::string::npos) << inline_config.output;

  const CliRun bad =
      zerotune("estimate --config " + kQwen7b + " --deepspeed '{\"zero_optimization\": {\"stage\": 5}}'");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;  // what a config says is part of the arguments
  EXPECT_NE(bad.output.find("zero_optimization.stage must be 0, 1, 2 or 3, got 5"), std::string::npos) << bad.output;
  const CliRun conflict = zerotune("estimate --config " + kQwen7b + " --micro_batch 4 --deepspeed " + offload);
  EXPECT_EQ(conflict.exit_code, 2) << conflict.output;
  EXPECT_NE(conflict.output.find("sets train_micro_batch_size_per_gpu 2 but --micro_batch is 4"), std::string::npos)
      << conflict.output;
}

}  // namespace
}  // namespace zt
