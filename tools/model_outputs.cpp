// model_outputs: runs one forward + cross-entropy + backward of a model folder on the GPU in
// bfloat16 and writes what came out, so another framework's numbers can be compared with
// zerotune's on real model sizes (scripts/check_hf_shapes.py does, against transformers).
//
//   model_outputs MODEL_DIR INPUTS.safetensors OUTPUTS.safetensors [PARAMETER_NAME...]
//
// INPUTS holds input_ids, positions (int64 [tokens]), cu_seqlens (int32 [sequences + 1]) and
// labels (int64 [tokens], labels[t] follows token t, -100 ignored), as CausalLM::forward and
// CausalLM::loss take them. OUTPUTS gets logits [tokens, vocab] (bf16), loss (f32 [1]) and
// grad/<name> for each parameter named, and the timing in its metadata.
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "models/weights.h"
#include "runtime/check.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "tensor/safetensors.h"

namespace {

using zt::autograd::Variable;
using zt::models::CausalLM;

// One warm-up pass (kernel selection, allocator growth), then these, timed and averaged.
constexpr int kTimedPasses = 3;

struct Inputs {
  zt::Tensor input_ids, positions, cu_seqlens, labels;
};

Inputs read_inputs(const std::string& path) {
  zt::SafetensorsFile file = zt::SafetensorsFile::open(path);
  auto get = [&](const char* name) {
    ZT_REQUIRE(file.contains(name), path + " has no tensor '" + name +
                                        "': it needs input_ids, positions, cu_seqlens and labels");
    return file.get(name).to(zt::Device::cuda());
  };
  return {get("input_ids"), get("positions"), get("cu_seqlens"), get("labels")};
}

struct Pass {
  Variable logits, loss;
  double milliseconds = 0.0;
};

Pass forward_backward(const CausalLM& model, const Inputs& in) {
  model.zero_grad();
  ZT_CUDA_CHECK(cudaDeviceSynchronize());
  const auto start = std::chrono::steady_clock::now();
  Pass pass;
  pass.logits = model.forward(in.input_ids, in.positions, in.cu_seqlens);
  pass.loss = model.loss(pass.logits, in.labels);
  pass.loss.backward();
  ZT_CUDA_CHECK(cudaDeviceSynchronize());
  pass.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return pass;
}

void write_outputs(const CausalLM& model, const Pass& pass, double mean_ms, const std::string& path,
                   const std::vector<std::string>& gradient_names) {
  zt::NamedTensors tensors = {
      {"logits", pass.logits.data()},
      {"loss", zt::Tensor::from_values({pass.loss.data().item()}, {1}, zt::DType::kF32)}};
  for (const std::string& name : gradient_names) {
    const Variable& parameter = model.parameter(name);
    ZT_REQUIRE(parameter.grad().defined(), "parameter " + name + " got no gradient from the loss");
    tensors.emplace_back("grad/" + name, parameter.grad());
  }
  zt::save_safetensors(path, tensors, {{"forward_backward_ms", std::to_string(mean_ms)}});
}

int run(const std::vector<std::string>& args) {
  zt::require_gpu("model_outputs");
  CausalLM model = zt::models::load_model(args[0], {.device = zt::Device::cuda(), .dtype = zt::DType::kBF16});
  const std::vector<std::string> gradient_names(args.begin() + 3, args.end());
  for (const std::string& name : gradient_names) model.parameter(name);  // a wrong name fails before the work
  const Inputs inputs = read_inputs(args[1]);
  forward_backward(model, inputs);
  Pass pass;
  double total_ms = 0.0;
  for (int i = 0; i < kTimedPasses; ++i) {
    pass = forward_backward(model, inputs);
    total_ms += pass.milliseconds;
  }
  const double mean_ms = total_ms / kTimedPasses;
  write_outputs(model, pass, mean_ms, args[2], gradient_names);
  std::printf("%s: %lld parameters, loss %.6f, forward+backward %.2f ms (mean of %d after a warm-up)\n",
              args[0].c_str(), static_cast<long long>(model.num_parameters()), pass.loss.data().item(), mean_ms,
              kTimedPasses);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() < 3) {
    std::cerr << "usage: model_outputs MODEL_DIR INPUTS.safetensors OUTPUTS.safetensors [PARAMETER_NAME...]\n"
                 "runs forward + loss + backward in bf16 on the GPU and writes logits, loss and the named "
                 "parameters' gradients\n";
    return 2;
  }
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::cerr << "model_outputs: error: " << e.what() << "\n";
    return 1;
  }
}
