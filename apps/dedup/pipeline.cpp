#include "apps/dedup/pipeline.hpp"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "cdsbench/platform/pause.hpp"

namespace cdsb::dedup {
namespace {

struct Fragment;

struct Chunk {
  Fragment* fragment = nullptr;
  std::uint32_t begin = 0, size = 0;
  Digest160 digest{};
  bool sent_to_compress = false;     // dedup: this chunk's find_or_insert inserted the digest
  bool arrived = false;              // the writer's: it has dequeued this chunk
  std::vector<std::uint8_t> stored;  // compress (or the writer): the compressed chunk
  Bytes bytes() const;
};

struct Fragment {
  std::uint64_t sequence = 0;  // in stream order
  std::vector<std::uint8_t> bytes;
  std::vector<Chunk> chunks;  // refine's, complete before the first chunk is sent on
};

Bytes Chunk::bytes() const { return Bytes(fragment->bytes).subspan(begin, size); }

// Items are pointers.
template <class T>
std::uint64_t item_of(T* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}
template <class T>
T* pointer_of(std::uint64_t item) {
  return reinterpret_cast<T*>(static_cast<std::uintptr_t>(item));
}

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void add(StageFigures& to, const StageFigures& f) {
  to.items += f.items;
  to.dequeues += f.dequeues;
  to.empty_dequeues += f.empty_dequeues;
  to.waits += f.waits;
  to.enqueues += f.enqueues;
  to.cpu_s += f.cpu_s;
}

using Queues = std::vector<std::unique_ptr<bench::ItemQueue>>;

// One thread's batches bound for one queue.
class Sender {
 public:
  Sender(bench::ItemQueue& queue, int tid, std::size_t batch, StageFigures& figures)
      : queue_(queue), tid_(tid), batch_(batch), figures_(figures) {
    items_.reserve(batch);
  }
  void send(std::uint64_t item) {
    items_.push_back(item);
    if (items_.size() == batch_) flush();
  }
  void flush() {
    if (items_.empty()) return;
    queue_.enqueue_batch(tid_, items_);
    ++figures_.enqueues;
    items_.clear();
  }

 private:
  bench::ItemQueue& queue_;
  int tid_;
  std::size_t batch_;
  StageFigures& figures_;
  std::vector<std::uint64_t> items_;
};

class Pipeline {
 public:
  Pipeline(FdReader& in, FdWriter& out, const PipelineSettings& s, const PipelineStructures& structures)
      : in_(in),
        out_(out),
        settings_(s),
        map_(structures.map),
        progress_(structures.progress),
        chunking_(s.encode.chunker),
        n_(s.threads),
        m_(s.threads_per_queue),
        queues_per_stage_((s.threads + s.threads_per_queue - 1) / s.threads_per_queue),
        batch_(static_cast<std::size_t>(s.batch)),
        cap_(s.in_flight_bytes ? s.in_flight_bytes : s.default_in_flight()) {
    if (n_ < 1 || m_ < 1 || s.batch < 1) throw std::invalid_argument("encode_pipeline: threads, threads per queue and batch must be at least 1");
    const int threads = pipeline_threads(n_);
    for (Queues* stage : {&refine_, &dedup_, &compress_, &reorder_})
      for (int q = 0; q < queues_per_stage_; ++q) stage->push_back(structures.make_queue(threads));
    // Producers per queue, for the producers-done protocol: the fragmenter feeds every refine
    // queue; a middle stage's queue q is fed by the previous stage's threads of group q, and
    // reorder queue q by group q's dedup threads (repeats) and compress threads (the writer
    // waits in it when it is the only one).
    for (int q = 0; q < queues_per_stage_; ++q) {
      refine_[q]->set_producers(1);
      dedup_[q]->set_producers(group_size(q));
      compress_[q]->set_producers(group_size(q));
      reorder_[q]->set_producers(2 * group_size(q));
    }
    figures_.in_flight_cap = cap_;
  }

  PipelineFigures run() {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    int tid = 0;
    // Each thread with the queues it produces for (their producer_done is its to call).
    auto start_thread = [&](const char* stage, int index, std::vector<bench::ItemQueue*> outputs, auto body) {
      figures_.utilisation.push_back({stage, index, {}});
      threads.emplace_back([this, t = tid++, outputs = std::move(outputs), body] { guarded(t, outputs, [&] { body(t); }); });
    };
    // The threads wait at a gate until all of them exist: a stage that never started would
    // leave its consumers waiting for it forever, so if one cannot be started none runs.
    try {
      std::vector<bench::ItemQueue*> every_refine_queue;
      for (auto& q : refine_) every_refine_queue.push_back(q.get());
      start_thread("fragment", 0, every_refine_queue, [this](int t) { fragment_stage(t); });
      for (int i = 0; i < n_; ++i)
        start_thread("refine", i, {dedup_[i / m_].get()}, [this, i](int t) { refine_stage(t, i); });
      for (int i = 0; i < n_; ++i)
        start_thread("dedup", i, {compress_[i / m_].get(), reorder_[i / m_].get()}, [this, i](int t) { dedup_stage(t, i); });
      for (int i = 0; i < n_; ++i)
        start_thread("compress", i, {reorder_[i / m_].get()}, [this, i](int t) { compress_stage(t, i); });
      start_thread("write", 0, {}, [this](int t) { write_stage(t); });
    } catch (const std::exception& e) {
      open_gate(gate_aborted);
      for (auto& t : threads) t.join();
      throw std::runtime_error("cannot start the pipeline's " + std::to_string(pipeline_threads(n_)) + " threads (" +
                               e.what() + "); allowed: fewer --threads");
    }
    open_gate(gate_open);
    try {
      sample_utilisation(threads, start);
    } catch (...) {
      figures_.utilisation.clear();  // no figures rather than partial ones; the threads run on
      figures_.sample_ends_s.clear();
    }
    for (auto& t : threads) t.join();
    figures_.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (error_) std::rethrow_exception(error_);
    return figures_;
  }

 private:
  // Until every stage has ended: each thread's CPU time, every sampling interval.
  void sample_utilisation(std::vector<std::thread>& threads, std::chrono::steady_clock::time_point start) {
    const auto interval = std::chrono::duration<double>(settings_.sample_interval_s);
    figures_.sample_interval_s = settings_.sample_interval_s;
    std::vector<clockid_t> clocks(threads.size());
    for (std::size_t i = 0; i < threads.size(); ++i)
      if (pthread_getcpuclockid(threads[i].native_handle(), &clocks[i]) != 0) return;  // no figures rather than wrong ones
    std::vector<double> last(threads.size(), 0.0);
    auto next = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(interval);
    auto previous = start;
    // The threads are joined only after this returns, so no clock id is reused for another.
    while (stages_running_.load(std::memory_order_acquire) > 0) {
      std::this_thread::sleep_until(std::min(next, std::chrono::steady_clock::now() + std::chrono::milliseconds(5)));
      const auto now = std::chrono::steady_clock::now();
      if (now < next) continue;
      // Each sample covers the time that did pass, at least an interval: a sampler the machine
      // ran late takes one longer sample rather than short catch-up ones (CPU over wall <= 1).
      next = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(interval);
      const double wall = std::chrono::duration<double>(now - previous).count();
      previous = now;
      figures_.sample_ends_s.push_back(std::chrono::duration<double>(now - start).count());
      for (std::size_t i = 0; i < threads.size(); ++i) {
        // A thread that has ended but is not yet joined may have no clock left: it ran no more.
        timespec ts{};
        const double cpu = clock_gettime(clocks[i], &ts) == 0
                               ? static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9
                               : last[i];
        figures_.utilisation[i].samples.push_back(static_cast<float>((cpu - last[i]) / wall));
        last[i] = cpu;
      }
    }
  }

  int group_size(int q) const { return std::min(m_, n_ - q * m_); }

  // Runs a stage's body on thread tid with every queue and the map attached to it. A body
  // catches what its items' work throws (the item still goes on, so the pipeline drains);
  // what escapes here (a queue's failure) ends the stage. However it ends, its output queues
  // are told it is done, so that their consumers end, and the writer stops once every stage has.
  template <class Body>
  void guarded(int tid, const std::vector<bench::ItemQueue*>& outputs, Body&& body) {
    gate_.wait(gate_closed, std::memory_order_acquire);
    if (gate_.load(std::memory_order_acquire) == gate_aborted) return;
    try {
      attach(tid);
      body();
    } catch (...) {
      fail(std::current_exception());
    }
    for (bench::ItemQueue* q : outputs) {
      try {
        q->producer_done();
      } catch (...) {
        fail(std::current_exception());
      }
    }
    try {
      detach(tid);
    } catch (...) {
      fail(std::current_exception());
    }
    stages_running_.fetch_sub(1, std::memory_order_release);
  }
  void attach(int tid) {
    map_.thread_init(tid);
    for (Queues* stage : {&refine_, &dedup_, &compress_, &reorder_})
      for (auto& q : *stage) q->thread_init(tid);
  }
  void detach(int tid) {
    for (Queues* stage : {&refine_, &dedup_, &compress_, &reorder_})
      for (auto& q : *stage) q->thread_exit(tid);
    map_.thread_exit(tid);
  }

  // Release: what run() set up before opening happens before every thread's work.
  void open_gate(int state) {
    gate_.store(state, std::memory_order_release);
    gate_.notify_all();
  }

  void fail(std::exception_ptr e) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = e;
    // Relaxed is enough: a stage that skips an item's work because it read true passes the
    // item on through a queue, whose release and acquire order this store before the writer's
    // load, which then reads true too (coherence) and discards the item. error_ is read after
    // the joins.
    failed_.store(true, std::memory_order_relaxed);
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }

  void merge(StageFigures PipelineFigures::*stage, StageFigures f) {
    f.cpu_s = thread_cpu_s();
    std::lock_guard lock(mutex_);
    add(figures_.*stage, f);
  }

  // Up to batch_ items of q into out: without waiting when q has some, else (after flushing
  // what the thread holds: pipeline.hpp) waiting for one; 0 when q's producers are all done
  // and it is empty.
  template <class Flush>
  std::size_t take(bench::ItemQueue& q, int tid, std::uint64_t* out, StageFigures& f, Flush&& flush) {
    std::size_t n = q.dequeue_batch(tid, batch_, out);
    if (n == 0) {
      ++f.empty_dequeues;
      flush();
      ++f.waits;
      n = q.dequeue_batch_wait(tid, batch_, out);
      if (n == 0) return 0;
    }
    ++f.dequeues;
    f.items += n;
    return n;
  }

  void fragment_stage(int tid) {
    StageFigures f;
    Fragmenter fragmenter(in_, chunking_);
    std::uint64_t sequence = 0;
    std::size_t peak = 0;
    try {
      for (int q = 0; !failed(); q = (q + 1) % queues_per_stage_) {
        wait_for_room();
        if (failed()) break;
        auto fragment = std::make_unique<Fragment>();
        if (!fragmenter.next(fragment->bytes)) break;
        fragment->sequence = sequence++;
        // Relaxed: the count orders nothing, it only holds the fragmenter back.
        peak = std::max(peak, in_flight_.fetch_add(fragment->bytes.size(), std::memory_order_relaxed) + fragment->bytes.size());
        f.items += 1;
        const std::uint64_t item = item_of(fragment.get());
        refine_[q]->enqueue_batch(tid, std::span(&item, 1));  // PARSEC: one fragment per enqueue
        fragment.release();  // the writer's now
        ++f.enqueues;
      }
    } catch (...) {
      fail(std::current_exception());
    }
    fragments_total_.store(sequence, std::memory_order_release);
    {
      std::lock_guard lock(mutex_);
      figures_.in_flight_peak = peak;
    }
    merge(&PipelineFigures::fragment, f);
  }

  // Holds the fragmenter back while the bytes in flight reach the cap: short spins, then
  // sleeps of up to a millisecond (the writer frees a fragment every few milliseconds).
  void wait_for_room() {
    auto pause = std::chrono::microseconds(20);
    while (in_flight_.load(std::memory_order_relaxed) >= cap_ && !failed()) {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }

  void refine_stage(int tid, int index) {
    StageFigures f;
    const int group = index / m_;
    Sender to_dedup(*dedup_[group], tid, batch_, f);
    std::vector<std::uint64_t> items(batch_);
    std::vector<std::uint32_t> ends;
    while (const std::size_t n = take(*refine_[group], tid, items.data(), f, [&] { to_dedup.flush(); })) {
      for (std::size_t k = 0; k < n; ++k) {
        Fragment* fragment = pointer_of<Fragment>(items[k]);
        try {
          ends.clear();
          chunking_.chunk(fragment->bytes, ends);
          fragment->chunks.resize(ends.size());
        } catch (...) {  // out of memory: the fragment, never sent on, is lost with the run
          fail(std::current_exception());
          continue;
        }
        std::uint32_t begin = 0;
        for (std::size_t c = 0; c < ends.size(); ++c) {
          fragment->chunks[c].fragment = fragment;
          fragment->chunks[c].begin = begin;
          fragment->chunks[c].size = ends[c] - begin;
          begin = ends[c];
        }
        // Once its last chunk is sent the writer may free the fragment: nothing of it is read
        // after that (not even chunks.end()).
        Chunk* const chunks = fragment->chunks.data();
        const std::size_t count = fragment->chunks.size();
        for (std::size_t c = 0; c < count; ++c) to_dedup.send(item_of(chunks + c));
      }
    }
    to_dedup.flush();
    merge(&PipelineFigures::refine, f);
  }

  void dedup_stage(int tid, int index) {
    StageFigures f;
    const int group = index / m_;
    Sender to_compress(*compress_[group], tid, batch_, f), to_write(*reorder_[group], tid, batch_, f);
    Sha1 sha1;
    std::uint64_t map_operations = 0;
    std::vector<std::uint64_t> items(batch_);
    while (const std::size_t n = take(*dedup_[group], tid, items.data(), f, [&] {
             to_compress.flush();
             to_write.flush();
           })) {
      for (std::size_t k = 0; k < n; ++k) {
        Chunk* c = pointer_of<Chunk>(items[k]);
        if (!failed()) {
          try {
            c->digest = sha1.of(c->bytes());
            c->sent_to_compress = map_.find_or_insert(tid, c->digest, record_claimed).second;
            ++map_operations;
          } catch (...) {
            fail(std::current_exception());
          }
        }
        (c->sent_to_compress ? to_compress : to_write).send(items[k]);
      }
    }
    to_write.flush();
    to_compress.flush();
    {
      std::lock_guard lock(mutex_);
      figures_.map_operations += map_operations;
    }
    merge(&PipelineFigures::dedup, f);
  }

  void compress_stage(int tid, int index) {
    StageFigures f;
    const int group = index / m_;
    Sender to_write(*reorder_[group], tid, batch_, f);
    std::optional<Compressor> compressor;
    try {
      compressor.emplace(settings_.encode.codec, settings_.encode.level);
    } catch (...) {  // the stage still drains its queue, so that the dedup threads can end
      fail(std::current_exception());
    }
    std::vector<std::uint64_t> items(batch_);
    while (const std::size_t n = take(*compress_[group], tid, items.data(), f, [&] { to_write.flush(); })) {
      for (std::size_t k = 0; k < n; ++k) {
        Chunk* c = pointer_of<Chunk>(items[k]);
        if (!failed()) {
          try {
            compressor->compress(c->bytes(), c->stored);
          } catch (...) {
            fail(std::current_exception());
          }
        }
        to_write.send(items[k]);
      }
    }
    to_write.flush();
    merge(&PipelineFigures::compress, f);
  }

  // Takes from the reorder queues (waiting in the queue when there is one, else polling them
  // round-robin), writes every chunk that is next in stream order, and frees each fragment once
  // its last chunk is written. Ends when it has written the last fragment; after a failure,
  // it discards instead of writing, and ends as well once every other stage has ended.
  void write_stage(int tid) {
    StageFigures f;
    WriterCounts counts;
    std::optional<ArchiveWriter> writer;
    std::optional<Compressor> compressor;
    try {
      writer.emplace(settings_.encode.format, settings_.encode.codec, out_);
      compressor.emplace(settings_.encode.codec, settings_.encode.level);
    } catch (...) {
      fail(std::current_exception());
    }
    std::deque<Fragment*> window;  // fragments base, base + 1, ...: null until a chunk of it arrives
    std::uint64_t base = 0;
    std::size_t next_chunk = 0;  // in window.front()
    std::vector<std::uint64_t> items(batch_);
    std::size_t turn = 0;
    Backoff backoff(64);
    for (;;) {
      // Acquire: every other thread's enqueues happen before what this load reads (their
      // release decrements), so when it reads 1 a poll that finds nothing proves they left
      // nothing behind.
      const bool others_ended = stages_running_.load(std::memory_order_acquire) == 1;
      std::size_t n = 0;
      bool waited = false;
      // What throws here (a queue, or memory for the window) ends the writing, not the
      // writer: it goes on discarding until the other stages have ended.
      try {
        for (int tries = 0; tries < queues_per_stage_ && n == 0; ++tries) {
          n = reorder_[turn]->dequeue_batch(tid, batch_, items.data());
          turn = (turn + 1) % reorder_.size();
          if (n == 0) ++f.empty_dequeues;
        }
        if (n == 0 && reorder_.size() == 1 && !others_ended) {
          // One queue: wait in it (the locked ring's consumer sleeps) rather than poll. It
          // returns 0 only once every producer has ended and it is empty. With several, the
          // writer polls them all: waiting in one could hold it while another has the next
          // chunk in order, and the fragmenter waits for the room the writer frees.
          ++f.waits;
          waited = true;
          n = reorder_[0]->dequeue_batch_wait(tid, batch_, items.data());
        }
        if (n > 0) {
          ++f.dequeues;
          f.items += n;
          backoff.reset();
          for (std::size_t k = 0; k < n; ++k) {
            Chunk* c = pointer_of<Chunk>(items[k]);
            c->arrived = true;
            const std::uint64_t at = c->fragment->sequence - base;
            if (at >= window.size()) window.resize(at + 1, nullptr);
            window[at] = c->fragment;
          }
          while (!window.empty() && window.front()) {
            Fragment* fragment = window.front();
            auto& chunks = fragment->chunks;
            for (; next_chunk < chunks.size() && chunks[next_chunk].arrived; ++next_chunk)
              write(tid, chunks[next_chunk], writer ? &*writer : nullptr, compressor ? &*compressor : nullptr, counts);
            if (next_chunk < chunks.size()) break;
            in_flight_.fetch_sub(fragment->bytes.size(), std::memory_order_relaxed);
            if (progress_) progress_->fetch_add(fragment->bytes.size(), std::memory_order_relaxed);
            delete fragment;
            window.pop_front();
            ++base;
            next_chunk = 0;
          }
        }
      } catch (...) {
        fail(std::current_exception());
      }
      // Acquire: pairs with the fragmenter's release; the count is final once published.
      if (base == fragments_total_.load(std::memory_order_acquire)) break;
      if (n == 0) {
        // Every other thread has ended and nothing is left: after a failure that is the end;
        // without one, chunks were lost (a queue or the map broke its contract).
        if (others_ended) {
          if (!failed()) fail(std::make_exception_ptr(std::logic_error("dedup: chunks were lost between the stages")));
          break;
        }
        if (!waited) ++f.waits;
        backoff();
      }
    }
    for (Fragment* fragment : window) delete fragment;
    if (writer && !failed()) {
      try {
        writer->finish();
      } catch (...) {
        fail(std::current_exception());
      }
    }
    {
      std::lock_guard lock(mutex_);
      if (writer) figures_.totals = writer->totals();
      figures_.inline_compressions += counts.inline_compressions;
      figures_.wasted_compressions += counts.wasted_compressions;
      figures_.map_operations += counts.map_operations;
      figures_.unique_bytes = counts.unique_bytes;
      figures_.chunk_sizes_log2 = counts.chunk_sizes_log2;
      figures_.chunk_min = counts.chunk_max ? counts.chunk_min : 0;
      figures_.chunk_max = counts.chunk_max;
    }
    merge(&PipelineFigures::write, f);
  }

  struct WriterCounts {
    std::uint64_t inline_compressions = 0, wasted_compressions = 0, map_operations = 0, unique_bytes = 0;
    std::vector<std::uint64_t> chunk_sizes_log2 = std::vector<std::uint64_t>(33);
    std::uint64_t chunk_min = std::numeric_limits<std::uint64_t>::max(), chunk_max = 0;
  };

  // The first occurrence of a digest in stream order carries the data (pipeline.hpp).
  // After a failure (a writer or compressor that could not be made included) it discards instead.
  void write(int tid, Chunk& c, ArchiveWriter* writer, Compressor* compressor, WriterCounts& counts) {
    if (!failed() && writer && compressor) {
      try {
        const std::optional<std::uint64_t> record = map_.find(tid, c.digest);
        if (!record) throw std::logic_error("dedup: a chunk's digest is missing from the map (the map lost an insert)");
        if (*record == record_written) {
          writer->reference(c.digest, c.size);
          if (c.sent_to_compress) ++counts.wasted_compressions;
        } else {
          if (!c.sent_to_compress) {
            compressor->compress(c.bytes(), c.stored);
            ++counts.inline_compressions;
          }
          writer->data(c.digest, c.size, c.stored);
          counts.unique_bytes += c.size;
          if (!map_.assign(tid, c.digest, record_written)) throw std::logic_error("dedup: the map lost a digest it held");
          ++counts.map_operations;
        }
        ++counts.map_operations;
        ++counts.chunk_sizes_log2[std::bit_width(c.size) - 1];
        counts.chunk_min = std::min<std::uint64_t>(counts.chunk_min, c.size);
        counts.chunk_max = std::max<std::uint64_t>(counts.chunk_max, c.size);
      } catch (...) {
        fail(std::current_exception());
      }
    }
    std::vector<std::uint8_t>().swap(c.stored);
  }

  FdReader& in_;
  FdWriter& out_;
  const PipelineSettings& settings_;
  bench::DigestMap& map_;
  std::atomic<std::uint64_t>* progress_;
  const Chunking chunking_;
  const int n_, m_, queues_per_stage_;
  const std::size_t batch_, cap_;
  Queues refine_, dedup_, compress_, reorder_;

  std::atomic<std::size_t> in_flight_{0};  // bytes of fragments read and not yet written
  std::atomic<std::uint64_t> fragments_total_{std::numeric_limits<std::uint64_t>::max()};
  std::atomic<int> stages_running_{pipeline_threads(n_)};
  std::atomic<bool> failed_{false};
  static constexpr int gate_closed = 0, gate_open = 1, gate_aborted = 2;
  std::atomic<int> gate_{gate_closed};
  std::mutex mutex_;  // error_ and figures_ (the stages' totals, merged as each thread ends)
  std::exception_ptr error_;
  PipelineFigures figures_;
};

}  // namespace

PipelineFigures encode_pipeline(FdReader& in, FdWriter& out, const PipelineSettings& settings,
                                const PipelineStructures& structures) {
  return Pipeline(in, out, settings, structures).run();
}

}  // namespace cdsb::dedup
