// The dedup tests' files: a file in memory (memfd), read and written through its descriptor as
// the program does a file's, and the one-thread encoder's archive of an input.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "apps/dedup/encoder.hpp"

namespace cdsb::test {

class MemFile {
 public:
  explicit MemFile(const std::vector<std::uint8_t>& contents = {}) : fd_(memfd_create("dedup-test", MFD_CLOEXEC)) {
    EXPECT_GE(fd_, 0);
    EXPECT_EQ(::write(fd_, contents.data(), contents.size()), static_cast<ssize_t>(contents.size()));
    ::lseek(fd_, 0, SEEK_SET);
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  int fd() const { return fd_; }
  std::vector<std::uint8_t> contents() const {
    std::vector<std::uint8_t> all(static_cast<std::size_t>(::lseek(fd_, 0, SEEK_END)));
    EXPECT_EQ(::pread(fd_, all.data(), all.size(), 0), static_cast<ssize_t>(all.size()));
    return all;
  }

 private:
  int fd_;
};

inline std::vector<std::uint8_t> encode_one_thread(const std::vector<std::uint8_t>& input, const dedup::EncodeSettings& settings,
                                                   std::size_t read_buffer = 1 << 20) {
  MemFile in(input), out;
  dedup::FdReader reader(in.fd(), "input", read_buffer);
  dedup::FdWriter writer(out.fd(), "archive");
  dedup::encode_sequential(reader, writer, settings);
  return out.contents();
}

}  // namespace cdsb::test
