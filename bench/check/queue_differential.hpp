// The differential test of a queue (architecture.md §5): a random sequence of single and batch
// enqueues and dequeues run on the queue and on a std::deque, every result compared, then the
// final contents. Single-threaded, so a mismatch is a plain bug, reported with the operation,
// its index and the seed. A stack (order "lifo", StackAsQueue) is compared the same way with
// the deque's back as its top; a relaxed queue (order "relaxed", e.g. a quasi-linearizable one)
// by what it holds: a dequeue must return some item the reference holds, and empty only when
// it holds none.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "bench/check/differential.hpp"
#include "bench/harness/make_structure.hpp"
#include "cdsbench/queue/concepts.hpp"
#include "cdsbench/random/generators.hpp"
#include "cdsbench/random/uniform.hpp"

namespace cdsb::bench {

// run.key_range bounds the batch sizes (1..min(key_range, 16)): the registry's test gives 16..128.
template <ConcurrentQueue Q>
std::string queue_differential(const DifferentialRun& run) {
  constexpr std::string_view order = [] {
    if constexpr (requires { Q::order; }) return Q::order;
    else return std::string_view("fifo");
  }();
  constexpr bool lifo = order == "lifo", relaxed = order == "relaxed";
  const auto owned = make_structure<Q>(1, run.reclaim_eager);
  Q& q = *owned;
  std::deque<std::uint64_t> reference;
  Xoshiro256StarStar rng;
  rng.seed(run.seed);
  const std::uint64_t max_batch = run.key_range < 16 ? run.key_range : 16;
  std::uint64_t next_value = 1;
  std::vector<std::uint64_t> batch, got;
  auto where = [&](int i, const std::string& op) {
    return op + " at operation " + std::to_string(i) + " (seed " + std::to_string(run.seed) + ")";
  };
  auto take = [&](std::uint64_t v) {  // a relaxed queue's dequeued item, removed from the reference
    const auto it = std::find(reference.begin(), reference.end(), v);
    if (it == reference.end()) return false;
    reference.erase(it);
    return true;
  };
  auto text = [](const std::vector<std::uint64_t>& items) {
    std::string s = "[";
    for (std::size_t k = 0; k < items.size(); ++k) {
      if (k) s += ',';
      s += std::to_string(items[k]);
    }
    return s + "]";
  };
  for (int i = 0; i < run.ops; ++i) {
    const std::uint64_t kind = uniform_below(rng, 4);
    const std::size_t n = static_cast<std::size_t>(1 + uniform_below(rng, max_batch));
    if (kind == 0) {
      q.enqueue(0, next_value);
      reference.push_back(next_value++);
    } else if (kind == 1) {
      batch.clear();
      for (std::size_t k = 0; k < n; ++k) batch.push_back(next_value++);
      enqueue_batch(q, 0, std::span<const std::uint64_t>(batch));
      reference.insert(reference.end(), batch.begin(), batch.end());
    } else if (relaxed && kind == 2) {
      const auto v = q.dequeue(0);
      if (!v && !reference.empty())
        return where(i, "dequeue()") + ": empty, while " + std::to_string(reference.size()) + " items are queued";
      if (v && !take(*v)) return where(i, "dequeue()") + ": got " + std::to_string(*v) + ", which is not queued";
    } else if (relaxed) {
      got.assign(n, 0);
      got.resize(dequeue_batch(q, 0, n, got.data()));
      if (got.size() != std::min(n, reference.size()))
        return where(i, "dequeue_batch(" + std::to_string(n) + ")") + ": got " + text(got) + " while " +
               std::to_string(reference.size()) + " items are queued";
      for (const std::uint64_t v : got)
        if (!take(v)) return where(i, "dequeue_batch(" + std::to_string(n) + ")") + ": got " + std::to_string(v) + ", which is not queued";
    } else if (kind == 2) {
      const auto v = q.dequeue(0);
      const std::optional<std::uint64_t> want =
          reference.empty() ? std::nullopt : std::optional<std::uint64_t>(lifo ? reference.back() : reference.front());
      if (v != want)
        return where(i, "dequeue()") + ": got " + (v ? std::to_string(*v) : "empty") + ", want " +
               (want ? std::to_string(*want) : "empty");
      if (want) lifo ? reference.pop_back() : reference.pop_front();
    } else {
      got.assign(n, 0);
      got.resize(dequeue_batch(q, 0, n, got.data()));
      const auto k = static_cast<std::ptrdiff_t>(std::min(n, reference.size()));
      const std::vector<std::uint64_t> want = lifo ? std::vector<std::uint64_t>(reference.rbegin(), reference.rbegin() + k)
                                                   : std::vector<std::uint64_t>(reference.begin(), reference.begin() + k);
      if (got != want) return where(i, "dequeue_batch(" + std::to_string(n) + ")") + ": got " + text(got) + ", want " + text(want);
      if (lifo) reference.erase(reference.end() - k, reference.end());
      else reference.erase(reference.begin(), reference.begin() + k);
    }
  }
  if (relaxed) std::sort(reference.begin(), reference.end());  // its final contents compare as sets
  auto in_order = [&](std::vector<std::uint64_t>& items) -> std::vector<std::uint64_t>& {
    if (relaxed) std::sort(items.begin(), items.end());
    return items;
  };
  std::vector<std::uint64_t> left;
  if constexpr (requires { q.for_each_item([](std::uint64_t) {}); }) {
    q.for_each_item([&](std::uint64_t v) { left.push_back(v); });
    if (in_order(left) != std::vector<std::uint64_t>(reference.begin(), reference.end()))
      return "final contents (for_each_item) " + text(left) + " differ from " +
             text(std::vector<std::uint64_t>(reference.begin(), reference.end())) + " (seed " + std::to_string(run.seed) + ")";
  }
  if constexpr (requires { q.check_invariants(); }) {
    const std::string invariants = q.check_invariants();
    if (!invariants.empty()) return "invariants: " + invariants + " (seed " + std::to_string(run.seed) + ")";
  }
  left.clear();
  while (const auto v = q.dequeue(0)) left.push_back(*v);
  if (lifo) std::reverse(left.begin(), left.end());  // popped top first
  if (in_order(left) != std::vector<std::uint64_t>(reference.begin(), reference.end()))
    return "final contents (dequeued) " + text(left) + " differ from the reference (seed " + std::to_string(run.seed) + ")";
  return "";
}

}  // namespace cdsb::bench
