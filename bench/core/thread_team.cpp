#include "bench/core/thread_team.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "bench/core/report.hpp"

namespace cdsb::bench {

const char* pin_mode_name(PinMode m) {
  switch (m) {
    case PinMode::none: return "none";
    case PinMode::compact: return "compact";
    case PinMode::scatter: return "scatter";
    case PinMode::list: return "list";
  }
  return "?";
}

std::vector<int> plan_thread_cpus(const TeamSetup& setup, const Topology& topo, std::vector<std::string>& warnings) {
  const int n = setup.threads;
  const int cpus = static_cast<int>(topo.cpus().size());
  if (n > cpus)
    warnings.push_back("oversubscribed: " + std::to_string(n) + " threads on " +
                       std::to_string(cpus) + " CPUs; threads share CPUs and throughput per "
                       "thread is not comparable with an unsaturated run");
  std::vector<int> plan(n, -1);
  switch (setup.pin) {
    case PinMode::none:
      break;
    case PinMode::compact:
    case PinMode::scatter: {
      const auto order = setup.pin == PinMode::compact ? topo.compact_order() : topo.scatter_order();
      for (int t = 0; t < n; ++t) plan[t] = order[t % order.size()];
      break;
    }
    case PinMode::list: {
      std::set<int> allowed;
      for (const Cpu& c : topo.cpus()) allowed.insert(c.os_index);
      for (int cpu : setup.pin_cpus)
        if (!allowed.count(cpu)) {
          std::vector<std::string> list;
          for (int a : allowed) list.push_back(std::to_string(a));
          throw std::invalid_argument("--pin: CPU " + std::to_string(cpu) +
                                      " is not available to this process; allowed: " + join(list, ","));
        }
      if (static_cast<int>(setup.pin_cpus.size()) < n)
        throw std::invalid_argument("--pin: " + std::to_string(setup.pin_cpus.size()) +
                                    " CPUs listed for " + std::to_string(n) +
                                    " threads; allowed: one CPU per thread");
      if (static_cast<int>(setup.pin_cpus.size()) > n)
        warnings.push_back("--pin lists " + std::to_string(setup.pin_cpus.size()) + " CPUs; the first " +
                           std::to_string(n) + " are used");
      std::copy_n(setup.pin_cpus.begin(), n, plan.begin());
      if (std::set<int>(plan.begin(), plan.end()).size() < plan.size() && n <= cpus)
        warnings.push_back("--pin places several threads on one CPU");
      break;
    }
  }
  return plan;
}

}  // namespace cdsb::bench
