// zerotune serve on a 4-bit base kept 4-bit (CPU): a folder saved in bitsandbytes' layout
// answers a greedy completion with the text `zerotune generate` gives on the same model
// dequantized to a dense folder, and its log reports the linears held in 4 bits.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "models/quant/quantized_checkpoint.h"
#include "models/quant/quantized_linears.h"
#include "models/weights/weights.h"
#include "tests/serve/serve_test_util.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace zt::testing::serve;

TEST(FourBitServe, AGreedyCompletionEqualsGenerateOnTheDequantizedModel) {
  const fs::path folder = fs::path(ZT_BINARY_DIR) / ("four_bit_serve_test_" + std::to_string(getpid()));
  fs::remove_all(folder);
  fs::create_directories(folder);
  zt::models::CausalLM model = zt::models::load_model(kModel);
  zt::models::quant::save_bnb_4bit_model(model, (folder / "bnb").string(), {});
  zt::models::quant::round_trip_linears(model, {}, zt::DType::kF32);
  zt::models::save_model(model, (folder / "dense").string());

  const fs::path prompts = folder / "prompts.jsonl", out = folder / "out.jsonl";
  std::ofstream(prompts) << R"("a b c")"
                         << "\n";
  const zt::testing::CliRun generated =
      zt::testing::run_zerotune("generate --model_name_or_path " + (folder / "dense").string() +
                                    " --device cpu --max_new_tokens 6 --min_new_tokens 6 --input_file " +
                                    prompts.string() + " --output_file " + out.string(),
                                folder);
  ASSERT_EQ(generated.exit_code, 0) << generated.output;
  const json expected = json::parse(zt::testing::read_text(out));
  ASSERT_FALSE(expected["output"].get<std::string>().empty()) << generated.output;

  {
    ServerProcess server(folder, {}, (folder / "bnb").string());
    ASSERT_NE(server.port(), 0);
    httplib::Client client = server.client();
    const json answer = post(client, "/v1/completions",
                             {{"prompt", "a b c"}, {"max_tokens", 6}, {"min_tokens", 6}, {"temperature", 0}});
    EXPECT_EQ(answer["choices"][0]["text"], expected["output"]);
    EXPECT_NE(server.log().find("4-bit base: "), std::string::npos) << server.log();
  }
  std::error_code ignored;
  fs::remove_all(folder, ignored);
}

}  // namespace
