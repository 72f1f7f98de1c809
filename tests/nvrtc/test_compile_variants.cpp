// Every template variant in the search spaces compiles to a cubin for sm_80 and sm_90. No GPU.
#include <doctest/doctest.h>

#include <fstream>

#include "codegen/nvrtc_compiler.hpp"
#include "codegen/spmv_key.hpp"
#include "dbsparse/error.hpp"

using namespace dbsparse;
using namespace dbsparse::codegen;

TEST_CASE("EverySpmvVariantCompilesForSm80AndSm90") {
  for (const char* arch : {"sm_80", "sm_90"}) {
    for (const auto& key : spmv_search_space()) {
      CAPTURE(arch);
      CAPTURE(key.to_string());
      auto ks = make_source(key);
      auto k = compile_to_cubin(ks, arch);
      REQUIRE(k.cubin.size() > 4);
      CHECK(std::string(k.cubin.begin() + 1, k.cubin.begin() + 4) == "ELF");
      REQUIRE(k.lowered_names.size() == 1);
      CHECK(k.lowered_names[0].first == ks.name_expressions[0]);
      CHECK(k.lowered_names[0].second.rfind("_Z", 0) == 0);  // a mangled C++ name
    }
  }
}

TEST_CASE("CompileErrorCarriesKeyOptionsLogAndSource") {
  KernelSource ks;
  ks.key = "test.broken";
  ks.source = "__global__ void k() { this is not cuda; }\n";
  ks.options = {"-std=c++17"};
  try {
    compile_to_cubin(ks, "sm_90");
    FAIL("compile should have failed");
  } catch (const CompileError& e) {
    CHECK(e.key() == "test.broken");
    CHECK(e.options().find("--gpu-architecture=sm_90") != std::string::npos);
    CHECK(!e.log().empty());
    CHECK(std::string(e.what()).find("test.broken") != std::string::npos);
    std::ifstream dumped(e.source_path());
    std::string first;
    std::getline(dumped, first);
    CHECK(first == "__global__ void k() { this is not cuda; }");
  }
}

TEST_CASE("UnsupportedArchIsAClearError") {
  auto ks = make_source(SpmvKey{});
  CHECK_THROWS_AS(compile_to_cubin(ks, "sm_12"), UsageError);
}
