// Every way a .safetensors file can be malformed gives a zt::Error that names the file and,
// where there is one, the tensor. Each case is a file built by hand and opened for real.
#include <gtest/gtest.h>

#include "tensor/safetensors/safetensors.h"
#include "tests/common/safetensors_test_util.h"

namespace zt {
namespace {

using namespace std::string_literals;
using testing::expect_error_mentioning;
using testing::safetensors_bytes;
using testing::ScratchDir;
using testing::u64_le;

struct MalformedCase {
  const char* label;
  std::string bytes;                 // the whole file
  std::vector<std::string> mention;  // besides the path
};

// One F32 entry "w" with the given fields spliced in, and 16 bytes of data.
std::string with_entry(const std::string& fields, std::string data = std::string(16, '\0')) {
  return safetensors_bytes(R"({"w":{)" + fields + "}}", data);
}

std::vector<MalformedCase> malformed_cases() {
  const std::string ok_dtype = R"("dtype":"F32",)", ok_shape = R"("shape":[4],)";
  const std::string ok_offsets = R"("data_offsets":[0,16])";
  return {
      {"truncated below 8 bytes", "\x10\0\0"s, {"truncated", "3 bytes"}},
      {"empty file", "", {"truncated"}},
      {"header length past end", u64_le(100) + "{}", {"past the end of the file", "truncated"}},
      {"header absurdly large", u64_le(200'000'000) + "{}", {"exceeds", "100000000"}},
      {"header not JSON", safetensors_bytes("{not json", ""), {"not valid JSON"}},
      {"header invalid UTF-8", safetensors_bytes("{\"\xff\":1}", ""), {"not valid JSON"}},
      {"header not an object", safetensors_bytes("[1,2]", ""), {"must be a JSON object", "array"}},
      {"entry not an object", safetensors_bytes(R"({"w":5})", ""), {"'w'", "must be an object"}},
      {"missing dtype", with_entry(ok_shape + ok_offsets), {"'w'", "no \"dtype\""}},
      {"missing shape", with_entry(ok_dtype + ok_offsets), {"'w'", "no \"shape\""}},
      {"missing data_offsets", with_entry(ok_dtype + R"("shape":[4])"), {"'w'", "no \"data_offsets\""}},
      {"dtype not a string",
       with_entry(R"("dtype":7,)" + ok_shape + ok_offsets),
       {"'w'", "\"dtype\" must be a string"}},
      {"unknown dtype", with_entry(R"("dtype":"F33",)" + ok_shape + ok_offsets), {"'w'", "unknown dtype 'F33'"}},
      {"unsupported dtype", with_entry(R"("dtype":"I8",)" + ok_shape + ok_offsets), {"'w'", "'I8' is not supported"}},
      {"shape not an array",
       with_entry(ok_dtype + R"("shape":"4",)" + ok_offsets),
       {"'w'", "\"shape\" must be an array"}},
      {"shape with a float", with_entry(ok_dtype + R"("shape":[4.0],)" + ok_offsets), {"'w'", "integers"}},
      {"shape with negative dim",
       with_entry(ok_dtype + R"("shape":[-4],)" + ok_offsets),
       {"'w'", "negative dimension -4"}},
      {"shape overflows",
       with_entry(ok_dtype + R"("shape":[4294967296,4294967296],)" + ok_offsets),
       {"'w'", "too large"}},
      {"offsets not a pair", with_entry(ok_dtype + ok_shape + R"("data_offsets":[0])"), {"'w'", "[begin, end]"}},
      {"offsets wrongly typed",
       with_entry(ok_dtype + ok_shape + R"("data_offsets":[0,"16"])"),
       {"'w'", "[begin, end]"}},
      {"offsets negative", with_entry(ok_dtype + ok_shape + R"("data_offsets":[-1,15])"), {"'w'", "[begin, end]"}},
      {"shape and byte range disagree",
       with_entry(ok_dtype + R"("shape":[3],)" + ok_offsets),
       {"'w'", "needs 12 bytes", "span 16"}},
      {"begin after end",
       with_entry(ok_dtype + R"("shape":[0],"data_offsets":[16,8])"),
       {"'w'", "end before they begin"}},
      {"end past the data",
       with_entry(ok_dtype + ok_shape + ok_offsets, std::string(8, '\0')),
       {"'w'", "past the end of the data section"}},
      {"overlapping ranges",
       safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                         std::string(16, '\0')),
       {"'b'", "overlap", "'a'"}},
      {"duplicate tensor names",
       safetensors_bytes(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                         R"("w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                         std::string(8, '\0')),
       {"'w'", "twice"}},
      {"duplicate key in an entry",
       with_entry(ok_dtype + R"("dtype":"F32",)" + ok_shape + ok_offsets),
       {"'w'", "'dtype' twice"}},
      {"duplicate metadata key",
       safetensors_bytes(R"({"__metadata__":{"a":"1","a":"2"}})", ""),
       {"__metadata__", "'a' twice"}},
      {"metadata not an object",
       safetensors_bytes(R"({"__metadata__":[1]})", ""),
       {"__metadata__", "must be an object"}},
      {"metadata value not a string",
       safetensors_bytes(R"({"__metadata__":{"epoch":3}})", ""),
       {"'epoch'", "must be a string"}},
  };
}

TEST(SafetensorsMalformed, EveryCaseNamesTheFileAndTensor) {
  ScratchDir dir;
  for (const MalformedCase& malformed : malformed_cases()) {
    SCOPED_TRACE(malformed.label);
    std::string path = dir.file("bad.safetensors");
    testing::write_bytes(path, malformed.bytes);
    std::vector<std::string> mention = malformed.mention;
    mention.push_back("'" + path + "'");
    expect_error_mentioning([&] { SafetensorsFile::open(path); }, mention);
  }
}

TEST(SafetensorsMalformed, ValidBaseOfTheCasesOpens) {
  // The cases above differ from this file in one field each, so each error is that field's.
  ScratchDir dir;
  testing::write_bytes(dir.file("ok.safetensors"), with_entry(R"("dtype":"F32","shape":[4],"data_offsets":[0,16])"));
  EXPECT_EQ(SafetensorsFile::open(dir.file("ok.safetensors")).get("w").shape(), (Shape{4}));
}

TEST(SafetensorsMalformed, MissingFileAndDirectoryAreClearErrors) {
  ScratchDir dir;
  expect_error_mentioning([&] { SafetensorsFile::open(dir.file("none.safetensors")); },
                          {dir.file("none.safetensors"), "No such file"});
  expect_error_mentioning([&] { SafetensorsFile::open(dir.str()); }, {dir.str(), "directory"});
}

TEST(SafetensorsFormat, DTypeCodesRoundTripAndUnknownCodesDoNot) {
  for (DType dtype : kAllDTypes) EXPECT_EQ(safetensors::parse_dtype_code(safetensors::dtype_code(dtype)), dtype);
  EXPECT_EQ(safetensors::parse_dtype_code("I8"), std::nullopt);
  EXPECT_EQ(safetensors::parse_dtype_code("f32"), std::nullopt);
}

TEST(SafetensorsFormat, ParsedHeaderListsTensorsInFileOrder) {
  std::string file = safetensors_bytes(R"({"late":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},)"
                                       R"("early":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]},)"
                                       R"("__metadata__":{"a":"b"}})",
                                       "\x01\x00\x07\x08"s);
  auto header = safetensors::parse_header(file, "mem");
  ASSERT_EQ(header.tensors.size(), 2u);
  EXPECT_EQ(header.tensors[0], (safetensors::TensorInfo{"early", DType::kBool, {2}, 0, 2}));
  EXPECT_EQ(header.tensors[1], (safetensors::TensorInfo{"late", DType::kU8, {2}, 2, 4}));
  EXPECT_EQ(header.metadata, (std::map<std::string, std::string>{{"a", "b"}}));
  EXPECT_EQ(header.data_start, file.size() - 4);
}

TEST(SafetensorsFormat, SerializedHeaderParsesBackToTheSameLayout) {
  auto layout =
      safetensors::plan_layout({{"b", DType::kF16, {2, 3}}, {"a", DType::kI64, {}}, {"c", DType::kF16, {0}}}, "mem");
  std::string file = safetensors::serialize_header(layout, {{"k", "v"}}, "mem") + std::string(20, '\0');
  auto header = safetensors::parse_header(file, "mem");
  EXPECT_EQ(header.tensors, layout);
  EXPECT_EQ(layout[0].name, "a");  // I64 before F16
  EXPECT_EQ(layout[2].data_end, 20u);
}

}  // namespace
}  // namespace zt
