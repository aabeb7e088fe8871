// `segregated`: a dedicated jemalloc arena per node type (Arbel-Raviv, Brown & Morrison's
// fix for nodes that shared size classes and pages with descriptors and application data).
//
// Each node type gets its own arena, created on the type's first use and kept for the
// process's life (jemalloc arenas cannot be destroyed while memory from them is live). Each
// thread gets one explicit tcache per type, so the fast path stays a thread-local cache hit
// and a tcache only ever holds that type's arena's memory: segregation holds for frees from
// any thread too.
//
// jemalloc is reached through dlopen/dlsym, so the process's own malloc stays what it was
// (glibc, or the one chosen with the harness's --malloc). When jemalloc already is the
// process's malloc its symbols are used directly. dlopen'ing libjemalloc needs static TLS
// space: glibc must start with GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536 (the
// harness re-executes itself with it); otherwise construction throws, naming the remedy.
#pragma once

#include <dlfcn.h>

#include <array>
#include <cstddef>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "cdsbench/platform/cache.hpp"
#include "cdsbench/reclaim/detail/type_slots.hpp"

namespace cdsb::reclaim {

namespace detail {

// The few jemalloc entry points we use, loaded once per process.
struct Jemalloc {
  int (*mallctl)(const char*, void*, std::size_t*, void*, std::size_t) = nullptr;
  void* (*mallocx)(std::size_t, int) = nullptr;
  void (*dallocx)(void*, int) = nullptr;
  std::string error;  // empty when loaded

  static const Jemalloc& get() {
    static const Jemalloc api = load();
    return api;
  }

  // Flags of jemalloc.h's MALLOCX_ARENA, MALLOCX_TCACHE and MALLOCX_LG_ALIGN.
  static int arena_flag(unsigned arena) noexcept { return static_cast<int>((arena + 1) << 20); }
  static int tcache_flag(unsigned tcache) noexcept { return static_cast<int>((tcache + 2) << 8); }
  static int align_flag(std::size_t align) noexcept {
    return align > alignof(std::max_align_t) ? __builtin_ctzl(align) : 0;
  }

  unsigned create(const char* what) const {
    unsigned id = 0;
    std::size_t size = sizeof id;
    if (mallctl(what, &id, &size, nullptr, 0) != 0)
      throw std::runtime_error(std::string("segregated allocator: jemalloc mallctl(\"") + what + "\") failed");
    return id;
  }

 private:
  static Jemalloc load() {
    Jemalloc api;
    void* lib = RTLD_DEFAULT;
    if (!dlsym(RTLD_DEFAULT, "mallocx") || !dlsym(RTLD_DEFAULT, "mallctl")) {
      lib = dlopen("libjemalloc.so.2", RTLD_NOW | RTLD_LOCAL);
      if (!lib) {
        const char* why = dlerror();
        api.error = std::string("segregated allocator: cannot load jemalloc (") + (why ? why : "unknown") +
                    "); install libjemalloc2, and start the process with "
                    "GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536 or with jemalloc in LD_PRELOAD";
        return api;
      }
    }
    api.mallctl = reinterpret_cast<decltype(api.mallctl)>(dlsym(lib, "mallctl"));
    api.mallocx = reinterpret_cast<decltype(api.mallocx)>(dlsym(lib, "mallocx"));
    api.dallocx = reinterpret_cast<decltype(api.dallocx)>(dlsym(lib, "dallocx"));
    if (!api.mallctl || !api.mallocx || !api.dallocx) api.error = "segregated allocator: jemalloc lacks mallocx/dallocx/mallctl";
    return api;
  }
};

// One arena per node type for the process's life.
template <class T>
unsigned arena_of() {
  static const unsigned arena = Jemalloc::get().create("arenas.create");
  return arena;
}

}  // namespace detail

class SegregatedAllocator {
 public:
  static constexpr const char* name = "segregated";
  static constexpr int max_types = 8;  // node types of one structure (the batch queue has 7 segment sizes)

  explicit SegregatedAllocator(int max_threads) : je_(detail::Jemalloc::get()), tcaches_(max_threads) {
    if (!je_.error.empty()) throw std::runtime_error(je_.error);
    for (auto& t : tcaches_) t->fill(-1);
  }

  SegregatedAllocator(const SegregatedAllocator&) = delete;
  SegregatedAllocator& operator=(const SegregatedAllocator&) = delete;

  // Returns every thread's cached memory to the type arenas.
  ~SegregatedAllocator() {
    for (auto& t : tcaches_)
      for (int tc : *t)
        if (tc >= 0) {
          unsigned id = static_cast<unsigned>(tc);
          je_.mallctl("tcache.destroy", nullptr, nullptr, &id, sizeof id);
        }
  }

  template <class T>
  void* allocate(int tid) {
    void* p = je_.mallocx(sizeof(T), flags<T>(tid));
    if (!p) throw std::bad_alloc();
    return p;
  }

  template <class T>
  void deallocate(int tid, void* p) {
    je_.dallocx(p, flags<T>(tid));
  }

 private:
  // Arena of T, this thread's tcache for T (created on the thread's first use of T).
  template <class T>
  int flags(int tid) {
    const int slot = slots_.template index<T>();
    int& tc = (*tcaches_[tid])[slot];  // written by thread tid only
    if (tc < 0) tc = static_cast<int>(je_.create("tcache.create"));
    return detail::Jemalloc::arena_flag(detail::arena_of<T>()) |
           detail::Jemalloc::tcache_flag(static_cast<unsigned>(tc)) | detail::Jemalloc::align_flag(alignof(T));
  }

  const detail::Jemalloc& je_;
  detail::TypeSlots<max_types> slots_;
  std::vector<Padded<std::array<int, max_types>>> tcaches_;
};

}  // namespace cdsb::reclaim
