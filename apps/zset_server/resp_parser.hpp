// The sorted-set server's request parser: Redis 7.0's two request forms (RESP2 multibulk and
// inline commands), with its rules and its exact error messages, parsed incrementally.
//
// Redis's own parser (src/networking.c: processMultibulkBuffer, processInlineBuffer;
// src/sds.c: sdssplitargs; src/util.c: string2ll) is what this one answers like, byte for byte;
// tests/unit/test_resp_parser.cpp checks each rule against what a real redis-server 7.0.15 sent
// back. The forms:
//
// - multibulk: a request starting with '*': `*<n>\r\n`, then n times `$<len>\r\n<len bytes>\r\n`.
//   n <= 0 is an empty request (consumed, no arguments). Numbers are string2ll's: optional '-',
//   no '+', no spaces, no leading zeros, no overflow. As in Redis, the byte after a header's '\r'
//   and the two bytes after a bulk's data are skipped unread (Redis checks neither for "\r\n").
// - inline: any other first byte: a line up to '\n' (a '\r' before it is dropped), split on
//   whitespace with sdssplitargs's quoting ("..." with \xHH \n \r \t \b \a and \<any> escapes;
//   '...' with \' only; a closing quote must be followed by whitespace or the end of the line).
//   An empty line is a request with no arguments (Redis skips it).
//
// Where Redis's result depends on how the bytes arrived, this parser picks one answer, so that
// a request split anywhere parses as it does whole (the fuzz target checks it):
// - a line (an inline request, a '*' or '$' header) whose terminator ('\n' inline, '\r' in a
//   header) is not among its first max_inline_len + 1 bytes is "too big", whether or not the
//   terminator has arrived yet. Redis says so once it holds more than max_inline_len bytes
//   without one, so its answer to a longer line depends on how much of it one read brought: a
//   70,000-byte count line sent in one write drew "invalid multibulk length" from it.
// - Redis looks for line ends with strchr, which stops at a NUL byte: a NUL before a line's
//   terminator hides it, and Redis waits until the line is too big. This parser does the same
//   (bulk data is length-counted, so NUL bytes there are ordinary bytes).
//
// Work and memory: every byte of a line is looked at once however the input arrives (the scan
// resumes where it stopped; bulk data is skipped by length, not scanned), so a request fed in
// small pieces costs what it costs whole. The parser keeps offsets into the input, never
// pointers, between calls; its memory grows with the arguments actually received (never with a
// count or length a header claims) and is given back when a large request has been consumed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cdsb::zset {

// Redis's string2ll: an optional '-', then "0" alone or a digit 1-9 and digits; no '+', no
// spaces, no leading zeros, not "-0"; at most 20 characters; no overflow. The protocol's lengths
// and the commands' integer arguments are read so.
bool parse_redis_integer(std::string_view s, long long& out);

struct ParserLimits {
  std::size_t max_bulk_len = 512ull << 20;  // Redis's proto-max-bulk-len: a longer bulk is invalid
  // Redis's PROTO_INLINE_MAX_SIZE: an inline request or a '*'/'$' header line whose terminator is
  // not within its first max_inline_len + 1 bytes is an error ("too big ...").
  std::size_t max_inline_len = 64 << 10;
  std::int64_t max_multibulk_len = std::numeric_limits<std::int32_t>::max();  // Redis 7.0: INT_MAX
};

// Before AUTH (when a password is required) Redis refuses a multibulk count above 10 and a bulk
// length above 16384 (processMultibulkBuffer's authRequired() checks); fixed in Redis, not
// configurable, so constants here.
inline constexpr std::int64_t unauthenticated_max_multibulk_len = 10;
inline constexpr std::int64_t unauthenticated_max_bulk_len = 16384;

class RequestParser {
 public:
  enum class Status { incomplete, request, error };

  explicit RequestParser(ParserLimits limits = {});

  // Parses the next request at the start of `in` (the connection's unconsumed input).
  //   request:    args() holds the arguments, consumed() the bytes the request took; the caller
  //               drops those bytes and calls again with what follows (pipelining). A multibulk
  //               request's arguments are views into `in` (valid while those bytes stay in
  //               place). An inline argument is a view into `in` when it is a verbatim slice of
  //               it, else (quotes, escapes) into the parser's own storage, valid until the next
  //               parse() or reset(). An empty inline line or a count <= 0 yields no arguments.
  //   incomplete: the request is not all there: the caller keeps `in` (it may move: the parser
  //               keeps offsets), appends bytes and calls again with the grown input. What was
  //               already scanned is not scanned again. An input shorter than the one of the
  //               previous incomplete call is parsed afresh.
  //   error:      error() is Redis's message without "-ERR " and "\r\n" (the server replies
  //               "-ERR " + error() + "\r\n", as Redis's addReplyError does, and closes the
  //               connection). Every later parse() returns error until reset().
  // `authenticated` false applies Redis's limits before AUTH (the constants above).
  Status parse(std::string_view in, bool authenticated = true);

  // The last request's arguments (empty unless the last parse() returned request).
  std::span<const std::string_view> args() const { return args_; }
  // The bytes the last request took (0 unless the last parse() returned request).
  std::size_t consumed() const { return consumed_; }
  const std::string& error() const { return error_; }
  // After incomplete: at least how many more bytes the request needs (the rest of a bulk and
  // its "\r\n" when inside one, else 1). 0 after request or error.
  std::size_t bytes_wanted() const { return wanted_; }
  // Back to the start state (also out of the error state); the limits stay.
  void reset();

  // Test hooks. Bytes looked at since construction (line scans, number digits, inline
  // splitting): a work counter, so tests can check that parsing stays linear in the input.
  std::uint64_t bytes_examined() const { return examined_; }
  // Bytes the parser's buffers hold now (the capacities of its vectors and strings).
  std::size_t memory_bytes() const;

 private:
  enum class Form : std::uint8_t { none, inline_command, multibulk };
  enum class Line : std::uint8_t { found, incomplete, too_big };
  struct Slice {
    std::size_t offset, length;
  };

  void begin_request();
  Status fail(std::string message);
  Line find_line_end(std::string_view in, std::size_t start, char terminator, std::size_t& at);
  Status parse_inline(std::string_view in);
  Status parse_multibulk(std::string_view in, bool authenticated);
  bool split_inline(std::string_view line);

  ParserLimits limits_;
  Status last_ = Status::request;  // request: the next parse() starts a new request
  Form form_ = Form::none;
  std::size_t seen_ = 0;        // the input's size at the last incomplete call
  std::size_t pos_ = 0;         // multibulk: offset of the next line or bulk to read
  std::size_t scan_ = 0;        // offset where the search for the current line's end resumes
  bool scan_blocked_ = false;   // a NUL came before the current line's end (strchr stops there)
  bool header_read_ = false;    // multibulk: the '*' line has been read
  std::int64_t remaining_ = 0;  // multibulk: arguments still to read
  std::int64_t bulk_len_ = -1;  // multibulk: the current bulk's length once its '$' line is read
  std::vector<Slice> slices_;   // multibulk: arguments read so far, as offsets into the input
  std::vector<std::string_view> args_;
  std::string decoded_;  // inline arguments that are not verbatim slices of the input
  std::string error_;
  std::size_t consumed_ = 0;
  std::size_t wanted_ = 0;
  std::uint64_t examined_ = 0;
};

}  // namespace cdsb::zset
