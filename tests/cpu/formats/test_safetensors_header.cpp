// SafetensorsFile::open's header checks that test_safetensors.cpp leaves out: an unreadable file,
// the metadata entry, a shape that is not an array or whose size overflows, tensors in any header
// order coming back sorted by name, and empty tensors at one offset not counted as overlapping.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dbsparse/error.hpp"
#include "dbsparse/safetensors.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {

namespace fs = std::filesystem;

const fs::path& dir() {
  static const fs::path d = dbs_test::temp_dir("safetensors_header");
  return d;
}

// A file with this header text and data buffer, its length field little-endian.
std::string write_file(const std::string& name, const std::string& header, const std::string& data) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  const auto p = (dir() / name).string();
  std::ofstream(p, std::ios::binary) << bytes + header + data;
  return p;
}

// Opening `path` must throw InputError naming the file and every needle.
void expect_error(const std::string& path, const std::vector<std::string>& needles) {
  INFO("file: " << path);
  try {
    SafetensorsFile::open(path);
    FAIL("no InputError");
  } catch (const InputError& e) {
    const std::string what = e.what();
    INFO("what(): " << what);
    CHECK(e.file() == path);
    for (const auto& n : needles) CHECK(what.find(n) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("SafetensorsOpenOfAMissingFileIsAnInputError") {
  expect_error((dir() / "no-such.safetensors").string(), {"a readable safetensors file"});
}

TEST_CASE("SafetensorsMetadataMustBeAnObjectOfStrings") {
  expect_error(write_file("meta-array.safetensors", R"({"__metadata__":[1]})", ""),
               {"an object of strings", "'__metadata__'"});
  expect_error(write_file("meta-number.safetensors", R"({"__metadata__":{"format":"pt","layers":2}})", ""),
               {"a string value for metadata key 'layers'", "'__metadata__'"});
  const auto f = SafetensorsFile::open(write_file("meta-only.safetensors", R"({"__metadata__":{"format":"pt"}})", ""));
  CHECK(f.metadata().at("format") == "pt");
  CHECK(f.tensors().empty());
}

TEST_CASE("SafetensorsShapeMustBeAnArrayWhoseSizeFits") {
  expect_error(write_file("shape-number.safetensors", R"({"w":{"dtype":"F32","shape":4,"data_offsets":[0,16]}})",
                          std::string(16, '\0')),
               {"'w'", "shape as an array of non-negative integers"});
  // 2^32 * 2^32 elements: the product overflows 64 bits.
  expect_error(
      write_file("shape-huge.safetensors",
                 R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", std::string(4, '\0')),
      {"'w'", "fits in 64 bits"});
}

TEST_CASE("SafetensorsTensorsComeBackSortedAndEmptyOnesNeverOverlap") {
  // Written b, e, a: a and b share no bytes; e is empty, at an offset inside a.
  const auto path = write_file("order.safetensors",
                               R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                               R"("e":{"dtype":"F16","shape":[0],"data_offsets":[2,2]},)"
                               R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                               std::string(8, '\0'));
  const auto f = SafetensorsFile::open(path);
  REQUIRE(f.tensors().size() == 3);
  CHECK(f.tensors()[0].name == "a");
  CHECK(f.tensors()[1].name == "b");
  CHECK(f.tensors()[2].name == "e");
  CHECK(f.tensors()[2].bytes == 0);
  CHECK(f.tensors()[1].offset == 4);
}
