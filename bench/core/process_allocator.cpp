#include "bench/core/process_allocator.hpp"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

namespace cdsb::bench {
namespace {

namespace fs = std::filesystem;

constexpr const char* reexec_marker = "CDSBENCH_PROCESS_PREPARED";
constexpr const char* tls_tunable = "glibc.rtld.optional_static_tls=65536";

const char* library_of(std::string_view name) {
  if (name == "jemalloc") return "libjemalloc.so.2";
  if (name == "mimalloc") return "libmimalloc.so.2";
  if (name == "tcmalloc") return "libtcmalloc_minimal.so.4";
  return nullptr;  // glibc: nothing to preload
}

// The library's path in the directories the loader searches for system libraries, or "".
std::string find_library(const char* file) {
  std::vector<fs::path> dirs;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&gnu_get_libc_version), &info) && info.dli_fname)
    dirs.push_back(fs::path(info.dli_fname).parent_path());
  for (const char* d : {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/usr/lib",
                        "/usr/local/lib"})
    dirs.emplace_back(d);
  for (const auto& d : dirs) {
    std::error_code ec;
    if (fs::exists(d / file, ec)) return (d / file).string();
  }
  return "";
}

// The allocator a library path belongs to ("" for none of ours).
std::string allocator_in(std::string_view path) {
  for (const auto& n : malloc_names())
    if (library_of(n) && path.find(n) != std::string_view::npos) return n;
  return "";
}

// LD_PRELOAD without any allocator library, plus `add` when given.
std::string preload_with(const char* add) {
  std::string out;
  if (const char* cur = std::getenv("LD_PRELOAD")) {
    std::string_view rest(cur);
    while (!rest.empty()) {
      const std::size_t cut = rest.find_first_of(": ");
      const std::string_view item = rest.substr(0, cut);
      if (!item.empty() && allocator_in(item).empty()) out += (out.empty() ? "" : ":") + std::string(item);
      rest = cut == std::string_view::npos ? std::string_view() : rest.substr(cut + 1);
    }
  }
  if (add) out = std::string(add) + (out.empty() ? "" : ":" + out);
  return out;
}

std::string requested_malloc(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    if (a == "--malloc" && i + 1 < argc) return argv[i + 1];
    if (a.rfind("--malloc=", 0) == 0) return std::string(a.substr(9));
  }
  return "";
}

}  // namespace

const std::vector<std::string>& malloc_names() {
  static const std::vector<std::string> names{"glibc", "jemalloc", "mimalloc", "tcmalloc"};
  return names;
}

std::string served_malloc() {
#if defined(__SANITIZE_ADDRESS__)
  return "asan";
#elif defined(__SANITIZE_THREAD__)
  return "tsan";
#else
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&std::malloc), &info) || !info.dli_fname) return "unavailable";
  const std::string_view file(info.dli_fname);
  if (file.find("libc.so") != std::string_view::npos) return "glibc";
  const std::string ours = allocator_in(file);
  return ours.empty() ? fs::path(file).filename().string() : ours;
#endif
}

void prepare_process(int argc, char** argv) {
  if (std::getenv(reexec_marker)) return;  // prepared already: never loop
  bool change = false;
  const std::string requested = requested_malloc(argc, argv);
  std::string served = served_malloc();
  const bool sanitized = served == "asan" || served == "tsan";
  bool known = false;
  for (const auto& n : malloc_names()) known = known || n == requested;
  if (known && requested != served && !sanitized) {
    const char* lib = library_of(requested);
    const std::string path = lib ? find_library(lib) : "";
    if (!lib || !path.empty()) {
      setenv("LD_PRELOAD", preload_with(path.empty() ? nullptr : path.c_str()).c_str(), 1);
      served = requested;
      change = true;
    }
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (served != "jemalloc" && (!tunables || !std::strstr(tunables, "optional_static_tls"))) {
    const std::string value = tunables && *tunables ? std::string(tunables) + ":" + tls_tunable : tls_tunable;
    setenv("GLIBC_TUNABLES", value.c_str(), 1);
    change = true;
  }
  if (!change) return;
  setenv(reexec_marker, "1", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: go on as we are
}

}  // namespace cdsb::bench
