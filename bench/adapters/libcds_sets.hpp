// libcds peers behind our ConcurrentSet interface (architecture.md §3), so they run through the same
// measured loop, prefill, validation and correctness matrix as our structures:
//
//   libcds.ellen_bst     cds::container::EllenBinTreeMap (Ellen, Fatourou, Ruppert & van Breugel,
//                        "Non-blocking Binary Search Trees", PODC 2010), with libcds's Hazard
//                        Pointers (`hp`) or its general_buffered user-space RCU (`rcu`)
//   libcds.skiplist_map  cds::container::SkipListMap (lock-free skip list), Hazard Pointers
//   libcds.bronson_avl   cds::container::BronsonAVLTreeMap (Bronson, Casper, Chafi & Olukotun,
//                        "A Practical Concurrent Binary Search Tree", PPoPP 2010), with libcds's
//                        general_buffered user-space RCU (`rcu`; libcds has no HP version of it)
//
// libcds 2.3.3 as Debian ships it (libcds-dev): headers plus libcds.so, which holds the
// collectors' singletons and their thread records. Used as its documentation says:
//
// - cds::Initialize() once, then one collector object (a process-wide singleton), then every
//   thread that touches a container attaches (cds::threading::Manager::attachThread) before
//   its first operation and detaches after its last. LibcdsSession does the first two when
//   the first peer is built and undoes them when the last one is destroyed, so each trial (and
//   each lincheck history) starts from a fresh collector sized for its own threads, and the
//   nodes the previous one left retired are freed before the next one is measured. It also
//   attaches the thread that builds the structure (the harness's main thread, which
//   validates the structure after the workers have gone: for_each_key, contains probes,
//   check_invariants, the destructor), and the thread hooks attach each worker.
// - Hazard pointers: libcds's HP needs, per thread, as many as the container's most demanding
//   operation (EllenBinTree: 9; SkipListMap with its default 32-level generator: 2·32 + 3 =
//   67), more than the default of 8; the collector is built with the structure's count and a
//   thread bound of max_threads + 1 (the workers and the main thread). Its retired array holds
//   2 × hazards × threads pointers per thread (libcds's default), and a full array triggers a
//   scan: that bound is already small, so `--reclaim-eager` changes nothing for `hp`; for
//   `rcu` it shrinks the retired buffer from 256 to 2 entries (a grace period every second
//   retirement).
// - No item counter and no statistics (libcds's defaults: both cost a shared atomic per
//   update). Validation counts keys with a quiescent walk instead; nodes are counted by
//   CountingAllocator (leaves and internal nodes as `nodes_*`, Ellen's update descriptors as
//   `descriptors_*`), on the process's malloc like our `system` allocator.
//
// libcds's .so is not built with ThreadSanitizer: the hazard-pointer scans that decide when a
// node may be freed run inside it, unseen by TSan (see bench/registry/peers.cpp). And libcds's
// SkipListMap::contains is not linearizable (lincheck found it; bench/registry/peers.cpp has
// the evidence): the adapter calls it as it is, so measurements show the library as shipped.
#pragma once

#include <cds/urcu/general_buffered.h>  // before the RCU containers (libcds asks for it)
#include <cds/container/bronson_avltree_map_rcu.h>
#include <cds/container/ellen_bintree_map_hp.h>
#include <cds/container/ellen_bintree_map_rcu.h>
#include <cds/container/skip_list_map_hp.h>
#include <cds/gc/hp.h>
#include <cds/init.h>
#include <cds/urcu/general_buffered.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench/adapters/counting_allocator.hpp"
#include "cdsbench/platform/user_stats.hpp"
#include "cdsbench/reclaim/reclaimer.hpp"

namespace cdsb::bench::peers {

using LibcdsRcu = cds::urcu::gc<cds::urcu::general_buffered<>>;

// libcds's process-wide state for the lifetime of the peers that use it (see the top).
class LibcdsSession {
 public:
  enum class Gc { hp, rcu };
  struct Params {
    Gc gc = Gc::hp;
    std::size_t hazard_pointers = 0;  // hp: per thread
    int threads = 1;                  // hp: threads attached at once, at most
    std::size_t rcu_buffer = 256;     // rcu: retired pointers buffered before a grace period
  };

  explicit LibcdsSession(const Params& p) {
    Shared& s = shared();
    {
      std::lock_guard lock(s.mutex);
      if (s.live == 0) {
        cds::Initialize();
        if (p.gc == Gc::hp) cds::gc::hp::smr::construct(p.hazard_pointers, static_cast<std::size_t>(p.threads));
        else cds::urcu::general_buffered<>::Construct(p.rcu_buffer);
        s.params = p;
      } else if (p.gc != s.params.gc || p.hazard_pointers > s.params.hazard_pointers || p.threads > s.params.threads) {
        // Threads attach to the collectors that exist when they attach, and HP's sizes are
        // fixed when it is built: a second, different peer cannot join a live session.
        throw std::invalid_argument("libcds peers: a peer with another collector or more threads cannot be built "
                                    "while another libcds peer lives");
      }
      ++s.live;
    }
    cds::threading::Manager::attachThread();  // the builder validates and destroys the structure
  }

  ~LibcdsSession() {
    cds::threading::Manager::detachThread();
    Shared& s = shared();
    std::lock_guard lock(s.mutex);
    if (--s.live == 0) {
      // Frees every node still retired (their disposers are static functions of the
      // containers: they outlive the containers), then libcds's thread-data key.
      if (s.params.gc == Gc::hp) cds::gc::hp::smr::destruct(true);
      else cds::urcu::general_buffered<>::Destruct(true);
      cds::Terminate();
    }
  }

  LibcdsSession(const LibcdsSession&) = delete;
  LibcdsSession& operator=(const LibcdsSession&) = delete;

  // Each worker, on its own thread, before its first and after its last operation.
  static void attach_thread() { cds::threading::Manager::attachThread(); }
  static void detach_thread() { cds::threading::Manager::detachThread(); }

 private:
  struct Shared {
    std::mutex mutex;
    int live = 0;
    Params params;
  };
  static Shared& shared() {
    static Shared* s = new Shared;  // never destroyed: sessions may end during static teardown
    return *s;
  }
};

// A reclaimer/allocator name pair for the registry (set_structure_variants): the library's own
// collector, nodes from the process's malloc through CountingAllocator.
template <const char* Reclaimer>
struct LibraryReclaimer {
  static constexpr const char* name = Reclaimer;
  struct allocator_type {
    static constexpr const char* name = "system";
  };
};
inline constexpr char hp_name[] = "hp";
inline constexpr char rcu_name[] = "rcu";

// ---- libcds.ellen_bst -------------------------------------------------------------------------

template <class GC>
class LibcdsEllenBst {
  struct NodeTag {};        // leaves and internal nodes
  struct DescriptorTag {};  // Info records (update descriptors)
  struct Traits : cds::container::ellen_bintree::traits {
    using less = std::less<std::uint64_t>;
    using allocator = CountingAllocator<int, NodeTag>;       // leaves
    using node_allocator = CountingAllocator<int, NodeTag>;  // internal nodes
    using update_desc_allocator = CountingAllocator<int, DescriptorTag>;
  };
  using Map = cds::container::EllenBinTreeMap<GC, std::uint64_t, std::uint64_t, Traits>;
  static constexpr bool uses_hp = std::is_same_v<GC, cds::gc::HP>;

  // The tree's internals, for the quiescent walk (validation and invariants): libcds gives
  // the tree no iterator, and its check_consistency() compares each node with its children
  // only.
  class Tree : public Map {
   public:
    using Map::check_consistency;
    using tree_node = typename Map::tree_node;
    using internal_node = typename Map::internal_node;
    using leaf_node = typename Map::leaf_node;
    using update_desc = typename Map::update_desc;
    static constexpr std::size_t leaf_bytes = sizeof(leaf_node);
    static constexpr std::size_t internal_bytes = sizeof(internal_node);
    static constexpr std::size_t descriptor_bytes = sizeof(update_desc);

    // A key as the tree orders it: regular keys below Infinite1 below Infinite2 (libcds's
    // sentinels), i.e. (infinity, key) compared lexicographically.
    using Order = std::pair<unsigned, std::uint64_t>;

    // Visits every reachable node; on_leaf(key) for each regular leaf. Returns "" or the
    // first violation: a key outside the range its path allows (left subtree < routing key
    // <= right subtree), a missing child, or an Info record still flagged at quiescence.
    template <class OnLeaf>
    std::string walk(OnLeaf&& on_leaf, std::uint64_t& internal_nodes) const {
      struct Item {
        const tree_node* node;
        Order lo, hi;  // lo <= key < hi
      };
      std::vector<Item> stack{{&this->m_Root, {0, 0}, {3, 0}}};
      internal_nodes = 0;
      while (!stack.empty()) {
        const Item it = stack.back();
        stack.pop_back();
        if (it.node->is_internal()) {
          const auto* n = static_cast<const internal_node*>(it.node);
          const Order key = order(n->infinite_key(), n->infinite_key() ? 0 : n->m_Key);
          if (key < it.lo || !(key < it.hi)) return "routing key " + describe(key) + " outside its subtree's range";
          if (n->m_pUpdate.load(std::memory_order_relaxed).bits() != update_desc::Clean)
            return "internal node " + describe(key) + " still flagged (Info state " +
                   std::to_string(n->m_pUpdate.load(std::memory_order_relaxed).bits()) + ") at quiescence";
          const tree_node* left = n->m_pLeft.load(std::memory_order_relaxed);
          const tree_node* right = n->m_pRight.load(std::memory_order_relaxed);
          if (!left || !right) return "internal node " + describe(key) + " lacks a child";
          if (n != &this->m_Root) ++internal_nodes;
          stack.push_back({right, key, it.hi});
          stack.push_back({left, it.lo, key});
        } else {
          const auto* leaf = static_cast<const leaf_node*>(it.node);
          const Order key = order(leaf->infinite_key(), leaf->infinite_key() ? 0 : leaf->m_Value.first);
          if (key < it.lo || !(key < it.hi)) return "leaf " + describe(key) + " outside its subtree's range";
          if (!leaf->infinite_key()) on_leaf(leaf->m_Value.first);
        }
      }
      return {};
    }

   private:
    // infinite_key() is the node's flag bit (key_infinite1 or key_infinite2), or 0.
    static Order order(unsigned infinite_flag, std::uint64_t key) {
      if (infinite_flag == tree_node::key_infinite1) return {1, 0};
      if (infinite_flag == tree_node::key_infinite2) return {2, 0};
      return {0, key};
    }
    static std::string describe(Order k) {
      return k.first ? "Infinite" + std::to_string(k.first) : std::to_string(k.second);
    }
  };

 public:
  using key_type = std::uint64_t;
  using mapped_type = std::uint64_t;
  using reclaimer_type = LibraryReclaimer<uses_hp ? hp_name : rcu_name>;
  static constexpr std::size_t hazard_pointers = 9;  // EllenBinTree's c_nHazardPtrCount

  explicit LibcdsEllenBst(int max_threads, reclaim::ReclaimOptions options = {})
      : session_(LibcdsSession::Params{uses_hp ? LibcdsSession::Gc::hp : LibcdsSession::Gc::rcu, hazard_pointers,
                                       max_threads + 1, options.eager ? std::size_t{2} : std::size_t{256}}) {
    if constexpr (uses_hp) static_assert(Map::c_nHazardPtrCount == hazard_pointers);
  }

  // Linearizable; lock-free (libcds); hp or rcu.
  bool insert(int, key_type k, mapped_type v) { return tree_.insert(k, v); }
  // Linearizable; lock-free (libcds); hp or rcu.
  bool erase(int, key_type k) { return tree_.erase(k); }
  // Linearizable; lock-free (libcds); hp or rcu.
  bool contains(int, key_type k) { return tree_.contains(k); }

  void thread_init(int) { LibcdsSession::attach_thread(); }
  void thread_exit(int) { LibcdsSession::detach_thread(); }

  // Quiescent.
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    std::uint64_t internal = 0;
    (void)tree_.walk(fn, internal);
  }

  // Quiescent: search-tree order over every path, no Info record left flagged, and libcds's
  // own check_consistency().
  std::string check_invariants() const {
    std::uint64_t internal = 0;
    std::string error = tree_.walk([](key_type) {}, internal);
    if (error.empty() && !tree_.check_consistency()) error = "libcds check_consistency() failed";
    return error;
  }

  // Quiescent: nodes and descriptors through the allocators since construction; nodes in
  // limbo = allocated - freed - reachable (retired, not yet freed by the collector).
  StatsReport stats() const {
    const AllocationTotals nodes = nodes_.now(), descriptors = descriptors_.now();
    std::uint64_t internal = 0, leaves = 0;
    (void)tree_.walk([&](key_type) { ++leaves; }, internal);
    const std::uint64_t live = nodes.allocated - nodes.freed, reachable = internal + leaves;
    StatsReport r;
    r.values = {{"nodes_allocated", nodes.allocated},
                {"nodes_freed", nodes.freed},
                {"nodes_reachable", reachable},
                {"nodes_in_limbo", live > reachable ? live - reachable : 0},
                {"descriptors_allocated", descriptors.allocated},
                {"descriptors_freed", descriptors.freed}};
    return r;
  }

  static std::string layout() {
    return "leaf " + std::to_string(Tree::leaf_bytes) + " B, internal " + std::to_string(Tree::internal_bytes) +
           " B, descriptor " + std::to_string(Tree::descriptor_bytes) + " B";
  }

 private:
  LibcdsSession session_;  // first: attached before the tree is built, detached after it is gone
  AllocationSince<NodeTag> nodes_;
  AllocationSince<DescriptorTag> descriptors_;
  Tree tree_;
};

// ---- libcds.skiplist_map ----------------------------------------------------------------------

class LibcdsSkipListMap {
  struct NodeTag {};  // a node and its tower are one block
  struct Traits : cds::container::skip_list::traits {
    using less = std::less<std::uint64_t>;
    using allocator = CountingAllocator<int, NodeTag>;
  };
  using Map = cds::container::SkipListMap<cds::gc::HP, std::uint64_t, std::uint64_t, Traits>;
  using Maker = cds::container::details::make_skip_list_map<cds::gc::HP, std::uint64_t, std::uint64_t, Traits>;
  using Node = typename Maker::node_type;

 public:
  using key_type = std::uint64_t;
  using mapped_type = std::uint64_t;
  using reclaimer_type = LibraryReclaimer<hp_name>;
  static constexpr std::size_t hazard_pointers = Map::c_nHazardPtrCount;

  explicit LibcdsSkipListMap(int max_threads, reclaim::ReclaimOptions = {})
      : session_(LibcdsSession::Params{LibcdsSession::Gc::hp, hazard_pointers, max_threads + 1, 0}) {}

  // Linearizable; lock-free (libcds); hp.
  bool insert(int, key_type k, mapped_type v) { return map_.insert(k, v); }
  // Linearizable; lock-free (libcds); hp.
  bool erase(int, key_type k) { return map_.erase(k); }
  // NOT linearizable in libcds 2.3.3: may report a key whose erase has already taken effect
  // (bench/registry/peers.cpp); lock-free (libcds); hp.
  bool contains(int, key_type k) { return map_.contains(k); }

  void thread_init(int) { LibcdsSession::attach_thread(); }
  void thread_exit(int) { LibcdsSession::detach_thread(); }

  // Quiescent: libcds's iterator (it protects each node with a hazard pointer of the calling
  // thread, which Session attached).
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    for (auto it = map_.cbegin(), end = map_.cend(); it != end; ++it) fn(it->first);
  }

  // Quiescent: the bottom level in strictly increasing key order.
  std::string check_invariants() const {
    bool first = true;
    key_type last = 0;
    std::uint64_t index = 0;
    std::string error;
    for (auto it = map_.cbegin(), end = map_.cend(); it != end && error.empty(); ++it, ++index) {
      if (!first && !(last < it->first))
        error = "keys out of order at position " + std::to_string(index) + " (" + std::to_string(last) + " then " +
                std::to_string(it->first) + ")";
      first = false;
      last = it->first;
    }
    return error;
  }

  // Quiescent: as LibcdsEllenBst::stats(); reachable nodes are the keys.
  StatsReport stats() const {
    const AllocationTotals nodes = nodes_.now();
    std::uint64_t reachable = 0;
    for_each_key([&](key_type) { ++reachable; });
    const std::uint64_t live = nodes.allocated - nodes.freed;
    StatsReport r;
    r.values = {{"nodes_allocated", nodes.allocated},
                {"nodes_freed", nodes.freed},
                {"nodes_reachable", reachable},
                {"nodes_in_limbo", live > reachable ? live - reachable : 0}};
    return r;
  }

  static std::string layout() {
    return "node " + std::to_string(sizeof(Node)) + " B + 8 B per level above the first, one block; up to " +
           std::to_string(Maker::type::c_nMaxHeight) + " levels";
  }

 private:
  LibcdsSession session_;
  AllocationSince<NodeTag> nodes_;
  Map map_;
};

// ---- libcds.bronson_avl -----------------------------------------------------------------------

// libcds's data-oriented BronsonAVLTreeMap<RCU, K, V> is a thin layer over the pointer-oriented
// BronsonAVLTreeMap<RCU, K, V*>: it allocates each value in a block of its own and frees it
// through the disposer, and its insert is one call of the base's do_update with a functor that
// allocates the value. It inherits privately, which hides the root from the quiescent walk
// (validation, invariants), so this adapter derives from the pointer map and makes that same
// call itself: the operations run exactly the code the data-oriented map runs. Defaults as
// shipped: spin-lock sync monitor injected in the node, relaxed memory-model option, no relaxed
// insert, no item counter, no statistics.
class LibcdsBronsonAvl {
  struct NodeTag {};   // tree nodes, routing nodes included
  struct ValueTag {};  // the value blocks
  struct Traits : cds::container::bronson_avltree::traits {
    using less = std::less<std::uint64_t>;
    using node_allocator = CountingAllocator<int, NodeTag>;
    using allocator = CountingAllocator<int, ValueTag>;
    // What the data-oriented map installs (make_map::traits::disposer).
    struct disposer {
      void operator()(std::uint64_t* p) const { cds::details::Allocator<std::uint64_t, allocator>().Delete(p); }
    };
  };
  using PtrMap = cds::container::BronsonAVLTreeMap<LibcdsRcu, std::uint64_t, std::uint64_t*, Traits>;

  class Tree : public PtrMap {
   public:
    using node_type = typename PtrMap::node_type;
    static constexpr std::size_t node_bytes = sizeof(node_type);

    // The data-oriented map's insert(key, val).
    bool insert_value(std::uint64_t key, std::uint64_t value) {
      return this->do_update(
                 key, typename PtrMap::key_comparator(),
                 [&](node_type*) { return cds::details::Allocator<std::uint64_t, typename Traits::allocator>().New(value); },
                 PtrMap::update_flags::allow_insert) == PtrMap::update_flags::result_inserted;
    }

    // Visits every node below the root holder; on_key(key) for each node holding a value (a
    // node without one is a routing node). Returns "" or the first violation: order (keys
    // strictly inside the range their path allows), a child whose parent pointer is not its
    // parent, a reachable node whose version says unlinked or shrinking, or a node lock held.
    template <class OnKey>
    std::string walk(OnKey&& on_key, std::uint64_t& nodes, std::uint64_t& routing) const {
      struct Item {
        const node_type* node;
        bool has_lo, has_hi;
        std::uint64_t lo, hi;
      };
      nodes = routing = 0;
      std::vector<Item> stack;
      const node_type* root_holder = this->m_pRoot;
      if (const node_type* r = root_holder->m_pRight.load(std::memory_order_acquire)) stack.push_back({r, false, false, 0, 0});
      while (!stack.empty()) {
        const Item it = stack.back();
        stack.pop_back();
        const node_type* n = it.node;
        const std::uint64_t k = n->m_key;
        const std::string at = "node " + std::to_string(k) + ": ";
        if ((it.has_lo && !(it.lo < k)) || (it.has_hi && !(k < it.hi))) return at + "outside its subtree's key range";
        const auto version = n->m_nVersion.load(std::memory_order_acquire);
        if (version & node_type::version_flags) return at + "reachable with version flags " + std::to_string(version & 3u);
        if (!n->m_SyncMonitorInjection.check_free()) return at + "its lock is held";
        ++nodes;
        if (n->m_pValue.load(std::memory_order_acquire)) on_key(k);
        else ++routing;
        const node_type* l = n->m_pLeft.load(std::memory_order_acquire);
        const node_type* r = n->m_pRight.load(std::memory_order_acquire);
        for (const node_type* c : {l, r})
          if (c && c->m_pParent.load(std::memory_order_acquire) != n) return at + "a child's parent pointer is wrong";
        if (r) stack.push_back({r, true, it.has_hi, k, it.hi});
        if (l) stack.push_back({l, it.has_lo, true, it.lo, k});
      }
      return {};
    }

    // libcds's own check_consistency(): each node's key against its children's. Its balance
    // test is vacuous in 2.3.3: do_check_consistency() returns max(hLeft, hRight) without the
    // + 1, so every subtree reports height 0 and no imbalance is ever found. We do not assert
    // balance for libcds: its tree is not strictly AVL at quiescence, even with one thread
    // (measured by actual heights, routing nodes counted, after 30,000 random operations:
    // unbalanced nodes left in 9 of 10 runs on 2,000 keys and 3 of 10 on 64 keys).
    std::string balance() const {
      std::string first;
      const bool ok = this->check_consistency([&](std::size_t level, std::size_t hl, std::size_t hr) {
        if (first.empty())
          first = "libcds check_consistency(): unbalanced at level " + std::to_string(level) + " (heights " +
                  std::to_string(hl) + ", " + std::to_string(hr) + ")";
      });
      if (!ok && first.empty()) first = "libcds check_consistency() failed (order)";
      return first;
    }
  };

 public:
  using key_type = std::uint64_t;
  using mapped_type = std::uint64_t;
  using reclaimer_type = LibraryReclaimer<rcu_name>;

  explicit LibcdsBronsonAvl(int max_threads, reclaim::ReclaimOptions options = {})
      : session_(LibcdsSession::Params{LibcdsSession::Gc::rcu, 0, max_threads + 1,
                                       options.eager ? std::size_t{2} : std::size_t{256}}) {}

  // Linearizable; blocking (libcds: node spin locks, optimistic searches); rcu.
  bool insert(int, key_type k, mapped_type v) { return tree_.insert_value(k, v); }
  // Linearizable; blocking (libcds); rcu.
  bool erase(int, key_type k) { return tree_.erase(k); }
  // Linearizable; blocking (libcds: waits for a rotation it meets); rcu.
  bool contains(int, key_type k) { return tree_.contains(k); }

  void thread_init(int) { LibcdsSession::attach_thread(); }
  void thread_exit(int) { LibcdsSession::detach_thread(); }

  // Quiescent.
  template <class Fn>
  void for_each_key(Fn&& fn) const {
    std::uint64_t nodes = 0, routing = 0;
    (void)tree_.walk(fn, nodes, routing);
  }

  // Quiescent: the walk's checks, then libcds's check_consistency() (order only: see balance()).
  std::string check_invariants() const {
    std::uint64_t nodes = 0, routing = 0;
    std::string error = tree_.walk([](key_type) {}, nodes, routing);
    if (error.empty()) error = tree_.balance();
    return error;
  }

  // Quiescent: as LibcdsEllenBst::stats(); routing nodes are reachable nodes without a value.
  StatsReport stats() const {
    const AllocationTotals nodes = nodes_.now(), values = values_.now();
    std::uint64_t reachable = 0, routing = 0;
    (void)tree_.walk([](key_type) {}, reachable, routing);
    const std::uint64_t live = nodes.allocated - nodes.freed;
    StatsReport r;
    r.values = {{"nodes_allocated", nodes.allocated},
                {"nodes_freed", nodes.freed},
                {"nodes_reachable", reachable},
                {"routing_nodes", routing},
                {"nodes_in_limbo", live > reachable ? live - reachable : 0},
                {"values_allocated", values.allocated},
                {"values_freed", values.freed}};
    return r;
  }

  static std::string layout() {
    return "node " + std::to_string(Tree::node_bytes) + " B, value " + std::to_string(sizeof(std::uint64_t)) +
           " B in a block of its own";
  }

 private:
  LibcdsSession session_;  // first: attached before the tree is built, detached after it is gone
  AllocationSince<NodeTag> nodes_;
  AllocationSince<ValueTag> values_;
  Tree tree_;
};

}  // namespace cdsb::bench::peers
