// Reading and writing .safetensors files through Tensors: round trips, zero copy, the exact
// bytes the writer produces, and atomic replacement.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>

#include "tensor/safetensors/safetensors.h"
#include "tests/common/safetensors_test_util.h"

namespace zt {
namespace {

using namespace std::string_literals;
using testing::expect_error_mentioning;
using testing::patterned;
using testing::read_bytes;
using testing::ScratchDir;
using testing::tensor_bytes;

TEST(SafetensorsFile, RoundTripsEveryDTypeAndAwkwardShapeBitwise) {
  ScratchDir dir;
  NamedTensors saved;
  unsigned seed = 0;
  for (DType dtype : kAllDTypes) {
    std::string code = safetensors::dtype_code(dtype);
    saved.emplace_back(code + ".scalar", patterned({}, dtype, ++seed));
    saved.emplace_back(code + ".empty", patterned({3, 0, 2}, dtype, ++seed));
    saved.emplace_back(code + ".cube", patterned({3, 5, 7}, dtype, ++seed));
    saved.emplace_back(code + ".transposed", patterned({5, 7}, dtype, ++seed).transpose(0, 1));
  }
  save_safetensors(dir.file("all.safetensors"), saved);

  auto file = SafetensorsFile::open(dir.file("all.safetensors"));
  ASSERT_EQ(file.names().size(), saved.size());
  for (const auto& [name, original] : saved) {
    Tensor loaded = file.get(name);
    EXPECT_EQ(loaded.dtype(), original.dtype()) << name;
    EXPECT_EQ(loaded.shape(), original.shape()) << name;
    EXPECT_TRUE(loaded.device().is_cpu()) << name;
    EXPECT_EQ(tensor_bytes(loaded), tensor_bytes(original)) << name;
  }
}

TEST(SafetensorsFile, GetViewsTheMappingWithoutCopying) {
  ScratchDir dir;
  save_safetensors(dir.file("w.safetensors"), {{"w", patterned({64, 64}, DType::kF32, 1)}});
  Tensor first, second;
  const char* begin = nullptr;
  std::size_t size = 0;
  {
    auto file = SafetensorsFile::open(dir.file("w.safetensors"));
    first = file.get("w");
    second = file.get("w");
    begin = static_cast<const char*>(file.mapping_data());
    size = file.mapping_size();
  }
  // The file object is gone; the tensors keep the mapping alive and point into it.
  const char* data = static_cast<const char*>(first.data_ptr());
  EXPECT_GE(data, begin);
  EXPECT_LE(data + first.nbytes(), begin + size);
  EXPECT_EQ(first.data_ptr(), second.data_ptr());
  EXPECT_EQ(tensor_bytes(first), tensor_bytes(patterned({64, 64}, DType::kF32, 1)));
}

TEST(SafetensorsFile, MetadataRoundTrips) {
  ScratchDir dir;
  std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                 {"quote\"and\\slash", "line\nbreak\ttab"},
                                                 {"unicode", "\xc3\xa9t\xc3\xa9 \xe2\x9c\x93"},
                                                 {"", ""}};
  save_safetensors(dir.file("m.safetensors"), {{"x", Tensor::zeros({2}, DType::kF32)}}, metadata);
  EXPECT_EQ(SafetensorsFile::open(dir.file("m.safetensors")).metadata(), metadata);
}

TEST(SafetensorsFile, HeaderIsPaddedToEightBytesWithSpaces) {
  ScratchDir dir;
  for (std::string name : {"a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh"}) {
    save_safetensors(dir.file("p.safetensors"), {{name, Tensor::zeros({1}, DType::kU8)}});
    std::string bytes = read_bytes(dir.file("p.safetensors"));
    std::uint64_t header_size = 0;
    std::memcpy(&header_size, bytes.data(), 8);
    EXPECT_EQ(header_size % 8, 0u) << name;
    EXPECT_EQ(bytes.size(), 8 + header_size + 1) << name;
    std::string header = bytes.substr(8, header_size);
    auto json_end = header.rfind('}') + 1;
    EXPECT_EQ(header.substr(json_end), std::string(header_size - json_end, ' ')) << name;
    EXPECT_LT(header_size - json_end, 8u) << name;
  }
}

TEST(SafetensorsFile, LaysOutTensorsAsThePythonPackageDoes) {
  ScratchDir dir;
  // The Python package writes larger dtypes first (I64, F64, F32, I32, BF16, F16, U8, BOOL),
  // each group by name, contiguously from offset 0.
  NamedTensors tensors = {{"b", Tensor::zeros({3}, DType::kU8)},   {"z", Tensor::zeros({2}, DType::kF32)},
                          {"a", Tensor::zeros({2}, DType::kF32)},  {"m", Tensor::zeros({1}, DType::kI64)},
                          {"c", Tensor::zeros({5}, DType::kBool)}, {"h", Tensor::zeros({4}, DType::kBF16)},
                          {"g", Tensor::zeros({4}, DType::kF16)},  {"d", Tensor::zeros({2}, DType::kF64)},
                          {"i", Tensor::zeros({2}, DType::kI32)}};
  save_safetensors(dir.file("order.safetensors"), tensors);
  auto file = SafetensorsFile::open(dir.file("order.safetensors"));
  EXPECT_EQ(file.names(), (std::vector<std::string>{"m", "d", "a", "z", "i", "h", "g", "b", "c"}));
  std::uint64_t offset = 0;
  for (const std::string& name : file.names()) {
    EXPECT_EQ(file.info(name).data_begin, offset) << name;
    offset = file.info(name).data_end;
  }
  std::string bytes = read_bytes(dir.file("order.safetensors"));
  std::uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  EXPECT_EQ(bytes.size(), 8 + header_size + offset);  // no gap after the data either
}

TEST(SafetensorsFile, WritesExactlyTheBytesOfTheFormat) {
  ScratchDir dir;
  save_safetensors(dir.file("x.safetensors"), {{"x", Tensor::from_values({1.0, -2.0}, {2}, DType::kF32)}},
                   {{"k", "v"}});
  std::string expected =
      "\x50\0\0\0\0\0\0\0"s  // header length 80 = 79 bytes of JSON + 1 space
      R"({"__metadata__":{"k":"v"},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}} )"
      "\0\0\x80\x3f"  // 1.0f
      "\0\0\0\xc0"s;  // -2.0f
  EXPECT_EQ(read_bytes(dir.file("x.safetensors")), expected);
}

TEST(SafetensorsFile, MatchesThePythonPackagesOwnTestVectors) {
  // From the safetensors package's serialization tests: a [1, 2, 3] F32 tensor of 0..5 needs
  // no padding (64 bytes of JSON); an empty file is "{}" plus six spaces.
  ScratchDir dir;
  save_safetensors(dir.file("a.safetensors"), {{"attn.0", Tensor::arange(0, 6, 1, DType::kF32).view({1, 2, 3})}});
  std::string data;
  for (float value : {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f}) data.append(reinterpret_cast<const char*>(&value), 4);
  EXPECT_EQ(read_bytes(dir.file("a.safetensors")),
            testing::u64_le(64) + R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})" + data);
  save_safetensors(dir.file("empty.safetensors"), {});
  EXPECT_EQ(read_bytes(dir.file("empty.safetensors")), testing::u64_le(8) + "{}      ");
  save_safetensors(dir.file("meta.safetensors"), {}, {{"framework", "pt"}});
  EXPECT_EQ(read_bytes(dir.file("meta.safetensors")),
            testing::u64_le(40) + R"({"__metadata__":{"framework":"pt"}})" + "     ");
}

// Files written by the Python package itself (safetensors 0.8.0; tools/safetensors_roundtrip.py
// made them on the GPU machine), so a CPU-only run still reads real third-party output.
std::string fixture(const std::string& name) { return std::string(ZT_SOURCE_DIR) + "/tests/data/safetensors/" + name; }

TEST(SafetensorsFile, ReadsWhatTheNumpyWriterOfThePythonPackageWrote) {
  auto file = SafetensorsFile::open(fixture("python_numpy.safetensors"));
  EXPECT_EQ(file.names(), (std::vector<std::string>{"i64", "f32", "u8", "b"}));  // its layout order
  EXPECT_EQ(file.get("i64").shape(), Shape{});
  EXPECT_EQ(file.get("i64").item(), -7.0);
  std::vector<double> f32;
  for (int i = 0; i < 12; ++i) f32.push_back(i - 5.5);
  EXPECT_EQ(file.get("f32").shape(), (Shape{3, 4}));
  EXPECT_EQ(file.get("f32").to_vector(), f32);
  EXPECT_EQ(file.get("u8").shape(), (Shape{2, 0}));
  EXPECT_EQ(file.get("b").to_vector(), (std::vector<double>{1, 0, 1}));
}

TEST(SafetensorsFile, ReadsSpecialFloatBitsThePythonPackageWroteExactly) {
  auto file = SafetensorsFile::open(fixture("python_specials.safetensors"));
  EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"format", "pt"}, {"kind", "special bits"}}));
  auto bits_of = [&](const std::string& name, auto zero) {
    Tensor t = file.get(name);
    std::vector<decltype(zero)> bits(t.numel());
    std::memcpy(bits.data(), t.data_ptr(), t.nbytes());
    return bits;
  };
  EXPECT_EQ(bits_of("F32.specials", std::uint32_t{}),
            (std::vector<std::uint32_t>{0x80000000, 0x7F800000, 0xFF800000, 0x7FC00001, 0x00000001, 0x7F7FFFFF}));
  EXPECT_EQ(bits_of("F64.specials", std::uint64_t{}),
            (std::vector<std::uint64_t>{1ull << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000001, 1,
                                        0x7FEFFFFFFFFFFFFF}));
  EXPECT_EQ(bits_of("F16.specials", std::uint16_t{}),
            (std::vector<std::uint16_t>{0x8000, 0x7C00, 0xFC00, 0x7E01, 0x0001, 0x7BFF}));
  EXPECT_EQ(bits_of("BF16.specials", std::uint16_t{}),
            (std::vector<std::uint16_t>{0x8000, 0x7F80, 0xFF80, 0x7FC1, 0x0001, 0x7F7F}));
  // And writing them back gives the Python package's bytes: same layout, same header.
  ScratchDir dir;
  NamedTensors tensors;
  for (const std::string& name : file.names()) tensors.emplace_back(name, file.get(name));
  save_safetensors(dir.file("again.safetensors"), tensors, file.metadata());
  EXPECT_EQ(read_bytes(dir.file("again.safetensors")), read_bytes(fixture("python_specials.safetensors")));
}

TEST(SafetensorsFile, UnknownNameListsSomeAvailableNames) {
  ScratchDir dir;
  save_safetensors(dir.file("n.safetensors"), {{"layer.0.weight", Tensor::zeros({1}, DType::kF32)},
                                               {"layer.0.bias", Tensor::zeros({1}, DType::kF32)}});
  auto file = SafetensorsFile::open(dir.file("n.safetensors"));
  EXPECT_FALSE(file.contains("layer.1.weight"));
  expect_error_mentioning([&] { file.get("layer.1.weight"); },
                          {"'layer.1.weight'", dir.file("n.safetensors"), "'layer.0.bias'", "'layer.0.weight'"});
}

TEST(SafetensorsFile, MisalignedDataIsCopiedNotViewed) {
  ScratchDir dir;
  // An unpadded 54-byte header puts the data section at offset 62, misaligned for F32.
  std::string header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string file_bytes = testing::safetensors_bytes(header, "\0\0\x80\x3f\0\0\0\xc0"s, /*pad=*/false);
  testing::write_bytes(dir.file("odd.safetensors"), file_bytes);
  auto file = SafetensorsFile::open(dir.file("odd.safetensors"));
  Tensor x = file.get("x");
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(x.data_ptr()) % 4, 0u);
  auto* mapping = static_cast<const char*>(file.mapping_data());
  auto* data = static_cast<const char*>(x.data_ptr());
  EXPECT_TRUE(data < mapping || data >= mapping + file.mapping_size());
  EXPECT_EQ(x.to_vector(), (std::vector<double>{1.0, -2.0}));
}

TEST(SafetensorsFile, GapsBetweenTensorsAreAccepted) {
  ScratchDir dir;
  std::string header =
      R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[1],"data_offsets":[5,6]}})";
  testing::write_bytes(dir.file("gap.safetensors"), testing::safetensors_bytes(header, "\x01\x02\0\0\0\x09\0\0"s));
  auto file = SafetensorsFile::open(dir.file("gap.safetensors"));
  EXPECT_EQ(file.get("a").to_vector(), (std::vector<double>{1, 2}));
  EXPECT_EQ(file.get("b").to_vector(), (std::vector<double>{9}));
}

TEST(SafetensorsFile, WriterRefusesDuplicateReservedAndUndefinedTensors) {
  ScratchDir dir;
  Tensor x = Tensor::zeros({1}, DType::kF32);
  std::string path = dir.file("bad.safetensors");
  expect_error_mentioning([&] { save_safetensors(path, {{"w", x}, {"w", x}}); }, {path, "'w'", "twice"});
  expect_error_mentioning([&] { save_safetensors(path, {{"__metadata__", x}}); }, {path, "reserved"});
  expect_error_mentioning([&] { save_safetensors(path, {{"u", Tensor()}}); }, {path, "'u'", "undefined"});
  expect_error_mentioning([&] { save_safetensors(path, {{"\xff", x}}); }, {path, "UTF-8"});
  EXPECT_TRUE(dir.listing().empty());
}

// ---- atomic replacement ----

void expect_only(const ScratchDir& dir, const std::vector<std::string>& names) { EXPECT_EQ(dir.listing(), names); }

TEST(SafetensorsFile, FailedWriteMidwayKeepsThePreviousFileAndLeavesNoTemporary) {
  ScratchDir dir;
  std::string path = dir.file("model.safetensors");
  save_safetensors(path, {{"old", patterned({8}, DType::kF32, 3)}});
  std::string before = read_bytes(path);

  // Cap the file size so the write fails with EFBIG part way through the data.
  rlimit saved_limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved_limit), 0);
  auto saved_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved_limit;
  small.rlim_cur = 64 * 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  std::string message;
  try {
    save_safetensors(path, {{"new", patterned({1024, 1024}, DType::kU8, 4)}});
  } catch (const Error& e) {
    threw = true;
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved_limit);
  ::signal(SIGXFSZ, saved_handler);

  EXPECT_TRUE(threw);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  EXPECT_EQ(read_bytes(path), before);
  expect_only(dir, {"model.safetensors"});
}

TEST(SafetensorsFile, WriteIntoMissingDirectoryFailsNamingThePath) {
  ScratchDir dir;
  std::string path = dir.file("missing/model.safetensors");
  expect_error_mentioning(
      [&] {
        save_safetensors(path, {{"x", Tensor::zeros({1}, DType::kF32)}});
      },
      {path, "No such file or directory"});
  EXPECT_TRUE(dir.listing().empty());
}

TEST(SafetensorsFile, WriteIntoReadOnlyDirectoryKeepsThePreviousFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write anywhere; covered by the size-limit test";
  ScratchDir dir;
  std::string path = dir.file("model.safetensors");
  save_safetensors(path, {{"old", Tensor::zeros({1}, DType::kF32)}});
  std::string before = read_bytes(path);
  std::filesystem::permissions(dir.str(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  expect_error_mentioning(
      [&] {
        save_safetensors(path, {{"new", Tensor::ones({1}, DType::kF32)}});
      },
      {path, "Permission denied"});
  std::filesystem::permissions(dir.str(), std::filesystem::perms::owner_all);
  EXPECT_EQ(read_bytes(path), before);
  expect_only(dir, {"model.safetensors"});
}

}  // namespace
}  // namespace zt
