// ZeRO stage 3 (train/zero/zero3_partitioner.h, train/zero/zero3_optimizer.h) on the tiny model
// fixtures, ranks as threads on the CPU. Every stage at world sizes 1-4 ends 5 steps on the
// weights the single-device trainer reaches on the same global batch, with gradient
// accumulation and clipping, for full, freeze, LoRA and P-Tuning fine-tuning; under fp16 every
// rank skips the steps one device skips; the flat buffers give every rank an equal aligned
// chunk whatever the tensor sizes; weights are whole only while their module computes; a
// non-finite gradient on one rank skips the step on all; checkpoints move between stages and
// world sizes; stage 3 with optimizer offload ends where it does without; `zerotune train
// --inprocess_ranks` writes whole model files.
//
// How close is "the same"? Ranks sum gradients in another order than one device
// accumulates them, so they differ in the last bits; Adam divides each gradient by its own
// running magnitude, which turns those bits into whole steps wherever a gradient is rounding
// noise. The key projection's bias is such a parameter everywhere (softmax ignores a shift
// that is the same for all keys of a query, so its gradient is exactly zero and backward
// computes noise), and with Adam's eps 1e-8 its weights drift apart by 1e-3 relative between
// any two summation orders, whatever the stage. The comparisons therefore use eps 1e-3, which
// damps such gradients, and bound each tensor's relative error ‖got − expected‖ / ‖expected‖
// by 1e-6; any real error (a wrong slice, a lost or doubled gradient, a stale weight, a norm
// over one partition only) is orders of magnitude above that. Where the summation orders
// agree (one or two ranks, no accumulation, no clipping) the runs are equal bit for bit with
// the default eps.
#include "tests/common/tiny_trainer_model.h"
#include "tests/train/zero/zero3_run_fixture.h"

namespace zt::train {
namespace {

// Every stage at world sizes 1-4 against one device: plain, and with accumulation over two
// micro-batches, clipping at 0.5 (the norm is above it at every step) and every parameter
// partitioned; on a tied (Qwen2) and an untied (GLM) model whose tensor sizes divide by
// neither 3 nor 4 nor 16 (vocab 503, hidden 96, ffn 120, kv 32).
class Zero3Stages : public Zero3, public ::testing::WithParamInterface<std::string> {};

TEST_P(Zero3Stages, EveryStageAndWorldSizeEndsOnTheSingleDeviceWeights) {
  for (const bool accumulate_and_clip : {false, true}) {
    for (int world : {1, 2, 3, 4}) {
      Spec run;
      run.model = GetParam();
      run.world = world;
      if (accumulate_and_clip) {
        run.accumulation = 2;
        run.max_grad_norm = 0.5;
        run.persistence_threshold = 0;
      }
      const Weights expected = train(run.single(), "single");
      for (int stage : {0, 1, 2, 3}) {
        run.stage = stage;
        expect_same_weights(train(run, "stage" + std::to_string(stage)), expected, run.label());
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TiedAndUntied, Zero3Stages, ::testing::Values("qwen2", "glm"));

// With the default eps and the summation order of one device (one rank, or two ranks whose
// two-term sums round alike, and no accumulation), stage 3 reproduces it bit for bit.
TEST_F(Zero3, BitForBitWhereTheSumsAgree) {
  for (int world : {1, 2}) {
    Spec run;
    run.world = world;
    run.adam_epsilon = "1e-8";
    const Weights expected = train(run.single(), "single");
    expect_same_weights(train(run, "stage3"), expected, run.label(), 0.0);
  }
}

TEST_F(Zero3, EachFineTuningMethodEndsOnTheSingleDeviceWeights) {
  struct Case {
    std::string model, method;
  };
  for (const Case& c : {Case{"qwen2", "freeze"}, Case{"qwen2", "lora"}, Case{"qwen2", "ptuning"},
                        Case{"chatglm", "lora"}, Case{"glm4", "freeze"}}) {
    Spec run;
    run.model = c.model;
    run.method = c.method;
    run.accumulation = 2;
    run.max_grad_norm = 0.5;
    run.persistence_threshold = 50;  // LoRA matrices and prefix weights partitioned too
    for (int world : {1, 2, 3, 4}) {
      run.world = world;
      const std::string name = c.model + "_" + c.method + "_" + std::to_string(world);
      const Weights expected = train(run.single(), name + "_single");
      expect_same_weights(train(run, name + "_stage3"), expected, run.label());
    }
  }
}

// LoRA's and P-Tuning's dropout draw from each rank's random stream: a stage-3 layer, run
// twice (forward, then recompute in backward), must draw the same masks as a plain run once.
TEST_F(Zero3, DropoutMasksRepeatInTheRecompute) {
  for (const std::string method : {"lora", "ptuning"}) {
    Spec run;
    run.method = method;
    run.world = 2;
    run.prefix_dropout = 0.1;
    run.extra = {"--lora_dropout", "0.1"};
    if (method == "ptuning") run.extra.clear();
    run.stage = 2;
    const Weights expected = train(run, "stage2");
    run.stage = 3;
    expect_same_weights(train(run, "stage3"), expected, run.label());
  }
}

// Every rank must skip exactly the steps one device skips, halving the scale alike.
TEST_F(Zero3, Fp16OverflowsSkipTheSameStepsOnEveryRank) {
  Spec run = fp16_at_the_edge();
  auto scales = [](const TrainerState& state) {
    std::vector<std::pair<double, std::int64_t>> out;
    for (const nlohmann::json& entry : state.log_history)
      if (entry.contains("loss_scale"))
        out.emplace_back(entry["loss_scale"].get<double>(), entry["skipped_steps"].get<std::int64_t>());
    return out;
  };
  for (int world : {2, 3}) {
    run.world = world;
    TrainerState single_state, zero3_state;
    const Weights expected = train(run.single(), "single", &single_state);
    const Weights got = train(run, "stage3", &zero3_state);
    ASSERT_GT(scales(single_state).back().second, 0) << "the test needs some overflowed steps";
    ASSERT_LT(scales(single_state).back().second, run.steps) << "and some that were not";
    EXPECT_EQ(scales(zero3_state), scales(single_state)) << run.label();
    expect_same_weights(got, expected, run.label());
  }
}

// Optimizer offload under stage 3: each rank's master chunks and moments in host memory,
// updated by the CPU Adam, end on the weights of stage 3 without offload, at world sizes 1-3
// with accumulation and clipping, for full fine-tuning and LoRA.
TEST_F(Zero3, OffloadEndsOnTheWeightsWithoutOffload) {
  for (const std::string method : {"full", "lora"}) {
    for (int world : {1, 2, 3}) {
      Spec run = accumulated_clipped(method, world);
      const std::string name = method + "_" + std::to_string(world);
      const Weights expected = train(run, name + "_plain");
      run.offload = true;
      expect_same_weights(train(run, name + "_offload"), expected, run.label() + " offload");
    }
  }
}

// Under fp16 with offload, every rank skips the steps stage 3 without offload skips (the
// overflow verdict is agreed before the offloaded update starts).
TEST_F(Zero3, OffloadSkipsTheSameFp16Overflows) { expect_offload_skips_the_same_fp16_overflows(&Spec::offload, 1e-6); }

// The optimizer state of a checkpoint that `run` wrote: one file per rank (one in all under
// stage 0, where every rank holds the same state), together holding every element of every
// trained parameter once, and an index describing each of them (those of the model or adapter
// files beside it) with its shape.
void expect_state_files_of_every_rank(const fs::path& checkpoint, const Spec& run) {
  const std::string what = checkpoint.string() + " of " + run.label();
  std::int64_t stored = 0;
  for (int rank = 0; rank < run.world; ++rank) {
    const fs::path file = checkpoint / state_file_name(rank, run.world);
    ASSERT_EQ(fs::exists(file), run.stage > 0 || rank == 0) << what << " rank " << rank;
    if (!fs::exists(file)) continue;
    const SafetensorsFile slices = SafetensorsFile::open(file.string());
    for (const std::string& tensor : slices.names())
      if (tensor.ends_with(".master")) stored += shape_numel(slices.info(tensor).shape);
  }
  const std::optional<OptimizerStateFiles> state = OptimizerStateFiles::open(checkpoint.string());
  ASSERT_TRUE(state.has_value()) << what;
  EXPECT_EQ(state->source(), (checkpoint / kOptimizerIndexFile).string());
  std::int64_t trained = 0;
  std::set<std::string> weight_names;
  for (const auto& entry : fs::directory_iterator(checkpoint)) {
    if (entry.path().extension() != ".safetensors") continue;
    const SafetensorsFile weights = SafetensorsFile::open(entry.path().string());
    for (const std::string& name : weights.names()) {
      weight_names.insert(name);
      ASSERT_TRUE(state->contains(name)) << what << ": the index does not describe " << name;
      EXPECT_EQ(state->shape(name), weights.info(name).shape) << name;
      EXPECT_EQ(state->damage(name), std::nullopt) << name;
      trained += shape_numel(weights.info(name).shape);
    }
  }
  const std::vector<std::string> names = state->names();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), weight_names) << what;
  EXPECT_EQ(stored, trained) << what << ": the rank files hold each element once and no padding";
}

// Checkpoints hold the optimizer state per parameter name (each rank's slices in its own file,
// an index describing them) and whole model files, so a run moves between stages, world sizes
// and offload: stage 2 on 4 ranks -> stage 3 on 2 and stage 1 on 3, stage 3 on 2 -> stage 3
// on 4, offloaded stage 1 on 2 -> stage 3 on 3, stage 0 on 2 -> stage 2 on 4 (with offload),
// stage 3 on 3 -> one device, with LoRA too; offloaded stage 3 on 2 -> stage 2 on 3 and
// stage 2 on 3 -> offloaded stage 3 on 2. The global batch (ranks x micro-batch) stays the
// same, so the resumed run continues on the same samples and ends where one device does
// without interruption.
TEST_F(Zero3, CheckpointsResumeAtAnotherWorldSizeAndStage) {
  struct Move {
    std::string method;
    int from_stage, from_world, to_stage, to_world;
    bool from_offload = false, to_offload = false;
  };
  for (const Move& move :
       {Move{"full", 2, 4, 3, 2}, Move{"full", 2, 4, 1, 3}, Move{"full", 3, 2, 3, 4}, Move{"full", 1, 2, 3, 3, true},
        Move{"full", 0, 2, 2, 4, false, true}, Move{"lora", 3, 3, 3, 0}, Move{"full", 3, 2, 2, 3, true, false},
        Move{"full", 2, 3, 3, 2, false, true}, Move{"lora", 3, 3, 2, 2, true, false}}) {
    Spec writer = checkpoint_writer(move.method).on_ranks(move.from_world);
    writer.stage = move.from_stage;
    writer.offload = move.from_offload;
    const std::string name = "writer_" + move.method + std::to_string(move.from_stage) +
                             std::to_string(move.from_world) + (move.from_offload ? "_offload" : "");
    train(writer, name);
    expect_state_files_of_every_rank(dir_ / name / "checkpoint-2", writer);
    Spec reader = writer.on_ranks(move.to_world);
    reader.stage = move.to_stage;
    reader.offload = move.to_offload;
    expect_resume_matches_uninterrupted(writer, reader, name);
  }
}

// `zerotune train --inprocess_ranks 2` under the ZeRO-3 config users copy (every size
// "auto"): the model files are whole, and equal those of a stage-2 run.
TEST_F(Zero3, TheTrainingJobWritesWholeModelFiles) {
  const fs::path ds = dir_ / "ds.json";
  auto job = [&](int stage, const fs::path& out) {
    std::ofstream(ds) << R"({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
        "gradient_clipping": "auto", "zero_optimization": {"stage": )"
                      << stage << R"(, "overlap_comm": true,
        "contiguous_gradients": true, "sub_group_size": 1e9, "reduce_bucket_size": "auto",
        "stage3_prefetch_bucket_size": "auto", "stage3_param_persistence_threshold": "auto",
        "stage3_max_live_parameters": 1e9, "stage3_max_reuse_distance": 1e9,
        "stage3_gather_16bit_weights_on_model_save": true}})";
    run_training_job(parse_training_arguments(testing::tiny_qwen_job_flags(
        {"--finetuning_type", "full",
         "--max_steps",       "4",
         "--save_strategy",   "no",
         "--validation_file", std::string(ZT_SOURCE_DIR) + "/examples/data/alpaca_demo.json",
         "--eval_strategy",   "steps",
         "--eval_steps",      "2",
         "--adam_epsilon",    "1e-3",
         "--inprocess_ranks", "2",
         "--deepspeed",       ds.string(),
         "--output_dir",      out.string()})));
  };
  job(3, dir_ / "stage3");
  job(2, dir_ / "stage2");
  const Weights stage3 = read_weights(dir_ / "stage3"), stage2 = read_weights(dir_ / "stage2");
  // Evaluation under stage 3 gathers the modules as training does, and logs the same loss.
  EXPECT_EQ(testing::logged_values(dir_ / "stage3", "eval_loss").size(), 2u);
  EXPECT_EQ(testing::logged_values(dir_ / "stage3", "eval_loss"), testing::logged_values(dir_ / "stage2", "eval_loss"));
  const auto model = models::load_model(std::string(ZT_SOURCE_DIR) + "/examples/tiny-qwen");
  for (const auto& p : model.named_parameters()) {
    ASSERT_TRUE(stage3.count(p.name)) << p.name;
    EXPECT_EQ(stage3.at(p.name).shape(), p.variable.data().shape()) << p.name;
  }
  expect_same_weights(stage3, stage2, "zerotune train, stage 3 against stage 2");
}

// The flat buffers: at every world size each rank holds an equal chunk of a multiple of 16
// elements of each module, the chunks cover every element once, a partitioned parameter
// holds nothing until gathered, and a gather rebuilds exactly the loaded value.
TEST(Zero3Partitioner, EqualAlignedChunksCoverEveryElementOnce) {
  for (const std::string name : {"qwen2", "glm", "chatglm"}) {
    const auto original = models::load_model(fixture_dir(name));
    for (int world : {1, 2, 3, 4}) {
      std::mutex mutex;
      std::vector<std::vector<int>> covered;  // per partitioner parameter, per element
      std::vector<bool> persistent;
      distributed::run_inprocess_ranks(world, 60s, [&](distributed::Communicator& comm) {
        auto model = models::load_model(fixture_dir(name));
        Zero3Partitioner partitioner(model, trainable_of(model), comm, 100);
        const ZeroLayout& layout = partitioner.layout();
        {
          std::lock_guard<std::mutex> lock(mutex);
          if (covered.empty())
            for (const auto& p : partitioner.parameters()) {
              covered.emplace_back(shape_numel(p.shape), 0);
              persistent.push_back(p.persistent);
            }
          for (std::size_t g = 0; g < layout.buckets.size(); ++g) {
            const ZeroBucket& bucket = layout.buckets[g];
            EXPECT_EQ(partitioner.shard(g).numel(), bucket.chunk());
            EXPECT_EQ(bucket.chunk() % Zero3Partitioner::kAlignment, 0);
            EXPECT_EQ(bucket.chunk() * world, bucket.padded_numel);
            for (const OwnedPiece& piece : layout.owned_pieces(g, comm.rank()))
              for (std::int64_t i = 0; i < piece.numel; ++i) ++covered[piece.parameter][piece.parameter_offset + i];
          }
        }
        for (const auto& p : partitioner.parameters()) {
          EXPECT_EQ(p.variable.data().numel(), p.persistent ? shape_numel(p.shape) : 0) << p.name;
          // A persistent parameter keeps no allocation it shared with partitioned ones (the
          // model allocates a layer's q/k/v together).
          if (p.persistent)
            EXPECT_EQ(p.variable.data().storage()->nbytes(),
                      static_cast<std::size_t>(shape_numel(p.shape)) * dtype_size(p.variable.data().dtype()))
                << p.name;
        }
        for (const models::ModuleParameters& module : model.modules()) {
          models::GatheredModule gathered(&partitioner, module.module);
          for (const models::NamedParameter& p : module.parameters)
            EXPECT_EQ(max_abs_diff(p.variable.data(), original.parameter(p.name).data()), 0.0) << p.name;
        }
        for (const auto& p : partitioner.parameters()) {
          if (p.persistent) continue;
          EXPECT_EQ(p.variable.data().numel(), 0) << p.name << " after release";
        }
      });
      ASSERT_FALSE(covered.empty());
      for (std::size_t i = 0; i < covered.size(); ++i)
        for (int c : covered[i])
          ASSERT_EQ(c, persistent[i] ? 0 : 1) << name << " world " << world << " parameter " << i;
    }
  }
}

// Counts gathers and how many modules are whole at once, forwarding to the partitioner.
class CountingGatherer : public models::ParameterGatherer {
 public:
  explicit CountingGatherer(models::ParameterGatherer& inner) : inner_(inner) {}
  void gather(const models::ModuleRef& module) override {
    inner_.gather(module);
    ++gathers[models::module_name(module)];
    most_at_once = std::max(most_at_once, ++live);
  }
  void release(const models::ModuleRef& module) override {
    inner_.release(module);
    --live;
  }
  std::map<std::string, int> gathers;
  int live = 0, most_at_once = 0;

 private:
  models::ParameterGatherer& inner_;
};

std::vector<double> all_weights(const Zero3Optimizer& optimizer) {
  std::vector<double> values;
  const Zero3Partitioner& partitioner = optimizer.partitioner();
  for (std::size_t g = 0; g < partitioner.groups().size(); ++g) {
    std::vector<double> shard = partitioner.shard(g).to_vector();
    values.insert(values.end(), shard.begin(), shard.end());
  }
  for (const auto& p : partitioner.parameters())
    if (p.persistent) {
      std::vector<double> whole = p.variable.data().to_vector();
      values.insert(values.end(), whole.begin(), whole.end());
    }
  return values;
}

// One micro-batch's forward and backward as the trainer runs it, with the loss times `factor`.
void forward_backward(models::CausalLM& model, const PackedBatch& batch, double factor) {
  auto ids = [](const std::vector<std::int32_t>& v, DType dtype) {
    return Tensor::from_values(std::vector<double>(v.begin(), v.end()), {static_cast<std::int64_t>(v.size())}, dtype);
  };
  autograd::Variable hidden = model.forward_hidden(ids(batch.input_ids, DType::kI64), ids(batch.positions, DType::kI64),
                                                   ids(batch.cu_seqlens, DType::kI32));
  autograd::Variable loss;
  {
    models::GatheredModule head(model.parameter_gatherer(), model.lm_head_module());
    loss = autograd::linear_cross_entropy(hidden, model.lm_head_weight(), ids(batch.labels, DType::kI64),
                                          {.reduction = ops::Reduction::kSum, .ignore_index = kIgnoreIndex});
  }
  autograd::scale(loss, factor).backward();
}

// Forward gathers every module once, backward every layer once more (its recompute); only
// one module is ever whole at a time, and between steps every partitioned weight is empty.
TEST(Zero3Partitioner, OneModuleWholeAtATime) {
  distributed::run_inprocess_ranks(2, 60s, [&](distributed::Communicator& comm) {
    auto model = models::load_model(fixture_dir("glm"));
    Zero3Optimizer optimizer(model, trainable_of(model), OptimizerConfig{}, comm,
                             {.stage = 3, .stage3_param_persistence_threshold = 0});
    CountingGatherer counting(optimizer.partitioner());
    model.set_parameter_gatherer(&counting);
    const std::vector<TokenizedSample> data = samples(8, 503);
    forward_backward(model, pack(data, {static_cast<std::size_t>(comm.rank()), 2, 3}), 1.0);
    EXPECT_EQ(counting.most_at_once, 1);
    EXPECT_EQ(counting.live, 0);
    EXPECT_EQ(counting.gathers["embedding"], 1);
    EXPECT_EQ(counting.gathers["final norm"], 1);
    EXPECT_EQ(counting.gathers["LM head"], 1);
    for (int layer = 0; layer < model.config().num_layers; ++layer)
      EXPECT_EQ(counting.gathers["layer " + std::to_string(layer)], 2) << layer;
    EXPECT_FALSE(optimizer.step(1e-3, 1.0, 1.0, 1).skipped);
    for (const auto& p : optimizer.partitioner().parameters()) EXPECT_EQ(p.variable.data().numel(), 0) << p.name;
    model.set_parameter_gatherer(&optimizer.partitioner());
  });
}

// A gradient that is not finite on one rank, in an element another rank owns: every rank
// skips the step (the overflow verdict is all-reduced with the norm) and no weight moves;
// the next clean step goes through everywhere.
TEST(Zero3Optimizer, AnOverflowOnOneRankSkipsTheStepOnAll) {
  distributed::run_inprocess_ranks(3, 60s, [&](distributed::Communicator& comm) {
    auto model = models::load_model(fixture_dir("qwen2"));
    Zero3Optimizer optimizer(model, trainable_of(model), OptimizerConfig{}, comm,
                             {.stage = 3, .stage3_param_persistence_threshold = 100});
    const Zero3Partitioner& partitioner = optimizer.partitioner();
    // An element of the first flat group that rank 2 owns.
    const OwnedPiece target = partitioner.layout().owned_pieces(0, 2).front();
    // The gradients as backward would deliver them, through each parameter's hooks.
    auto deliver = [&](bool poison) {
      for (std::size_t i = 0; i < partitioner.parameters().size(); ++i) {
        const auto& p = partitioner.parameters()[i];
        Tensor grad = Tensor::full(p.shape, 1e-3, DType::kF32);
        if (poison && i == target.parameter) {
          std::vector<double> values = grad.to_vector();
          values[static_cast<std::size_t>(target.parameter_offset)] = std::numeric_limits<double>::quiet_NaN();
          grad = Tensor::from_values(values, p.shape, DType::kF32);
        }
        for (const auto& hook : p.variable.impl()->grad_ready_hooks) hook(grad);
      }
    };
    const std::vector<double> before = all_weights(optimizer);
    deliver(comm.rank() == 1);
    const StepResult overflowed = optimizer.step(1e-3, 1.0, 0.0, 1);
    optimizer.zero_grad();
    EXPECT_TRUE(overflowed.skipped) << "rank " << comm.rank();
    EXPECT_EQ(all_weights(optimizer), before) << "rank " << comm.rank();
    deliver(false);
    const StepResult clean = optimizer.step(1e-3, 1.0, 0.0, 1);
    EXPECT_FALSE(clean.skipped) << "rank " << comm.rank();
    EXPECT_NE(all_weights(optimizer), before) << "rank " << comm.rank();
  });
}

}  // namespace
}  // namespace zt::train
