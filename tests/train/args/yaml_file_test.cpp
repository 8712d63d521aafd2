// YAML arguments files as PyYAML's safe_load reads them: YAML 1.1 scalars, nesting, anchors
// and merges, and errors that name the file, line and column.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/common/op_test_util.h"
#include "train/args/yaml_file.h"

namespace zt::train {
namespace {

using nlohmann::json;

json yaml(const std::string& text) { return parse_yaml(text, "args.yaml"); }
json value_of(const std::string& scalar) { return yaml("v: " + scalar)["v"]; }
std::string error_for(const std::string& text) {
  return testing::error_of([&] { parse_yaml(text, "args.yaml"); });
}

TEST(YamlFile, BooleansAndNullsOfYaml11) {
  for (const char* yes : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})
    EXPECT_EQ(value_of(yes), json(true)) << yes;
  for (const char* no : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
    EXPECT_EQ(value_of(no), json(false)) << no;
  for (const char* null : {"null", "Null", "NULL", "~", ""}) EXPECT_TRUE(value_of(null).is_null()) << null;
  // What PyYAML leaves as text: y/n are not YAML 1.1 booleans in its resolver, quotes keep text.
  EXPECT_EQ(value_of("y"), json("y"));
  EXPECT_EQ(value_of("'true'"), json("true"));
  EXPECT_EQ(value_of("\"null\""), json("null"));
}

TEST(YamlFile, IntegersInEveryBase) {
  EXPECT_EQ(value_of("500"), json(500));
  EXPECT_EQ(value_of("-1"), json(-1));
  EXPECT_EQ(value_of("+7"), json(7));
  EXPECT_EQ(value_of("1_000"), json(1000));
  EXPECT_EQ(value_of("0x1F"), json(31));
  EXPECT_EQ(value_of("0b101"), json(5));
  EXPECT_EQ(value_of("017"), json(15));  // YAML 1.1 octal
  EXPECT_EQ(value_of("0"), json(0));
  EXPECT_EQ(value_of("1:30"), json(90));  // base 60
  EXPECT_EQ(value_of("180000000"), json(180000000));
  EXPECT_EQ(value_of("09"), json("09"));                                      // not octal, not decimal: text
  EXPECT_EQ(value_of("99999999999999999999"), json("99999999999999999999"));  // past int64: left as text
}

TEST(YamlFile, FloatsAsPyYamlResolvesThem) {
  EXPECT_EQ(value_of("1.0e-4"), json(1.0e-4));
  EXPECT_EQ(value_of("3.0"), json(3.0));
  EXPECT_EQ(value_of("1."), json(1.0));
  EXPECT_EQ(value_of(".5"), json(0.5));
  EXPECT_EQ(value_of("-2.5E+3"), json(-2500.0));
  EXPECT_EQ(value_of("1_0.5"), json(10.5));
  EXPECT_EQ(value_of("1:30.5"), json(90.5));
  EXPECT_TRUE(std::isinf(value_of(".inf").get<double>()));
  EXPECT_LT(value_of("-.inf").get<double>(), 0);
  EXPECT_TRUE(std::isnan(value_of(".nan").get<double>()));
  // PyYAML wants a dot and a signed exponent: these stay text (the arguments parse them later).
  EXPECT_EQ(value_of("1e-4"), json("1e-4"));
  EXPECT_EQ(value_of("1.0e4"), json("1.0e4"));
}

TEST(YamlFile, ExplicitTagsDecide) {
  EXPECT_EQ(value_of("!!str 123"), json("123"));
  EXPECT_EQ(value_of("!!float 2"), json(2.0));
  EXPECT_EQ(value_of("!!int '42'"), json(42));
  EXPECT_EQ(value_of("!!bool yes"), json(true));
  EXPECT_TRUE(value_of("!!null ''").is_null());
  EXPECT_EQ(value_of("! 12"), json("12"));
  std::string msg = error_for("v: !!int twelve");
  EXPECT_NE(msg.find("args.yaml:1:4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a !!int"), std::string::npos) << msg;
  msg = error_for("a: 1\nv: !!python/object:os.system x\n");
  EXPECT_NE(msg.find("args.yaml:2:4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not one safe_load constructs"), std::string::npos) << msg;
}

TEST(YamlFile, NestedMapsAndListsForDeepspeedAndKwargs) {
  const json doc = yaml(R"(# a LLaMA-Factory style file
model_name_or_path: Qwen/Qwen3-4B   # comment after a value
deepspeed:
  train_batch_size: auto
  zero_optimization:
    stage: 3
    offload_optimizer: {device: cpu, pin_memory: true}
gradient_checkpointing_kwargs:
  use_reentrant: false
report_to: [wandb, tensorboard]
label_names:
  - labels
text: "quoted: with a colon"
folded: >
  two
  lines
)");
  EXPECT_EQ(doc["model_name_or_path"], "Qwen/Qwen3-4B");
  EXPECT_EQ(doc["deepspeed"]["train_batch_size"], "auto");
  EXPECT_EQ(doc["deepspeed"]["zero_optimization"]["stage"], 3);
  EXPECT_EQ(doc["deepspeed"]["zero_optimization"]["offload_optimizer"]["pin_memory"], true);
  EXPECT_EQ(doc["gradient_checkpointing_kwargs"]["use_reentrant"], false);
  EXPECT_EQ(doc["report_to"], json({"wandb", "tensorboard"}));
  EXPECT_EQ(doc["label_names"], json({"labels"}));
  EXPECT_EQ(doc["text"], "quoted: with a colon");
  EXPECT_EQ(doc["folded"], "two lines\n");
}

TEST(YamlFile, AnchorsAliasesAndMerges) {
  const json doc = yaml(R"(
base: &base {lr: 1, warmup: 2}
other: &other {warmup: 9, decay: 3}
run:
  <<: [*base, *other]
  lr: 5
copy: *base
numbers: &n [1, 2]
again: *n
)");
  EXPECT_EQ(doc["run"]["lr"], 5);      // the map's own key wins
  EXPECT_EQ(doc["run"]["warmup"], 2);  // the first merged map wins over later ones
  EXPECT_EQ(doc["run"]["decay"], 3);
  EXPECT_FALSE(doc["run"].contains("<<"));
  EXPECT_EQ(doc["copy"], doc["base"]);
  EXPECT_EQ(doc["again"], json({1, 2}));
  std::string msg = error_for("a: *missing\n");
  EXPECT_NE(msg.find("args.yaml:1:4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("*missing refers to no complete &missing"), std::string::npos) << msg;
  EXPECT_NE(error_for("a: &loop [*loop]\n").find("refers to no complete &loop"), std::string::npos);
  EXPECT_NE(error_for("a:\n  <<: 3\n").find("'<<' merges a map"), std::string::npos);
}

TEST(YamlFile, SyntaxErrorsNameLineAndColumn) {
  testing::expect_mentions(error_for("learning_rate: 1.0e-4\nbf16: true\n  bad indent: 1\n"), {"args.yaml:3:"});
  testing::expect_mentions(error_for("a: [1, 2\nb: 3\n"), {"args.yaml:", "flow sequence"});
  testing::expect_mentions(error_for("a: 'open\n"), {"args.yaml:"});
  testing::expect_mentions(error_for("a: 1\n---\nb: 2\n"), {"args.yaml:2:1", "a second YAML document"});
  testing::expect_mentions(error_for("? [complex, key]\n: value\n"), {"a map key must be a plain value"});
  testing::expect_mentions(error_for(std::string("a: \xff\xfe\n")), {"args.yaml"});
}

TEST(YamlFile, EmptyAndNonMapDocuments) {
  EXPECT_TRUE(yaml("").is_null());
  EXPECT_TRUE(yaml("# only a comment\n").is_null());
  EXPECT_EQ(yaml("- a\n- b\n"), json({"a", "b"}));
  EXPECT_EQ(yaml("just text"), json("just text"));
}

TEST(YamlFile, HostileDocumentsStopWithAnError) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "[";
  EXPECT_NE(error_for(deep).find("nested deeper than 64"), std::string::npos);
  // Each level doubles the values: 2^30 after thirty levels, far past the limit.
  std::string laughs = "a0: &a0 [x, x]\n";
  for (int i = 1; i <= 30; ++i) {
    const std::string name = std::to_string(i), previous = std::to_string(i - 1);
    laughs.append("a").append(name).append(": &a").append(name).append(" [*a").append(previous).append(", *a");
    laughs.append(previous).append("]\n");
  }
  EXPECT_NE(error_for(laughs).find("expands to over"), std::string::npos);
}

}  // namespace
}  // namespace zt::train
