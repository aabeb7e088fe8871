// Running the linearizability checker (tools/lincheck, `cdsbench-lincheck-checker`) over a file of
// recorded histories, for the programs that record them (cdsbench-lincheck, cdsbench-zset-lincheck).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace cdsb::bench {

struct CheckerVerdicts {
  std::vector<int> violations, unknown;     // history ids
  std::vector<std::string> visualizations;  // HTML files, one per violation
  std::string summary;                      // "histories=H violations=V unknown=U"; empty: the checker failed
  int exit_code = -1;                       // the checker's (its README); -1: it did not run or died
};

// Checks input (JSON lines) against model, with a timeout per history ("10s") and the
// visualisations of violations written to html_dir.
CheckerVerdicts run_checker(const std::string& checker, const std::string& model, const std::filesystem::path& input,
                            const std::filesystem::path& html_dir, const std::string& timeout);

// The checker built next to the running program.
std::string checker_beside_this_program();

}  // namespace cdsb::bench
