// Dedup's threaded pipeline (apps/dedup/pipeline.hpp): whatever its threads, queues per stage,
// batches, bytes in flight, map and queues (every one the registry offers the applications), it
// writes the archive the one-thread encoder writes, byte for byte; the first occurrence of a
// digest in stream order carries the data whichever thread inserted it; and a failing input,
// output, queue or map ends it with the error instead of a hang.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/dedup/encoder.hpp"
#include "apps/dedup/generator.hpp"
#include "apps/dedup/pipeline.hpp"
#include "bench/registry/registry.hpp"
#include "support/dedup_inputs.hpp"
#include "support/dedup_files.hpp"

namespace dedup_pipeline_test {

using namespace cdsb::dedup;
using cdsb::test::MemFile;
using Buffer = std::vector<std::uint8_t>;
using cdsb::Digest160;
using QueueMaker = std::function<std::unique_ptr<cdsb::bench::ItemQueue>(int)>;

const cdsb::bench::Registry& registry() {
  static const cdsb::bench::Registry r = cdsb::bench::builtin_registry();
  return r;
}
const cdsb::bench::StructureEntry& entry(const std::string& name) {
  const auto* e = registry().find(name);
  if (!e) throw std::invalid_argument("no structure " + name);
  return *e;
}

// The generator's data: blocks of 32-256 KiB, half of them repeats, over several fragments.
Buffer repeats(std::uint64_t bytes, std::uint64_t seed = 3) {
  MemFile file;
  {
    FdWriter out(file.fd(), "generated");
    generate({.bytes = bytes, .dup_ratio = 0.5, .compressibility = 0.5, .seed = seed}, out);
  }
  return file.contents();
}

Buffer sequential(const Buffer& input, const EncodeSettings& settings) { return cdsb::test::encode_one_thread(input, settings); }

struct Encoded {
  Buffer archive;
  PipelineFigures figures;
};

Encoded pipelined(const Buffer& input, const PipelineSettings& settings, cdsb::bench::DigestMap& map, const QueueMaker& make_queue) {
  MemFile in(input), out;
  FdReader reader(in.fd(), "input");
  FdWriter writer(out.fd(), "archive");
  Encoded run;
  run.figures = encode_pipeline(reader, writer, settings, {.map = map, .make_queue = make_queue});
  run.archive = out.contents();
  return run;
}

std::unique_ptr<cdsb::bench::DigestMap> make_map(const std::string& name, const PipelineSettings& settings,
                                                 std::string_view hash = "even") {
  return entry(name).make_digest_map({.threads = pipeline_threads(settings.threads), .expected_keys = 0, .hash = hash});
}

Encoded pipelined(const Buffer& input, const PipelineSettings& settings, const std::string& map_name = "dedup_chaining_map",
              const std::string& queue_name = "locked_ring_queue") {
  const auto map = make_map(map_name, settings);
  return pipelined(input, settings, *map, entry(queue_name).make_item_queue);
}

PipelineSettings settings_of(EncodeSettings encode, int threads, int per_queue, int batch, std::size_t in_flight = 0) {
  return {.encode = encode, .threads = threads, .threads_per_queue = per_queue, .batch = batch, .in_flight_bytes = in_flight};
}

constexpr EncodeSettings gear_none{.format = Format::cdsbench, .codec = Codec::none, .level = 0, .chunker = ChunkerKind::gear};

// What every run's figures must show: each chunk through dedup once, each digest inserted
// (and so compressed by the compress stage) once, and the writer's own compressions exactly
// the compress stage's that went to waste.
void expect_consistent(const PipelineFigures& f) {
  EXPECT_EQ(f.dedup.items, f.totals.chunks);
  EXPECT_EQ(f.compress.items, f.totals.unique_chunks);
  EXPECT_EQ(f.inline_compressions, f.wasted_compressions);
  EXPECT_EQ(f.write.items, f.totals.chunks);
  EXPECT_LE(f.in_flight_peak, f.in_flight_cap + fragment_cap);
}

// Gear finds the generator's repeats: each run has duplicates for the map to find.
constexpr double gear_duplicates = 0.2;  // of the chunks, at least

TEST(DedupPipeline, EveryMapWritesTheOneThreadArchive) {
  const Buffer input = repeats(3 << 20);
  const Buffer expected = sequential(input, gear_none);
  const PipelineSettings settings = settings_of(gear_none, 2, 1, 3);
  int maps = 0;
  for (const auto& e : registry().entries()) {
    if (!e.make_digest_map) continue;
    ++maps;
    for (const std::string& hash : e.digest_map_hashes) {
      SCOPED_TRACE(e.name + " with the " + hash + " hash");
      const auto map = make_map(e.name, settings, hash);
      ASSERT_TRUE(map);
      const Encoded run = pipelined(input, settings, *map, entry("locked_ring_queue").make_item_queue);
      EXPECT_TRUE(run.archive == expected);
      expect_consistent(run.figures);
      EXPECT_GE(run.figures.totals.chunks - run.figures.totals.unique_chunks, gear_duplicates * run.figures.totals.chunks);
    }
  }
  // Ours (the chaining table, Michael's, split-ordered, Feldman's, the seqlock probe map) and
  // oneTBB's concurrent_hash_map; not libcuckoo's (it cannot grow safely beside its users),
  // nor libcds's (64-bit keys only; not built in the TSan tree).
  EXPECT_EQ(maps, 6);
  EXPECT_EQ(entry("libcuckoo.map").make_digest_map, nullptr);
  if (const auto* libcds = registry().find("libcds.michael_hash_map")) {
    EXPECT_EQ(libcds->make_digest_map, nullptr);
  }
}

TEST(DedupPipeline, EveryQueueWritesTheOneThreadArchive) {
  const Buffer input = repeats(3 << 20);
  const Buffer expected = sequential(input, gear_none);
  int queues = 0;
  for (const auto& e : registry().entries()) {
    if (!e.make_item_queue) continue;
    ++queues;
    SCOPED_TRACE(e.name);
    EXPECT_EQ(e.kind, cdsb::bench::StructureKind::queue);
    EXPECT_NE(e.order, "relaxed");
    const PipelineSettings settings = settings_of(gear_none, 3, 2, 4);
    const Encoded run = pipelined(input, settings, "feldman_wait_free_map", e.name);
    EXPECT_TRUE(run.archive == expected);
    expect_consistent(run.figures);
    EXPECT_GE(run.figures.totals.chunks - run.figures.totals.unique_chunks, gear_duplicates * run.figures.totals.chunks);
  }
  EXPECT_GE(queues, 6);  // ours; the peers' too, but libcds's in the TSan tree
  EXPECT_EQ(entry("treiber_stack").make_item_queue, nullptr);
  if (const auto* relaxed = registry().find("libcds.segmented_queue")) {
    EXPECT_EQ(relaxed->make_item_queue, nullptr);
  }
}

TEST(DedupPipeline, AnyThreadsQueuesBatchesAndCapWriteTheSameArchive) {
  const Buffer input = repeats(9 << 20, 5);
  struct Case {
    EncodeSettings encode;
    int threads, per_queue, batch;
    std::size_t in_flight;
  };
  const EncodeSettings rabin_gzip{.format = Format::cdsbench, .codec = Codec::gzip, .level = 1, .chunker = ChunkerKind::rabin};
  const EncodeSettings gear_zstd{.format = Format::cdsbench, .codec = Codec::zstd, .level = 1, .chunker = ChunkerKind::gear};
  const EncodeSettings parsec_gear{.format = Format::parsec, .codec = Codec::gzip, .level = 1, .chunker = ChunkerKind::gear};
  const EncodeSettings parsec_bzip2{.format = Format::parsec, .codec = Codec::bzip2, .level = 1, .chunker = ChunkerKind::rabin};
  const Case cases[] = {
      {rabin_gzip, 1, 4, 20, 0},   {rabin_gzip, 2, 1, 1, 1},     {gear_zstd, 3, 2, 7, 0},
      {gear_zstd, 5, 4, 20, 1},    {parsec_gear, 4, 1, 2, 3 << 20}, {parsec_bzip2, 2, 2, 50, 0},
      {gear_none, 1, 1, 1, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(format_name(c.encode.format)) + " " + codec_name(c.encode.codec) + " " +
                 chunker_name(c.encode.chunker) + ", threads " + std::to_string(c.threads) + " per queue " +
                 std::to_string(c.per_queue) + " batch " + std::to_string(c.batch) + " in flight " + std::to_string(c.in_flight));
    const Encoded run = pipelined(input, settings_of(c.encode, c.threads, c.per_queue, c.batch, c.in_flight), "split_ordered_map",
                              "michael_scott_queue");
    EXPECT_TRUE(run.archive == sequential(input, c.encode));
    expect_consistent(run.figures);
    EXPECT_GE(run.figures.fragment.items, 4u);
    if (c.in_flight == 1) {
      EXPECT_LE(run.figures.in_flight_peak, fragment_cap);  // one fragment at a time
    }
  }
}

// A map that answers every find_or_insert as if another thread had inserted the digest (the
// digest is inserted all the same), or as if this one had, whether or not it was present.
class RacingMap final : public cdsb::bench::DigestMap {
 public:
  RacingMap(std::unique_ptr<cdsb::bench::DigestMap> inner, bool inserted) : inner_(std::move(inner)), inserted_(inserted) {}
  void thread_init(int tid) override { inner_->thread_init(tid); }
  void thread_exit(int tid) override { inner_->thread_exit(tid); }
  std::pair<std::uint64_t, bool> find_or_insert(int tid, const Digest160& key, std::uint64_t record) override {
    inner_->find_or_insert(tid, key, record);
    return {record_claimed, inserted_};
  }
  std::optional<std::uint64_t> find(int tid, const Digest160& key) override { return inner_->find(tid, key); }
  bool assign(int tid, const Digest160& key, std::uint64_t record) override { return inner_->assign(tid, key, record); }

 private:
  std::unique_ptr<cdsb::bench::DigestMap> inner_;
  bool inserted_;
};

TEST(DedupPipeline, TheFirstOccurrenceInStreamOrderCarriesTheData) {
  const Buffer input = repeats(4 << 20);
  const EncodeSettings encode{.format = Format::cdsbench, .codec = Codec::gzip, .level = 1, .chunker = ChunkerKind::gear};
  const Buffer expected = sequential(input, encode);
  const PipelineSettings settings = settings_of(encode, 2, 1, 5);
  {
    SCOPED_TRACE("every chunk lost the race: the writer compresses each first occurrence itself");
    RacingMap map(make_map("feldman_wait_free_map", settings), false);
    const Encoded run = pipelined(input, settings, map, entry("lcrq").make_item_queue);
    EXPECT_TRUE(run.archive == expected);
    EXPECT_EQ(run.figures.compress.items, 0u);
    EXPECT_EQ(run.figures.inline_compressions, run.figures.totals.unique_chunks);
  }
  {
    SCOPED_TRACE("every chunk won: every repeat was compressed, and is written as a reference");
    RacingMap map(make_map("feldman_wait_free_map", settings), true);
    const Encoded run = pipelined(input, settings, map, entry("lcrq").make_item_queue);
    EXPECT_TRUE(run.archive == expected);
    EXPECT_EQ(run.figures.compress.items, run.figures.totals.chunks);
    EXPECT_EQ(run.figures.wasted_compressions, run.figures.totals.chunks - run.figures.totals.unique_chunks);
    EXPECT_GT(run.figures.wasted_compressions, 0u);
  }
}

// A queue that drops the second item of the first batch of several it is given.
class LossyQueue final : public cdsb::bench::ItemQueue {
 public:
  explicit LossyQueue(std::unique_ptr<cdsb::bench::ItemQueue> inner) : inner_(std::move(inner)) {}
  void thread_init(int tid) override { inner_->thread_init(tid); }
  void thread_exit(int tid) override { inner_->thread_exit(tid); }
  void set_producers(int n) override { inner_->set_producers(n); }
  void enqueue_batch(int tid, std::span<const std::uint64_t> items) override {
    if (items.size() > 2 && !dropped_.exchange(true)) {
      std::vector<std::uint64_t> kept(items.begin(), items.end());
      kept.erase(kept.begin() + 1);
      inner_->enqueue_batch(tid, kept);
      return;
    }
    inner_->enqueue_batch(tid, items);
  }
  std::size_t dequeue_batch(int tid, std::size_t max, std::uint64_t* out) override { return inner_->dequeue_batch(tid, max, out); }
  std::size_t dequeue_batch_wait(int tid, std::size_t max, std::uint64_t* out) override {
    return inner_->dequeue_batch_wait(tid, max, out);
  }
  void producer_done() override { inner_->producer_done(); }

 private:
  std::unique_ptr<cdsb::bench::ItemQueue> inner_;
  std::atomic<bool> dropped_{false};
};

// A map that forgets what was inserted.
class ForgetfulMap final : public cdsb::bench::DigestMap {
 public:
  void thread_init(int) override {}
  void thread_exit(int) override {}
  std::pair<std::uint64_t, bool> find_or_insert(int, const Digest160&, std::uint64_t record) override { return {record, true}; }
  std::optional<std::uint64_t> find(int, const Digest160&) override { return std::nullopt; }
  bool assign(int, const Digest160&, std::uint64_t) override { return false; }
};

void expect_failure(const std::function<void()>& run, const std::string& message) {
  try {
    run();
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(DedupPipeline, AFailureEndsEveryStageAndIsReported) {
  const Buffer input = repeats(6 << 20);
  // Two threads per stage sharing a queue (the writer waits in its one reorder queue) or not
  // (it polls two).
  for (const int per_queue : {2, 1}) {
    SCOPED_TRACE("threads per queue " + std::to_string(per_queue));
    const PipelineSettings settings = settings_of(gear_none, 2, per_queue, 4, 4 << 20);
    {
      SCOPED_TRACE("an output with no room");
      const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
      ASSERT_GE(full, 0);
      MemFile in(input);
      FdReader reader(in.fd(), "input");
      FdWriter writer(full, "/dev/full", 4096);
      const auto map = make_map("michael_hash_map", settings);
      expect_failure([&] { encode_pipeline(reader, writer, settings, {.map = *map, .make_queue = entry("locked_ring_queue").make_item_queue}); },
                     "/dev/full");
      ::close(full);
    }
    {
      SCOPED_TRACE("an input that cannot be read");
      const int dir = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      ASSERT_GE(dir, 0);
      MemFile out;
      FdReader reader(dir, "the root directory");
      FdWriter writer(out.fd(), "archive");
      const auto map = make_map("michael_hash_map", settings);
      expect_failure([&] { encode_pipeline(reader, writer, settings, {.map = *map, .make_queue = entry("batch_queue").make_item_queue}); },
                     "the root directory");
      ::close(dir);
    }
    {
      // With the whole input in flight at once: below the cap, the stages end and the writer
      // sees what is missing (above it, the fragmenter would wait for room the writer cannot
      // free: pipeline.hpp).
      SCOPED_TRACE("a queue that loses an item");
      const QueueMaker lossy = [](int threads) -> std::unique_ptr<cdsb::bench::ItemQueue> {
        return std::make_unique<LossyQueue>(entry("michael_scott_queue").make_item_queue(threads));
      };
      const PipelineSettings roomy = settings_of(gear_none, 2, per_queue, 4, 64 << 20);
      const auto map = make_map("michael_hash_map", roomy);
      expect_failure([&] { pipelined(input, roomy, *map, lossy); }, "chunks were lost");
    }
    {
      SCOPED_TRACE("a map that loses its digests");
      ForgetfulMap map;
      expect_failure([&] { pipelined(input, settings, map, entry("michael_scott_queue").make_item_queue); }, "missing from the map");
    }
  }
}

}  // namespace dedup_pipeline_test
