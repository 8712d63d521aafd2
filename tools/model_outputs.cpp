// model_outputs: runs one forward + cross-entropy + backward of a model folder on the GPU in
// bfloat16 and writes what came out, so another framework's numbers can be compared with
// zerotune's on real model sizes (scripts/check_hf_shapes.py does, against transformers).
//
//   model_outputs MODEL_DIR INPUTS.safetensors OUTPUTS.safetensors [PARAMETER_NAME...]
//                 [--dump_activations FILE.safetensors] [--device cuda|cpu] [--dtype bf16|f32]
//
// INPUTS holds input_ids, positions (int64 [tokens]), cu_seqlens (int32 [sequences + 1]) and
// labels (int64 [tokens], labels[t] follows token t, -100 ignored), as CausalLM::forward and
// CausalLM::loss take them. OUTPUTS gets logits [tokens, vocab] (the model's dtype), loss
// (f32 [1]) and grad/<name> for each parameter named, and the timing in its metadata.
// --dump_activations writes the warm-up forward's activations (models/activation_dump.h) as
// float32 [tokens, features] by transformers' module names (scripts/compare_activations.py
// reads them). --device cpu --dtype f32 runs a tiny model on a machine without GPU.
// --adapter_name_or_path applies a PEFT adapter first (scripts/check_peft_prefix.py uses it).
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "models/activation_dump.h"
#include "models/peft/peft_adapter.h"
#include "models/weights/weights.h"
#include "runtime/check.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "tensor/safetensors/safetensors.h"

namespace {

using zt::autograd::Variable;
using zt::models::CausalLM;

// One warm-up pass (kernel selection, allocator growth), then these, timed and averaged.
constexpr int kTimedPasses = 3;

constexpr const char* kUsage =
    "usage: model_outputs MODEL_DIR INPUTS.safetensors OUTPUTS.safetensors [PARAMETER_NAME...]\n"
    "                     [--dump_activations FILE.safetensors] [--device cuda|cpu] [--dtype bf16|f32]\n"
    "                     [--adapter_name_or_path PEFT_ADAPTER]\n"
    "runs forward + loss + backward (bf16 on the GPU by default) and writes logits, loss and the named "
    "parameters' gradients; --dump_activations also writes the forward's activations\n";

struct Options {
  std::string model_dir, inputs, outputs;
  std::vector<std::string> gradient_names;
  std::string activations_path;  // empty: no activations recorded
  std::string adapter_dir;       // a PEFT adapter (LoRA or prefix tuning) applied to the model
  zt::Device device = zt::Device::cuda();
  zt::DType dtype = zt::DType::kBF16;
};

// Positional arguments in order, flags (each with a value) anywhere among them.
Options parse_options(const std::vector<std::string>& args) {
  Options options;
  std::vector<std::string> positional;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!arg.starts_with("--")) {
      positional.push_back(arg);
      continue;
    }
    ZT_REQUIRE(i + 1 < args.size(), arg + " needs a value\n" + kUsage);
    const std::string& value = args[++i];
    if (arg == "--dump_activations")
      options.activations_path = value;
    else if (arg == "--adapter_name_or_path")
      options.adapter_dir = value;
    else if (arg == "--device")
      options.device = zt::parse_device(value);
    else if (arg == "--dtype")
      options.dtype = zt::parse_dtype(value);
    else
      zt::fail("unknown flag " + arg + "\n" + kUsage);
  }
  ZT_REQUIRE(positional.size() >= 3, std::string("MODEL_DIR, INPUTS and OUTPUTS are required\n") + kUsage);
  options.model_dir = positional[0];
  options.inputs = positional[1];
  options.outputs = positional[2];
  options.gradient_names.assign(positional.begin() + 3, positional.end());
  return options;
}

struct Inputs {
  zt::Tensor input_ids, positions, cu_seqlens, labels;
};

Inputs read_inputs(const std::string& path, zt::Device device) {
  zt::SafetensorsFile file = zt::SafetensorsFile::open(path);
  auto get = [&](const char* name) {
    ZT_REQUIRE(file.contains(name),
               path + " has no tensor '" + name + "': it needs input_ids, positions, cu_seqlens and labels");
    return file.get(name).to(device);
  };
  return {get("input_ids"), get("positions"), get("cu_seqlens"), get("labels")};
}

struct Pass {
  Variable logits, loss;
  double milliseconds = 0.0;
};

void synchronize(zt::Device device) {
  if (device.is_cuda()) ZT_CUDA_CHECK(cudaDeviceSynchronize());
}

Pass forward_backward(const CausalLM& model, const Inputs& in) {
  model.zero_grad();
  synchronize(model.device());
  const auto start = std::chrono::steady_clock::now();
  Pass pass;
  pass.logits = model.forward(in.input_ids, in.positions, in.cu_seqlens);
  pass.loss = model.loss(pass.logits, in.labels);
  pass.loss.backward();
  synchronize(model.device());
  pass.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return pass;
}

void write_outputs(const CausalLM& model, const Pass& pass, double mean_ms, const std::string& path,
                   const std::vector<std::string>& gradient_names) {
  zt::NamedTensors tensors = {{"logits", pass.logits.data()},
                              {"loss", zt::Tensor::from_values({pass.loss.data().item()}, {1}, zt::DType::kF32)}};
  for (const std::string& name : gradient_names) {
    const Variable& parameter = model.parameter(name);
    ZT_REQUIRE(parameter.grad().defined(), "parameter " + name + " got no gradient from the loss");
    tensors.emplace_back("grad/" + name, parameter.grad());
  }
  zt::save_safetensors(path, tensors, {{"forward_backward_ms", std::to_string(mean_ms)}});
}

// The untimed warm-up pass, recording the forward's activations when they are asked for.
void warm_up(CausalLM& model, const Inputs& inputs, const std::string& activations_path) {
  zt::models::ActivationRecorder recorder;
  if (!activations_path.empty()) model.set_activation_recorder(&recorder);
  forward_backward(model, inputs);
  model.set_activation_recorder(nullptr);
  if (!activations_path.empty()) recorder.save(activations_path);
}

int run(const Options& options) {
  if (options.device.is_cuda()) zt::require_gpu("model_outputs");
  CausalLM model = zt::models::load_model(options.model_dir, {.device = options.device, .dtype = options.dtype});
  if (!options.adapter_dir.empty()) zt::models::load_peft_adapter(model, options.adapter_dir);
  const std::vector<std::string>& gradient_names = options.gradient_names;
  for (const std::string& name : gradient_names) model.parameter(name);  // a wrong name fails before the work
  const Inputs inputs = read_inputs(options.inputs, options.device);
  warm_up(model, inputs, options.activations_path);
  Pass pass;
  double total_ms = 0.0;
  for (int i = 0; i < kTimedPasses; ++i) {
    pass = forward_backward(model, inputs);
    total_ms += pass.milliseconds;
  }
  const double mean_ms = total_ms / kTimedPasses;
  write_outputs(model, pass, mean_ms, options.outputs, gradient_names);
  std::printf("%s: %lld parameters, loss %.6f, forward+backward %.2f ms (mean of %d after a warm-up)\n",
              options.model_dir.c_str(), static_cast<long long>(model.num_parameters()), pass.loss.data().item(),
              mean_ms, kTimedPasses);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() < 3) {
    std::cerr << kUsage;
    return 2;
  }
  try {
    return run(parse_options(args));
  } catch (const std::exception& e) {
    std::cerr << "model_outputs: error: " << e.what() << "\n";
    return 1;
  }
}
