#include "apps/dedup/io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace cdsb::dedup {

namespace {

[[noreturn]] void fail(const std::string& name, const char* what) {
  throw IoError(name + ": " + what + ": " + std::strerror(errno));
}

void write_all(int fd, const std::string& name, const std::uint8_t* bytes, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(name, "cannot write");
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

FdReader::FdReader(int fd, std::string name, std::size_t buffer_bytes)
    : fd_(fd), name_(std::move(name)), capacity_(buffer_bytes), buffer_(std::make_unique_for_overwrite<std::uint8_t[]>(buffer_bytes)) {}

bool FdReader::refill() {
  for (;;) {
    const ssize_t n = ::read(fd_, buffer_.get(), capacity_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(name_, "cannot read");
    begin_ = 0;
    end_ = static_cast<std::size_t>(n);
    return n > 0;
  }
}

std::size_t FdReader::read(std::span<std::uint8_t> out) {
  std::size_t got = 0;
  while (got < out.size()) {
    if (begin_ == end_ && out.size() - got >= capacity_) {  // a large read skips the buffer's copy
      const ssize_t n = ::read(fd_, out.data() + got, out.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail(name_, "cannot read");
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
      continue;
    }
    if (begin_ == end_ && !refill()) break;
    const std::size_t n = std::min(out.size() - got, end_ - begin_);
    std::memcpy(out.data() + got, buffer_.get() + begin_, n);
    begin_ += n, got += n;
  }
  offset_ += got;
  return got;
}

FdWriter::FdWriter(int fd, std::string name, std::size_t buffer_bytes)
    : fd_(fd), name_(std::move(name)), capacity_(buffer_bytes), buffer_(std::make_unique_for_overwrite<std::uint8_t[]>(buffer_bytes)) {}

FdWriter::~FdWriter() = default;

void FdWriter::write(std::span<const std::uint8_t> bytes) {
  offset_ += bytes.size();
  if (bytes.size() > capacity_ - used_) {
    flush();
    if (bytes.size() >= capacity_) return write_all(fd_, name_, bytes.data(), bytes.size());  // large: straight out
  }
  std::memcpy(buffer_.get() + used_, bytes.data(), bytes.size());
  used_ += bytes.size();
}

void FdWriter::flush() {
  write_all(fd_, name_, buffer_.get(), used_);
  used_ = 0;
}

void read_at(int fd, const std::string& name, std::uint64_t offset, std::span<std::uint8_t> out) {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(name, "cannot read back");
    if (n == 0) throw IoError(name + ": cannot read back: the file is shorter than what was written to it");
    done += static_cast<std::size_t>(n);
  }
}

AtomicOutput::AtomicOutput(std::string path, bool overwrite) : path_(std::move(path)), overwrite_(overwrite) {
  struct stat st;
  const bool exists = ::stat(path_.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    // A device or a FIFO (/dev/null, a named pipe): written in place, as zstd and gzip do; a
    // temporary file renamed over it would replace the device node itself.
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) fail(path_, "cannot open");
    return;
  }
  if (exists && !overwrite_) throw OutputExists(path_);
  const std::size_t slash = path_.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path_.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path_ : path_.substr(slash + 1);
  std::string temp = (slash == std::string::npos ? "" : dir) + "." + base + ".XXXXXX";
  fd_ = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd_ < 0) fail(path_, "cannot create a temporary file beside it");
  temp_ = std::move(temp);
}

AtomicOutput::~AtomicOutput() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicOutput::commit() {
  if (temp_.empty()) {  // written in place
    if (::close(std::exchange(fd_, -1)) != 0) fail(path_, "cannot close");
    return;
  }
  // mkostemp creates the file 0600; an output gets the mode a plain create would give it.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd_, 0666 & ~mask) != 0) fail(path_, "cannot set the mode of its temporary file");
  if (::fsync(fd_) != 0) fail(path_, "cannot sync");
  if (::close(std::exchange(fd_, -1)) != 0) fail(path_, "cannot close");
  if (!overwrite_) {
    // link() refuses an existing name, so an output that appeared meanwhile is not replaced.
    if (::link(temp_.c_str(), path_.c_str()) != 0) {
      if (errno == EEXIST) throw OutputExists(path_);
      fail(path_, "cannot create");
    }
    ::unlink(temp_.c_str());
  } else if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    fail(path_, "cannot rename its temporary file to it");
  }
  temp_.clear();
}

}  // namespace cdsb::dedup
