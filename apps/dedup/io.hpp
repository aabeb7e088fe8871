// Buffered file-descriptor I/O for dedup: a reader that knows its byte offset (every archive
// error names one), a writer, and an output that appears under its name only when complete
// (written to a temporary file in the same directory, renamed at commit; removed otherwise).
// Errors of the system are IoError, a one-line message naming the file and errno's text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace cdsb::dedup {

struct IoError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// An output that exists already (refused without -f: a usage error, not a failure).
struct OutputExists : IoError {
  explicit OutputExists(const std::string& path) : IoError(path + ": already exists (-f overwrites it)") {}
};

class FdReader {
 public:
  FdReader(int fd, std::string name, std::size_t buffer_bytes = 1 << 20);
  // Reads up to out.size() bytes, fewer only at the end of the input; returns the count.
  std::size_t read(std::span<std::uint8_t> out);
  std::uint64_t offset() const { return offset_; }  // bytes consumed so far
  const std::string& name() const { return name_; }
  int fd() const { return fd_; }

 private:
  bool refill();
  int fd_;
  std::string name_;
  std::size_t capacity_;
  std::unique_ptr<std::uint8_t[]> buffer_;  // not zeroed: a page is touched only when used
  std::size_t begin_ = 0, end_ = 0;
  std::uint64_t offset_ = 0;
};

class FdWriter {
 public:
  FdWriter(int fd, std::string name, std::size_t buffer_bytes = 1 << 20);
  ~FdWriter();  // does not flush: a writer abandoned by an error writes nothing more
  void write(std::span<const std::uint8_t> bytes);
  void flush();
  std::uint64_t offset() const { return offset_; }  // bytes written so far, buffered included
  std::uint64_t flushed() const { return offset_ - used_; }  // bytes handed to the system
  const std::string& name() const { return name_; }
  int fd() const { return fd_; }

 private:
  int fd_;
  std::string name_;
  std::size_t capacity_;
  std::unique_ptr<std::uint8_t[]> buffer_;
  std::size_t used_ = 0;
  std::uint64_t offset_ = 0;
};

// Reads exactly out.size() bytes at `offset` of fd (pread), or throws IoError.
void read_at(int fd, const std::string& name, std::uint64_t offset, std::span<std::uint8_t> out);

// The file `path`, created complete or not at all: a temporary file beside it receives the
// bytes; commit() syncs it and renames it over `path` (refused if `path` exists unless
// overwrite); destroying an output not committed removes the temporary file. An existing
// device or FIFO (`-o /dev/null`) is written in place instead.
class AtomicOutput {
 public:
  AtomicOutput(std::string path, bool overwrite);
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  void commit();

 private:
  std::string path_, temp_;
  bool overwrite_;
  int fd_ = -1;
};

}  // namespace cdsb::dedup
