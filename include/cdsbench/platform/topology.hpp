// Machine topology and thread pinning, on hwloc.
//
// The harness pins only when asked (pitfall P7), and then needs two orders of the CPUs it
// may use: *compact* (fill a core's hyperthreads, then the next core, ...: hwloc's logical
// order) and *scatter* (spread over packages and NUMA nodes first, then over last-level
// caches and cores, and use a core's second hyperthread only once every core has one).
//
// "The CPUs it may use" are the PUs hwloc reports as allowed (a container's cgroup
// cpuset) intersected with the process's CPU binding when the Topology is built, so a run
// started under `taskset` or `numactl --physcpubind` stays inside what it was given.
// Build the Topology before pinning any thread: pinning narrows the process's binding.
// After construction every const member may be called from many threads at once (hwloc
// allows concurrent reads of a loaded topology, binding calls included).
//
// Scatter order. Each allowed PU gets a path of ranks, outermost first:
//   outer domain  (package, or the NUMA node when a NUMA node spans packages)
//   inner domain  (NUMA node inside the package, or package inside the NUMA node)
//   L3 cache      inside the (package, NUMA node) domain (AMD CCXs; 0 where L3 is shared)
//   core          inside that L3
//   hyperthread   inside that core
// where each rank is the dense index of the object among those met in the same parent
// group, in hwloc logical order. Sorting PUs by the *reversed* path is a round-robin over
// the tree: consecutive PUs differ at the outermost level that still has a choice. All
// hyperthread-rank-0 PUs (one per core) come before any rank-1 PU, and the first
// (package, NUMA node) domains' worth of entries are one per domain. This holds for
// uneven trees too (a cpuset that leaves some cores one PU, NUMA nodes with different
// core counts), which is why ranks are computed per group rather than from counts.
#pragma once

#include <hwloc.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace cdsb {

// One allowed processing unit. core/numa_node/package are hwloc logical indices (hwloc
// drops disallowed objects, so these count allowed objects only). A platform that reports
// no cores makes each PU its own core (core = the PU's logical index); no package -> 0;
// no NUMA node covering the PU -> 0. A PU local to several NUMA nodes (DRAM + HBM/CXL)
// gets the first in logical order, normally the DRAM node.
struct Cpu {
  int os_index;
  int core;
  int numa_node;
  int package;
};

class Topology {
 public:
  // The machine we run on. Throws std::runtime_error when hwloc cannot load it.
  Topology() { load(nullptr); }

  // A synthetic machine, e.g. "pack:2 numa:2 core:4 pu:2" (hwloc's synthetic syntax), for
  // testing placement on machines we do not have. Pinning on it always fails.
  explicit Topology(std::string_view synthetic_description) {
    const std::string description(synthetic_description);  // hwloc wants a C string
    load(description.c_str());
  }

  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
  Topology(Topology&& other) noexcept
      : topology_(std::exchange(other.topology_, nullptr)),
        cpus_(std::move(other.cpus_)),
        scatter_(std::move(other.scatter_)),
        numa_nodes_(other.numa_nodes_),
        cores_(other.cores_),
        packages_(other.packages_) {}
  Topology& operator=(Topology&& other) noexcept {
    if (this != &other) {
      destroy();
      topology_ = std::exchange(other.topology_, nullptr);
      cpus_ = std::move(other.cpus_);
      scatter_ = std::move(other.scatter_);
      numa_nodes_ = other.numa_nodes_;
      cores_ = other.cores_;
      packages_ = other.packages_;
    }
    return *this;
  }
  ~Topology() { destroy(); }

  // Allowed PUs in hwloc logical order (hyperthread siblings adjacent).
  const std::vector<Cpu>& cpus() const noexcept { return cpus_; }

  // Counts of objects holding at least one allowed PU.
  int numa_nodes() const noexcept { return numa_nodes_; }
  int cores() const noexcept { return cores_; }
  int packages() const noexcept { return packages_; }

  // OS indices of the allowed PUs, hyperthread siblings adjacent, cores in logical order.
  std::vector<int> compact_order() const {
    std::vector<int> order;
    order.reserve(cpus_.size());
    for (const Cpu& cpu : cpus_) order.push_back(cpu.os_index);
    return order;
  }

  // OS indices of the allowed PUs spread as described at the top of this file.
  std::vector<int> scatter_order() const { return scatter_; }

  // Binds the calling thread to one PU. False if the PU is not allowed, the topology is
  // not this machine (synthetic), or the OS refuses.
  bool pin_current_thread(int os_index) const {
    if (topology_ == nullptr || !hwloc_topology_is_thissystem(topology_)) return false;
    if (std::none_of(cpus_.begin(), cpus_.end(),
                     [os_index](const Cpu& cpu) { return cpu.os_index == os_index; })) {
      return false;
    }
    const Bitmap set(hwloc_bitmap_alloc());
    if (!set || hwloc_bitmap_only(set.get(), static_cast<unsigned>(os_index)) != 0) return false;
    return hwloc_set_cpubind(topology_, set.get(), HWLOC_CPUBIND_THREAD) == 0;
  }

  // OS index of the PU the calling thread last ran on (it may move right after, unless
  // pinned); nullopt where the OS cannot tell or the topology is synthetic.
  std::optional<int> current_cpu() const {
    if (topology_ == nullptr || !hwloc_topology_is_thissystem(topology_)) return std::nullopt;
    const Bitmap set(hwloc_bitmap_alloc());
    if (!set || hwloc_get_last_cpu_location(topology_, set.get(), HWLOC_CPUBIND_THREAD) != 0) {
      return std::nullopt;
    }
    const int first = hwloc_bitmap_first(set.get());
    if (first < 0) return std::nullopt;
    return first;
  }

 private:
  struct BitmapFree {
    void operator()(hwloc_bitmap_s* set) const noexcept { hwloc_bitmap_free(set); }
  };
  using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapFree>;

  // Dense rank of a value among the distinct values met so far inside one group, by first
  // appearance (= hwloc logical order, as PUs are visited in that order).
  class GroupRank {
   public:
    int operator()(const std::array<int, 4>& group, int value) {
      const auto [it, inserted] = ranks_.try_emplace({group, value}, 0);
      if (inserted) it->second = next_[group]++;
      return it->second;
    }

   private:
    std::map<std::pair<std::array<int, 4>, int>, int> ranks_;
    std::map<std::array<int, 4>, int> next_;
  };

  void load(const char* synthetic) {
    if (hwloc_topology_init(&topology_) != 0) {
      topology_ = nullptr;
      throw std::runtime_error("hwloc_topology_init failed");
    }
    if (synthetic != nullptr && hwloc_topology_set_synthetic(topology_, synthetic) != 0) {
      destroy();
      throw std::runtime_error(std::string("hwloc: invalid synthetic topology '") + synthetic +
                               "'");
    }
    if (hwloc_topology_load(topology_) != 0) {
      destroy();
      throw std::runtime_error("hwloc_topology_load failed");
    }
    try {
      collect_cpus();
    } catch (...) {
      destroy();
      throw;
    }
  }

  void destroy() noexcept {
    if (topology_ != nullptr) hwloc_topology_destroy(topology_);
    topology_ = nullptr;
  }

  void collect_cpus() {
    const Bitmap usable(hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(topology_)));
    if (!usable) throw std::runtime_error("hwloc: out of memory");
    if (hwloc_topology_is_thissystem(topology_)) {
      // Narrow to the binding we were started with; ignore it if unreadable or disjoint
      // (then the allowed set is the best we know).
      const Bitmap bound(hwloc_bitmap_alloc());
      if (bound && hwloc_get_cpubind(topology_, bound.get(), HWLOC_CPUBIND_PROCESS) == 0 &&
          hwloc_bitmap_intersects(usable.get(), bound.get())) {
        hwloc_bitmap_and(usable.get(), usable.get(), bound.get());
      }
    }

    const bool have_cores = hwloc_get_nbobjs_by_type(topology_, HWLOC_OBJ_CORE) > 0;
    std::vector<int> l3_of;  // parallel to cpus_; -1 where there is no L3 above the PU
    const int pu_count = hwloc_get_nbobjs_by_type(topology_, HWLOC_OBJ_PU);
    for (int i = 0; i < pu_count; ++i) {
      hwloc_obj_t pu = hwloc_get_obj_by_type(topology_, HWLOC_OBJ_PU, static_cast<unsigned>(i));
      if (pu == nullptr || !hwloc_bitmap_isset(usable.get(), pu->os_index)) continue;
      Cpu cpu{static_cast<int>(pu->os_index), static_cast<int>(pu->logical_index), 0, 0};
      if (have_cores) {
        if (hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topology_, HWLOC_OBJ_CORE, pu)) {
          cpu.core = static_cast<int>(core->logical_index);
        }
      }
      if (hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topology_, HWLOC_OBJ_PACKAGE, pu)) {
        cpu.package = static_cast<int>(pkg->logical_index);
      }
      // NUMA nodes hang off the tree as memory children in hwloc 2, so they are not
      // ancestors of a PU; find the first whose cpuset holds it.
      hwloc_obj_t numa = nullptr;
      while ((numa = hwloc_get_next_obj_by_type(topology_, HWLOC_OBJ_NUMANODE, numa)) != nullptr) {
        if (numa->cpuset != nullptr && hwloc_bitmap_isset(numa->cpuset, pu->os_index)) {
          cpu.numa_node = static_cast<int>(numa->logical_index);
          break;
        }
      }
      hwloc_obj_t l3 = hwloc_get_ancestor_obj_by_type(topology_, HWLOC_OBJ_L3CACHE, pu);
      l3_of.push_back(l3 != nullptr ? static_cast<int>(l3->logical_index) : -1);
      cpus_.push_back(cpu);
    }
    if (cpus_.empty()) throw std::runtime_error("hwloc: no allowed processing unit");

    const auto distinct = [this](int Cpu::*field) {
      std::vector<int> values;
      for (const Cpu& cpu : cpus_) values.push_back(cpu.*field);
      std::sort(values.begin(), values.end());
      return static_cast<int>(std::unique(values.begin(), values.end()) - values.begin());
    };
    numa_nodes_ = distinct(&Cpu::numa_node);
    cores_ = distinct(&Cpu::core);
    packages_ = distinct(&Cpu::package);

    build_scatter(l3_of);
  }

  void build_scatter(const std::vector<int>& l3_of) {
    // Which of package and NUMA node is the outer level: normally NUMA nodes sit inside a
    // package (one per package, or several with SNC / NPS modes); on machines where a NUMA
    // node spans packages the nesting is the other way round.
    std::map<int, int> package_of_numa;
    bool numa_inside_package = true;
    for (const Cpu& cpu : cpus_) {
      const auto [it, inserted] = package_of_numa.try_emplace(cpu.numa_node, cpu.package);
      if (!inserted && it->second != cpu.package) numa_inside_package = false;
    }

    // (thread, core, l3, inner, outer, logical position): sorted, the last varies fastest.
    using Key = std::tuple<int, int, int, int, int, std::size_t>;
    std::vector<Key> keys;
    keys.reserve(cpus_.size());
    GroupRank outer_rank, inner_rank, l3_rank, core_rank, thread_rank;
    for (std::size_t i = 0; i < cpus_.size(); ++i) {
      const Cpu& cpu = cpus_[i];
      const int outer = numa_inside_package ? cpu.package : cpu.numa_node;
      const int inner = numa_inside_package ? cpu.numa_node : cpu.package;
      const int l3 = l3_of[i];
      keys.emplace_back(thread_rank({outer, inner, l3, cpu.core}, cpu.os_index),
                        core_rank({outer, inner, l3, 0}, cpu.core),
                        l3_rank({outer, inner, 0, 0}, l3),
                        inner_rank({outer, 0, 0, 0}, inner),
                        outer_rank({0, 0, 0, 0}, outer), i);
    }
    std::sort(keys.begin(), keys.end());
    scatter_.clear();
    scatter_.reserve(keys.size());
    for (const Key& key : keys) scatter_.push_back(cpus_[std::get<5>(key)].os_index);
  }

  hwloc_topology_t topology_ = nullptr;
  std::vector<Cpu> cpus_;
  std::vector<int> scatter_;
  int numa_nodes_ = 0;
  int cores_ = 0;
  int packages_ = 0;
};

}  // namespace cdsb
