// RESP2 replies, appended to a connection's output buffer (the Redis protocol specification,
// "RESP protocol spec"): simple strings, errors, integers, bulk strings, arrays and nil. Scores
// are written as Redis 7.0 writes doubles: "%.17g", with inf, -inf (and never nan).
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace cdsb::zset {

class Reply {
 public:
  explicit Reply(std::string& out) : out_(out) {}

  void simple(std::string_view s) { line('+', s); }
  void error(std::string_view message) { line('-', message); }  // message: "ERR ...", "WRONGTYPE ..."
  void integer(std::int64_t v) {
    out_ += ':';
    append_number(v);
    out_ += "\r\n";
  }
  void bulk(std::string_view s) {
    out_ += '$';
    append_number(static_cast<std::int64_t>(s.size()));
    out_ += "\r\n";
    out_ += s;
    out_ += "\r\n";
  }
  void nil() { out_ += "$-1\r\n"; }
  void nil_array() { out_ += "*-1\r\n"; }
  void array(std::size_t n) {
    out_ += '*';
    append_number(static_cast<std::int64_t>(n));
    out_ += "\r\n";
  }
  // "%.17g", as Redis 7.0's addReplyDouble: 0.1 is "0.10000000000000001", 3 is "3".
  void score(double d) {
    if (std::isinf(d)) return bulk(d > 0 ? "inf" : "-inf");
    char buf[32];
    const int n = std::snprintf(buf, sizeof buf, "%.17g", d);
    bulk(std::string_view(buf, static_cast<std::size_t>(n)));
  }

 private:
  void line(char type, std::string_view s) {
    out_ += type;
    out_ += s;
    out_ += "\r\n";
  }
  void append_number(std::int64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
  }
  std::string& out_;
};

}  // namespace cdsb::zset
