#include "bench/check/checker.hpp"

#include <sys/wait.h>

#include <cstdio>

namespace cdsb::bench {
namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

CheckerVerdicts run_checker(const std::string& checker, const std::string& model, const std::filesystem::path& input,
                            const std::filesystem::path& html_dir, const std::string& timeout) {
  const std::string cmd = shell_quote(checker) + " --model " + model + " --input " + shell_quote(input.string()) +
                          " --timeout-per-history " + shell_quote(timeout) + " --html-dir " + shell_quote(html_dir.string());
  CheckerVerdicts r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char line[4096];
  while (std::fgets(line, sizeof line, pipe)) {
    std::string s(line);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    if (s.rfind("violation history=", 0) == 0) r.violations.push_back(std::stoi(s.substr(18)));
    else if (s.rfind("unknown history=", 0) == 0) r.unknown.push_back(std::stoi(s.substr(16)));
    else if (s.rfind("visualization=", 0) == 0) r.visualizations.push_back(s.substr(14));
    else if (s.rfind("histories=", 0) == 0) r.summary = s;
  }
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string checker_beside_this_program() {
  return (std::filesystem::canonical("/proc/self/exe").parent_path() / "cdsbench-lincheck-checker").string();
}

}  // namespace cdsb::bench
