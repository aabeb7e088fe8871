// What the BST unit tests share: an allocator that counts the objects (nodes and descriptors)
// alive, a stats figure by name, a tree's keys in order, and the checks whose logic is the same
// for every tree (keys at the edges of the key space, the only key, path-shaped trees, a
// differential run against std::set, search depths against a sequential tree of the same
// updates, concurrent updates with reclamation accounting).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/random/generators.hpp"
#include "cdsbench/reclaim/alloc_system.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"
#include "support/stats_figures.hpp"

namespace cdsb::test_support {

// Objects allocated through CountingAllocator and not yet freed (all instances, all trees).
inline std::atomic<std::int64_t> live_objects{0};

// System malloc, counting the objects (nodes and descriptors) alive.
class CountingAllocator {
 public:
  static constexpr const char* name = "counting";
  explicit CountingAllocator(int max_threads) : inner_(max_threads) {}
  template <class T>
  void* allocate(int tid) {
    live_objects.fetch_add(1, std::memory_order_relaxed);
    return inner_.allocate<T>(tid);
  }
  template <class T>
  void deallocate(int tid, void* p) noexcept {
    live_objects.fetch_sub(1, std::memory_order_relaxed);
    inner_.deallocate<T>(tid, p);
  }

 private:
  reclaim::SystemAllocator inner_;
};

using cdsb::testing::figure;

inline std::vector<std::uint64_t> keys_of(const auto& tree) {
  std::vector<std::uint64_t> keys;
  tree.for_each_key([&](std::uint64_t k) { keys.push_back(k); });
  return keys;
}

// A fresh tree takes `inserts` one at a time (a second insert of a key fails at once and after
// all are in), then gives them up in the order `erases`. After every step: the erased key is
// gone (a second erase fails), every other key is still found, the set is right and the tree
// sound. Emptied, the tree has a fresh one's node count. Meant for keys next to the sentinels
// or at the ends of the key type, in several orders.
template <class Tree>
void check_insert_then_erase_in_order(reclaim::ReclaimOptions options, const std::vector<typename Tree::key_type>& inserts,
                                      const std::vector<typename Tree::key_type>& erases) {
  using Key = typename Tree::key_type;
  ::testing::Message orders;
  orders << "inserts";
  for (Key k : inserts) orders << ' ' << k;
  orders << ", erases";
  for (Key k : erases) orders << ' ' << k;
  SCOPED_TRACE(orders);
  Tree tree(1, options);
  const std::size_t fresh_nodes = tree.node_count();
  for (Key k : inserts) {
    EXPECT_TRUE(tree.insert(0, k, k)) << k;
    EXPECT_FALSE(tree.insert(0, k, k)) << k;
    EXPECT_EQ(tree.check_invariants(), "") << "after inserting " << k;
  }
  for (Key k : inserts) EXPECT_FALSE(tree.insert(0, k, k)) << k;
  std::vector<Key> left = inserts;
  std::sort(left.begin(), left.end());
  EXPECT_EQ(keys_of(tree), left);
  for (Key k : erases) {
    EXPECT_TRUE(tree.contains(0, k)) << k;
    EXPECT_TRUE(tree.erase(0, k)) << k;
    EXPECT_FALSE(tree.erase(0, k)) << k;
    EXPECT_FALSE(tree.contains(0, k)) << k;
    std::erase(left, k);
    EXPECT_EQ(keys_of(tree), left) << "after erasing " << k;
    for (Key other : left) EXPECT_TRUE(tree.contains(0, other)) << other << " after erasing " << k;
    EXPECT_EQ(tree.check_invariants(), "") << "after erasing " << k;
  }
  EXPECT_EQ(tree.node_count(), fresh_nodes);
}

// One key into an empty tree and out again, `rounds` times: the slot or link an erase empties
// must take the key again. A key adds `nodes_per_key` nodes (1 in an internal tree, a leaf and
// a routing node in an external one).
template <class Tree>
void check_the_only_key(reclaim::ReclaimOptions options, std::size_t nodes_per_key, int rounds = 3) {
  Tree tree(1, options);
  const std::size_t fresh_nodes = tree.node_count();
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round);
    EXPECT_TRUE(tree.insert(0, 7, 70));
    EXPECT_FALSE(tree.insert(0, 7, 71));
    EXPECT_TRUE(tree.contains(0, 7));
    EXPECT_FALSE(tree.contains(0, 6));
    EXPECT_FALSE(tree.contains(0, 8));
    EXPECT_EQ(keys_of(tree), std::vector<std::uint64_t>{7});
    EXPECT_EQ(tree.node_count(), fresh_nodes + nodes_per_key);
    EXPECT_EQ(tree.check_invariants(), "");
    EXPECT_TRUE(tree.erase(0, 7));
    EXPECT_FALSE(tree.erase(0, 7));
    EXPECT_FALSE(tree.contains(0, 7));
    EXPECT_TRUE(keys_of(tree).empty());
    EXPECT_EQ(tree.node_count(), fresh_nodes);
    EXPECT_EQ(tree.check_invariants(), "");
  }
}

// Keys in order make a path as deep as the tree is large (a search is linear, so n stays
// small): the empty `tree` takes 1..n upwards and 2n..n+1 downwards, then gives up the odd keys
// upwards and the even ones downwards, which exercises deletes all along the path. The set
// and the invariants are checked after each phase; the tree ends empty, with its first node
// count.
template <class Tree>
void check_path_shaped_tree(Tree& tree, std::uint64_t n) {
  const std::size_t empty_nodes = tree.node_count();
  ASSERT_TRUE(keys_of(tree).empty());
  for (std::uint64_t k = 1; k <= n; ++k) ASSERT_TRUE(tree.insert(0, k, k)) << k;
  for (std::uint64_t k = 2 * n; k > n; --k) ASSERT_TRUE(tree.insert(0, k, k)) << k;
  EXPECT_EQ(tree.check_invariants(), "");
  if constexpr (requires { tree.size(); }) {
    EXPECT_EQ(tree.size(), 2 * n);
  }
  const auto keys = keys_of(tree);
  ASSERT_EQ(keys.size(), 2 * n);
  for (std::uint64_t i = 0; i < 2 * n; ++i) ASSERT_EQ(keys[i], i + 1);
  for (std::uint64_t k = 1; k <= 2 * n; k += 2) ASSERT_TRUE(tree.erase(0, k)) << k;
  EXPECT_EQ(tree.check_invariants(), "");
  for (std::uint64_t k = 2 * n; k >= 2; k -= 2) ASSERT_TRUE(tree.erase(0, k)) << k;
  EXPECT_TRUE(keys_of(tree).empty());
  EXPECT_EQ(tree.check_invariants(), "");
  EXPECT_EQ(tree.node_count(), empty_nodes);
}

// A sequential, unbalanced BST given the same updates one at a time, for the depth every key
// must have in a concurrent tree after them. Internal: a key in every node; erasing a node with
// two children moves its successor's key into it and removes the successor's node (Hibbard),
// which is the shape Howley-Jones, Ramachandran-Mittal, Drachsler et al. and Citrus leave.
// External: keys in the leaves below one sentinel leaf `top` (larger than every key); an
// insert replaces the leaf it reaches by a routing node of key max(key, leaf key) over both
// leaves; an erase replaces the leaf's parent by the leaf's sibling. Routing: key < node key
// goes left. Depth: the root is 1.
class ReferenceBst {
 public:
  enum class Kind { internal, external };
  ReferenceBst(Kind kind, std::uint64_t top = 0) : kind_(kind) {
    if (kind == Kind::external) root_ = std::make_unique<Node>(Node{top, true, nullptr, nullptr});
  }

  bool insert(std::uint64_t k) {
    std::unique_ptr<Node>* at = &root_;
    while (*at && !(*at)->leaf) {
      if ((*at)->key == k && kind_ == Kind::internal) return false;
      at = k < (*at)->key ? &(*at)->left : &(*at)->right;
    }
    if (kind_ == Kind::internal) {
      *at = std::make_unique<Node>(Node{k, false, nullptr, nullptr});
      return true;
    }
    if ((*at)->key == k) return false;
    std::unique_ptr<Node> leaf = std::move(*at), fresh = std::make_unique<Node>(Node{k, true, nullptr, nullptr});
    const std::uint64_t routing = std::max(k, leaf->key);
    const bool fresh_left = k < leaf->key;
    *at = std::make_unique<Node>(Node{routing, false, fresh_left ? std::move(fresh) : std::move(leaf), nullptr});
    (*at)->right = fresh_left ? std::move(leaf) : std::move(fresh);
    return true;
  }

  bool erase(std::uint64_t k) {
    std::unique_ptr<Node>* parent = nullptr;
    std::unique_ptr<Node>* at = &root_;
    while (*at && !(*at)->leaf && !(kind_ == Kind::internal && (*at)->key == k)) {
      parent = at;
      at = k < (*at)->key ? &(*at)->left : &(*at)->right;
    }
    if (!*at || (*at)->key != k) return false;
    if (kind_ == Kind::external) {
      std::unique_ptr<Node> sibling = std::move((*parent)->left.get() == at->get() ? (*parent)->right : (*parent)->left);
      *parent = std::move(sibling);
      return true;
    }
    Node* n = at->get();
    if (n->left && n->right) {
      std::unique_ptr<Node>* succ = &n->right;
      while ((*succ)->left) succ = &(*succ)->left;
      n->key = (*succ)->key;
      *succ = std::move((*succ)->right);
    } else {
      *at = std::move(n->left ? n->left : n->right);
    }
    return true;
  }

  std::map<std::uint64_t, std::size_t> depths() const {
    std::map<std::uint64_t, std::size_t> out;
    std::vector<std::pair<const Node*, std::size_t>> stack;
    if (root_) stack.push_back({root_.get(), 1});
    while (!stack.empty()) {
      const auto [n, depth] = stack.back();
      stack.pop_back();
      if (kind_ == Kind::internal || n->leaf) out[n->key] = depth;
      for (const Node* c : {n->left.get(), n->right.get()})
        if (c) stack.push_back({c, depth + 1});
    }
    if (kind_ == Kind::external) out.erase(std::prev(out.end()));  // the sentinel leaf
    return out;
  }

 private:
  struct Node {
    std::uint64_t key;
    bool leaf;
    std::unique_ptr<Node> left, right;
  };
  Kind kind_;
  std::unique_ptr<Node> root_;
};

inline std::map<std::uint64_t, std::size_t> depths_of(const auto& tree) {
  std::map<std::uint64_t, std::size_t> out;
  tree.for_each_key_depth([&](std::uint64_t k, std::size_t depth) { EXPECT_TRUE(out.emplace(k, depth).second) << k; });
  return out;
}

// One thread updates `tree` and a ReferenceBst of `kind` alike (random inserts and erases on
// 1..key_range, so every erasure case comes up); every 50 updates each key's search depth in
// the tree must be the reference's plus `depth_above` (the sentinels a search reads before the
// reference's root).
template <class Tree>
void check_search_depths(Tree& tree, ReferenceBst::Kind kind, std::size_t depth_above, int ops = 3'000,
                         std::uint64_t key_range = 400) {
  ReferenceBst reference(kind, kind == ReferenceBst::Kind::external ? Tree::max_key + 1 : 0);
  Xoshiro256StarStar rng;
  rng.seed(7);
  for (int i = 1; i <= ops; ++i) {
    const std::uint64_t k = 1 + rng.next() % key_range;
    if (rng.next() % 5 < 3) ASSERT_EQ(tree.insert(0, k, k), reference.insert(k)) << "insert " << k;
    else ASSERT_EQ(tree.erase(0, k), reference.erase(k)) << "erase " << k;
    if (i % 50 != 0) continue;
    std::map<std::uint64_t, std::size_t> expected = reference.depths();
    for (auto& [key, depth] : expected) depth += depth_above;
    ASSERT_EQ(depths_of(tree), expected) << "after " << i << " updates";
  }
}

// Random single-threaded inserts, erases and lookups on keys 1..key_range against std::set,
// the invariants checked every `check_every` operations and at the end.
template <class Tree>
void check_against_std_set(Tree& tree, int ops, int check_every, std::uint64_t key_range = 200) {
  std::set<std::uint64_t> model;
  Xoshiro256StarStar rng;
  rng.seed(42);
  for (int i = 0; i < ops; ++i) {
    const std::uint64_t k = 1 + rng.next() % key_range;
    switch (rng.next() % 3) {
      case 0: ASSERT_EQ(tree.insert(0, k, k), model.insert(k).second) << "insert " << k << " at op " << i; break;
      case 1: ASSERT_EQ(tree.erase(0, k), model.erase(k) == 1) << "erase " << k << " at op " << i; break;
      default: ASSERT_EQ(tree.contains(0, k), model.count(k) == 1) << "contains " << k << " at op " << i;
    }
    if (i % check_every == 0) {
      ASSERT_EQ(tree.check_invariants(), "") << "after op " << i;
    }
  }
  EXPECT_EQ(keys_of(tree), std::vector<std::uint64_t>(model.begin(), model.end()));
  EXPECT_EQ(tree.check_invariants(), "");
}

// The concurrent workload of run_concurrent_updates_and_check.
struct ConcurrentUpdates {
  int threads = 4;
  std::uint64_t key_range = 16;  // keys 1..key_range
  int ops_per_thread = 40'000;
  std::uint64_t seed = 1000;  // thread t seeds its generator with seed + t
};

enum class OpKind { insert, erase, contains };
struct Op {
  OpKind kind;
  std::uint64_t key;  // in 1..key_range
};

// Thread t's operation i, the default: a kind and a key, both uniform.
inline Op random_op(Xoshiro256StarStar& rng, int /*t*/, int /*i*/, const ConcurrentUpdates& w) {
  const std::uint64_t key = 1 + rng.next() % w.key_range;
  return {static_cast<OpKind>(rng.next() % 3), key};
}

struct NoExtraChecks {
  void operator()(const auto& /*tree*/, const StatsReport& /*stats*/) const {}
};

// Runs w.threads threads of w.ops_per_thread operations (next_op chooses them) on a fresh tree.
// Afterwards the tree is sound; the set agrees with the threads' net successful updates; every
// object allocated (nodes and descriptors) is in the tree, in limbo or freed, so every removed
// one was retired (one retired twice: ASan sees the double free), and the CountingAllocator
// agrees; ebr freed some during the run; and teardown frees everything. extra_checks(tree,
// stats) adds a structure's own checks while the tree is still alive.
template <class Tree, class ExtraChecks = NoExtraChecks, class NextOp = decltype(&random_op)>
void run_concurrent_updates_and_check(reclaim::ReclaimOptions options, const ConcurrentUpdates& w = {},
                                      ExtraChecks extra_checks = {}, NextOp next_op = &random_op) {
  SCOPED_TRACE(::testing::Message() << "concurrent updates: " << w.threads << " threads, keys 1.." << w.key_range << ", "
                                    << w.ops_per_thread << " operations each");
  const std::int64_t live_before = live_objects.load();
  {
    Tree tree(w.threads, options);
    std::vector<std::vector<std::int64_t>> net(w.threads, std::vector<std::int64_t>(w.key_range + 1, 0));
    std::atomic<int> ready{0};  // a start gate: without it, a thread may finish in one time slice
    std::vector<std::thread> workers;
    for (int t = 0; t < w.threads; ++t)
      workers.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < w.threads) std::this_thread::yield();
        Xoshiro256StarStar rng;
        rng.seed(w.seed + static_cast<std::uint64_t>(t));
        for (int i = 0; i < w.ops_per_thread; ++i) {
          const Op op = next_op(rng, t, i, w);
          switch (op.kind) {
            case OpKind::insert: net[t][op.key] += tree.insert(t, op.key, op.key); break;
            case OpKind::erase: net[t][op.key] -= tree.erase(t, op.key); break;
            case OpKind::contains: (void)tree.contains(t, op.key); break;
          }
        }
      });
    for (auto& worker : workers) worker.join();

    ASSERT_EQ(tree.check_invariants(), "");  // the walks below need a sound tree
    std::vector<std::uint64_t> expected;
    for (std::uint64_t k = 1; k <= w.key_range; ++k) {
      std::int64_t sum = 0;
      for (int t = 0; t < w.threads; ++t) sum += net[t][k];
      ASSERT_TRUE(sum == 0 || sum == 1) << "key " << k << ": net " << sum;
      if (sum) expected.push_back(k);
      EXPECT_EQ(tree.contains(0, k), sum == 1) << "key " << k;
    }
    EXPECT_EQ(keys_of(tree), expected);

    const StatsReport stats = tree.stats();
    const std::uint64_t allocated = figure(stats, "nodes_allocated"), freed = figure(stats, "nodes_freed");
    const std::uint64_t retired = figure(stats, "nodes_retired"), limbo = figure(stats, "nodes_in_limbo");
    EXPECT_GT(retired, 1000u);
    EXPECT_EQ(allocated - freed, tree.node_count() + limbo)
        << "allocated " << allocated << ", freed " << freed << ", retired " << retired << ", in limbo " << limbo;
    EXPECT_EQ(live_objects.load() - live_before, static_cast<std::int64_t>(allocated - freed));
    if (std::string(Tree::reclaimer_type::name) == "ebr") {
      EXPECT_GT(freed, 0u) << "ebr reclaimed nothing during the run";
    }
    extra_checks(tree, stats);
  }
  EXPECT_EQ(live_objects.load(), live_before) << "teardown left objects allocated";
}

}  // namespace cdsb::test_support
