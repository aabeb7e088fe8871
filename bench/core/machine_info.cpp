#include "bench/core/machine_info.hpp"

#include <cerrno>
#include <charconv>
#include <fstream>
#include <string_view>

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench/core/perf_counters.hpp"

namespace cdsb::bench {
namespace {

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    const std::string_view view(line);
    const auto colon = view.find(':');
    if (colon == std::string_view::npos || trim(view.substr(0, colon)) != "model name") continue;
    const std::string_view model = trim(view.substr(colon + 1));
    if (!model.empty()) return std::string(model);
  }
  return "unknown";
}

// A "Key:   1234 kB" line of /proc/self/status, in bytes.
std::optional<std::uint64_t> status_kib_field(std::string_view key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    const std::string_view view(line);
    if (view.size() <= key.size() || view.substr(0, key.size()) != key || view[key.size()] != ':') {
      continue;
    }
    const std::string_view number = trim(view.substr(key.size() + 1));
    std::uint64_t kib = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), kib);
    const std::string_view unit(end, static_cast<std::size_t>(number.data() + number.size() - end));
    if (error != std::errc{} || trim(unit) != "kB") return std::nullopt;
    return kib * 1024;
  }
  return std::nullopt;
}

}  // namespace

MachineInfo read_machine_info(const Topology& topology) {
  MachineInfo info;
  info.cpu_model = cpu_model_name();
  info.cpus = static_cast<int>(topology.cpus().size());
  info.cores = topology.cores();
  info.numa_nodes = topology.numa_nodes();
  info.packages = topology.packages();
  if (const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE); pages > 0 && page > 0)
    info.memory_bytes = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  utsname names{};
  if (uname(&names) == 0) {
    info.kernel = std::string(names.sysname) + " " + names.release;
    info.hostname = names.nodename;
  }
  info.pmu_available = hardware_events_available();
  return info;
}

std::optional<std::uint64_t> current_rss_bytes() { return status_kib_field("VmRSS"); }

std::optional<std::uint64_t> peak_rss_bytes() { return status_kib_field("VmHWM"); }

bool reset_peak_rss() {
  const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // "5" resets the peak RSS only; other values would clear the page-table referenced bits.
  ssize_t written = 0;
  do {
    written = ::write(fd, "5", 1);
  } while (written < 0 && errno == EINTR);
  ::close(fd);
  return written == 1;
}

}  // namespace cdsb::bench
