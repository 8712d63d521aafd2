// Sharded checkpoints: saving in Hugging Face's layout, loading back from a directory, an
// index or a single file, and the errors of an index that does not match its shards.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tensor/safetensors/safetensors_index.h"
#include "tests/common/safetensors_test_util.h"

namespace zt {
namespace {

using testing::expect_error_mentioning;
using testing::patterned;
using testing::read_bytes;
using testing::ScratchDir;
using testing::tensor_bytes;
using testing::write_bytes;

// Ten 64-byte tensors, in a deliberately unsorted order.
NamedTensors ten_tensors() {
  NamedTensors tensors;
  for (int i : {3, 0, 7, 1, 9, 2, 8, 4, 6, 5})
    tensors.emplace_back("layer." + std::to_string(i) + ".weight", patterned({16}, DType::kF32, i));
  return tensors;
}

void expect_same_tensors(const SafetensorsCheckpoint& checkpoint, const NamedTensors& tensors) {
  ASSERT_EQ(checkpoint.names().size(), tensors.size());
  for (const auto& [name, tensor] : tensors) {
    ASSERT_TRUE(checkpoint.contains(name)) << name;
    EXPECT_EQ(tensor_bytes(checkpoint.get(name)), tensor_bytes(tensor)) << name;
  }
}

TEST(SafetensorsCheckpoint, SmallShardLimitWritesSeveralShardsAndAnIndex) {
  ScratchDir dir;
  NamedTensors tensors = ten_tensors();
  auto written = save_sharded_safetensors(dir.str(), tensors, 150, {{"format", "pt"}});
  std::vector<std::string> expected_files = {"model-00001-of-00005.safetensors", "model-00002-of-00005.safetensors",
                                             "model-00003-of-00005.safetensors", "model-00004-of-00005.safetensors",
                                             "model-00005-of-00005.safetensors", "model.safetensors.index.json"};
  EXPECT_EQ(dir.listing(), expected_files);
  ASSERT_EQ(written.size(), 6u);
  EXPECT_EQ(written.back(), dir.file("model.safetensors.index.json"));

  auto index = nlohmann::json::parse(read_bytes(dir.file("model.safetensors.index.json")));
  EXPECT_EQ(index["metadata"]["total_size"], 640);
  EXPECT_EQ(index["weight_map"].size(), 10u);
  EXPECT_EQ(index["weight_map"]["layer.3.weight"], "model-00001-of-00005.safetensors");  // greedy, in given order
  EXPECT_EQ(index["weight_map"]["layer.0.weight"], "model-00001-of-00005.safetensors");
  EXPECT_EQ(index["weight_map"]["layer.7.weight"], "model-00002-of-00005.safetensors");
  EXPECT_EQ(index["weight_map"]["layer.5.weight"], "model-00005-of-00005.safetensors");

  for (const std::string& path : {dir.str(), dir.file("model.safetensors.index.json")}) {
    auto checkpoint = SafetensorsCheckpoint::open(path);
    expect_same_tensors(checkpoint, tensors);
    EXPECT_EQ(checkpoint.shards().size(), 5u);
    EXPECT_EQ(checkpoint.shards()[0].metadata().at("format"), "pt");
  }
}

TEST(SafetensorsCheckpoint, IndexIsIndentedSortedJsonLikeTransformersWrites) {
  ScratchDir dir;
  save_sharded_safetensors(dir.str(), {{"b", patterned({4}, DType::kU8, 1)}, {"a", patterned({4}, DType::kU8, 2)}}, 4);
  EXPECT_EQ(read_bytes(dir.file("model.safetensors.index.json")),
            "{\n"
            "  \"metadata\": {\n"
            "    \"total_size\": 8\n"
            "  },\n"
            "  \"weight_map\": {\n"
            "    \"a\": \"model-00002-of-00002.safetensors\",\n"
            "    \"b\": \"model-00001-of-00002.safetensors\"\n"
            "  }\n"
            "}\n");
}

TEST(SafetensorsCheckpoint, OneShardIsASingleFileWithoutIndex) {
  ScratchDir dir;
  NamedTensors tensors = ten_tensors();
  save_sharded_safetensors(dir.str(), tensors, 1 << 20);
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"model.safetensors"}));
  expect_same_tensors(SafetensorsCheckpoint::open(dir.str()), tensors);
  expect_same_tensors(SafetensorsCheckpoint::open(dir.file("model.safetensors")), tensors);
}

TEST(SafetensorsCheckpoint, TensorLargerThanTheLimitGetsAShardOfItsOwn) {
  ScratchDir dir;
  NamedTensors tensors = {{"small", patterned({4}, DType::kU8, 1)},
                          {"big", patterned({100}, DType::kU8, 2)},
                          {"tail", patterned({4}, DType::kU8, 3)}};
  save_sharded_safetensors(dir.str(), tensors, 10, {}, "adapter");
  auto checkpoint = SafetensorsCheckpoint::open(dir.file("adapter.safetensors.index.json"));
  EXPECT_EQ(checkpoint.shards().size(), 3u);
  EXPECT_EQ(checkpoint.shard("big").path(), dir.file("adapter-00002-of-00003.safetensors"));
  EXPECT_EQ(checkpoint.names(), (std::vector<std::string>{"small", "big", "tail"}));
  expect_same_tensors(checkpoint, tensors);
}

TEST(SafetensorsCheckpoint, ResavingRemovesFilesTheNewSaveDoesNotUse) {
  ScratchDir dir;
  save_sharded_safetensors(dir.str(), ten_tensors(), 150);
  write_bytes(dir.file("notes.txt"), "kept");
  save_sharded_safetensors(dir.str(), ten_tensors(), 300);  // 3 shards now
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{
                               "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                               "model-00003-of-00003.safetensors", "model.safetensors.index.json", "notes.txt"}));
  save_sharded_safetensors(dir.str(), ten_tensors(), 1 << 20);
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"model.safetensors", "notes.txt"}));
  expect_same_tensors(SafetensorsCheckpoint::open(dir.str()), ten_tensors());
}

TEST(SafetensorsCheckpoint, RefusesBadArgumentsBeforeWritingAnything) {
  ScratchDir dir;
  Tensor x = Tensor::zeros({1}, DType::kF32);
  expect_error_mentioning([&] { save_sharded_safetensors(dir.str(), {{"w", x}, {"w", x}}, 100); }, {"'w'", "twice"});
  expect_error_mentioning([&] { save_sharded_safetensors(dir.str(), {{"w", x}}, 0); }, {"max_shard_bytes"});
  expect_error_mentioning([&] { save_sharded_safetensors(dir.str(), {{"w", x}}, 9, {}, "a/b"); }, {"'a/b'"});
  EXPECT_TRUE(dir.listing().empty());
}

// ---- a broken checkpoint names what is wrong ----

class SafetensorsBrokenCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override { save_sharded_safetensors(dir.str(), ten_tensors(), 150); }
  std::string index_path() const { return dir.file("model.safetensors.index.json"); }
  ScratchDir dir;
};

TEST_F(SafetensorsBrokenCheckpoint, MissingShardFile) {
  std::filesystem::remove(dir.file("model-00003-of-00005.safetensors"));
  expect_error_mentioning([&] { SafetensorsCheckpoint::open(dir.str()); },
                          {index_path(), "'model-00003-of-00005.safetensors'", "does not exist", "layer.2.weight"});
}

TEST_F(SafetensorsBrokenCheckpoint, TensorListedButAbsentFromItsShard) {
  auto index = nlohmann::json::parse(read_bytes(index_path()));
  index["weight_map"]["layer.3.weight"] = "model-00002-of-00005.safetensors";
  write_bytes(index_path(), index.dump());
  expect_error_mentioning([&] { SafetensorsCheckpoint::open(index_path()); },
                          {index_path(), "'layer.3.weight'", "model-00002-of-00005.safetensors", "does not hold it"});
}

TEST_F(SafetensorsBrokenCheckpoint, IndexNotJson) {
  write_bytes(index_path(), "{\"weight_map\": ");
  expect_error_mentioning([&] { SafetensorsCheckpoint::open(dir.str()); }, {index_path(), "not valid JSON"});
}

TEST_F(SafetensorsBrokenCheckpoint, IndexWithoutWeightMap) {
  write_bytes(index_path(), R"({"metadata": {"total_size": 640}})");
  expect_error_mentioning([&] { SafetensorsCheckpoint::open(index_path()); }, {index_path(), "\"weight_map\""});
}

TEST_F(SafetensorsBrokenCheckpoint, IndexPointingOutsideItsFolder) {
  write_bytes(index_path(), R"({"weight_map": {"w": "../elsewhere.safetensors"}})");
  expect_error_mentioning([&] { SafetensorsCheckpoint::open(index_path()); },
                          {index_path(), "'w'", "plain file names"});
}

TEST_F(SafetensorsBrokenCheckpoint, IndexListingATensorTwice) {
  write_bytes(index_path(), R"({"weight_map": {"w": "a.safetensors", "w": "b.safetensors"}})");
  expect_error_mentioning([&] { SafetensorsCheckpoint::open(index_path()); }, {index_path(), "'w'", "twice"});
}

TEST_F(SafetensorsBrokenCheckpoint, CorruptShardNamesTheShard) {
  write_bytes(dir.file("model-00004-of-00005.safetensors"), "short");
  expect_error_mentioning([&] { SafetensorsCheckpoint::open(dir.str()); },
                          {"model-00004-of-00005.safetensors", "truncated"});
}

TEST_F(SafetensorsBrokenCheckpoint, UnknownTensorListsAvailableNames) {
  auto checkpoint = SafetensorsCheckpoint::open(dir.str());
  expect_error_mentioning([&] { checkpoint.get("lm_head.weight"); },
                          {"'lm_head.weight'", index_path(), "10 tensors", "'layer."});
}

TEST(SafetensorsCheckpointDirectory, AmbiguousOrEmptyDirectoriesAreErrors) {
  ScratchDir dir;
  expect_error_mentioning([&] { SafetensorsCheckpoint::open(dir.str()); }, {dir.str(), "no *.safetensors"});
  save_safetensors(dir.file("a.safetensors"), {});
  save_safetensors(dir.file("b.safetensors"), {});
  expect_error_mentioning([&] { SafetensorsCheckpoint::open(dir.str()); }, {dir.str(), "several", "a.safetensors"});
}

}  // namespace
}  // namespace zt
