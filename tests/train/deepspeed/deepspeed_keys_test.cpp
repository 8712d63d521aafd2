// Which keys of a ds_config.json zerotune honours, warns about, refuses or only notes, checked
// against DeepSpeed's own readers (runtime/config.py and the sections it builds): comments pass
// silently, a near miss of a key that matters is refused by name, a key DeepSpeed does not read
// is a note, and `zerotune estimate` (parse_deepspeed_without_flags) judges every key as
// `zerotune train` does.
#include <gtest/gtest.h>

#include "tests/common/op_test_util.h"
#include "tests/train/deepspeed/deepspeed_test_arguments.h"
#include "train/deepspeed/deepspeed_config.h"

namespace zt::train {
namespace {

using nlohmann::json;

// Keys switched off, left at DeepSpeed's default, or without effect under HF Trainer ask for
// nothing and are not warned about.
TEST(DeepSpeedKeys, KeysThatAskForNothingDoNotWarn) {
  DeepSpeedConfig config = parsed_deepspeed(R"({"train_batch_size": 8, "steps_per_print": 10,
      "wall_clock_breakdown": false, "memory_breakdown": false, "prescale_gradients": false,
      "gradient_predivide_factor": 1.0, "sparse_gradients": false, "gradient_allreduce_op": "MEAN",
      "zero_allow_untested_optimizer": true, "zero_force_ds_cpu_optimizer": false, "dataloader_drop_last": true,
      "tensorboard": {"enabled": false, "output_path": "runs"}, "wandb": {"enabled": false},
      "csv_monitor": {"enabled": false}, "flops_profiler": {"enabled": false, "profile_step": 1},
      "comms_logger": {"enabled": false}, "amp": {"enabled": false, "opt_level": "O1"},
      "compile": {"deepcompile": false, "double_buffer": true}, "hybrid_engine": {"enabled": false},
      "elasticity": {"enabled": false, "max_train_batch_size": 64}, "expert_parallel": {"enabled": false},
      "activation_checkpointing": {"partition_activations": false, "cpu_checkpointing": false,
                                   "number_checkpoints": null},
      "checkpoint": {"use_node_local_storage": true}, "timers": {"throughput": {"enabled": true}},
      "aio": {"block_size": 1048576}, "pipeline": {"stages": "auto"},
      "data_types": {"grad_accum_dtype": "fp32", "param_dtype": "float32"},
      "tensor_parallel": {"autotp_size": 1}, "sequence_parallel_size": 1, "communication_data_type": "FP32",
      "seq_parallel_communication_data_type": "bf16",
      "zero_optimization": {"stage": 2, "allgather_partitions": true, "allgather_bucket_size": 5e8,
                            "round_robin_gradients": true, "load_from_fp32_weights": true,
                            "zero_quantized_weights": false, "mics_shard_size": -1}})");
  EXPECT_TRUE(config.warnings.empty()) << all_warnings(config);
}

TEST(DeepSpeedKeys, KeysThatAskForWhatZerotuneDoesNotDoWarnOnce) {
  DeepSpeedConfig config = parsed_deepspeed(R"({"train_batch_size": 8, "memory_breakdown": true,
      "tensorboard": {"enabled": true}, "flops_profiler": {"enabled": true}, "prescale_gradients": true,
      "activation_checkpointing": {"partition_activations": true}, "data_types": {"buffer_dtype": "bf16"},
      "gradient_allreduce_op": "sum", "mystery_knob": 1, "compile": {"deepcompile": true},
      "sparse_attention": {"mode": "fixed"},
      "compression_training": {"sparse_pruning": {"shared_parameters": {"enabled": true}}},
      "zero_optimization": {"stage": 2, "zero_quantized_gradients": true, "load_from_fp32_weights": false}})");
  for (const char* key :
       {"ds.json: memory_breakdown = true has no effect in zerotune", "ds.json: flops_profiler.enabled = true",
        "ds.json: prescale_gradients", "ds.json: activation_checkpointing.partition_activations = true",
        "data_types.buffer_dtype", "gradient_allreduce_op", "ds.json: mystery_knob is not a DeepSpeed setting",
        "ds.json: compile.deepcompile",
        "ds.json: sparse_attention (DeepSpeed's sparse attention kernels) has no effect in zerotune",
        "ds.json: compression_training", "zero_optimization.zero_quantized_gradients",
        "zero_optimization.load_from_fp32_weights"})
    EXPECT_TRUE(has_warning(config, key)) << key << "\n" << all_warnings(config);
  EXPECT_EQ(config.warnings.size(), 12u) << all_warnings(config);
  EXPECT_FALSE(has_warning(config, "tensorboard")) << all_warnings(config);  // honoured
  // compression_training with every technique off asks for nothing.
  EXPECT_TRUE(parsed_deepspeed(R"({"train_batch_size": 8, "compression_training": {"weight_quantization":
                          {"shared_parameters": {"enabled": false}}}})")
                  .warnings.empty());
}

// data_types.grad_accum_dtype: fp32 or the working dtype, which stages 1 and 2 keep their
// gradients in (DeepSpeed's default); a warning where zerotune's gradients stay fp32 anyway;
// another dtype is refused, saying what to write.
TEST(DeepSpeedKeys, GradAccumDtypeIsFp32OrTheWorkingDtype) {
  auto config = [](const std::string& precision, int stage, const std::string& dtype, bool offload = false) {
    std::string text =
        R"({"train_batch_size": 8, )" + precision + R"(, "zero_optimization": {"stage": )" + std::to_string(stage);
    if (offload) text += R"(, "offload_optimizer": {"device": "cpu"})";
    text += "}";
    if (!dtype.empty()) text += R"(, "data_types": {"grad_accum_dtype": ")" + dtype + R"("})";
    return parsed_deepspeed(text + "}");
  };
  const std::string bf16 = R"("bf16": {"enabled": true})", fp16 = R"("fp16": {"enabled": true})";
  EXPECT_FALSE(config(bf16, 2, "").zero.grad_accum_dtype.has_value());  // the engine takes the working dtype
  for (int stage : {1, 2}) {
    const DeepSpeedConfig fp32 = config(bf16, stage, "fp32");
    EXPECT_EQ(fp32.zero.grad_accum_dtype, DType::kF32);
    EXPECT_TRUE(fp32.warnings.empty()) << all_warnings(fp32);
    const DeepSpeedConfig same = config(bf16, stage, "bfloat16");
    EXPECT_EQ(same.zero.grad_accum_dtype, DType::kBF16);
    EXPECT_TRUE(same.warnings.empty()) << all_warnings(same);
    EXPECT_EQ(config(fp16, stage, "fp16").zero.grad_accum_dtype, DType::kF16);
  }
  // Where the gradients stay fp32 whatever it says, a 16-bit one is warned about, saying why.
  for (auto [stage, offload, why] :
       {std::tuple{0, false, "stage 0 keeps whole fp32 gradients on every rank"},
        std::tuple{3, false, "stage 3 accumulates its gradient partition in fp32"},
        std::tuple{2, true, "with offload_optimizer the gradients accumulate in fp32 for the CPU Adam"}}) {
    const DeepSpeedConfig ignored = config(bf16, stage, "bf16", offload);
    EXPECT_EQ(ignored.warnings.size(), 1u) << all_warnings(ignored);
    EXPECT_TRUE(has_warning(ignored, std::string("ds.json: data_types.grad_accum_dtype = \"bf16\" has no effect in "
                                                 "zerotune: ") +
                                         why + "; ignored"))
        << all_warnings(ignored);
    EXPECT_TRUE(config(bf16, stage, "fp32", offload).warnings.empty());  // fp32 is what it gets
  }
  // Stage 1 with offload keeps its whole gradients in it on the GPU: no warning.
  const DeepSpeedConfig whole = config(bf16, 1, "bf16", true);
  EXPECT_TRUE(whole.warnings.empty()) << all_warnings(whole);
  EXPECT_EQ(whole.zero.grad_accum_dtype, DType::kBF16);
  // Neither fp32 nor the working dtype: refused, naming what to write.
  auto error = [&](const std::string& precision, const std::string& dtype) {
    return testing::error_of([&] { config(precision, 2, dtype); });
  };
  testing::expect_mentions(
      error(bf16, "fp16"),
      {"ds.json: data_types.grad_accum_dtype float16 is neither fp32 nor the working dtype, bfloat16",
       R"(write "fp32" or "bfloat16")", "DeepSpeed's default is the working dtype"});
  testing::expect_mentions(error(fp16, "bf16"),
                           {"grad_accum_dtype bfloat16 is neither fp32 nor the working dtype, float16"});
  testing::expect_mentions(
      error(R"("bf16": {"enabled": false}, "fp16": {"enabled": false})", "bf16"),
      {"grad_accum_dtype bfloat16 is neither fp32 nor the working dtype, float32", R"(write "fp32" ()"});
  testing::expect_mentions(error(bf16, "int8"), {"ds.json: data_types.grad_accum_dtype int8 is not a dtype"});
}

// Keys written as comments are never an error and never a note, wherever they are.
TEST(DeepSpeedKeys, CommentKeysPassSilently) {
  const DeepSpeedConfig config = parsed_deepspeed(R"({"_comment": "ZeRO-2 for 8 GPUs", "comment": "tuned on A100",
      "//": "see the wiki", "#": "v2", "Comments": ["one", "two"], "train_batch_size": 8,
      "optimizer": {"type": "AdamW", "_comment": "c", "params": {"lr": 1e-4, "_note": "from the paper"}},
      "scheduler": {"type": "WarmupLR", "params": {"_comment": "c"}},
      "zero_optimization": {"stage": 2, "_comment": "c", "offload_optimizer": {"device": "cpu", "_why": "RAM"}},
      "fp16": {"enabled": false, "_comment": "c"}, "tensorboard": {"enabled": false, "_comment": "c"},
      "checkpoint": {"comment": "c"}, "data_types": {"_comment": "c"}})");
  EXPECT_TRUE(config.warnings.empty()) << all_warnings(config);
  EXPECT_EQ(config.zero.stage, 2);
  EXPECT_EQ(config.optimizer->lr, 1e-4);
}

// Ignoring a key one slip away from one that matters (honoured, warned about or refused) would
// run without what it sets: it is refused with the name it misspells. Any other key DeepSpeed
// does not read is accepted with a note, naming the known key it is near, if any.
TEST(DeepSpeedKeys, ANearMissOfAKeyThatMattersIsRefused) {
  auto error = [](const std::string& text) { return testing::error_of([&] { parsed_deepspeed(text); }); };
  testing::expect_mentions(error(R"({"train_batch_size": 8, "zero_optimisation": {"stage": 2}})"),
                           {"ds.json: zero_optimisation (did you mean zero_optimization?) is not a DeepSpeed setting",
                            "ignoring it would run without what it was meant to set: correct the spelling"});
  testing::expect_mentions(error(R"({"train_micro_batch_size_per_gpu": 8, "train_batch_sise": 8})"),
                           {"ds.json: train_batch_sise (did you mean train_batch_size?)"});
  testing::expect_mentions(error(R"({"train_batch_size": 8, "optimzer": {"type": "AdamW"}, "gradient_cliping": 1})"),
                           {"ds.json: gradient_cliping (did you mean gradient_clipping?), optimzer (did you mean "
                            "optimizer?) are not DeepSpeed settings"});
  testing::expect_mentions(error(R"({"train_batch_size": 8, "optimzier": {"type": "AdamW"}})"),  // two swapped
                           {"optimzier (did you mean optimizer?)"});
  testing::expect_mentions(error(R"({"train_batch_size": 8, "Zero_Optimization": {"stage": 2}})"),
                           {"Zero_Optimization (did you mean zero_optimization?)"});
  testing::expect_mentions(error(R"({"train_batch_size": 8, "BF16": {"enabled": true}})"),
                           {"BF16 (did you mean bf16?)"});
  testing::expect_mentions(error(R"({"train_batch_size": 8, "tensorbord": {"enabled": true}})"),
                           {"tensorbord (did you mean tensorboard?)"});
  testing::expect_mentions(error(R"({"train_batch_size": 8, "tensorboard": {"enable": true}})"),
                           {"ds.json: tensorboard.enable (did you mean tensorboard.enabled?)"});
  // tensorboard is honoured: a slip in the folder's keys would write the events elsewhere.
  testing::expect_mentions(error(R"({"train_batch_size": 8, "tensorboard": {"enabled": true, "output_pth": "tb"}})"),
                           {"ds.json: tensorboard.output_pth (did you mean tensorboard.output_path?)"});
  testing::expect_mentions(error(R"({"train_batch_size": 8, "optimizer": {"type": "AdamW", "parms": {"lr": 1}}})"),
                           {"ds.json: optimizer.parms (did you mean optimizer.params?)"});
  testing::expect_mentions(
      error(R"({"train_batch_size": 8, "optimizer": {"type": "AdamW", "params": {"weight_decy": 0.1}}})"),
      {"ds.json: optimizer.params.weight_decy (did you mean optimizer.params.weight_decay?)"});
  testing::expect_mentions(error(R"({"train_batch_size": 8, "elasticity": {"enable": true}})"),
                           {"elasticity.enable (did you mean elasticity.enabled?)"});

  // Far from every key, or near one that changes nothing here: a note, and the run goes on.
  const DeepSpeedConfig config = parsed_deepspeed(R"({"train_batch_size": 8, "my_team_notes": "v2", "timer": {},
      "zero_optimization_stage": 2, "checkpoint": {"tag_validaton": "Warn"}, "flops_profiler": {"color": "red"}})");
  for (const char* note :
       {"ds.json: my_team_notes is not a DeepSpeed setting: DeepSpeed ignores it, and so does zerotune; ignored",
        "ds.json: timer (did you mean timers?) is not a DeepSpeed setting",
        "ds.json: zero_optimization_stage (did you mean zero_optimization?) is not a DeepSpeed setting",
        "ds.json: checkpoint.tag_validaton (did you mean checkpoint.tag_validation?) is not read by DeepSpeed's "
        "checkpoint section; ignored",
        "ds.json: flops_profiler.color is not read by DeepSpeed's flops_profiler section; ignored"})
    EXPECT_TRUE(has_warning(config, note)) << note << "\n" << all_warnings(config);
  EXPECT_EQ(config.warnings.size(), 5u) << all_warnings(config);
  EXPECT_EQ(config.zero.stage, 0);
  // Sections DeepSpeed hands on whole (apex's options, the pipeline's) take any key.
  EXPECT_TRUE(parsed_deepspeed(R"({"train_batch_size": 8, "amp": {"enabled": false, "opt_levl": "O2"},
                         "pipeline": {"anything": 1}})")
                  .warnings.empty());
}

// A parallel layout or batch rule zerotune does not train with is refused with the reason and
// what to write instead; its off values are accepted silently (KeysThatAskForNothingDoNotWarn).
TEST(DeepSpeedKeys, FeaturesThatWouldTrainOtherwiseAreRefused) {
  auto error = [](const std::string& rest) {
    return testing::error_of([&] { parsed_deepspeed(R"({"train_batch_size": 8, )" + rest + "}"); });
  };
  for (const char* autotp : {R"("tensor_parallel": {"autotp_size": 2})", R"("tensor_parallel": {"autotp_size": "4"})"})
    testing::expect_mentions(error(autotp), {"ds.json: tensor_parallel.autotp_size = ", "DeepSpeed's AutoTP training",
                                             "which zerotune training does not support",
                                             "remove the tensor_parallel block (or set autotp_size to 0)"});
  testing::expect_mentions(error(R"("sequence_parallel_size": 4)"),
                           {"ds.json: sequence_parallel_size = 4", "Ulysses sequence parallelism",
                            "which zerotune training does not support: remove it or set it to 1"});
  testing::expect_mentions(
      error(R"("elasticity": {"enabled": true, "max_train_batch_size": 64,
                                                  "micro_batch_sizes": [2, 4]})"),
      {"ds.json: elasticity.enabled = true asks for DeepSpeed's elastic training", "give the batch sizes"});
  testing::expect_mentions(error(R"("expert_parallel": {"enabled": true, "autoep_size": 2})"),
                           {"ds.json: expert_parallel.enabled = true asks for DeepSpeed's AutoEP expert parallelism"});
  testing::expect_mentions(error(R"("tensorboard": true)"), {"ds.json: tensorboard must be a JSON object"});
  // data_types.param_dtype restates the precision; DeepSpeed refuses one that disagrees.
  testing::expect_mentions(error(R"("bf16": {"enabled": true}, "data_types": {"param_dtype": "fp16"})"),
                           {"ds.json: data_types.param_dtype fp16 disagrees with the precision, bf16"});
  testing::expect_mentions(error(R"("data_types": {"grad_accum_dtype": "fp8"})"),
                           {"data_types.grad_accum_dtype 'fp8' is not a dtype DeepSpeed knows"});
  EXPECT_TRUE(parsed_deepspeed(R"({"train_batch_size": 8, "bf16": {"enabled": true},
                         "data_types": {"param_dtype": "torch.bfloat16"}})")
                  .warnings.empty());
}

// The estimate has no training flags: values HF compares with them are not compared, the batch
// is its own, and every key is judged by the same rules as for `zerotune train`.
TEST(DeepSpeedKeys, WithoutFlagsEveryKeyIsJudgedAsForTraining) {
  const json ds = json::parse(R"({"_comment": "c", "train_batch_size": 64, "gradient_accumulation_steps": 8,
      "gradient_clipping": 0.3, "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": "auto"}},
      "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 100, "total_num_steps": "auto"}},
      "fp16": {"enabled": "auto"}, "memory_breakdown": true, "monitor_config": {"enabled": true},
      "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto"}})");
  const DeepSpeedConfig estimate = parse_deepspeed_without_flags(ds, 64, "ds.json");
  EXPECT_EQ(estimate.zero.stage, 3);
  EXPECT_EQ(estimate.zero.reduce_bucket_size, 64 * 64);  // filled from the model as HF fills it
  EXPECT_EQ(estimate.zero.stage3_prefetch_bucket_size, 3686);
  EXPECT_EQ(estimate.optimizer->lr, 3e-4);  // not compared with --learning_rate
  // The same warnings `zerotune train` gives for this config with flags that match it.
  const TrainingArguments args =
      deepspeed_test_arguments({"--per_device_train_batch_size", "8", "--gradient_accumulation_steps", "8",
                                "--max_grad_norm", "0.3", "--learning_rate", "3e-4"});
  json filled = ds;
  fill_hf_auto(filled, deepspeed_auto_context(args, 1, 64, 1000, 100), "ds.json");
  const DeepSpeedConfig train = parse_deepspeed_config(filled, 1, "ds.json");
  EXPECT_EQ(estimate.warnings, train.warnings) << all_warnings(estimate) << "--\n" << all_warnings(train);
  EXPECT_EQ(estimate.warnings.size(), 2u) << all_warnings(estimate);

  // A near miss of a key that matters, and a refused feature, are the same errors.
  for (const char* text : {R"({"zero_optimisation": {"stage": 2}})", R"({"tensor_parallel": {"autotp_size": 2}})",
                           R"({"train_micro_batch_size_per_gpu": 4, "optimizer": {"type": "Lamb"}})"}) {
    const std::string without =
        testing::error_of([&] { parse_deepspeed_without_flags(json::parse(text), 64, "ds.json"); });
    const std::string with = testing::error_of([&] {
      json full = json::parse(text);
      full["train_micro_batch_size_per_gpu"] = 4;
      parse_deepspeed_config(full, 1, "ds.json");
    });
    EXPECT_NE(without, "no error") << text;
    EXPECT_EQ(without, with) << text;
  }
}

}  // namespace
}  // namespace zt::train
