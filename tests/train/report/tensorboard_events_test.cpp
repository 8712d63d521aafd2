// TensorBoard event files as zerotune writes them, read back by the tests' own reader
// (tests/common/tensorboard_event_reader.h): CRC-32C against its published check values, the
// protobuf encoding against protobuf's documented bytes, the TFRecord framing with both CRCs,
// each Event zerotune writes, log entries as HF's TensorBoardCallback tags them, and the
// folders the events go to.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <regex>

#include "tests/common/op_test_util.h"
#include "tests/common/process_test_util.h"
#include "tests/common/tensorboard_event_reader.h"
#include "tests/common/training_arguments_test_util.h"
#include "train/args/report_to.h"
#include "train/args/training_arguments.h"
#include "train/report/crc32c.h"
#include "train/report/event_file_writer.h"
#include "train/report/protobuf_writer.h"
#include "train/report/tensorboard_destination.h"
#include "train/report/tensorboard_event.h"
#include "train/report/tensorboard_log.h"

namespace zt::train {
namespace {

namespace fs = std::filesystem;
using testing::ReadEvent;
using testing::ScopedEnvironment;

std::string bytes_of(std::initializer_list<int> values) {
  std::string out;
  for (const int value : values) out.push_back(static_cast<char>(value));
  return out;
}

// The check value of CRC-32C and RFC 3720's (iSCSI) test patterns.
TEST(Crc32c, MatchesThePublishedCheckValues) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
}

TEST(Crc32c, AgreesWithABitwiseComputationAndMasksAsTfRecordDoes) {
  std::mt19937 random(3);
  for (int length : {1, 7, 8, 100, 1000}) {
    std::string bytes;
    for (int i = 0; i < length; ++i) bytes.push_back(static_cast<char>(random()));
    EXPECT_EQ(crc32c(bytes), testing::bitwise_crc32c(bytes)) << length;
  }
  EXPECT_EQ(masked_crc32c("123456789"), 0xC78AB0E5u);  // ((c >> 15) | (c << 17)) + 0xa282ead8
  EXPECT_EQ(masked_crc32c(""), 0xA282EAD8u);
}

// The examples of protobuf's encoding guide, and fixed-width values little endian.
TEST(ProtoWriter, EncodesAsTheWireFormatSays) {
  EXPECT_EQ(ProtoWriter().varint(1, 150).data(), bytes_of({0x08, 0x96, 0x01}));
  EXPECT_EQ(ProtoWriter().bytes(2, "testing").data(), bytes_of({0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'}));
  EXPECT_EQ(ProtoWriter().varint(2, 0).data(), bytes_of({0x10, 0x00}));
  EXPECT_EQ(ProtoWriter().fixed64(1, 1.0).data(), bytes_of({0x09, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F}));
  EXPECT_EQ(ProtoWriter().fixed32(2, 1.0f).data(), bytes_of({0x15, 0, 0, 0x80, 0x3F}));
  // A field number past 15 takes a two-byte tag; a nested message is length-delimited.
  ProtoWriter inner;
  inner.varint(1, 1);
  EXPECT_EQ(ProtoWriter().message(16, inner).data(), bytes_of({0x82, 0x01, 0x02, 0x08, 0x01}));
  // A negative int64 is its two's complement: ten bytes.
  EXPECT_EQ(ProtoWriter().varint(1, static_cast<std::uint64_t>(std::int64_t{-1})).data().size(), 11u);
}

TEST(TfRecord, FramesTheDataWithItsLengthAndBothMaskedCrcs) {
  // Empty data: 8 zero bytes of length, the masked CRC of those, no data, the masked CRC of "".
  EXPECT_EQ(tfrecord(""),
            std::string(8, '\0') + bytes_of({0x29, 0x03, 0x98, 0x07}) + bytes_of({0xD8, 0xEA, 0x82, 0xA2}));
  const std::string record = tfrecord("abc");
  ASSERT_EQ(record.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(record.substr(0, 8), bytes_of({3, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(record.substr(12, 3), "abc");
}

class EventFiles : public testing::FolderTest {};

TEST_F(EventFiles, AFileIsNamedAsTensorBoardNamesItAndStartsWithItsVersion) {
  const double before = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EventFileWriter first(dir_.string()), second(dir_.string());
  const std::string name = fs::path(first.path()).filename().string();
  const std::regex pattern("events\\.out\\.tfevents\\.[0-9]{10}\\." + host_name() + "\\." + std::to_string(getpid()) +
                           "\\.[0-9]+");
  EXPECT_TRUE(std::regex_match(name, pattern)) << name;
  EXPECT_NE(first.path(), second.path());  // the per-process count tells them apart
  const std::vector<ReadEvent> events = testing::read_events(first.path());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_EQ(events[0].source_writer, "zerotune");
  EXPECT_GE(events[0].wall_time, before - 1);
  EXPECT_LE(events[0].wall_time, before + 60);
  EXPECT_EQ(events[0].step, 0);
}

TEST_F(EventFiles, EachEventIsOnDiskAsSoonAsItIsWritten) {
  EventFileWriter writer(dir_.string());
  writer.write(scalars_event(1.5, 7, {{"train/loss", 2.25f}, {"train/learning_rate", 1e-4f}}));
  // The writer is still open: what a killed run leaves is already readable.
  const std::vector<ReadEvent> events = testing::read_events(writer.path());
  ASSERT_EQ(events.size(), 2u);
  const ReadEvent& scalars = events[1];
  EXPECT_EQ(scalars.wall_time, 1.5);
  EXPECT_EQ(scalars.step, 7);
  ASSERT_EQ(scalars.values.size(), 2u);
  EXPECT_EQ(scalars.values[0].tag, "train/loss");
  EXPECT_EQ(scalars.values[0].simple_value, 2.25f);
  EXPECT_EQ(scalars.values[1].tag, "train/learning_rate");
  EXPECT_EQ(scalars.values[1].simple_value, 1e-4f);
}

TEST(TensorBoardEvents, TextAndSessionStartAreWhatTensorBoardReads) {
  const ReadEvent text = testing::decode_event(text_event(2.0, 0, "args", R"({"seed": 42})"));
  EXPECT_EQ(text.step, 0);
  ASSERT_EQ(text.values.size(), 1u);
  EXPECT_EQ(text.values[0].tag, "args/text_summary");
  EXPECT_EQ(text.values[0].plugin_name, "text");
  EXPECT_EQ(text.values[0].dtype, 7u);  // DT_STRING
  EXPECT_EQ(text.values[0].strings, std::vector<std::string>{R"({"seed": 42})"});
  EXPECT_FALSE(text.values[0].simple_value);
  const ReadEvent start = testing::decode_event(session_start_event(3.0, 5));
  EXPECT_EQ(start.step, 5);
  EXPECT_EQ(start.session_status, 1u);  // SessionLog.START
  EXPECT_TRUE(start.values.empty());
}

TEST(TensorBoardLog, TagsAreHfsRewriteLogs) {
  EXPECT_EQ(tensorboard_tag("loss"), "train/loss");
  EXPECT_EQ(tensorboard_tag("learning_rate"), "train/learning_rate");
  EXPECT_EQ(tensorboard_tag("train_runtime"), "train/train_runtime");
  EXPECT_EQ(tensorboard_tag("eval_loss"), "eval/loss");
  EXPECT_EQ(tensorboard_tag("test_accuracy"), "test/accuracy");
  EXPECT_EQ(tensorboard_tag("evaluation"), "train/evaluation");  // only the eval_ prefix counts
}

TEST_F(EventFiles, ALogWritesTheArgumentsThenEachEntryAtItsStepIntoEveryFolder) {
  TensorBoardLog log({(dir_ / "a").string(), (dir_ / "b").string()}, R"({"output_dir": "o"})", std::nullopt);
  log.append({{"loss", 1.25}, {"grad_norm", 3}, {"epoch", 0.5}, {"step", 4}, {"flag", true}, {"note", "hi"}});
  log.append({{"eval_loss", 0.75}, {"epoch", 1.0}, {"step", 8}});
  ASSERT_EQ(log.paths().size(), 2u);
  std::vector<std::vector<ReadEvent>> both;
  for (const std::string& path : log.paths()) both.push_back(testing::read_events(path));
  ASSERT_EQ(both[0].size(), 5u);  // version, args, the first entry's scalars and text, the second's scalars
  ASSERT_EQ(both[1].size(), both[0].size());
  const std::vector<ReadEvent>& events = both[0];
  EXPECT_EQ(events[1].values.at(0).tag, "args/text_summary");
  EXPECT_EQ(events[1].values[0].strings.at(0), R"({"output_dir": "o"})");
  EXPECT_EQ(events[2].step, 4);
  std::map<std::string, float> scalars;
  for (const auto& value : events[2].values) scalars[value.tag] = value.simple_value.value();
  const std::map<std::string, float> expected = {
      {"train/loss", 1.25f}, {"train/grad_norm", 3.0f}, {"train/epoch", 0.5f}, {"train/flag", 1.0f}};
  EXPECT_EQ(scalars, expected);
  EXPECT_EQ(events[3].step, 4);
  EXPECT_EQ(events[3].values.at(0).tag, "train/note/text_summary");
  EXPECT_EQ(events[4].step, 8);
  ASSERT_EQ(events[4].values.size(), 2u);
  EXPECT_EQ(events[4].values[0].tag, "train/epoch");
  EXPECT_EQ(events[4].values[1].tag, "eval/loss");
  EXPECT_EQ(events[4].values[1].simple_value, 0.75f);
  for (std::size_t i = 1; i < events.size(); ++i) EXPECT_EQ(both[1][i].values.size(), events[i].values.size());
}

TEST_F(EventFiles, AResumedLogStartsASessionPastItsCheckpoint) {
  TensorBoardLog log({dir_.string()}, "{}", std::int64_t{6});
  const std::vector<ReadEvent> events = testing::read_events(log.paths().at(0));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[2].session_status, 1u);
  EXPECT_EQ(events[2].step, 7);
}

// --- Where the files go.

TrainingArguments arguments(const std::vector<std::string>& extra) { return testing::parse_minimal(extra); }

TEST(TensorBoardDestination, TheDefaultIsTransformers4sRunsFolder) {
  const ScopedEnvironment utc("TZ", "UTC");
  EXPECT_EQ(default_logging_dir("out", 0), "out/runs/Jan01_00-00-00_" + host_name());
  EXPECT_EQ(default_logging_dir("o", 1700000000), "o/runs/Nov14_22-13-20_" + host_name());
}

TEST(TensorBoardDestination, ReportToTensorboardPicksLoggingDirThenTheEnvironmentThenTheDefault) {
  const ScopedEnvironment unset("TENSORBOARD_LOGGING_DIR", std::nullopt);
  EXPECT_TRUE(tensorboard_folders(tensorboard_request(arguments({}), std::nullopt), 0).empty());
  EXPECT_TRUE(tensorboard_folders(tensorboard_request(arguments({"--report_to", "wandb"}), std::nullopt), 0).empty());
  EXPECT_EQ(tensorboard_folders(tensorboard_request(arguments({"--report_to", "tensorboard"}), std::nullopt), 0),
            std::vector<std::string>{default_logging_dir("out", 0)});
  EXPECT_EQ(tensorboard_folders(tensorboard_request(arguments({"--report_to", "all"}), std::nullopt), 0),
            std::vector<std::string>{default_logging_dir("out", 0)});
  EXPECT_EQ(tensorboard_folders(
                tensorboard_request(arguments({"--report_to", "tensorboard", "--logging_dir", "tb"}), std::nullopt), 0),
            std::vector<std::string>{"tb"});
  const ScopedEnvironment set("TENSORBOARD_LOGGING_DIR", "from_env");
  EXPECT_EQ(tensorboard_folders(tensorboard_request(arguments({"--report_to", "tensorboard"}), std::nullopt), 0),
            std::vector<std::string>{"from_env"});
  EXPECT_EQ(tensorboard_folders(
                tensorboard_request(arguments({"--report_to", "tensorboard", "--logging_dir", "tb"}), std::nullopt), 0),
            std::vector<std::string>{"tb"});
}

TEST(TensorBoardDestination, DeepSpeedsBlockAddsItsFolderOnce) {
  using nlohmann::json;
  EXPECT_EQ(deepspeed_tensorboard_folder(json::object(), "ds.json"), std::nullopt);
  EXPECT_EQ(deepspeed_tensorboard_folder(json::parse(R"({"tensorboard": {"enabled": false, "output_path": "x"}})"),
                                         "ds.json"),
            std::nullopt);
  EXPECT_EQ(deepspeed_tensorboard_folder(json::parse(R"({"tensorboard": {"enabled": true}})"), "ds.json"),
            "DeepSpeedJobName");
  EXPECT_EQ(
      deepspeed_tensorboard_folder(
          json::parse(R"({"tensorboard": {"enabled": true, "output_path": "logs/", "job_name": "sft"}})"), "ds.json"),
      "logs/sft");
  testing::expect_mentions(testing::error_of([] {
                             deepspeed_tensorboard_folder(
                                 json::parse(R"({"tensorboard": {"enabled": true, "job_name": 3}})"), "ds.json");
                           }),
                           {"ds.json: tensorboard.job_name must be a string, got 3"});
  EXPECT_EQ(tensorboard_folders(tensorboard_request(arguments({}), std::string("logs/sft")), 0),
            std::vector<std::string>{"logs/sft"});
  EXPECT_EQ(
      tensorboard_folders(
          tensorboard_request(arguments({"--report_to", "tensorboard", "--logging_dir", "tb"}), std::string("ds")), 0),
      (std::vector<std::string>{"tb", "ds"}));
  EXPECT_EQ(
      tensorboard_folders(tensorboard_request(arguments({"--report_to", "tensorboard", "--logging_dir", "logs/./sft"}),
                                              std::string("logs/sft")),
                          0),
      std::vector<std::string>{"logs/./sft"});
}

}  // namespace
}  // namespace zt::train
