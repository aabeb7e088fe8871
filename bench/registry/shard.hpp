// How structures.cpp's registration lines reach the registry: the file is compiled as
// CDSBENCH_REGISTRY_SHARDS translation units, and line i is instantiated in shard
// i mod CDSBENCH_REGISTRY_SHARDS only (register.hpp, CDSB_REGISTER).
#pragma once

#include <utility>
#include <vector>

#include "bench/registry/registry.hpp"

namespace cdsb::bench {

inline constexpr int registry_shards = CDSBENCH_REGISTRY_SHARDS;

// Collects the entries a shard's lines made, each with its line's position.
struct RegistryShard {
  std::vector<std::pair<int, StructureEntry>>& out;
  void add(int index, StructureEntry e) { out.emplace_back(index, std::move(e)); }
  void add(int index, std::vector<StructureEntry> es) {
    for (auto& e : es) out.emplace_back(index, std::move(e));
  }
};

// Defined in structures.cpp, explicitly instantiated there once per shard.
template <int Shard>
void add_structures(RegistryShard& shard);

}  // namespace cdsb::bench
