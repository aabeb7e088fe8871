// How the registration lines reach the registry. They live in three files, each with only the
// headers its lines need: structures.cpp (our sets and maps), peers.cpp (other libraries'
// structures, whose headers cost a few seconds of parsing per translation unit) and
// black_box.cpp (Node Replication and its baselines). Each file is compiled as its own
// number of translation units, its shards (bench/CMakeLists.txt), and its line i is
// instantiated in shard i mod that number only (register.hpp, CDSB_REGISTER).
#pragma once

#include <utility>
#include <vector>

#include "bench/registry/registry.hpp"

namespace cdsb::bench {

inline constexpr int structure_shards = CDSBENCH_STRUCTURE_SHARDS;
inline constexpr int peer_shards = CDSBENCH_PEER_SHARDS;
inline constexpr int black_box_shards = CDSBENCH_BLACK_BOX_SHARDS;

// Collects the entries a shard's lines made, each with its position in the listing: the
// file's rank, then the line's.
struct RegistryShard {
  std::vector<std::pair<int, StructureEntry>>& out;
  int file_rank = 0;
  void add(int line, StructureEntry e) { out.emplace_back(position(line), std::move(e)); }
  void add(int line, std::vector<StructureEntry> es) {
    for (auto& e : es) out.emplace_back(position(line), std::move(e));
  }
  int position(int line) const { return file_rank * 100'000 + line; }
};

// Each defined in its file and explicitly instantiated there once per shard; a line in it
// is instantiated where its index modulo the file's shard count equals Shard.
template <int Shard> void add_structures(RegistryShard& shard);  // structures.cpp
template <int Shard> void add_peers(RegistryShard& shard);       // peers.cpp
template <int Shard> void add_black_box(RegistryShard& shard);   // black_box.cpp

}  // namespace cdsb::bench
