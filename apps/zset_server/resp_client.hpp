// The client side of RESP2, for the programs that drive a server (the load generator and the
// linearizability recorder): requests out, replies in, and a blocking connection.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cdsb::zset {

// One reply. Its views point into the buffer it was parsed from.
struct RespValue {
  char type = 0;                  // + - : $ *
  std::string_view text;          // +, -, $ (empty for nil)
  std::int64_t integer = 0;       // :, and the length of $ and * (-1: nil)
  std::vector<RespValue> items;   // *
};

// Parses one reply at the start of buf: the bytes it took, or 0 when incomplete. Throws
// std::runtime_error for bytes that are no reply (a bad type or number, a negative length but
// -1 (nil), a bulk string over 512 MiB or without its CRLF, arrays nested deeper than 64).
std::size_t parse_reply(std::string_view buf, RespValue& v);

// Appends a request (an array of bulk strings) to out.
void append_request(std::string& out, std::span<const std::string_view> args);
inline void append_request(std::string& out, std::initializer_list<std::string_view> args) {
  append_request(out, std::span<const std::string_view>(args.begin(), args.size()));
}

// What is wrong with a --target (IPV4:PORT or unix:PATH), in one line; empty when it is fine.
std::string target_error(const std::string& target);

// A connected socket to target (checked by target_error first), TCP_NODELAY on TCP. Throws
// std::runtime_error when the server cannot be reached.
int connect_to(const std::string& target);

// A blocking connection: one request, then its reply. A wait for the server longer than the
// timeout throws std::runtime_error.
class BlockingClient {
 public:
  explicit BlockingClient(const std::string& target, std::chrono::seconds timeout = std::chrono::seconds(60));
  ~BlockingClient();
  BlockingClient(const BlockingClient&) = delete;
  BlockingClient& operator=(const BlockingClient&) = delete;

  void send(std::string_view bytes);  // throws std::runtime_error
  // The next reply; its views stay valid until the next call. Throws std::runtime_error when the
  // server closes the connection.
  const RespValue& reply();
  const RespValue& call(std::span<const std::string_view> args);
  const RespValue& call(std::initializer_list<std::string_view> args) {
    return call(std::span<const std::string_view>(args.begin(), args.size()));
  }

 private:
  int fd_;
  std::string buf_;
  std::size_t used_ = 0;
  RespValue value_;
};

}  // namespace cdsb::zset
