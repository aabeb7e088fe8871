#include "apps/zset_server/resp_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>

namespace cdsb::zset {

std::size_t parse_reply(std::string_view buf, RespValue& v) {
  const std::size_t eol = buf.find("\r\n");
  if (eol == std::string_view::npos || eol == 0) return 0;
  v.type = buf[0];
  const std::string_view line = buf.substr(1, eol - 1);
  std::size_t used = eol + 2;
  if (v.type == '+' || v.type == '-') {
    v.text = line;
    return used;
  }
  std::int64_t n = 0;
  if (std::from_chars(line.data(), line.data() + line.size(), n).ec != std::errc())
    throw std::runtime_error("a malformed reply");
  v.integer = n;
  v.text = {};
  if (v.type == ':') return used;
  if (v.type == '$') {
    if (n < 0) return used;
    if (buf.size() < used + static_cast<std::size_t>(n) + 2) return 0;
    v.text = buf.substr(used, static_cast<std::size_t>(n));
    return used + static_cast<std::size_t>(n) + 2;
  }
  if (v.type == '*') {
    v.items.assign(n > 0 ? static_cast<std::size_t>(n) : 0, RespValue{});
    for (RespValue& item : v.items) {
      const std::size_t k = parse_reply(buf.substr(used), item);
      if (k == 0) return 0;
      used += k;
    }
    return used;
  }
  throw std::runtime_error(std::string("a reply of unknown type '") + v.type + "'");
}

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
  const std::string error = "--target " + target + ": " + std::strerror(errno);
  if (fd >= 0) ::close(fd);
  throw std::runtime_error(error);
}

BlockingClient::~BlockingClient() { ::close(fd_); }

void BlockingClient::send(std::string_view bytes) {
  for (std::size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error(std::string("sending to the server: ") + std::strerror(errno));
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
