// libFuzzer target: dedup's decoder on arbitrary bytes (built with clang by apps/dedup/CMakeLists.txt
// as build/cdsbench-dedup-fuzz, with ASan and UBSan; README "Dedup" gives the long run's command).
//
// Each input is decoded three ways, as the program can: to an output it reads repeats back
// from, to a write-only output (repeats from the spool), and with no output (-t). Beyond "no
// crash, no leak, no unbounded allocation", the three must agree: the same error at the same
// byte, or the same totals and, for the two outputs, the same bytes.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "apps/dedup/archive.hpp"

namespace {

using namespace cdsb::dedup;

struct Outcome {
  std::optional<std::uint64_t> error_at;  // or the totals
  ArchiveTotals totals;
  std::vector<std::uint8_t> output;
};

int memfd_with(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_create("fuzz", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<std::size_t>(n);
  }
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

enum class Mode { readable, write_only, none };

Outcome decode(const std::uint8_t* data, std::size_t size, Mode mode) {
  Outcome o;
  const int in = memfd_with(data, size);
  const int out = memfd_create("fuzz-out", MFD_CLOEXEC);
  const int write_fd =
      mode == Mode::write_only ? ::open(("/proc/self/fd/" + std::to_string(out)).c_str(), O_WRONLY | O_CLOEXEC) : out;
  if (out < 0 || write_fd < 0) std::abort();
  {
    FdReader reader(in, "archive", 4096);
    FdWriter writer(write_fd, "output", 4096);
    try {
      o.totals = decode_archive(reader, mode == Mode::none ? nullptr : &writer, "/tmp").totals;
    } catch (const ArchiveError& e) {
      o.error_at = e.offset;
    }  // an IoError (memory files do not fail) or anything else is a finding: it escapes
  }
  if (mode != Mode::none) {
    o.output.resize(static_cast<std::size_t>(::lseek(out, 0, SEEK_END)));
    if (::pread(out, o.output.data(), o.output.size(), 0) != static_cast<ssize_t>(o.output.size())) std::abort();
  }
  if (write_fd != out) ::close(write_fd);
  ::close(out);
  ::close(in);
  return o;
}

bool same_totals(const ArchiveTotals& a, const ArchiveTotals& b) {
  return a.chunks == b.chunks && a.unique_chunks == b.unique_chunks && a.raw_bytes == b.raw_bytes &&
         a.archive_bytes == b.archive_bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Outcome a = decode(data, size, Mode::readable), b = decode(data, size, Mode::write_only),
                t = decode(data, size, Mode::none);
  if (a.error_at != b.error_at || a.error_at != t.error_at) std::abort();
  if (!a.error_at) {
    if (!same_totals(a.totals, b.totals) || !same_totals(a.totals, t.totals) || a.output != b.output) std::abort();
    if (a.output.size() != a.totals.raw_bytes) std::abort();
  }
  return 0;
}
