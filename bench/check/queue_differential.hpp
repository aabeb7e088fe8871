// The differential test of a queue (architecture.md §5): a random sequence of single and batch
// enqueues and dequeues run on the queue and on a std::deque, every result compared, then the
// final contents. Single-threaded, so a mismatch is a plain bug, reported with the operation,
// its index and the seed.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
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
    } else if (kind == 2) {
      const auto v = q.dequeue(0);
      const std::optional<std::uint64_t> want =
          reference.empty() ? std::nullopt : std::optional<std::uint64_t>(reference.front());
      if (v != want)
        return where(i, "dequeue()") + ": got " + (v ? std::to_string(*v) : "empty") + ", want " +
               (want ? std::to_string(*want) : "empty");
      if (want) reference.pop_front();
    } else {
      got.assign(n, 0);
      got.resize(dequeue_batch(q, 0, n, got.data()));
      const std::size_t k = std::min(n, reference.size());
      const std::vector<std::uint64_t> want(reference.begin(), reference.begin() + static_cast<std::ptrdiff_t>(k));
      if (got != want) return where(i, "dequeue_batch(" + std::to_string(n) + ")") + ": got " + text(got) + ", want " + text(want);
      reference.erase(reference.begin(), reference.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  std::vector<std::uint64_t> left;
  if constexpr (requires { q.for_each_item([](std::uint64_t) {}); }) {
    q.for_each_item([&](std::uint64_t v) { left.push_back(v); });
    if (left != std::vector<std::uint64_t>(reference.begin(), reference.end()))
      return "final contents (for_each_item) " + text(left) + " differ from " +
             text(std::vector<std::uint64_t>(reference.begin(), reference.end())) + " (seed " + std::to_string(run.seed) + ")";
  }
  if constexpr (requires { q.check_invariants(); }) {
    const std::string invariants = q.check_invariants();
    if (!invariants.empty()) return "invariants: " + invariants + " (seed " + std::to_string(run.seed) + ")";
  }
  left.clear();
  while (const auto v = q.dequeue(0)) left.push_back(*v);
  if (left != std::vector<std::uint64_t>(reference.begin(), reference.end()))
    return "final contents (dequeued) " + text(left) + " differ from the reference (seed " + std::to_string(run.seed) + ")";
  return "";
}

}  // namespace cdsb::bench
