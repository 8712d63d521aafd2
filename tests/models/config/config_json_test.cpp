// Numbers in the JSON files of a model folder that C++ cannot hold as written: each is an
// error naming the file and the key, never a wrapped value, an undefined conversion or an
// exception of the JSON library. Found by fuzz/config_json_fuzz.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/config/config.h"
#include "models/config/config_json.h"
#include "tests/common/op_test_util.h"

namespace zt::models {
namespace {

using testing::error_of;
using testing::expect_mentions;

TEST(ConfigJson, NumberBeyondDoubleIsInvalidJsonNamingTheFile) {
  expect_mentions(error_of([] { parse_json_text(R"({"rope_theta": 1e900})", "m/config.json"); }),
                  {"m/config.json", "not valid JSON", "1e900"});
}

TEST(ConfigJson, IntegerKeysOutOfInt64RangeAreErrors) {
  const nlohmann::ordered_json json = nlohmann::ordered_json::parse(
      R"({"float": 1e300, "unsigned": 18446744073709551615, "list": [2, 9223372036854775808], "whole": 2048.0,
          "low": -9223372036854775808})");
  const detail::ConfigKeys keys(json, "config.json");
  expect_mentions(error_of([&] { keys.integer("float", 0); }), {"config.json", "'float'", "out of range"});
  expect_mentions(error_of([&] { keys.integer("unsigned", 0); }),
                  {"'unsigned'", "out of range", "18446744073709551615"});
  expect_mentions(error_of([&] { keys.integer_list("list"); }), {"'list'", "out of range"});
  EXPECT_EQ(keys.integer("whole", 0), 2048);
  EXPECT_EQ(keys.integer("low", 0), INT64_MIN);
}

TEST(ConfigJson, HugeSizeInConfigIsRefusedByName) {
  expect_mentions(error_of([] {
                    parse_config(parse_json_text(R"({"model_type": "qwen3", "hidden_size": 1e300})", "config.json"),
                                 "config.json");
                  }),
                  {"config.json", "hidden_size", "out of range"});
}

ModelConfig parse(const std::string& text) { return parse_config(parse_json_text(text, "config.json"), "config.json"); }

// The tables sized by a count were allocated before any check: 9e18 layers asked for exabytes.
TEST(ConfigJson, SizesBeyondAnyModelAreRefusedBeforeAllocating) {
  expect_mentions(error_of([] { parse(R"({"model_type": "qwen2", "num_hidden_layers": 9000000000000000000})"); }),
                  {"config.json", "num_hidden_layers", "9000000000000000000", "2147483647"});
  expect_mentions(error_of([] { parse(R"({"model_type": "chatglm", "num_layers": 4000000000})"); }), {"num_layers"});
  // 4 heads of 2^62 dims: q_size overflowed int64.
  expect_mentions(
      error_of([] { parse(R"({"model_type": "qwen3", "head_dim": 4611686018427387904, "num_attention_heads": 4})"); }),
      {"head_dim"});
  const ModelConfig widest =
      parse(R"({"model_type": "qwen3", "head_dim": 2147483646, "num_attention_heads": 4, "num_key_value_heads": 4})");
  EXPECT_EQ(widest.q_size(), 4 * std::int64_t{2147483646});
}

TEST(ConfigJson, PartialRotaryFactorOutsideZeroToOneIsRefused) {
  for (const char* factor : {"1e300", "0", "-0.5", "1.5"})
    expect_mentions(
        error_of([&] { parse(std::string(R"({"model_type": "glm", "partial_rotary_factor": )") + factor + "}"); }),
        {"config.json", "partial_rotary_factor", "(0, 1]"});
}

// A negative max_window_layers indexed the per-layer flags below zero (a heap overflow);
// transformers makes every layer sliding then.
TEST(ConfigJson, NegativeMaxWindowLayersMakesEveryLayerSliding) {
  const ModelConfig c = parse(R"({"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300,
      "use_sliding_window": true, "sliding_window": 16, "max_window_layers": -2})");
  EXPECT_EQ(c.sliding_layers, std::vector<bool>(4, true));
}

}  // namespace
}  // namespace zt::models
