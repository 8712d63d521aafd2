// generate_bench: decode and prefill speed of the inference engine on one model folder, for
// bench/generate_throughput.py to set beside transformers' generate in the same run.
//
//   generate_bench MODEL_DIR [--batch B] [--prompt_tokens P] [--new_tokens N]
//                  [--cuda_graphs true|false] [--decode_kernel fastest|graph|persistent]
//                  [--quantization_bit 4] [--seed S]
//
// B prompts of P random ids each (seeded) generate exactly N tokens (greedy, no eos), in one
// batch, bf16 on the GPU. Prints one JSON line: prefill seconds (prompts in, first tokens out),
// decode tokens/s over the steady steps (from each sequence's third token to its last, so the
// first decode step's CUDA graph capture is left out), prefill TFLOP/s (2 x parameters per
// prompt token, plus causal attention) and the peak device memory.
// --decode_kernel picks what steps of up to 8 sequences run (infer/engine.h's DecodeKernel): the
// faster of the CUDA graph (itself the fastest of cuBLASLt's and the few-row GEMM's products) and
// the persistent kernel, timed on the first steps (the engine's default), or either alone (the
// graph with cuBLASLt's products), for the ladder in docs/PERF.md.
// --quantization_bit 4 runs on a 4-bit base as `zerotune generate --quantization_bit 4` does
// (NF4 with double quantization, each layer dequantized as a step runs, no CUDA graphs; a
// "-bnb-4bit" folder keeps its own 4 bits); without it such a folder is dequantized at load.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "infer/engine.h"
#include "models/weights/weights.h"
#include "runtime/error.h"
#include "runtime/memory/caching_allocator.h"

namespace {

using Clock = std::chrono::steady_clock;

std::map<std::string, std::string> parse(int argc, char** argv) {
  std::map<std::string, std::string> flags{
      {"--batch", "1"}, {"--prompt_tokens", "128"},     {"--new_tokens", "128"},       {"--cuda_graphs", "true"},
      {"--seed", "0"},  {"--quantization_bit", "none"}, {"--decode_kernel", "fastest"}};
  if (argc < 2)
    zt::fail(
        "usage: generate_bench MODEL_DIR [--batch B] [--prompt_tokens P] [--new_tokens N] "
        "[--cuda_graphs true|false] [--decode_kernel fastest|graph|persistent] [--quantization_bit 4] [--seed S]");
  flags["model"] = argv[1];
  for (int i = 2; i < argc; i += 2) {
    const std::string name = argv[i];
    // As `zerotune generate` says it (cli/generation_flags.cpp).
    ZT_REQUIRE(name != "--fused_decode",
               "--fused_decode was removed: the plain decode path (cuBLASLt GEMMs, each step replayed as a CUDA "
               "graph), which every decode step runs, measured faster at every batch size (docs/PERF.md); drop the "
               "flag");
    ZT_REQUIRE(flags.count(name) && name != "model", "unknown flag " + name);
    ZT_REQUIRE(i + 1 < argc, name + " needs a value");
    flags[name] = argv[i + 1];
  }
  return flags;
}

double prefill_flops(const zt::models::CausalLM& model, std::int64_t batch, std::int64_t prompt) {
  const auto& c = model.config();
  const double dense = 2.0 * static_cast<double>(model.num_parameters()) * static_cast<double>(batch * prompt);
  const double attention = 2.0 * static_cast<double>(batch * prompt * prompt) *
                           static_cast<double>(c.num_heads * c.head_dim) *
                           static_cast<double>(c.num_layers);  // QK^T and PV over the causal half
  return dense + attention;
}

int run(int argc, char** argv) {
  auto flags = parse(argc, argv);
  const std::int64_t batch = std::stoll(flags["--batch"]), prompt = std::stoll(flags["--prompt_tokens"]);
  const std::int64_t new_tokens = std::stoll(flags["--new_tokens"]);
  ZT_REQUIRE(new_tokens >= 4, "--new_tokens must be at least 4");
  zt::models::ModelOptions model_options{.device = zt::Device::cuda(), .dtype = zt::DType::kBF16};
  ZT_REQUIRE(flags["--quantization_bit"] == "none" || flags["--quantization_bit"] == "4",
             "--quantization_bit takes 4, got " + flags["--quantization_bit"]);
  if (flags["--quantization_bit"] == "4") {
    model_options.keep_4bit_weights = true;
    if (!zt::models::load_config(flags["model"]).bnb_4bit)
      model_options.quantize_base = zt::models::quant::Quant4Options{};
  }
  zt::models::CausalLM model = zt::models::load_model(flags["model"], model_options);
  std::mt19937_64 random(std::stoull(flags["--seed"]));
  std::uniform_int_distribution<std::int64_t> id(100, model.config().vocab_size - 1);
  zt::models::GenerationOptions options;
  options.max_new_tokens = options.min_new_tokens = new_tokens;
  options.eos_token_ids.clear();
  std::vector<zt::infer::GenerationRequest> requests(static_cast<std::size_t>(batch));
  for (auto& r : requests) {
    for (std::int64_t t = 0; t < prompt; ++t) r.prompt.push_back(id(random));
    r.options = options;
  }
  const std::map<std::string, zt::infer::DecodeKernel> kernels{{"fastest", zt::infer::DecodeKernel::kFastest},
                                                               {"graph", zt::infer::DecodeKernel::kGraph},
                                                               {"persistent", zt::infer::DecodeKernel::kPersistent}};
  ZT_REQUIRE(kernels.count(flags["--decode_kernel"]),
             "--decode_kernel takes fastest, graph or persistent, got " + flags["--decode_kernel"]);
  zt::infer::EngineOptions engine_options{.max_batch = batch,
                                          .cuda_graphs = flags["--cuda_graphs"] == "true",
                                          .decode_kernel = kernels.at(flags["--decode_kernel"])};
  zt::infer::Engine engine(model, engine_options);
  engine.run({requests.front()});  // warm-up: kernel choices, allocator growth

  std::vector<std::int64_t> produced(requests.size(), 0);
  std::int64_t firsts = 0, thirds = 0;
  Clock::time_point first_tokens, third_tokens, start = Clock::now();
  engine.run(requests, [&](std::size_t r, std::int64_t) {
    const std::int64_t n = ++produced[r];
    if (n == 1 && ++firsts == batch) first_tokens = Clock::now();
    if (n == 3 && ++thirds == batch) third_tokens = Clock::now();
  });
  const Clock::time_point end = Clock::now();
  const double prefill_s = std::chrono::duration<double>(first_tokens - start).count();
  const double decode_s = std::chrono::duration<double>(end - third_tokens).count();
  const double peak_gib = static_cast<double>(zt::device_allocator(0).stats().peak_allocated_bytes) / (1 << 30);
  nlohmann::ordered_json out{{"batch", batch},
                             {"prompt_tokens", prompt},
                             {"new_tokens", new_tokens},
                             {"cuda_graphs", engine_options.cuda_graphs},
                             {"decode_kernel", flags["--decode_kernel"]},
                             {"prefill_s", prefill_s},
                             {"prefill_tflops", prefill_flops(model, batch, prompt) / prefill_s / 1e12},
                             {"decode_tokens_per_s", static_cast<double>(batch * (new_tokens - 3)) / decode_s},
                             {"peak_gib", peak_gib}};
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "generate_bench: error: " << e.what() << "\n";
    return 1;
  }
}
