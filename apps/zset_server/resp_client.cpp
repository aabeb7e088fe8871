#include "apps/zset_server/resp_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>

namespace cdsb::zset {

namespace {

constexpr int max_reply_depth = 64;                                  // nested arrays
constexpr std::int64_t max_bulk_length = std::int64_t{512} << 20;    // Redis's proto-max-bulk-len

std::size_t parse_reply_at(std::string_view buf, RespValue& v, int depth) {
  if (depth > max_reply_depth) throw std::runtime_error("a reply nested deeper than 64 arrays");
  const std::size_t eol = buf.find("\r\n");
  if (eol == std::string_view::npos) return 0;
  if (eol == 0) throw std::runtime_error("an empty reply line");
  v.type = buf[0];
  const std::string_view line = buf.substr(1, eol - 1);
  std::size_t used = eol + 2;
  v.text = {};
  v.integer = 0;
  v.items.clear();
  if (v.type == '+' || v.type == '-') {
    v.text = line;
    return used;
  }
  if (v.type != ':' && v.type != '$' && v.type != '*')
    throw std::runtime_error(std::string("a reply of unknown type '") + v.type + "'");
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), n);
  if (ec != std::errc() || end != line.data() + line.size()) throw std::runtime_error("a malformed number in a reply");
  v.integer = n;
  if (v.type == ':' || n == -1) return used;  // an integer, or a nil bulk string or array
  if (n < 0) throw std::runtime_error("a negative length in a reply");
  if (v.type == '$') {
    if (n > max_bulk_length) throw std::runtime_error("a bulk string longer than 512 MiB in a reply");
    const auto length = static_cast<std::size_t>(n);
    if (buf.size() < used + length + 2) return 0;
    if (buf.substr(used + length, 2) != "\r\n") throw std::runtime_error("a bulk string without its CRLF in a reply");
    v.text = buf.substr(used, length);
    return used + length + 2;
  }
  // An element takes at least 3 bytes: wait for them before making room for n.
  if (static_cast<std::uint64_t>(n) > (buf.size() - used) / 3) return 0;
  v.items.resize(static_cast<std::size_t>(n));
  for (RespValue& item : v.items) {
    const std::size_t k = parse_reply_at(buf.substr(used), item, depth + 1);
    if (k == 0) return 0;
    used += k;
  }
  return used;
}

}  // namespace

std::size_t parse_reply(std::string_view buf, RespValue& v) { return parse_reply_at(buf, v, 0); }

void append_request(std::string& out, std::span<const std::string_view> args) {
  out += '*';
  out += std::to_string(args.size());
  out += "\r\n";
  for (std::string_view a : args) {
    out += '$';
    out += std::to_string(a.size());
    out += "\r\n";
    out += a;
    out += "\r\n";
  }
}

namespace {

bool unix_target(const std::string& target) { return target.rfind("unix:", 0) == 0; }

bool parse_inet(const std::string& target, sockaddr_in& a) {
  const std::size_t colon = target.rfind(':');
  int port = 0;
  a = sockaddr_in{};
  a.sin_family = AF_INET;
  if (colon == std::string::npos || inet_pton(AF_INET, target.substr(0, colon).c_str(), &a.sin_addr) != 1) return false;
  const auto [end, ec] = std::from_chars(target.data() + colon + 1, target.data() + target.size(), port);
  if (ec != std::errc() || end != target.data() + target.size() || port < 1 || port > 65535) return false;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  return true;
}

}  // namespace

std::string target_error(const std::string& target) {
  if (unix_target(target)) {
    if (target.size() == 5) return "--target: 'unix:' names no path";
    if (target.size() - 5 >= sizeof(sockaddr_un::sun_path))
      return "--target: the path is longer than " + std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes";
    return {};
  }
  sockaddr_in a;
  if (!parse_inet(target, a)) return "--target: '" + target + "' is not IPV4:PORT or unix:PATH";
  return {};
}

int connect_to(const std::string& target) {
  if (const std::string error = target_error(target); !error.empty()) throw std::runtime_error(error);
  int fd = -1;
  if (unix_target(target)) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, target.c_str() + 5, target.size() - 5 + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  } else {
    sockaddr_in a;
    parse_inet(target, a);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      const int on = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      return fd;
    }
  }
  const int error = errno;
  if (fd >= 0) ::close(fd);
  throw std::runtime_error("--target " + target + ": " + std::strerror(error));
}

BlockingClient::BlockingClient(const std::string& target, std::chrono::seconds timeout) : fd_(connect_to(target)) {
  // A server that stops answering ends the wait with an error, never a hang.
  const timeval limit{.tv_sec = static_cast<time_t>(timeout.count()), .tv_usec = 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
}

BlockingClient::~BlockingClient() { ::close(fd_); }

void BlockingClient::send(std::string_view bytes) {
  for (std::size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) throw std::runtime_error("the server took no request for the timeout");
    if (n <= 0) throw std::runtime_error(std::string("sending to the server: ") + std::strerror(n < 0 ? errno : EPIPE));
    sent += static_cast<std::size_t>(n);
  }
}

const RespValue& BlockingClient::reply() {
  buf_.erase(0, used_);
  used_ = 0;
  for (;;) {
    if (const std::size_t k = parse_reply(buf_, value_)) {
      used_ = k;
      return value_;
    }
    char chunk[1 << 16];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) throw std::runtime_error("the server sent no reply within the timeout");
    if (n <= 0) throw std::runtime_error("the server closed the connection");
    buf_.append(chunk, static_cast<std::size_t>(n));
  }
}

const RespValue& BlockingClient::call(std::span<const std::string_view> args) {
  std::string request;
  append_request(request, args);
  send(request);
  return reply();
}

}  // namespace cdsb::zset
