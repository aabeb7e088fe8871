// The contract between a sequential structure and the black-box constructions that make it
// concurrent (architecture.md §3): Node Replication (NR), one spin lock (SL), one readers-writer
// lock (RWL), flat combining (FC) and flat combining with a readers-writer lock (FC+).
//
// A sequential structure's operations are not thread-safe and make no progress guarantee
// of their own (include/cdsbench/seq/): each construction states what it makes of them
// (linearizable, and blocking for all but LF).
//
// A sequential structure D is a deterministic state machine:
//   D::Op                          one operation with its arguments: trivially copyable, so
//                                  NR can put it in its shared log
//   D::Result                      what an operation returns
//   d.execute(op) -> Result        runs op; the same sequence of ops from the same initial
//                                  state gives the same results and the same state (NR's
//                                  replicas stay identical only because of this)
//   D::is_read_only(op) -> bool    true for ops that never change the state; such ops may run
//                                  on one instance from several threads at once, so they must
//                                  not write anything, not even a cache or a statistic
//   D::dispose(op)                 optional: frees what an op owns (a heap copy of arguments
//                                  too long to carry inline). Ops are copied bitwise (NR's log,
//                                  the publication slots), the copies sharing what it owns;
//                                  each construction's execute(tid, op) takes the op over and
//                                  disposes of it exactly once, after its last execution on any
//                                  instance (dispose_op below)
//
// Quiescent helpers every construction forwards (called only while no operation runs):
//   for_each_item(fn)              the items the structure holds (the harness checksums them)
//   check_invariants() -> string   empty when sound
//   memory_bytes() -> size_t       bytes the structure owns (nodes included)
//   operator==                     same abstract and concrete state (NR compares replicas)
#pragma once

#include <concepts>
#include <cstddef>
#include <string>
#include <type_traits>

namespace cdsb {

template <class D>
concept SequentialStructure = requires(D& d, const typename D::Op& op) {
  typename D::Result;
  { d.execute(op) } -> std::same_as<typename D::Result>;
  { D::is_read_only(op) } -> std::same_as<bool>;
} && std::is_trivially_copyable_v<typename D::Op>;

// What a construction calls once per op it was given, when no instance will execute it again.
template <SequentialStructure D>
void dispose_op(const typename D::Op& op) noexcept {
  if constexpr (requires { D::dispose(op); }) D::dispose(op);
}

template <class D>
concept QuiescentlyCheckable = requires(const D& d) {
  { d.check_invariants() } -> std::same_as<std::string>;
  { d.memory_bytes() } -> std::convertible_to<std::size_t>;
  { d == d } -> std::convertible_to<bool>;
};

}  // namespace cdsb
