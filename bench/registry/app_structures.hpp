// The registry's structures as applications use them: a map from 20-byte digests to 64-bit
// records and a queue of 64-bit items with the producers-done protocol, each behind a small
// interface, so that an application picks any registered map or queue by name at run time
// (StructureEntry::make_digest_map, make_item_queue) and is compiled once, not once per
// structure. A virtual call costs a few nanoseconds; the applications make one per chunk or
// per batch, beside microseconds of hashing and compression.
//
// Every operation is the structure's own, with its linearizability and progress guarantee;
// the adapters add nothing but the call (and, for a map built with byte-string keys, a view of
// the digest's 20 bytes as its key, which the map copies on insert).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "bench/harness/make_structure.hpp"
#include "cdsbench/queue/pipeline_queue.hpp"
#include "cdsbench/set/concepts.hpp"
#include "cdsbench/set/hash/hashes.hpp"

namespace cdsb::bench {

// What an application asks of a map: the threads that will use it (dense ids 0..threads-1),
// the digests it expects (a size hint; 0: the map's default), and the hash the build uses.
struct DigestMapRequest {
  int threads = 1;
  std::uint64_t expected_keys = 0;
  std::string_view hash = "even";
};

class DigestMap {
 public:
  virtual ~DigestMap() = default;
  virtual void thread_init(int tid) = 0;  // before a thread's first operation
  virtual void thread_exit(int tid) = 0;  // after its last
  // (the digest's record, false) if present, else (record, true) with the digest now mapped to it.
  virtual std::pair<std::uint64_t, bool> find_or_insert(int tid, const Digest160& key, std::uint64_t record) = 0;
  virtual std::optional<std::uint64_t> find(int tid, const Digest160& key) = 0;
  // True iff the digest was present and now maps to record.
  virtual bool assign(int tid, const Digest160& key, std::uint64_t record) = 0;
};

// A queue of 64-bit items (the applications pass pointers) in a PipelineQueue: its blocking
// dequeues and producers-done termination work over any queue.
class ItemQueue {
 public:
  virtual ~ItemQueue() = default;
  virtual void thread_init(int tid) = 0;
  virtual void thread_exit(int tid) = 0;
  virtual void set_producers(int n) = 0;  // quiescent, before use
  virtual void enqueue_batch(int tid, std::span<const std::uint64_t> items) = 0;
  // Up to max items without waiting: 0 when the queue is empty now.
  virtual std::size_t dequeue_batch(int tid, std::size_t max, std::uint64_t* out) = 0;
  // Up to max items, waiting for one: 0 once every producer is done and the queue is empty.
  virtual std::size_t dequeue_batch_wait(int tid, std::size_t max, std::uint64_t* out) = 0;
  virtual void producer_done() = 0;
};

template <ConcurrentMap M>
  requires HasAssign<M>
class DigestMapOf final : public DigestMap {
 public:
  explicit DigestMapOf(const DigestMapRequest& r) : map_(make_structure<M>(r.threads, false, r.expected_keys)) {}
  void thread_init(int tid) override {
    if constexpr (HasThreadHooks<M>) map_->thread_init(tid);
  }
  void thread_exit(int tid) override {
    if constexpr (HasThreadHooks<M>) map_->thread_exit(tid);
  }
  std::pair<std::uint64_t, bool> find_or_insert(int tid, const Digest160& key, std::uint64_t record) override {
    return map_->find_or_insert(tid, key_of(key), record);
  }
  std::optional<std::uint64_t> find(int tid, const Digest160& key) override { return map_->find(tid, key_of(key)); }
  bool assign(int tid, const Digest160& key, std::uint64_t record) override { return map_->assign(tid, key_of(key), record); }

 private:
  static typename M::key_type key_of(const Digest160& d) {
    if constexpr (std::same_as<typename M::key_type, std::string_view>)
      return std::string_view(reinterpret_cast<const char*>(d.bytes.data()), d.bytes.size());
    else
      return d;
  }
  std::unique_ptr<M> map_;
};

template <ConcurrentQueue Q>
class ItemQueueOf final : public ItemQueue {
 public:
  explicit ItemQueueOf(int threads) : queue_(make_pipeline_queue<Q>(threads, false)) {}
  void thread_init(int tid) override {
    if constexpr (HasThreadHooks<Q>) queue_->queue().thread_init(tid);
  }
  void thread_exit(int tid) override {
    if constexpr (HasThreadHooks<Q>) queue_->queue().thread_exit(tid);
  }
  void set_producers(int n) override {
    if constexpr (requires { queue_->set_producers(n); }) queue_->set_producers(n);
    else throw std::logic_error("this queue's own termination protocol has a fixed producer count");
  }
  void enqueue_batch(int tid, std::span<const std::uint64_t> items) override { queue_->enqueue_batch(tid, items); }
  std::size_t dequeue_batch(int tid, std::size_t max, std::uint64_t* out) override {
    return cdsb::dequeue_batch(queue_->queue(), tid, max, out);
  }
  std::size_t dequeue_batch_wait(int tid, std::size_t max, std::uint64_t* out) override {
    return queue_->dequeue_batch_wait(tid, max, out);
  }
  void producer_done() override { queue_->producer_done(); }

 private:
  std::unique_ptr<PipelineQueue<Q>> queue_;
};

}  // namespace cdsb::bench
