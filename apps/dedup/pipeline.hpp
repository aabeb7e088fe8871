// Dedup's encoder as PARSEC 3.0's pthreads build runs it: five stages handing work on through
// queues, with the map and the queues any of the registry's (bench/registry/app_structures.hpp).
//
//   fragment (1 thread)  reads the input and cuts coarse fragments (fragmenter.hpp), round-robin
//                        to the refine queues;
//   refine (N threads)   cuts each fragment into chunks;
//   dedup (N)            SHA-1 of each chunk and find_or_insert in the shared map: the thread
//                        whose insert put the digest there sends its chunk to compress, every
//                        other chunk goes straight to the writer;
//   compress (N)         compresses the chunks it gets;
//   write (1)            restores stream order and writes the archive.
//
// N is --threads; the threads of a middle stage share its queues M at a time (⌈N/M⌉ queues
// per stage, thread i on queue i / M, PARSEC's MAX_THREADS_PER_QUEUE), and every enqueue and
// dequeue moves up to K items (PARSEC's ITEM_PER_INSERT and _FETCH). Items are pointers to the
// chunks. A stage thread flushes its partly filled batches before it waits for input: with
// the bytes in flight capped (below), a batch held back by a waiting thread could otherwise be
// what the writer waits for.
//
// The archive is the one encode_sequential writes, byte for byte, whatever N, M, K, the map
// and the queues: the writer writes in stream order, and the first occurrence of a digest in
// stream order carries the data, whichever dedup thread inserted the digest. The map holds one
// 64-bit record per digest: `claimed` (0), put there by the dedup thread that inserted it, and
// `written` (1), assigned by the writer once the data record is out. For each chunk in stream
// order the writer finds the digest's record: `written` means a reference; otherwise this is
// the first occurrence, and the writer writes the chunk's data, compressing it itself when the
// chunk is not the one that was sent to compress (its digest was inserted by a later chunk's
// thread, which won the race; that compression is then wasted). PARSEC's writer instead waits
// on a condition variable for the inserting chunk's compression. Ours never waits on another
// thread for that: on its path are the reorder queues' dequeues, the map's find and assign, and
// its own work, so its progress is the queues' and the map's (wait-free with
// feldman_wait_free_map and a wait-free queue, lock-free with lock-free ones; a locked
// structure's locks are the only ones on it). It waits only with nothing to take: in its one
// reorder queue's blocking dequeue (the locked ring's condition variable; the generic wrapper
// spins, then yields), or with several queues by polling them all and backing off.
//
// Memory: the fragmenter reads a fragment only while the bytes of fragments read and not yet
// written stay below the cap (in_flight_bytes, 16 MiB or 4 MiB per thread of a stage); the
// writer frees a fragment, and its chunks' compressed data, once its last chunk is written.
// So what is held is at most about twice the cap plus one fragment, whatever the queues hold,
// and what grows with the input is the map only.
//
// Errors: a stage that fails (a read, a write, a compression) records the first error and the
// pipeline drains: the fragmenter stops reading, the middle stages pass their items on without
// working on them, the writer discards them, and encode_pipeline throws the error once every
// thread has ended. A queue that loses an item (breaking its contract) is reported as an error
// when the input fits in the cap; above it, the fragmenter waits for room that the writer,
// missing the item, never frees. Out of memory, a fragment in flight may be left unfreed by
// the failed run.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "apps/dedup/encoder.hpp"
#include "bench/registry/app_structures.hpp"

namespace cdsb::dedup {

// The map's records (pipeline.hpp's header).
inline constexpr std::uint64_t record_claimed = 0, record_written = 1;

struct PipelineSettings {
  EncodeSettings encode;
  int threads = 1;            // per middle stage (TPPS)
  int threads_per_queue = 4;  // MTPQ: ⌈threads / threads_per_queue⌉ queues per stage
  int batch = 20;             // EDITEMS: items per enqueue and dequeue
  std::size_t in_flight_bytes = 0;  // fragments read and not yet written; 0: the default
  double sample_interval_s = 0.1;   // CPU utilisation sampling
  std::size_t default_in_flight() const { return std::max<std::size_t>(std::size_t{16} << 20, std::size_t(threads) * (4u << 20)); }
};

// Per stage, summed over its threads.
struct StageFigures {
  std::uint64_t items = 0;           // items it took in
  std::uint64_t dequeues = 0;        // dequeue calls that returned items
  std::uint64_t empty_dequeues = 0;  // non-blocking dequeues that found the queue empty
  std::uint64_t waits = 0;           // blocking dequeues (after an empty one)
  std::uint64_t enqueues = 0;        // batches enqueued
  double cpu_s = 0;                  // the stage's threads' CPU time
};

// One thread's CPU utilisation over the run: its CPU time in each sampling interval divided by
// the interval's measured length (the study's per-core utilisation figure, per thread).
struct ThreadUtilisation {
  const char* stage;
  int index;  // within its stage
  std::vector<float> samples;
};

struct PipelineFigures {
  ArchiveTotals totals;
  double elapsed_s = 0;
  std::uint64_t unique_bytes = 0;  // raw bytes of the chunks written as data
  StageFigures fragment, refine, dedup, compress, write;
  std::uint64_t inline_compressions = 0;  // first occurrences the writer compressed itself
  std::uint64_t wasted_compressions = 0;  // chunks compressed but written as references
  std::uint64_t map_operations = 0;       // find_or_insert, find and assign
  std::size_t in_flight_cap = 0, in_flight_peak = 0;
  // Chunk sizes: chunks of 2^k to 2^(k+1) - 1 bytes in [k]; the smallest and largest.
  std::vector<std::uint64_t> chunk_sizes_log2 = std::vector<std::uint64_t>(33);
  std::uint64_t chunk_min = 0, chunk_max = 0;
  double sample_interval_s = 0;
  std::vector<double> sample_ends_s;  // when each sample ended, seconds from the start
  std::vector<ThreadUtilisation> utilisation;
};

struct PipelineStructures {
  bench::DigestMap& map;                                               // built for total_threads()
  std::function<std::unique_ptr<bench::ItemQueue>(int threads)> make_queue;
  // If set, the writer adds the input bytes of each fragment it has written (relaxed: a
  // progress bar reads it).
  std::atomic<std::uint64_t>* progress = nullptr;
};

// Threads the pipeline runs (ids 0 .. total - 1): what the map and queues are built for.
constexpr int pipeline_threads(int threads_per_stage) { return 3 * threads_per_stage + 2; }

// Encodes in with the pipeline; throws what a stage threw first (IoError, ...) after every
// thread has ended. The map must be empty (a digest it already holds would be written as a
// reference to data the archive does not have), and a queue's enqueue must store all of its
// items or none (it throws before storing any, if it throws).
PipelineFigures encode_pipeline(FdReader& in, FdWriter& out, const PipelineSettings& settings,
                                const PipelineStructures& structures);

}  // namespace cdsb::dedup
