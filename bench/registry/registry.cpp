#include "bench/registry/registry.hpp"

#include <algorithm>
#include <utility>

#include "bench/registry/shard.hpp"

namespace cdsb::bench {

std::optional<StructureKind> parse_kind(std::string_view name) {
  for (StructureKind k : all_structure_kinds)
    if (kind_name(k) == name) return k;
  return std::nullopt;
}

std::string kind_names() {
  std::string s;
  for (StructureKind k : all_structure_kinds) s += (s.empty() ? "" : ", ") + std::string(kind_name(k));
  return s;
}

const Variant* StructureEntry::find_variant(std::string_view reclaimer, std::string_view allocator) const {
  for (const Variant& v : variants)
    if (v.reclaimer == reclaimer && v.allocator == allocator) return &v;
  return nullptr;
}

// Every reclaimer with the default allocator, then every other allocator with the default
// reclaimer: the order lincheck and the tests run them in.
std::vector<Variant> StructureEntry::test_variants() const {
  std::vector<Variant> out;
  const Variant& d = default_variant();
  for (const Variant& v : variants)
    if (v.test && v.allocator == d.allocator) out.push_back(v);
  for (const Variant& v : variants)
    if (v.test && v.allocator != d.allocator) out.push_back(v);
  return out;
}

namespace {
template <class Member>
std::vector<std::string> unique_in_order(const std::vector<Variant>& variants, Member member) {
  std::vector<std::string> out;
  for (const Variant& v : variants)
    if (std::find(out.begin(), out.end(), v.*member) == out.end()) out.push_back(v.*member);
  return out;
}

// Every shard's lines of each file.
template <int... S>
void all_structures(RegistryShard& r, std::integer_sequence<int, S...>) { (add_structures<S>(r), ...); }
template <int... S>
void all_peers(RegistryShard& r, std::integer_sequence<int, S...>) { (add_peers<S>(r), ...); }
template <int... S>
void all_black_box(RegistryShard& r, std::integer_sequence<int, S...>) { (add_black_box<S>(r), ...); }
}  // namespace

std::vector<std::string> StructureEntry::reclaimers() const { return unique_in_order(variants, &Variant::reclaimer); }
std::vector<std::string> StructureEntry::allocators() const { return unique_in_order(variants, &Variant::allocator); }

const StructureEntry* Registry::find(std::string_view name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

Registry builtin_registry() {
  std::vector<std::pair<int, StructureEntry>> lines;
  RegistryShard shard{lines};
  all_structures(shard, std::make_integer_sequence<int, structure_shards>{});
  shard.file_rank = 1;
  all_peers(shard, std::make_integer_sequence<int, peer_shards>{});
  shard.file_rank = 2;
  all_black_box(shard, std::make_integer_sequence<int, black_box_shards>{});
  // The shards add their lines in shard order; the registry lists them in file and line order.
  std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Registry r;
  for (auto& [line, entry] : lines) r.add(std::move(entry));
  return r;
}

}  // namespace cdsb::bench
