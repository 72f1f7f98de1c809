#pragma once
// Each `dbsparse` subcommand adds its options to the subcommand main() made for it and returns the
// function that runs it.
#include <functional>

#include <CLI/CLI.hpp>

namespace dbsparse::cli {

using Runner = std::function<int()>;

Runner add_info(CLI::App& sub);
Runner add_precompile(CLI::App& sub);
Runner add_bench(CLI::App& sub);
Runner add_convert(CLI::App& sub);
Runner add_explain(CLI::App& sub);
Runner add_explore(CLI::App& sub);
Runner add_bfs(CLI::App& sub);
Runner add_decode_bench(CLI::App& sub);
Runner add_prune(CLI::App& sub);
Runner add_calibrate(CLI::App& sub);
Runner add_gcn(CLI::App& sub);
Runner add_square(CLI::App& sub);
Runner add_contract(CLI::App& sub);
Runner add_mcl(CLI::App& sub);
Runner add_triangles(CLI::App& sub);
Runner add_reorder(CLI::App& sub);
Runner add_profile(CLI::App& sub);
Runner add_first_call(CLI::App& sub);

}  // namespace dbsparse::cli
