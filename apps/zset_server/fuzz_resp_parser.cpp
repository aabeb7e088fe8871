// libFuzzer target: the sorted-set server's request parser (apps/zset_server/resp_parser.hpp) on
// arbitrary bytes, fed in pieces as a connection delivers them. Built with clang, ASan and UBSan
// (apps/zset_server/CMakeLists.txt; seeds in tests/data/zset/fuzz-seeds).
//
// The input's first byte is the control byte; the rest is the connection's input:
//   bits 0-2  piece size: 1, 2, 3, 5, 8, 13, 64 or 4096 bytes per read
//   bit 3     set: the connection is not authenticated (Redis's limits before AUTH)
//   bits 4-5  limits: 0 Redis's defaults; 1 bulk 8, line 8, count 4; 2 all 0; 3 bulk 3, line 5,
//             count 2 (small limits, so short inputs reach the "too big" and "invalid" paths)
//   bit 6     reads alternate between the piece size and 1 byte
//   bit 7     the piece size doubles after every read
//
// Like a server, the target appends each piece to its buffer (a new allocation each time: the
// parser must keep offsets, not pointers; ASan sees a stale one), parses every request there,
// and drops each one's bytes. Beyond "no crash, no leak, no UB", it aborts unless:
// - every result equals the one a second parser gives on the whole remaining input at once, and
//   the one of a plain whole-buffer model of Redis's rules written apart below (reference());
// - consumed() is within the input and not 0; every argument view lies inside the input (an
//   inline argument that was unquoted, or in the parser's own storage, then wholly outside it);
// - an incomplete result's bytes_wanted() is at least 1 and no more than the request needs: fewer
//   bytes than it said never complete the request;
// - an error's message is one of Redis's, and stays until reset();
// - work is linear (bytes_examined() <= 2 x input + calls) and memory follows the input.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "apps/zset_server/resp_parser.hpp"

namespace {

using cdsb::zset::ParserLimits;
using cdsb::zset::RequestParser;
using Status = RequestParser::Status;

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_resp_parser: invariant violated: %s\n", what);
    std::abort();
  }
}

struct Result {
  Status status = Status::incomplete;
  std::vector<std::string> args;
  std::size_t consumed = 0;
  std::string error;
  bool operator==(const Result&) const = default;
};

Result result_of(const RequestParser& p, Status s) {
  Result r;
  r.status = s;
  if (s == Status::request) {
    for (std::string_view a : p.args()) r.args.emplace_back(a);
    r.consumed = p.consumed();
  } else if (s == Status::error) {
    r.error = p.error();
  }
  return r;
}

bool known_error(const std::string& e) {
  for (const char* m : {"Protocol error: too big inline request", "Protocol error: unbalanced quotes in request",
                        "Protocol error: too big mbulk count string", "Protocol error: invalid multibulk length",
                        "Protocol error: unauthenticated multibulk length", "Protocol error: too big bulk count string",
                        "Protocol error: invalid bulk length", "Protocol error: unauthenticated bulk length"})
    if (e == m) return true;
  constexpr std::string_view expected = "Protocol error: expected '$', got '";
  // The byte shown is never '\r' or '\n' (shown as ' ') nor NUL (it hides the line's end).
  return e.size() == expected.size() + 2 && e.starts_with(expected) && e.back() == '\'' &&
         e[expected.size()] != '\r' && e[expected.size()] != '\n' && e[expected.size()] != '\0';
}

bool inside(std::string_view v, std::string_view in) {
  const std::less_equal<const char*> le;
  return le(in.data(), v.data()) && le(v.data() + v.size(), in.data() + in.size());
}

bool outside(std::string_view v, std::string_view in) {
  const std::less_equal<const char*> le;
  return le(v.data() + v.size(), in.data()) || le(in.data() + in.size(), v.data());
}

// --- the model: Redis's rules on a whole buffer, written apart from the parser -----------------

Result fails(const char* message) { return {Status::error, {}, 0, message}; }

// Where a line that starts at `start` ends: Redis's strchr (stopping at a NUL) over the line's
// first limit + 1 bytes. 1: at `at`; 0: not yet; -1: too big.
int line_end(std::string_view in, std::size_t start, char terminator, std::size_t limit, std::size_t& at) {
  const std::string_view rest = in.substr(start);
  const std::string_view window = rest.substr(0, std::min(rest.size(), limit + 1));
  const std::size_t t = window.find(terminator), nul = window.find('\0');
  if (t != std::string_view::npos && t < nul) {
    at = start + t;
    return 1;
  }
  return rest.size() > limit ? -1 : 0;
}

// string2ll's strict decimal: from_chars, without what it allows and string2ll does not.
bool strict_ll(std::string_view s, long long& v) {
  if (s.empty() || s.size() > 20) return false;
  const std::string_view digits = s[0] == '-' ? s.substr(1) : s;
  if (digits.empty() || (digits[0] == '0' && s.size() > 1)) return false;  // "01", "-0", "-01", "-"
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size();
}

// sdssplitargs over a C string, as Redis walks it.
bool split_args(const std::string& line, std::vector<std::string>& out) {
  const auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  const auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  const auto value = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  const char* p = line.c_str();
  for (;;) {
    while (*p && space(*p)) ++p;
    if (!*p) return true;
    std::string current;
    bool in_double = false, in_single = false, done = false;
    while (!done) {
      if (in_double) {
        if (p[0] == '\\' && p[1] == 'x' && hex(p[2]) && hex(p[3])) {
          current += static_cast<char>(value(p[2]) * 16 + value(p[3]));
          p += 3;
        } else if (p[0] == '\\' && p[1]) {
          ++p;
          current += *p == 'n' ? '\n' : *p == 'r' ? '\r' : *p == 't' ? '\t' : *p == 'b' ? '\b' : *p == 'a' ? '\a' : *p;
        } else if (*p == '"') {
          if (p[1] && !space(p[1])) return false;
          done = true;
        } else if (!*p) {
          return false;
        } else {
          current += *p;
        }
      } else if (in_single) {
        if (p[0] == '\\' && p[1] == '\'') {
          ++p;
          current += '\'';
        } else if (*p == '\'') {
          if (p[1] && !space(p[1])) return false;
          done = true;
        } else if (!*p) {
          return false;
        } else {
          current += *p;
        }
      } else if (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t' || !*p) {
        done = true;
      } else if (*p == '"') {
        in_double = true;
      } else if (*p == '\'') {
        in_single = true;
      } else {
        current += *p;
      }
      if (*p) ++p;
    }
    out.push_back(std::move(current));
  }
}

Result reference(std::string_view in, const ParserLimits& limits, bool authenticated) {
  Result r;  // incomplete
  if (in.empty()) return r;
  std::size_t at = 0;
  if (in[0] != '*') {
    const int end = line_end(in, 0, '\n', limits.max_inline_len, at);
    if (end < 0) return fails("Protocol error: too big inline request");
    if (end == 0) return r;
    const std::size_t length = at > 0 && in[at - 1] == '\r' ? at - 1 : at;
    if (!split_args(std::string(in.substr(0, length)), r.args)) return fails("Protocol error: unbalanced quotes in request");
    r.status = Status::request;
    r.consumed = at + 1;
    return r;
  }
  const int end = line_end(in, 0, '\r', limits.max_inline_len, at);
  if (end < 0) return fails("Protocol error: too big mbulk count string");
  if (end == 0 || at + 2 > in.size()) return r;
  long long count = 0;
  if (!strict_ll(in.substr(1, at - 1), count) || count > limits.max_multibulk_len)
    return fails("Protocol error: invalid multibulk length");
  if (!authenticated && count > 10) return fails("Protocol error: unauthenticated multibulk length");
  std::size_t pos = at + 2;
  std::vector<std::string> args;
  for (long long i = 0; i < count; ++i) {
    const int e = line_end(in, pos, '\r', limits.max_inline_len, at);
    if (e < 0) return fails("Protocol error: too big bulk count string");
    if (e == 0 || at + 2 > in.size()) return r;
    if (in[pos] != '$') {
      Result bad = fails("Protocol error: expected '$', got '");
      bad.error += in[pos] == '\r' || in[pos] == '\n' ? ' ' : in[pos];
      bad.error += '\'';
      return bad;
    }
    long long length = 0;
    if (!strict_ll(in.substr(pos + 1, at - pos - 1), length) || length < 0 ||
        static_cast<unsigned long long>(length) > limits.max_bulk_len)
      return fails("Protocol error: invalid bulk length");
    if (!authenticated && length > 16384) return fails("Protocol error: unauthenticated bulk length");
    pos = at + 2;
    if (in.size() - pos < static_cast<std::size_t>(length) + 2) return r;
    args.emplace_back(in.substr(pos, static_cast<std::size_t>(length)));
    pos += static_cast<std::size_t>(length) + 2;
  }
  return {Status::request, std::move(args), pos, {}};
}

// --- the run -----------------------------------------------------------------------------------

ParserLimits limits_of(int profile) {
  switch (profile) {
    case 1: return {8, 8, 4};
    case 2: return {0, 0, 0};
    case 3: return {3, 5, 2};
    default: return {};
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  constexpr std::size_t piece_sizes[] = {1, 2, 3, 5, 8, 13, 64, 4096};
  const unsigned control = data[0];
  std::size_t piece = piece_sizes[control & 7];
  const bool authenticated = (control & 8) == 0, alternate = (control & 0x40) != 0, doubling = (control & 0x80) != 0;
  const ParserLimits limits = limits_of(static_cast<int>(control >> 4 & 3));
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);

  RequestParser parser(limits), whole(limits);
  std::size_t base = 0, fed = 0, calls = 0, reads = 0;
  std::size_t wanted_at = 0, wanted = 0;  // after an incomplete: where the input ended, what it lacked
  bool waiting = false;
  for (;;) {
    // The connection's buffer, in a new allocation every call (ASan catches a kept pointer).
    const auto buffer = std::make_unique<char[]>(fed - base + 1);
    std::copy(stream.begin() + static_cast<std::ptrdiff_t>(base), stream.begin() + static_cast<std::ptrdiff_t>(fed),
              buffer.get());
    const std::string_view in(buffer.get(), fed - base);
    const Status status = parser.parse(in, authenticated);
    ++calls;
    const Result got = result_of(parser, status);
    require(parser.memory_bytes() <= 16 * in.size() + (64u << 10), "memory out of proportion to the input");

    if (status == Status::incomplete) {
      require(parser.args().empty() && parser.consumed() == 0, "arguments or bytes taken while incomplete");
      require(parser.bytes_wanted() >= 1, "incomplete wants no byte");
      waiting = true;
      wanted_at = fed;
      wanted = parser.bytes_wanted();
      if (fed == stream.size()) {  // the end of the input: the request stays incomplete
        require(parser.bytes_examined() <= 2 * stream.size() + calls, "work not linear in the input");
        require(whole.parse(stream.substr(base), authenticated) == Status::incomplete, "incomplete differs from whole");
        require(whole.bytes_wanted() == wanted, "bytes_wanted differs from whole");
        require(reference(stream.substr(base), limits, authenticated) == got, "incomplete differs from the model");
        break;
      }
      const std::size_t step = alternate && reads % 2 == 1 ? 1 : piece;
      ++reads;
      if (doubling) piece = std::min<std::size_t>(piece * 2, 1 << 20);
      fed = std::min(stream.size(), fed + step);
      continue;
    }

    // A request or an error: what the whole input and the model give too.
    if (waiting) require(fed - wanted_at >= wanted, "completed with fewer bytes than bytes_wanted said");
    waiting = false;
    require(parser.bytes_wanted() == 0, "bytes wanted after a result");
    require(result_of(whole, whole.parse(stream.substr(base), authenticated)) == got, "result differs from whole");
    require(reference(stream.substr(base), limits, authenticated) == got, "result differs from the model");
    if (status == Status::error) {
      require(parser.bytes_examined() <= 2 * stream.size() + calls, "work not linear in the input");
      require(known_error(parser.error()), "an error message Redis does not send");
      require(parser.args().empty() && parser.consumed() == 0, "arguments or bytes taken with an error");
      require(parser.parse(in, authenticated) == Status::error && parser.error() == got.error, "error not sticky");
      parser.reset();  // and a reset parser starts afresh
      require(result_of(parser, parser.parse(in, authenticated)) == got, "reset parser differs");
      break;
    }
    require(got.consumed > 0 && got.consumed <= in.size(), "consumed outside the input");
    const bool multibulk = in[0] == '*';
    for (std::string_view arg : parser.args())
      require(inside(arg, in.substr(0, got.consumed)) || (!multibulk && outside(arg, in)),
              "an argument view outside the request");
    base += got.consumed;
  }
  return 0;
}
