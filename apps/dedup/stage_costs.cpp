#include "apps/dedup/stage_costs.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <limits>
#include <thread>
#include <vector>

#include "apps/dedup/archive.hpp"
#include "apps/dedup/fragmenter.hpp"

namespace cdsb::dedup {
namespace {

// Runs work(i) for i in [0, n) on n threads released together; the seconds from the release to
// the last one's end.
double run_together(int n, const std::function<void(int)>& work) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      work(i);
    });
  while (ready.load() < n) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A file descriptor closed when it goes.
struct OwnedFd {
  int fd;
  ~OwnedFd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

double StageCosts::bound(int threads_per_stage, double unique_share) const {
  const double n = threads_per_stage, u = unique_share;
  const double per_byte = 1 / fragment + 1 / chunk + 1 / hash + u / compress + 1 / write;
  double b = std::min({cpus / per_byte, fragment, write, n * chunk, n * hash});
  if (u > 0) b = std::min(b, n * compress / u);
  return b;
}

StageCosts measure_stage_costs(std::span<const std::uint8_t> sample, const EncodeSettings& settings, int cpus) {
  StageCosts costs;
  costs.cpus = std::max(1, cpus);
  costs.sample_bytes = sample.size();
  if (sample.empty()) throw std::invalid_argument("measure_stage_costs: an empty sample");
  const double bytes = static_cast<double>(sample.size());
  const Chunking chunking(settings.chunker);

  // The fragmenter, reading the sample from a file in memory as it reads the input.
  std::vector<std::vector<std::uint8_t>> fragments;
  {
    const OwnedFd file{memfd_create("dedup-sample", MFD_CLOEXEC)};
    if (file.fd < 0 || ::write(file.fd, sample.data(), sample.size()) != static_cast<ssize_t>(sample.size()))
      throw IoError("the stage measurement's sample: cannot write it to a memory file");
    ::lseek(file.fd, 0, SEEK_SET);
    FdReader in(file.fd, "the sample");
    Fragmenter fragmenter(in, chunking);
    const double t = run_together(1, [&](int) {
      std::vector<std::uint8_t> fragment;
      while (fragmenter.next(fragment)) fragments.push_back(fragment);
    });
    costs.fragment = bytes / t;
  }

  std::vector<Bytes> chunks;
  for (const auto& f : fragments) {
    std::vector<std::uint32_t> ends;
    chunking.chunk(f, ends);
    std::uint32_t begin = 0;
    for (const std::uint32_t end : ends) chunks.push_back(Bytes(f).subspan(begin, end - begin)), begin = end;
  }

  costs.chunk = bytes / run_together(costs.cpus, [&](int) {
    std::vector<std::uint32_t> ends;
    for (const auto& f : fragments) {
      ends.clear();
      chunking.chunk(f, ends);
    }
  });
  costs.hash = bytes / run_together(costs.cpus, [&](int) {
    Sha1 sha1;
    for (const Bytes c : chunks) sha1.of(c);
  });
  std::vector<std::vector<std::uint8_t>> stored(chunks.size());  // thread 0's, for the writer
  std::vector<Digest160> digests(chunks.size());
  costs.compress = bytes / run_together(costs.cpus, [&](int i) {
    Compressor compressor(settings.codec, settings.level);
    std::vector<std::uint8_t> out;
    for (std::size_t k = 0; k < chunks.size(); ++k) compressor.compress(chunks[k], i == 0 ? stored[k] : out);
  });
  {
    Sha1 sha1;
    for (std::size_t k = 0; k < chunks.size(); ++k) digests[k] = sha1.of(chunks[k]);
  }
  {
    const OwnedFd sink{::open("/dev/null", O_WRONLY | O_CLOEXEC)};
    if (sink.fd < 0) throw IoError("/dev/null: cannot open it to measure the writer");
    FdWriter out(sink.fd, "/dev/null");
    costs.write = bytes / run_together(1, [&](int) {
      ArchiveWriter writer(settings.format, settings.codec, out);
      for (std::size_t k = 0; k < chunks.size(); ++k) writer.data(digests[k], chunks[k].size(), stored[k]);
      writer.finish();
    });
  }
  return costs;
}

}  // namespace cdsb::dedup
