// Arguments files: JSON and YAML as HfArgumentParser and LLaMA-Factory read them, flags after
// the file overriding it, `deepspeed` as an object, and the files users already have.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/usage_error.h"
#include "tests/common/op_test_util.h"
#include "tests/common/training_arguments_test_util.h"
#include "train/args/training_arguments.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kArgsData = fs::path(ZT_SOURCE_DIR) / "tests/data/args";

using testing::joined;
using testing::yaml;
using testing::yaml_error;

constexpr const char* kBase = "model_name_or_path: m\noutput_dir: o\ntrain_file: t.json\n";

TEST(ArgumentsFile, YamlScalarsBecomeTheArguments) {
  TrainingArguments args = yaml(std::string(kBase) + R"(
learning_rate: 1.0e-4     # PyYAML's float
adam_epsilon: 1e-6        # text to PyYAML, still a number here
bf16: yes
gradient_checkpointing: on
num_train_epochs: 3
max_steps: -1
save_total_limit: ~
lora_target: [q_proj, v_proj]
lr_scheduler_kwargs: {min_lr_rate: 0.1}
lr_scheduler_type: cosine_with_min_lr
)");
  EXPECT_EQ(args.learning_rate, 1e-4);
  EXPECT_EQ(args.adam_epsilon, 1e-6);
  EXPECT_TRUE(args.bf16);
  EXPECT_TRUE(args.gradient_checkpointing);
  EXPECT_EQ(args.num_train_epochs, 3.0);
  EXPECT_FALSE(args.save_total_limit);
  EXPECT_EQ(args.lora_target, "q_proj,v_proj");
  EXPECT_EQ(json::parse(args.lr_scheduler_kwargs), json({{"min_lr_rate", 0.1}}));
}

TEST(ArgumentsFile, ErrorsNameTheFile) {
  std::string msg = yaml_error(std::string(kBase) + "lerning_rate: 1\nbf16: maybe\n");
  EXPECT_NE(msg.find("args.yaml: unknown option '--lerning_rate' (did you mean --learning_rate?)"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("args.yaml: --bf16 takes true or false, got 'maybe'"), std::string::npos) << msg;
  msg = yaml_error("- a\n- b\n");
  EXPECT_NE(msg.find("args.yaml must hold a map of argument names and values"), std::string::npos) << msg;
  msg = yaml_error("model_name_or_path: m\n output_dir: o\n");
  EXPECT_NE(msg.find("args.yaml:2:"), std::string::npos) << msg;
  msg = testing::error_of(
      [] { parse_training_arguments_text("{\"bf16\": tru}", ArgumentsFileFormat::kJson, "args.json"); });
  EXPECT_NE(msg.find("args.json:1:13: not valid JSON: syntax error while parsing value - invalid literal"),
            std::string::npos)
      << msg;
  const std::string deep = "{\"deepspeed\": " + std::string(100, '[') + std::string(100, ']') + "}";
  msg = testing::error_of([&] { parse_training_arguments_text(deep, ArgumentsFileFormat::kJson, "args.json"); });
  EXPECT_NE(msg.find("args.json nests deeper than 64 levels"), std::string::npos) << msg;
  // A number beyond double's range is nlohmann's out_of_range, not a parse_error.
  msg = testing::error_of(
      [] { parse_training_arguments_text("{\"learning_rate\": 1e400}", ArgumentsFileFormat::kJson, "args.json"); });
  EXPECT_NE(msg.find("args.json: not valid JSON: number overflow"), std::string::npos) << msg;
}

TEST(ArgumentsFile, FlagsAfterTheFileOverrideIt) {
  TrainingArguments args = yaml(std::string(kBase) + "learning_rate: 1.0e-4\nbf16: true\nmax_steps: 10\n",
                                {"--learning_rate", "3e-4", "bf16=false", "--output_dir=elsewhere"});
  EXPECT_EQ(args.learning_rate, 3e-4);
  EXPECT_FALSE(args.bf16);
  EXPECT_EQ(args.max_steps, 10);
  EXPECT_EQ(args.output_dir, "elsewhere");
  // A value overridden back to its default earns no warning.
  args = yaml(std::string(kBase) + "push_to_hub: true\n", {"push_to_hub=false"});
  EXPECT_TRUE(args.warnings.empty()) << joined(args.warnings);
}

// llamafactory-cli reads `name=value` words as YAML (OmegaConf.from_cli): `null` (or `~`) there is
// None, as in the file, so `resume_from_checkpoint=null` starts afresh and
// `adapter_name_or_path=null` drops the file's adapter; `--name null` stays HF's text.
TEST(ArgumentsFile, NameValueNullIsTheFilesNull) {
  TrainingArguments args = yaml(std::string(kBase) + "resume_from_checkpoint: out/checkpoint-5\nmax_steps: 10\n",
                                {"resume_from_checkpoint=null", "max_steps=~"});
  EXPECT_EQ(args.resume_from_checkpoint, "");
  EXPECT_EQ(args.max_steps, TrainingArguments{}.max_steps);
  args = yaml(std::string(kBase) + "adapter_name_or_path: saves/qwen3-4b/lora/sft\n", {"adapter_name_or_path=null"});
  EXPECT_FALSE(args.other_arguments.contains("adapter_name_or_path"));
  EXPECT_EQ(yaml_error(kBase, {"tokenized_path=null"}), "no error");
  EXPECT_NE(yaml_error(kBase, {"--tokenized_path", "null"}).find("--tokenized_path null (LLaMA-Factory)"),
            std::string::npos);
}

TEST(ArgumentsFile, DeepspeedAsAnObjectIsTheConfig) {
  const auto path = kArgsData / "hf/deepspeed_inline_args.json";
  TrainingArguments args = parse_training_arguments({path.string()});
  ASSERT_TRUE(args.deepspeed_inline());
  const json config = json::parse(args.deepspeed);
  EXPECT_EQ(config["zero_optimization"]["stage"], 2);
  EXPECT_EQ(config["train_micro_batch_size_per_gpu"], "auto");
  const json recorded = json::parse(training_arguments_json(args));
  ASSERT_TRUE(recorded["deepspeed"].is_object()) << recorded["deepspeed"];
  EXPECT_EQ(recorded["deepspeed"], config);
  // The same in YAML, and as a flag's '{...}', as HF takes a dict.
  args = yaml(std::string(kBase) + "deepspeed:\n  zero_optimization:\n    stage: 3\n");
  EXPECT_EQ(json::parse(args.deepspeed)["zero_optimization"]["stage"], 3);
  args = parse_training_arguments({"--model_name_or_path", "m", "--output_dir", "o", "--train_file", "t", "--deepspeed",
                                   R"({"train_batch_size": 8})"});
  EXPECT_TRUE(args.deepspeed_inline());
  EXPECT_FALSE(parse_training_arguments({"--model_name_or_path", "m", "--output_dir", "o", "--train_file", "t",
                                         "--deepspeed", "ds_config.json"})
                   .deepspeed_inline());
  EXPECT_EQ(json::parse(training_arguments_json(args))["deepspeed"]["train_batch_size"], 8);
  // A broken inline config is named for what it is, without echoing it as a path.
  const std::string msg = testing::error_of([] {
    parse_training_arguments({"--model_name_or_path", "m", "--output_dir", "o", "--train_file", "t", "--deepspeed",
                              R"({"zero_optimization": {"stage": 2, "offload_param": )"});
  });
  EXPECT_NE(msg.find("--deepspeed starts with '{' but is not a valid JSON object"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("offload_param"), std::string::npos) << msg;
}

TEST(ArgumentsFile, StanfordAlpacaCommandLineAsJson) {
  const TrainingArguments args =
      parse_training_arguments({(kArgsData / "hf/stanford_alpaca_train_args.json").string()});
  EXPECT_EQ(args.train_file, "./alpaca_data.json");  // data_path
  EXPECT_TRUE(args.bf16);
  EXPECT_EQ(args.tf32, std::optional<bool>(true));
  EXPECT_EQ(args.per_device_train_batch_size, 4);
  EXPECT_EQ(args.gradient_accumulation_steps, 8);
  EXPECT_EQ(args.lr_scheduler_type, "cosine");
  EXPECT_EQ(args.warmup_ratio, 0.03);
  EXPECT_EQ(args.save_steps, 2000);
  EXPECT_EQ(args.eval_strategy, IntervalStrategy::kNo);
  // FSDP's two fields: no effect (ZeRO through --deepspeed shards), one warning each.
  ASSERT_EQ(args.warnings.size(), 2u) << joined(args.warnings);
  EXPECT_NE(joined(args.warnings).find("--fsdp has no effect"), std::string::npos);
}

TEST(ArgumentsFile, FastChatCommandLineAsJson) {
  const TrainingArguments args = parse_training_arguments({(kArgsData / "hf/fastchat_train_args.json").string()});
  EXPECT_EQ(args.train_file, "./data/train.json");
  EXPECT_EQ(args.validation_file, "./data/val.json");
  EXPECT_EQ(args.max_length, 4096);  // model_max_length
  EXPECT_EQ(args.eval_strategy, IntervalStrategy::kSteps);
  EXPECT_EQ(args.eval_steps, std::optional<double>(49));
  EXPECT_EQ(args.weight_decay, 1e-5);
  EXPECT_TRUE(args.gradient_checkpointing);
  EXPECT_NE(joined(args.warnings).find("--lazy_preprocess has no effect"), std::string::npos);
}

TEST(ArgumentsFile, LlamaFactoryExampleYaml) {
  const TrainingArguments args = parse_training_arguments({(kArgsData / "llama_factory/qwen3_lora_sft.yaml").string()});
  EXPECT_EQ(args.stage, "sft");
  EXPECT_EQ(args.dataset, "identity,alpaca_en_demo");
  EXPECT_EQ(args.dataset_dir, "tests/data/args/llama_factory/data");
  EXPECT_EQ(args.template_name, "qwen3_nothink");
  EXPECT_EQ(args.max_length, 2048);  // cutoff_len
  EXPECT_EQ(args.max_samples, std::optional<std::int64_t>(1000));
  EXPECT_EQ(args.finetuning_type, FinetuningType::kLora);
  EXPECT_EQ(args.lora_rank, 8);
  EXPECT_EQ(args.lora_target, "all");
  EXPECT_EQ(args.learning_rate, 1e-4);
  EXPECT_EQ(args.num_train_epochs, 3.0);
  EXPECT_EQ(args.ddp_timeout, 180000000);
  EXPECT_TRUE(args.bf16);
  EXPECT_TRUE(args.overwrite_output_dir);
  EXPECT_TRUE(args.gradient_checkpointing);  // LLaMA-Factory checkpoints unless disable_gradient_checkpointing
  EXPECT_TRUE(args.resume_from_checkpoint.empty());
  const std::string warnings = joined(args.warnings);
  EXPECT_NE(warnings.find("--trust_remote_code has no effect in zerotune"), std::string::npos) << warnings;
  EXPECT_EQ(args.preprocessing_num_workers, std::optional<std::int64_t>(16));  // tokenizing threads
  EXPECT_EQ(warnings.find("plot_loss"), std::string::npos) << warnings;        // zerotune draws the curves anyway
  EXPECT_EQ(args.warnings.size(), 1u) << warnings;
}

TEST(ArgumentsFile, LlamaFactoryDefaultsApplyToItsFilesOnly) {
  TrainingArguments args = yaml("model_name_or_path: m\noutput_dir: o\nstage: sft\ndataset: a.json\n");
  EXPECT_EQ(args.max_length, 2048);
  EXPECT_TRUE(args.gradient_checkpointing);
  args = yaml(
      "model_name_or_path: m\noutput_dir: o\ndataset: a.json\ndisable_gradient_checkpointing: true\n"
      "cutoff_len: 512\nneat_packing: true\n");
  EXPECT_FALSE(args.gradient_checkpointing);
  EXPECT_EQ(args.max_length, 512);
  EXPECT_TRUE(args.packing);
  args = yaml(kBase);
  EXPECT_EQ(args.max_length, 1024);
  EXPECT_FALSE(args.gradient_checkpointing);
}

TEST(ArgumentsFile, ModelRevisionChoosesTheHubIdsRevision) {
  EXPECT_EQ(yaml(kBase).model_revision, "main");
  TrainingArguments args = yaml(std::string(kBase) + "model_revision: v2.0\n");
  EXPECT_EQ(args.model_revision, "v2.0");
  EXPECT_TRUE(args.warnings.empty()) << joined(args.warnings);  // honoured, not "without effect"
  EXPECT_EQ(yaml(kBase, {"--revision", "dev"}).model_revision, "dev");
  EXPECT_EQ(json::parse(training_arguments_json(args))["model_revision"], "v2.0");
}

TEST(ArgumentsFile, LlamaFactoryOptionsZerotuneCannotHonourAreRefusedByName) {
  const std::string msg = yaml_error(
      "model_name_or_path: m\noutput_dir: o\ndataset: a\nstage: kto\nquantization_bit: 8\nuse_dora: true\n"
      "pure_bf16: true\nmix_strategy: interleave_under\n");
  for (const char* part :
       {"--stage kto (KTO preference training) is not supported: zerotune train runs supervised fine-tuning",
        "--quantization_bit 8: zerotune quantizes base weights to bitsandbytes' 4 bits (NF4 or FP4) only",
        "--use_dora true (LLaMA-Factory): DoRA is not supported by zerotune",
        "--pure_bf16 true (LLaMA-Factory): pure bf16 training", "--mix_strategy interleave_under"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << "\n" << msg;
  EXPECT_NE(yaml_error("model_name_or_path: m\noutput_dir: o\ndataset: a\nstage: rm\n").find("reward modelling"),
            std::string::npos);
}

TEST(ArgumentsFile, LlamaFactoryDataArgumentsAreChecked) {
  testing::expect_mentions(yaml_error("model_name_or_path: m\noutput_dir: o\ndataset: a\ntrain_file: b\n"),
                           {"--train_file and --dataset both name the training data"});
  testing::expect_mentions(
      yaml_error("model_name_or_path: m\noutput_dir: o\ndataset: a\neval_dataset: b\nval_size: 0.1\n"),
      {"--val_size splits evaluation data off the training data"});
  testing::expect_mentions(
      yaml_error("model_name_or_path: m\noutput_dir: o\ndataset: a\nval_size: 2.5\nmax_samples: 0\n"),
      {"--val_size must be a share below 1 or a whole number", "--max_samples must be > 0"});
  const TrainingArguments args =
      yaml("model_name_or_path: m\noutput_dir: o\ndataset: a\nval_size: 0.1\neval_strategy: steps\n");
  EXPECT_EQ(args.val_size, 0.1);
  testing::expect_mentions(yaml_error("model_name_or_path: m\noutput_dir: o\n"),
                           {"--train_file is required (or LLaMA-Factory's --dataset)"});
}

// LLaMA-Factory trains only with do_train true; a file that predicts (do_predict) or sets do_train
// false trains nothing there, so zerotune train refuses it rather than train. Leaving do_train out
// and predicting nothing trains, as `--stage dpo` on a command line does.
TEST(ArgumentsFile, LlamaFactoryFilesThatDoNotTrainAreRefused) {
  constexpr const char* kLlamaFactory = "model_name_or_path: m\noutput_dir: o\nstage: sft\ndataset: a\n";
  testing::expect_mentions(yaml_error(std::string(kLlamaFactory) + "do_predict: true\npredict_with_generate: true\n"),
                           {"--do_predict without --do_train: LLaMA-Factory then predicts with the model and trains "
                            "nothing",
                            "`zerotune generate --model_name_or_path MODEL --adapter_name_or_path ADAPTER --input_file",
                            "set do_train true to train"});
  testing::expect_mentions(yaml_error(std::string(kLlamaFactory) + "do_train: false\ndo_eval: true\n"),
                           {"--do_train false with LLaMA-Factory's --stage or --dataset: LLaMA-Factory then trains "
                            "nothing",
                            "`zerotune evaluate --validation_file FILE`"});
  const TrainingArguments trains_then_predicts =
      yaml(std::string(kLlamaFactory) + "do_train: true\ndo_predict: true\n");
  EXPECT_TRUE(trains_then_predicts.do_train);
  testing::expect_mentions(joined(trains_then_predicts.warnings), {"--do_predict has no effect in zerotune"});
  EXPECT_TRUE(yaml(kLlamaFactory).do_train);
  // HF's Trainer.train() reads no do_train: a TrainingArguments dump (do_train false) trains.
  EXPECT_NO_THROW(yaml(std::string(kBase) + "do_train: false\n"));
}

TEST(ArgumentsFile, FilesAreReadByTheirExtension) {
  const fs::path dir = fs::temp_directory_path() / "zt_args_file_test";
  fs::create_directories(dir);
  std::ofstream(dir / "a.yml") << kBase << "seed: 7\n";
  EXPECT_EQ(parse_training_arguments({(dir / "a.yml").string(), "--seed", "8"}).seed, 8);
  const std::string msg = testing::error_of([&] { parse_training_arguments({(dir / "missing.yaml").string()}); });
  EXPECT_NE(msg.find("the arguments file " + (dir / "missing.yaml").string() + " does not exist"), std::string::npos)
      << msg;
  fs::remove_all(dir);
}

// `zerotune train args.json --max_steps 4`, `args.yaml learning_rate=1e-4`: the file's values,
// and the flags after it winning, in both of the flag forms.
TEST(ArgumentsFile, AFileOnDiskWithFlagsAfterIt) {
  const fs::path dir = fs::temp_directory_path() / "zt_args_file_flags_test";
  fs::create_directories(dir);
  std::ofstream(dir / "args.json") << R"({"model_name_or_path": "m", "output_dir": "o", "train_file": "t.json",
                                         "max_steps": 10, "learning_rate": 1e-3, "seed": 3})";
  TrainingArguments args = parse_training_arguments({(dir / "args.json").string(), "--max_steps", "4"});
  EXPECT_EQ(args.max_steps, 4);
  EXPECT_EQ(args.learning_rate, 1e-3);
  std::ofstream(dir / "args.yaml") << kBase << "learning_rate: 1.0e-3\nseed: 3\n";
  args = parse_training_arguments({(dir / "args.yaml").string(), "--learning_rate", "1e-4", "seed=5"});
  EXPECT_EQ(args.learning_rate, 1e-4);
  EXPECT_EQ(args.seed, 5);
  fs::remove_all(dir);
}

// The file comes first, as in HfArgumentParser and llamafactory-cli; elsewhere it is a usage
// error that says so, rather than an "unexpected argument" alone.
TEST(ArgumentsFile, AFileAfterTheFlagsIsAUsageErrorSayingWhereItGoes) {
  const std::vector<std::string> misplaced = {"--max_steps", "4", "args.yaml"};
  EXPECT_THROW(parse_training_arguments(misplaced), UsageError);
  const std::string msg = testing::error_of([&] { parse_training_arguments(misplaced); });
  EXPECT_NE(msg.find("unexpected argument 'args.yaml': an arguments file comes first, before the flags that "
                     "override it, and only one is read"),
            std::string::npos)
      << msg;
  const std::string second = yaml_error(std::string(kBase) + "seed: 1\n", {"other.json"});
  EXPECT_NE(second.find("unexpected argument 'other.json': an arguments file comes first"), std::string::npos)
      << second;
}

// Other programs' own layouts: LLaMA-Factory v1's examples/v1/train_lora/train_lora_sft.yaml
// and ChatGLM3's finetune_demo/configs/lora.yaml (their keys as published, comments and most
// training_args aside). One usage error each saying what the file is and how to write it,
// instead of one unknown option per key.
TEST(ArgumentsFile, OtherProgramsLayoutsAreNamed) {
  const std::string v1 = R"(model: Qwen/Qwen3-4B
model_class: llm
peft_config:
  name: lora
  r: 16
  lora_alpha: 32
  lora_dropout: 0.05
  target_modules: all
kernel_config:
  name: auto
dist_config:
  name: fsdp2
  dcp_path: null
train_dataset: data/v1_sft_demo.yaml
output_dir: ./outputs/test_lora
micro_batch_size: 1
cutoff_len: 2048
learning_rate: 1.0e-4
max_steps: 10
sample_backend: hf
max_new_tokens: 128
)";
  std::string msg = yaml_error(v1);
  EXPECT_NE(msg.find("args.yaml is in LLaMA-Factory's v1 layout (USE_V1=1"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("unknown option"), std::string::npos) << msg;
  EXPECT_THROW(yaml(v1), UsageError);
  const std::string chatglm3 = R"(data_config:
  train_file: train.json
  val_file: dev.json
  test_file: dev.json
  num_proc: 16
max_input_length: 256
max_output_length: 512
training_args:
  output_dir: ./output
  max_steps: 3000
  learning_rate: 5e-5
  per_device_train_batch_size: 4
  evaluation_strategy: steps
  eval_steps: 500
  predict_with_generate: true
  generation_config:
    max_new_tokens: 512
  use_cpu: false
peft_config:
  peft_type: LORA
  task_type: CAUSAL_LM
  r: 8
  lora_alpha: 32
  lora_dropout: 0.1
)";
  msg = yaml_error(chatglm3);
  EXPECT_NE(msg.find("args.yaml is in ChatGLM3's finetune_demo layout (data_config, training_args, peft_config)"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("unknown option"), std::string::npos) << msg;
}

// axolotl's examples/llama-3/lora-1b.yml as published (comments and empty wandb keys aside): its
// own schema (base_model, datasets, adapter, sequence_len, micro_batch_size) is named with the
// names to write, not read as two dozen unknown options with misleading suggestions.
TEST(ArgumentsFile, AxolotlConfigIsNamed) {
  const std::string axolotl = R"(base_model: NousResearch/Llama-3.2-1B
datasets:
  - path: teknium/GPT4-LLM-Cleaned
    type: alpaca
val_set_size: 0.1
output_dir: ./outputs/lora-out
adapter: lora
lora_model_dir:
sequence_len: 2048
sample_packing: true
eval_sample_packing: true
lora_r: 16
lora_alpha: 32
lora_dropout: 0.05
lora_target_modules:
  - gate_proj
  - q_proj
  - v_proj
gradient_accumulation_steps: 2
micro_batch_size: 2
num_epochs: 1
optimizer: adamw_8bit
lr_scheduler: cosine
learning_rate: 0.0002
bf16: auto
tf32: false
gradient_checkpointing: true
resume_from_checkpoint:
logging_steps: 1
attn_implementation: flash_attention_2
warmup_ratio: 0.1
evals_per_epoch: 4
saves_per_epoch: 1
weight_decay: 0.0
special_tokens:
  pad_token: "<|end_of_text|>"
)";
  const std::string msg = yaml_error(axolotl);
  EXPECT_NE(msg.find("args.yaml is an axolotl config"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model_name_or_path for base_model"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("unknown option"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("problems"), std::string::npos) << msg;  // one error, not one per key
  EXPECT_THROW(yaml(axolotl), UsageError);
}

// An Accelerate config (LLaMA-Factory's examples/accelerate/fsdp_config.yaml, for `accelerate
// launch --config_file`) given to train: one usage error saying what it is and how zerotune starts
// processes, not one unknown option per key.
TEST(ArgumentsFile, AccelerateConfigIsNamed) {
  const std::string accelerate = R"(compute_environment: LOCAL_MACHINE
debug: false
distributed_type: FSDP
downcast_bf16: 'no'
fsdp_config:
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_offload_params: false
  fsdp_state_dict_type: FULL_STATE_DICT
machine_rank: 0
main_training_function: main
mixed_precision: bf16
num_machines: 1
num_processes: 2
rdzv_backend: static
same_network: true
use_cpu: false
)";
  const std::string msg = yaml_error(accelerate);
  EXPECT_NE(msg.find("args.yaml is an Accelerate config"), std::string::npos) << msg;
  EXPECT_NE(msg.find("zerotune launch --nproc_per_node N"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("unknown option"), std::string::npos) << msg;
}

// LLaMA-Factory's benchmark file as published (examples/train_lora/llama3_lora_eval.yaml, for
// `llamafactory-cli eval`): one usage error saying what it is and what zerotune does instead,
// not one unknown option per key (task, lang, n_shot, save_dir, batch_size).
TEST(ArgumentsFile, LlamaFactoryBenchmarkFileIsNamed) {
  const std::string file = (kArgsData / "llama_factory/llama3_lora_eval.yaml").string();
  try {
    parse_training_arguments({file});
    FAIL() << "the benchmark file was read as training arguments";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(file + " is a LLaMA-Factory benchmark file (`llamafactory-cli eval`"), std::string::npos) << msg;
    EXPECT_NE(msg.find("zerotune evaluate --model_name_or_path MODEL"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("unknown option"), std::string::npos) << msg;
  }
}

// LLaMA-Factory 0.7's DPO example as published (examples/lora_single_gpu/llama3_lora_dpo.yaml):
// dpo_ftx, the name 0.8 changed to pref_ftx, is read as pref_ftx, as are the other names of
// 0.6 and 0.7 whose meaning and default did not change (its llama3 template, which zerotune
// refuses, overridden).
TEST(ArgumentsFile, LlamaFactoryOlderReleasesNamesAreRead) {
  const TrainingArguments dpo =
      parse_training_arguments({(kArgsData / "llama_factory/llama3_lora_dpo_0.7.yaml").string(), "--output_dir", "o",
                                "--dataset_dir", "d", "--template", "qwen3"});
  EXPECT_EQ(dpo.stage, "dpo");
  EXPECT_EQ(dpo.pref_ftx, 1.0);
  EXPECT_EQ(dpo.lora_target, "q_proj,v_proj");
  EXPECT_EQ(dpo.max_length, 1024);
  const TrainingArguments older = yaml(std::string(kBase) + R"(stage: dpo
dpo_beta: 0.2
dpo_loss: ipo
finetuning_type: freeze
num_layer_trainable: -3
name_module_trainable: mlp
split: train
reserved_label_len: 1
)");
  EXPECT_EQ(older.pref_beta, 0.2);
  EXPECT_EQ(older.pref_loss, "ipo");
  EXPECT_EQ(older.freeze_trainable_layers, -3);
  EXPECT_EQ(older.freeze_trainable_modules, "mlp");
  EXPECT_EQ(joined(older.warnings).find("split"), std::string::npos) << joined(older.warnings);
  // A value that changed what 0.7 did is said to change nothing here.
  const std::string warnings = joined(yaml(std::string(kBase) + "reserved_label_len: 256\n").warnings);
  EXPECT_NE(warnings.find("--reserved_label_len (LLaMA-Factory) has no effect in zerotune: zerotune truncates as "
                          "LLaMA-Factory 0.9 and later do"),
            std::string::npos)
      << warnings;
  // 0.7's stage orpo is ORPO under stage dpo since 0.8: the refusal says how to write it.
  const std::string orpo = yaml_error(std::string(kBase) + "stage: orpo\norpo_beta: 0.1\n");
  EXPECT_NE(orpo.find("--stage orpo (LLaMA-Factory 0.7's ORPO stage) is not a stage of zerotune train: ORPO is "
                      "--stage dpo with --pref_loss orpo"),
            std::string::npos)
      << orpo;
}

// LLaMA-Factory 0.8's LLaVA example as published (examples/train_lora/llava1_5_lora_sft.yaml):
// visual_inputs is refused by name, not as an unknown option.
TEST(ArgumentsFile, LlamaFactoryVisualInputsAreRefusedByName) {
  const std::string msg = [] {
    try {
      parse_training_arguments({(kArgsData / "llama_factory/llava1_5_lora_sft_0.8.yaml").string()});
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  }();
  EXPECT_NE(msg.find("--visual_inputs true (LLaMA-Factory): visual inputs is not supported by zerotune; zerotune "
                     "trains text-only models"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("unknown option"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zt::train
