// The request parser (resp_parser.hpp gives the protocol's rules and where they come from).
#include "apps/zset_server/resp_parser.hpp"

#include <algorithm>
#include <climits>
#include <utility>

namespace cdsb::zset {

namespace {

// Above this many entries (or bytes, for the decoded inline arguments) a consumed request's
// buffers are given back rather than kept for the next one.
constexpr std::size_t keep_capacity = 1024;


// C's isspace() in the "C" locale, which sdssplitargs uses to skip blanks and to accept what
// follows a closing quote. (An unquoted argument ends only at ' ', '\t', '\r' or '\n'.)
bool is_c_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

char unescape(char c) {
  switch (c) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'b': return '\b';
    case 'a': return '\a';
    default: return c;  // \\ \" and any other \<c>: c itself
  }
}

}  // namespace

// string2ll's rules: an optional '-', then "0" alone or a digit 1-9 and digits; nothing else
// (no '+', no spaces, no leading zeros, not "-0"); at most 20 characters; no overflow.
bool parse_redis_integer(std::string_view s, long long& out) {
  if (s.empty() || s.size() >= 21) return false;  // Redis's LONG_STR_SIZE
  if (s.size() == 1 && s[0] == '0') {
    out = 0;
    return true;
  }
  std::size_t i = 0;
  const bool negative = s[0] == '-';
  if (negative && ++i == s.size()) return false;
  if (s[i] < '1' || s[i] > '9') return false;
  unsigned long long v = static_cast<unsigned long long>(s[i++] - '0');
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    const auto digit = static_cast<unsigned long long>(s[i] - '0');
    if (v > ULLONG_MAX / 10 || v * 10 > ULLONG_MAX - digit) return false;
    v = v * 10 + digit;
  }
  constexpr auto max = static_cast<unsigned long long>(LLONG_MAX);
  if (negative) {
    if (v > max + 1) return false;
    out = v == max + 1 ? LLONG_MIN : -static_cast<long long>(v);
  } else {
    if (v > max) return false;
    out = static_cast<long long>(v);
  }
  return true;
}

RequestParser::RequestParser(ParserLimits limits) : limits_(limits) {}

void RequestParser::reset() {
  begin_request();
  last_ = Status::request;
  error_.clear();
  consumed_ = 0;
  wanted_ = 0;
}

std::size_t RequestParser::memory_bytes() const {
  return slices_.capacity() * sizeof(Slice) + args_.capacity() * sizeof(std::string_view) + decoded_.capacity() +
         error_.capacity();
}

void RequestParser::begin_request() {
  form_ = Form::none;
  seen_ = pos_ = scan_ = 0;
  scan_blocked_ = header_read_ = false;
  remaining_ = 0;
  bulk_len_ = -1;
  // A request of a million arguments leaves its 32 MB of offsets and views behind otherwise.
  if (slices_.capacity() > keep_capacity) std::vector<Slice>().swap(slices_);
  if (args_.capacity() > keep_capacity) std::vector<std::string_view>().swap(args_);
  if (decoded_.capacity() > keep_capacity) std::string().swap(decoded_);
  slices_.clear();
  args_.clear();
  decoded_.clear();
}

RequestParser::Status RequestParser::fail(std::string message) {
  error_ = std::move(message);
  slices_.clear();
  args_.clear();
  return Status::error;
}

RequestParser::Status RequestParser::parse(std::string_view in, bool authenticated) {
  if (last_ == Status::error) return Status::error;
  // After a request the caller has dropped it: what `in` starts with is the next one. An input
  // that shrank while a request was incomplete is not the one whose offsets we kept.
  if (last_ == Status::request || in.size() < seen_) begin_request();
  consumed_ = 0;
  wanted_ = 0;
  Status status = Status::incomplete;
  if (in.empty()) {
    wanted_ = 1;
  } else {
    // Redis decides the form by the request's first byte.
    if (form_ == Form::none) form_ = in[0] == '*' ? Form::multibulk : Form::inline_command;
    status = form_ == Form::multibulk ? parse_multibulk(in, authenticated) : parse_inline(in);
  }
  last_ = status;
  if (status == Status::incomplete) seen_ = in.size();
  return status;
}

// Looks for `terminator` in the line that starts at `start`, resuming where the last call
// stopped (scan_), so no byte is looked at twice however the line arrives. Like Redis's strchr,
// a NUL hides every byte after it. The terminator must lie within the line's first
// max_inline_len + 1 bytes: once that many bytes are there without it, the line is too big.
RequestParser::Line RequestParser::find_line_end(std::string_view in, std::size_t start, char terminator,
                                                 std::size_t& at) {
  const std::size_t window = limits_.max_inline_len < SIZE_MAX - start ? limits_.max_inline_len + 1 : SIZE_MAX - start;
  const std::size_t limit = start + window;  // one past the last byte that may be the terminator
  if (!scan_blocked_) {
    const std::size_t end = std::min(in.size(), limit);
    std::size_t i = std::max(scan_, start);
    for (; i < end; ++i) {
      ++examined_;
      if (in[i] == terminator) {
        scan_ = at = i;
        return Line::found;
      }
      if (in[i] == '\0') {
        scan_blocked_ = true;
        break;
      }
    }
    scan_ = i;
  }
  return in.size() >= limit ? Line::too_big : Line::incomplete;
}

RequestParser::Status RequestParser::parse_inline(std::string_view in) {
  std::size_t newline = 0;
  switch (find_line_end(in, 0, '\n', newline)) {
    case Line::too_big: return fail("Protocol error: too big inline request");
    case Line::incomplete: wanted_ = 1; return Status::incomplete;
    case Line::found: break;
  }
  const std::size_t end = newline > 0 && in[newline - 1] == '\r' ? newline - 1 : newline;
  if (!split_inline(in.substr(0, end))) return fail("Protocol error: unbalanced quotes in request");
  consumed_ = newline + 1;
  return Status::request;
}

// sdssplitargs's rules on one line (which holds no NUL: the line scan stops at one). Redis reads
// the line as a C string, so past its end it sees '\0': at() gives the same.
bool RequestParser::split_inline(std::string_view line) {
  examined_ += line.size();
  const auto at = [line](std::size_t k) { return k < line.size() ? line[k] : '\0'; };
  std::size_t i = 0;
  for (;;) {
    while (i < line.size() && is_c_space(line[i])) ++i;
    if (i == line.size()) break;

    // The argument is line[begin, begin + length) while it is a verbatim slice of the line;
    // from its first escape or quote-joined piece on, it is decoded_[owned_at, + length).
    // decoded_ never outgrows the line (an argument's bytes come from distinct line bytes), so
    // reserving the line's length once keeps the views already taken into it valid.
    std::size_t begin = i, length = 0, owned_at = 0;
    bool owned = false;
    const auto own = [&] {
      if (decoded_.capacity() < line.size()) decoded_.reserve(line.size());  // decoded_ is empty then
      owned_at = decoded_.size();
      decoded_.append(line.substr(begin, length));
      owned = true;
    };
    const auto take = [&](std::size_t k) {  // line[k] as it is
      if (!owned) {
        if (length == 0) begin = k;
        if (begin + length == k) {
          ++length;
          return;
        }
        own();
      }
      decoded_.push_back(line[k]);
      ++length;
    };
    const auto put = [&](char c) {  // a byte an escape stands for
      if (!owned) own();
      decoded_.push_back(c);
      ++length;
    };

    enum class Quote { none, double_quote, single_quote } quote = Quote::none;
    for (bool done = false; !done;) {
      const char c = at(i);
      if (quote == Quote::double_quote) {
        if (c == '\\' && at(i + 1) == 'x' && is_hex(at(i + 2)) && is_hex(at(i + 3))) {
          put(static_cast<char>(hex_value(at(i + 2)) * 16 + hex_value(at(i + 3))));
          i += 3;
        } else if (c == '\\' && at(i + 1) != '\0') {
          ++i;
          put(unescape(line[i]));
        } else if (c == '"') {
          // The closing quote must be followed by whitespace or the end ("foo"bar is refused).
          if (at(i + 1) != '\0' && !is_c_space(at(i + 1))) return false;
          done = true;
        } else if (c == '\0') {
          return false;  // unterminated
        } else {
          take(i);
        }
      } else if (quote == Quote::single_quote) {
        if (c == '\\' && at(i + 1) == '\'') {
          ++i;
          take(i);
        } else if (c == '\'') {
          if (at(i + 1) != '\0' && !is_c_space(at(i + 1))) return false;
          done = true;
        } else if (c == '\0') {
          return false;
        } else {
          take(i);
        }
      } else {
        switch (c) {
          case ' ':
          case '\n':
          case '\r':
          case '\t':
          case '\0': done = true; break;
          case '"': quote = Quote::double_quote; break;
          case '\'': quote = Quote::single_quote; break;
          default: take(i); break;
        }
      }
      if (i < line.size()) ++i;
    }
    args_.push_back(owned ? std::string_view(decoded_.data() + owned_at, length) : line.substr(begin, length));
  }
  return true;
}

RequestParser::Status RequestParser::parse_multibulk(std::string_view in, bool authenticated) {
  std::size_t cr = 0;
  if (!header_read_) {
    switch (find_line_end(in, 0, '\r', cr)) {
      case Line::too_big: return fail("Protocol error: too big mbulk count string");
      case Line::incomplete: wanted_ = 1; return Status::incomplete;
      case Line::found: break;
    }
    // Redis wants one byte after the '\r' (it skips it without checking that it is '\n').
    if (cr + 1 >= in.size()) {
      wanted_ = 1;
      return Status::incomplete;
    }
    long long count = 0;
    examined_ += cr - 1;
    if (!parse_redis_integer(in.substr(1, cr - 1), count) || count > limits_.max_multibulk_len)
      return fail("Protocol error: invalid multibulk length");
    if (!authenticated && count > unauthenticated_max_multibulk_len)
      return fail("Protocol error: unauthenticated multibulk length");
    header_read_ = true;
    pos_ = scan_ = cr + 2;
    scan_blocked_ = false;
    if (count <= 0) {  // an empty request, as Redis skips it
      consumed_ = pos_;
      return Status::request;
    }
    remaining_ = count;
  }

  while (remaining_ > 0) {
    if (bulk_len_ < 0) {
      switch (find_line_end(in, pos_, '\r', cr)) {
        case Line::too_big: return fail("Protocol error: too big bulk count string");
        case Line::incomplete: wanted_ = 1; return Status::incomplete;
        case Line::found: break;
      }
      if (cr + 1 >= in.size()) {
        wanted_ = 1;
        return Status::incomplete;
      }
      if (in[pos_] != '$') {
        // Redis's addReplyErrorFormat turns '\r' and '\n' into spaces; other bytes go as they are.
        const char got = in[pos_] == '\r' || in[pos_] == '\n' ? ' ' : in[pos_];
        return fail(std::string("Protocol error: expected '$', got '") + got + "'");
      }
      long long length = 0;
      examined_ += cr - pos_ - 1;
      if (!parse_redis_integer(in.substr(pos_ + 1, cr - pos_ - 1), length) || length < 0 ||
          static_cast<unsigned long long>(length) > limits_.max_bulk_len)
        return fail("Protocol error: invalid bulk length");
      if (!authenticated && length > unauthenticated_max_bulk_len)
        return fail("Protocol error: unauthenticated bulk length");
      bulk_len_ = length;
      pos_ = cr + 2;
    }
    // The bulk and the two bytes after it (Redis skips them unread).
    const std::size_t end = pos_ + static_cast<std::size_t>(bulk_len_) + 2;
    if (in.size() < end) {
      wanted_ = end - in.size();
      return Status::incomplete;
    }
    slices_.push_back({pos_, static_cast<std::size_t>(bulk_len_)});
    pos_ = scan_ = end;
    scan_blocked_ = false;
    bulk_len_ = -1;
    --remaining_;
  }

  args_.reserve(slices_.size());
  for (const Slice& s : slices_) args_.push_back(in.substr(s.offset, s.length));
  consumed_ = pos_;
  return Status::request;
}

}  // namespace cdsb::zset
