// The sorted-set server's request parser (apps/zset_server/resp_parser.hpp): Redis 7.0's
// multibulk and inline forms with its exact errors, the same result however the bytes arrive,
// linear work on requests that arrive in small pieces, and no memory taken on a header's word.
//
// Every "redis:" comment quotes what a real redis-server 7.0.15 (`redis-server --port P --save ''
// --appendonly no`, and one with `--requirepass secret` for the unauthenticated limits) replied
// to those bytes sent on a fresh connection, and whether it then closed the connection ("closed")
// or went on waiting for more ("waits"). The parser's error() is that reply without "-ERR " and
// "\r\n".
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/zset_server/resp_parser.hpp"

namespace resp_parser_test {

using cdsb::zset::ParserLimits;
using cdsb::zset::RequestParser;
using Status = RequestParser::Status;
using namespace std::string_literals;

// One parse() result, with the arguments copied out of the views.
struct Outcome {
  Status status = Status::incomplete;
  std::vector<std::string> args;
  std::size_t consumed = 0;
  std::string error;
  bool operator==(const Outcome&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  os << (o.status == Status::request ? "request" : o.status == Status::error ? "error" : "incomplete");
  if (o.status == Status::request) {
    os << " consumed=" << o.consumed << " args=[";
    for (const auto& a : o.args) os << '"' << a << "\" ";
    os << ']';
  }
  if (o.status == Status::error) os << " \"" << o.error << '"';
  return os;
}

Outcome outcome_of(const RequestParser& p, Status s) {
  Outcome o;
  o.status = s;
  if (s == Status::request) {
    for (std::string_view a : p.args()) o.args.emplace_back(a);
    o.consumed = p.consumed();
  }
  if (s == Status::error) o.error = p.error();
  return o;
}

Outcome once(std::string_view in, bool authenticated = true, ParserLimits limits = {}) {
  RequestParser p(limits);
  return outcome_of(p, p.parse(in, authenticated));
}

Outcome request(std::vector<std::string> args, std::size_t consumed) {
  return {Status::request, std::move(args), consumed, {}};
}
Outcome error(std::string message) { return {Status::error, {}, 0, std::move(message)}; }
const Outcome incomplete{};

// A connection's input as a server handles it: bytes arrive in pieces (cut at `cuts`), are
// appended to a buffer that may move, and each request is dropped from its front once parsed.
// Returns every request and the final error or incomplete.
std::vector<Outcome> serve(std::string_view stream, const std::vector<std::size_t>& cuts, bool authenticated = true,
                           ParserLimits limits = {}) {
  RequestParser p(limits);
  std::vector<Outcome> out;
  std::string buffer;
  std::size_t fed = 0;
  auto cut = cuts.begin();
  for (;;) {
    const std::size_t next = cut != cuts.end() ? std::min(*cut++, stream.size()) : stream.size();
    if (next > fed) {
      buffer.append(stream.substr(fed, next - fed));
      buffer.shrink_to_fit();  // and so, often, a new address: offsets must be all that is kept
      fed = next;
    }
    Status s;
    while ((s = p.parse(buffer, authenticated)) == Status::request) {
      out.push_back(outcome_of(p, s));
      buffer.erase(0, p.consumed());
    }
    if (s == Status::error) {
      out.push_back(outcome_of(p, s));
      return out;
    }
    if (fed == stream.size() && cut == cuts.end()) {
      out.push_back(incomplete);
      return out;
    }
  }
}

std::vector<Outcome> serve_whole(std::string_view stream, bool authenticated = true, ParserLimits limits = {}) {
  return serve(stream, {}, authenticated, limits);
}

// --- multibulk ---------------------------------------------------------------------------------

TEST(RespParser, MultibulkRequest) {
  const std::string in = "*4\r\n$4\r\nZADD\r\n$3\r\nkey\r\n$3\r\n1.5\r\n$6\r\nmember\r\nrest";
  RequestParser p;
  ASSERT_EQ(p.parse(in), Status::request);
  EXPECT_EQ(p.consumed(), in.size() - 4);
  ASSERT_EQ(p.args().size(), 4u);
  EXPECT_EQ(p.args()[0], "ZADD");
  EXPECT_EQ(p.args()[3], "member");
  for (std::string_view a : p.args()) {  // views into the input, not copies
    EXPECT_GE(a.data(), in.data());
    EXPECT_LE(a.data() + a.size(), in.data() + in.size());
  }
  EXPECT_EQ(p.bytes_wanted(), 0u);
}

TEST(RespParser, BulksAreBinarySafe) {
  const std::string bulk = "a\r\n\0\xff*$\r"s;
  const std::string in = "*2\r\n$4\r\nECHO\r\n$" + std::to_string(bulk.size()) + "\r\n" + bulk + "\r\n";
  EXPECT_EQ(once(in), request({"ECHO", bulk}, in.size()));
}

TEST(RespParser, CountZeroOrNegativeIsAnEmptyRequest) {
  // redis: "*0\r\nPING\r\n", "*-1\r\nPING\r\n", "*-100\r\nPING\r\n" and
  // "*-9223372036854775808\r\nPING\r\n" -> "+PONG\r\n" only (the empty request is skipped).
  EXPECT_EQ(once("*0\r\nPING\r\n"), request({}, 4));
  EXPECT_EQ(once("*-1\r\nPING\r\n"), request({}, 5));
  EXPECT_EQ(once("*-100\r\n"), request({}, 7));
  EXPECT_EQ(once("*-9223372036854775808\r\n"), request({}, 23));
  // and nothing is kept: the pipeline goes on
  EXPECT_EQ(serve_whole("*0\r\n*1\r\n$4\r\nPING\r\n"), (std::vector{request({}, 4), request({"PING"}, 14), incomplete}));
}

TEST(RespParser, BytesAfterCarriageReturnAndAfterBulkAreNotChecked) {
  // redis: "*1\r\n$4\r\nPINGxx" -> "+PONG\r\n"; "*1\rX$4\rXPINGxy" -> "+PONG\r\n". Redis skips the
  // byte after a header's '\r' and the two after a bulk's data without looking at them.
  EXPECT_EQ(once("*1\r\n$4\r\nPINGxx"), request({"PING"}, 14));
  EXPECT_EQ(once("*1\rX$4\rXPINGxy"), request({"PING"}, 14));
  // But a header line ends at '\r', not '\n'. redis: "*1\r\n$4\nPING\r\n" -> "-ERR Protocol
  // error: invalid bulk length\r\n", closed (the line read is "$4\nPING").
  EXPECT_EQ(once("*1\r\n$4\nPING\r\n"), error("Protocol error: invalid bulk length"));
}

// Each error Redis 7.0 gives, with the bytes that drew it from the real server.
TEST(RespParser, MultibulkErrorsAreRedisOwn) {
  const std::string invalid_mbulk = "Protocol error: invalid multibulk length";
  const std::string invalid_bulk = "Protocol error: invalid bulk length";
  struct Case {
    std::string in, error;
  };
  const std::vector<Case> cases = {
      // redis: each -> "-ERR Protocol error: invalid multibulk length\r\n", closed
      {"*+1\r\n$4\r\nPING\r\n", invalid_mbulk},
      {"* 1\r\n$4\r\nPING\r\n", invalid_mbulk},
      {"*1 \r\n$4\r\nPING\r\n", invalid_mbulk},
      {"*01\r\n$4\r\nPING\r\n", invalid_mbulk},
      {"*-0\r\nPING\r\n", invalid_mbulk},
      {"*\r\nPING\r\n", invalid_mbulk},
      {"*x\r\n", invalid_mbulk},
      {"*2147483648\r\n", invalid_mbulk},  // INT_MAX + 1
      {"*9223372036854775807\r\n", invalid_mbulk},
      {"*9223372036854775808\r\n", invalid_mbulk},  // overflows a long long
      {"*-9223372036854775809\r\nPING\r\n", invalid_mbulk},
      // redis: each -> "-ERR Protocol error: invalid bulk length\r\n", closed
      {"*1\r\n$+4\r\nPING\r\n", invalid_bulk},
      {"*1\r\n$ 4\r\nPING\r\n", invalid_bulk},
      {"*1\r\n$04\r\nPING\r\n", invalid_bulk},
      {"*1\r\n$-1\r\n", invalid_bulk},
      {"*1\r\n$x\r\n", invalid_bulk},
      {"*1\r\n$\r\n", invalid_bulk},
      {"*1\r\n$536870913\r\n", invalid_bulk},  // proto-max-bulk-len + 1
      // redis: "*1\r\nX4\r\nPING\r\n" -> "-ERR Protocol error: expected '$', got 'X'\r\n", closed
      {"*1\r\nX4\r\nPING\r\n", "Protocol error: expected '$', got 'X'"},
      // redis: "*1\r\n:4\r\nPING\r\n" -> "... expected '$', got ':'\r\n", closed
      {"*1\r\n:4\r\nPING\r\n", "Protocol error: expected '$', got ':'"},
      // redis: "*1\r\n\r\n" and "*1\r\n\nX\r\n" -> "... expected '$', got ' '\r\n", closed (its
      // error formatting turns '\r' and '\n' into spaces)
      {"*1\r\n\r\n", "Protocol error: expected '$', got ' '"},
      {"*1\r\n\nX\r\n", "Protocol error: expected '$', got ' '"},
      // redis: "*1\r\n\xffX\r\n" -> "-ERR Protocol error: expected '$', got '\xff'\r\n", closed
      {"*1\r\n\xffX\r\n", "Protocol error: expected '$', got '\xff'"},
      // the second bulk's header is checked like the first
      {"*2\r\n$4\r\nECHO\r\n$-5\r\n", invalid_bulk},
  };
  for (const Case& c : cases) EXPECT_EQ(once(c.in), error(c.error)) << "input " << testing::PrintToString(c.in);
}

TEST(RespParser, IntegerLimitsOfTheCount) {
  // redis: "*2147483647\r\n" -> nothing, waits (for 2^31 - 1 arguments)
  EXPECT_EQ(once("*2147483647\r\n"), incomplete);
  EXPECT_EQ(once("*2147483648\r\n"), error("Protocol error: invalid multibulk length"));
  ParserLimits three;
  three.max_multibulk_len = 3;
  EXPECT_EQ(once("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", true, three), request({"a", "b", "c"}, 25));
  EXPECT_EQ(once("*4\r\n", true, three), error("Protocol error: invalid multibulk length"));
}

TEST(RespParser, BulkLengthLimit) {
  // redis: "*1\r\n$536870912\r\n" -> nothing, waits; "*1\r\n$536870913\r\n" -> invalid bulk length
  RequestParser p;
  ASSERT_EQ(p.parse("*1\r\n$536870912\r\n"), Status::incomplete);
  EXPECT_EQ(p.bytes_wanted(), 536870912u + 2);
  EXPECT_LT(p.memory_bytes(), 1024u);  // a claimed length takes nothing
  EXPECT_EQ(once("*1\r\n$536870913\r\n"), error("Protocol error: invalid bulk length"));
  ParserLimits five;
  five.max_bulk_len = 5;
  EXPECT_EQ(once("*1\r\n$5\r\nhello\r\n", true, five), request({"hello"}, 15));
  EXPECT_EQ(once("*1\r\n$6\r\n", true, five), error("Protocol error: invalid bulk length"));
  five.max_bulk_len = 0;
  EXPECT_EQ(once("*1\r\n$0\r\n\r\n", true, five), request({""}, 10));
  EXPECT_EQ(once("*1\r\n$1\r\n", true, five), error("Protocol error: invalid bulk length"));
}

TEST(RespParser, UnauthenticatedLimits) {
  // redis (requirepass secret, no AUTH): "*10\r\n" -> nothing, waits; "*11\r\n" -> "-ERR Protocol
  // error: unauthenticated multibulk length\r\n", closed; "*2147483648\r\n" -> invalid multibulk
  // length (checked first); "*1\r\n$16384\r\n" -> waits; "*1\r\n$16385\r\n" -> "-ERR Protocol
  // error: unauthenticated bulk length\r\n", closed; "*1\r\n$-1\r\n" -> invalid bulk length;
  // "*0\r\n*-5\r\n*11\r\n" -> unauthenticated multibulk length (the empty requests pass).
  EXPECT_EQ(once("*10\r\n", false), incomplete);
  EXPECT_EQ(once("*11\r\n", false), error("Protocol error: unauthenticated multibulk length"));
  EXPECT_EQ(once("*2147483648\r\n", false), error("Protocol error: invalid multibulk length"));
  EXPECT_EQ(once("*1\r\n$16384\r\n", false), incomplete);
  EXPECT_EQ(once("*1\r\n$16385\r\n", false), error("Protocol error: unauthenticated bulk length"));
  EXPECT_EQ(once("*1\r\n$-1\r\n", false), error("Protocol error: invalid bulk length"));
  EXPECT_EQ(once("*1\r\n$536870913\r\n", false), error("Protocol error: invalid bulk length"));
  EXPECT_EQ(serve_whole("*0\r\n*-5\r\n*11\r\n", false),
            (std::vector{request({}, 4), request({}, 5), error("Protocol error: unauthenticated multibulk length")}));
  // Authenticated, the same bytes are fine.
  EXPECT_EQ(once("*11\r\n", true), incomplete);
  EXPECT_EQ(once("*1\r\n$16385\r\n", true), incomplete);
  // redis (no AUTH): "PING a a ... (100 a)\r\n" -> "-NOAUTH Authentication required.\r\n": inline
  // requests have no such limit.
  std::string many = "PING";
  for (int i = 0; i < 100; ++i) many += " a";
  EXPECT_EQ(once(many + "\r\n", false).args.size(), 101u);
  // redis: "*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n*1\r\n$100000\r\n" -> "+OK\r\n", waits: the
  // limit follows the connection's state at each header, which the caller passes per call.
  RequestParser p;
  ASSERT_EQ(p.parse("*1\r\n$20000\r\n", true), Status::incomplete);
  EXPECT_EQ(p.parse("*1\r\n$20000\r\nabc", false), Status::incomplete);  // that header was read
}

// --- header lines and their length limit --------------------------------------------------------

TEST(RespParser, HeaderLineLengthLimit) {
  const std::size_t limit = ParserLimits{}.max_inline_len;
  ASSERT_EQ(limit, 65536u);
  // redis: "*" + 65535 x "1" -> waits; one more "1" -> "-ERR Protocol error: too big mbulk count
  // string\r\n", closed; "*" + 65535 x "1" then "\r\n" -> "-ERR Protocol error: invalid
  // multibulk length\r\n" (the line was not too big, the number is).
  const std::string count = "*" + std::string(limit - 1, '1');
  EXPECT_EQ(once(count), incomplete);
  EXPECT_EQ(once(count + "1"), error("Protocol error: too big mbulk count string"));
  EXPECT_EQ(once(count + "\r"), incomplete);  // the '\r' at offset 65536 may end the line
  EXPECT_EQ(once(count + "\r\n"), error("Protocol error: invalid multibulk length"));
  // redis: "*1\r\n$" + 65535 x "1" -> waits; one more -> "-ERR Protocol error: too big bulk count
  // string\r\n", closed.
  const std::string bulk = "*1\r\n$" + std::string(limit - 1, '1');
  EXPECT_EQ(once(bulk), incomplete);
  EXPECT_EQ(once(bulk + "1"), error("Protocol error: too big bulk count string"));
  EXPECT_EQ(once(bulk + "\r\n"), error("Protocol error: invalid bulk length"));
  // The limit is counted from the start of each line, not of the request.
  ParserLimits small;
  small.max_inline_len = 4;
  EXPECT_EQ(once("*1\r\n$123\r", true, small), incomplete);  // the '\r' at the line's offset 4
  EXPECT_EQ(once("*1\r\n$1234", true, small), error("Protocol error: too big bulk count string"));
  EXPECT_EQ(once("*123\r", true, small), incomplete);
  EXPECT_EQ(once("*1234", true, small), error("Protocol error: too big mbulk count string"));
  // A '\r' past the window is not looked for: whatever follows, the line is too big.
  EXPECT_EQ(once("*1234\r\n", true, small), error("Protocol error: too big mbulk count string"));
}

TEST(RespParser, NulHidesTheLineEndAsRedisStrchrDoes) {
  const std::size_t limit = ParserLimits{}.max_inline_len;
  // redis: "*1\0\r\n$4\r\nPING\r\n", "*1\r\n$4\0\r\nPING\r\n", "*1\r\n\0$4\r\nPING\r\n" and
  // "PING\0\r\n" -> nothing, waits. "*1\0\r\n" + 65536 x "x" -> too big mbulk count string;
  // "*1\r\n$4\0\r\n" + 65536 x "x" and "*1\r\n\0$4\r\n" + 65536 x "x" -> too big bulk count string;
  // "PING\0" + 65532 x "x" -> "-ERR Protocol error: too big inline request\r\n", closed.
  EXPECT_EQ(once("*1\0\r\n$4\r\nPING\r\n"s), incomplete);
  EXPECT_EQ(once("*1\r\n$4\0\r\nPING\r\n"s), incomplete);
  EXPECT_EQ(once("*1\r\n\0$4\r\nPING\r\n"s), incomplete);
  EXPECT_EQ(once("PING\0\r\n"s), incomplete);
  EXPECT_EQ(once("*1\0\r\n"s + std::string(limit, 'x')), error("Protocol error: too big mbulk count string"));
  EXPECT_EQ(once("*1\r\n$4\0\r\n"s + std::string(limit, 'x')), error("Protocol error: too big bulk count string"));
  EXPECT_EQ(once("*1\r\n\0$4\r\n"s + std::string(limit, 'x')), error("Protocol error: too big bulk count string"));
  EXPECT_EQ(once("PING\0"s + std::string(limit - 4, 'x')), error("Protocol error: too big inline request"));
  EXPECT_EQ(once("PING\0"s + std::string(limit - 5, 'x')), incomplete);
  // redis: "*1\r\n$4\r\nPI\0G\r\n" -> the command "PI\0G" (its lookup stops at the NUL: "unknown
  // command 'PI'"): in bulk data a NUL is a byte like another.
  EXPECT_EQ(once("*1\r\n$4\r\nPI\0G\r\n"s), request({"PI\0G"s}, 14));
}

// --- inline -------------------------------------------------------------------------------------

TEST(RespParser, InlineRequests) {
  // redis: "PING\r\n" and "PING\n" -> "+PONG\r\n"
  EXPECT_EQ(once("PING\r\n"), request({"PING"}, 6));
  EXPECT_EQ(once("PING\n"), request({"PING"}, 5));
  EXPECT_EQ(once("  ZADD\tkey  1 m \r\n"), request({"ZADD", "key", "1", "m"}, 18));
  // redis: "\r\nPING\r\n", "\nPING\r\n", "   \r\nPING\r\n" -> "+PONG\r\n" only: an empty line
  // is a request with no arguments, which the server skips.
  EXPECT_EQ(serve_whole("\r\nPING\r\n"), (std::vector{request({}, 2), request({"PING"}, 6), incomplete}));
  EXPECT_EQ(once("\nPING\r\n"), request({}, 1));
  EXPECT_EQ(once("   \r\n"), request({}, 5));
  // Unquoted arguments are views into the input.
  const std::string in = "ECHO hello\r\n";
  RequestParser p;
  ASSERT_EQ(p.parse(in), Status::request);
  EXPECT_EQ(p.args()[1].data(), in.data() + 5);
}

TEST(RespParser, InlineQuotingAsSdssplitargs) {
  struct Case {
    std::string in;
    std::string arg;  // what redis echoed back
  };
  const std::vector<Case> cases = {
      // redis: 'ECHO "\x41\x4a\n\r\t\b\a\\\"\q"\r\n' -> "$10\r\nAJ\n\r\t\x08\x07\\\"q\r\n"
      {R"(ECHO "\x41\x4a\n\r\t\b\a\\\"\q")"
       "\r\n",
       "AJ\n\r\t\b\a\\\"q"},
      // redis: "ECHO '\\'x\\n'\r\n" (single-quoted: only \' is an escape) -> "$4\r\n'x\\n\r\n"
      {R"(ECHO '\'x\n')"
       "\r\n",
       R"('x\n)"},
      // redis: 'ECHO a"b c"\r\n' -> "$4\r\nab c\r\n" (a quote may open inside an argument)
      {"ECHO a\"b c\"\r\n", "ab c"},
      // redis: 'ECHO ""\r\n' -> "$0\r\n\r\n"
      {"ECHO \"\"\r\n", ""},
      // redis: 'ECHO "a"\x0b\r\n' -> "$1\r\na\r\n" (a vertical tab is whitespace after a quote...)
      {"ECHO \"a\"\x0b\r\n", "a"},
      // redis: "ECHO a\x0bb\r\n" -> "$3\r\na\x0bb\r\n" (...but does not end an unquoted argument)
      {"ECHO a\x0b" "b\r\n", "a\x0b" "b"},
      // redis: 'ECHO "a\rb"\r\n' -> "$3\r\na\rb\r\n"
      {"ECHO \"a\rb\"\r\n", "a\rb"},
      // redis: "\x0bECHO x\r\n" -> "$1\r\nx\r\n" (leading blanks are any isspace())
      {"\x0b" "ECHO x\r\n", "x"},
      // redis: 'ECHO "\x4"\r\n' -> "$2\r\nx4\r\n"; 'ECHO "\xZZ"\r\n' -> "$3\r\nxZZ\r\n"
      {"ECHO \"\\x4\"\r\n", "x4"},
      {"ECHO \"\\xZZ\"\r\n", "xZZ"},
      {"ECHO \"\\xff\\x00\"\r\n", "\xff\0"s},
      // redis: "\"PING\"\r\n" and "'PING'\r\n" -> "+PONG\r\n"
  };
  for (const Case& c : cases) {
    const Outcome o = once(c.in);
    ASSERT_EQ(o.status, Status::request) << testing::PrintToString(c.in);
    EXPECT_EQ(o.args, (std::vector<std::string>{"ECHO", c.arg})) << testing::PrintToString(c.in);
  }
  EXPECT_EQ(once("\"PING\"\r\n"), request({"PING"}, 8));
  EXPECT_EQ(once("'PING'\r\n"), request({"PING"}, 8));
  // redis: `RPUSH tmpkey "a\x41\n\"" 'b\'c' pl"ai" n "" ''` + "\r\n" -> ":6\r\n", and LRANGE
  // then gave "aA\n\"", "b'c", "plai", "n", "", "" (the seed inline-quotes.bin, with ECHO).
  EXPECT_EQ(once(R"(ECHO "a\x41\n\"" 'b\'c' pl"ai" n "" '')" "\r\n").args,
            (std::vector<std::string>{"ECHO", "aA\n\"", "b'c", "plai", "n", "", ""}));
  // redis: "ECHO a\rb\r\n" -> "wrong number of arguments for 'echo'": '\r' splits arguments.
  EXPECT_EQ(once("ECHO a\rb\r\n"), request({"ECHO", "a", "b"}, 10));
  // Many decoded arguments in one line keep their bytes (their storage never moves).
  std::string line, expected;
  std::vector<std::string> args;
  for (int i = 0; i < 200; ++i) {
    line += " \"\\x41" + std::to_string(i) + "\" 'q\\'" + std::to_string(i) + "'";
    args.push_back("A" + std::to_string(i));
    args.push_back("q'" + std::to_string(i));
  }
  EXPECT_EQ(once(line + "\n").args, args);
}

TEST(RespParser, InlineErrorsAreRedisOwn) {
  // redis: each -> "-ERR Protocol error: unbalanced quotes in request\r\n", closed
  for (const std::string in : {"ECHO \"a\r\n", "ECHO 'a\r\n", "ECHO \"a\"b\r\n", "ECHO 'a'b\r\n", "ECHO \"abc\\\"\r\n"})
    EXPECT_EQ(once(in), error("Protocol error: unbalanced quotes in request")) << testing::PrintToString(in);
  // redis: "ECHO " + 65531 x "a" -> waits; then "\n" -> "$65531\r\naaa..."; then instead "a" ->
  // "-ERR Protocol error: too big inline request\r\n", closed; "ECHO " + 65530 x "a" + "\r" then
  // "\n" -> "$65530\r\n..."; "ECHO " + 65531 x "a" then "\r" -> too big inline request.
  const std::string line = "ECHO " + std::string(65531, 'a');
  EXPECT_EQ(once(line), incomplete);
  EXPECT_EQ(once(line + "\n").args.at(1).size(), 65531u);
  EXPECT_EQ(once(line + "a"), error("Protocol error: too big inline request"));
  EXPECT_EQ(once(line.substr(0, line.size() - 1) + "\r\n").args.at(1).size(), 65530u);
  EXPECT_EQ(once(line + "\r"), error("Protocol error: too big inline request"));
}

// --- pipelines, pieces, buffers that move -------------------------------------------------------

// A pipeline of every kind of request, binary bulks with "\r\n" inside included.
const std::string pipeline = "*3\r\n$4\r\nZADD\r\n$3\r\nk\r\n\r\n$9\r\n\r\n\0\xff*$\r\n\n\r\n"s  // 0
                             "PING\r\n"                                                             // 1
                             "ECHO \"a b\" 'c\\'d' \"\\x41\" plain\n"                               // 2
                             "\r\n"                                                                 // 3
                             "*0\r\n"                                                               // 4
                             "*-1\r\n"                                                              // 5
                             "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"                                       // 6
                             "*1\r\n$4\r\nPINGxx"                                                   // 7
                             "*1\r\n$12\r\n*1\r\n$4\r\nPING\r\n"                                   // 8
                             "\r\n";                                                              // 9

const std::vector<Outcome> pipeline_outcomes = {
    request({"ZADD", "k\r\n", "\r\n\0\xff*$\r\n\n"s}, 38),
    request({"PING"}, 6),
    request({"ECHO", "a b", "c'd", "A", "plain"}, 31),
    request({}, 2),
    request({}, 4),
    request({}, 5),
    request({"ECHO", ""}, 20),
    request({"PING"}, 14),
    request({"*1\r\n$4\r\nPING"}, 23),
    request({}, 2),
    incomplete,
};

TEST(RespParser, PipelineWhole) {
  std::size_t total = 0;
  for (const Outcome& o : pipeline_outcomes) total += o.consumed;
  ASSERT_EQ(total, pipeline.size());
  EXPECT_EQ(serve_whole(pipeline), pipeline_outcomes);
}

TEST(RespParser, PipelineSplitAtEveryByte) {
  for (std::size_t cut = 0; cut <= pipeline.size(); ++cut)
    ASSERT_EQ(serve(pipeline, {cut}), pipeline_outcomes) << "cut at " << cut;
}

TEST(RespParser, PipelineSplitAtEveryPairOfBytes) {
  for (std::size_t a = 0; a <= pipeline.size(); ++a)
    for (std::size_t b = a; b <= pipeline.size(); ++b)
      ASSERT_EQ(serve(pipeline, {a, b}), pipeline_outcomes) << "cuts at " << a << ", " << b;
}

TEST(RespParser, PipelineOneByteAtATime) {
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1; i <= pipeline.size(); ++i) cuts.push_back(i);
  EXPECT_EQ(serve(pipeline, cuts), pipeline_outcomes);
}

TEST(RespParser, PipelineEndingInAnErrorSplitAtEveryByte) {
  const std::string stream = "*1\r\n$4\r\nPING\r\nPING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$x\r\nPING\r\n";
  const std::vector<Outcome> expected = {request({"PING"}, 14), request({"PING"}, 6), request({"PING"}, 14),
                                         error("Protocol error: invalid bulk length")};
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) ASSERT_EQ(serve(stream, {cut}), expected) << cut;
  // and every error of the table arrives the same in two pieces
  for (const std::string in : {"*+1\r\n", "*1\r\nX4\r\n", "ECHO 'a\r\n", "*1\r\n$-1\r\n"})
    for (std::size_t cut = 0; cut <= in.size(); ++cut) ASSERT_EQ(serve(in, {cut}), serve_whole(in)) << in << cut;
}

TEST(RespParser, IncompleteUntilTheLastByte) {
  for (const std::string& in : {"*3\r\n$4\r\nZADD\r\n$1\r\nk\r\n$5\r\na\r\nbc\r\n"s, "ECHO \"x y\"\r\n"s, "*0\r\n"s,
                               "*1\r\n$0\r\n\r\n"s}) {
    RequestParser p;
    for (std::size_t n = 0; n < in.size(); ++n) {
      ASSERT_EQ(p.parse(std::string_view(in).substr(0, n)), Status::incomplete) << in << " at " << n;
      ASSERT_GE(p.bytes_wanted(), 1u);
      ASSERT_LE(n + p.bytes_wanted(), in.size()) << "wanted past the end at " << n;
      ASSERT_TRUE(p.args().empty());
      ASSERT_EQ(p.consumed(), 0u);
    }
    ASSERT_EQ(p.parse(in), Status::request) << in;
    EXPECT_EQ(p.consumed(), in.size());
  }
}

TEST(RespParser, BytesWantedCountsTheRestOfABulk) {
  const std::string header = "*2\r\n$3\r\nGET\r\n$100\r\n";
  const std::string in = header + std::string(100, 'k') + "\r\n";
  RequestParser p;
  EXPECT_EQ(p.parse(std::string_view(in).substr(0, header.size() - 1)), Status::incomplete);
  EXPECT_EQ(p.bytes_wanted(), 1u);  // in a header line: unknown
  EXPECT_EQ(p.parse(header), Status::incomplete);
  EXPECT_EQ(p.bytes_wanted(), 102u);  // the header is there, the bulk and its "\r\n" are not
  EXPECT_EQ(p.parse(std::string_view(in).substr(0, header.size() + 40)), Status::incomplete);
  EXPECT_EQ(p.bytes_wanted(), 62u);
  EXPECT_EQ(p.parse(std::string_view(in).substr(0, in.size() - 1)), Status::incomplete);
  EXPECT_EQ(p.bytes_wanted(), 1u);
  EXPECT_EQ(p.parse(in), Status::request);
  EXPECT_EQ(p.bytes_wanted(), 0u);
}

TEST(RespParser, ErrorIsStickyUntilReset) {
  RequestParser p;
  ASSERT_EQ(p.parse("*1\r\n$x\r\n"), Status::error);
  EXPECT_EQ(p.parse("PING\r\n"), Status::error);
  EXPECT_EQ(p.error(), "Protocol error: invalid bulk length");
  EXPECT_TRUE(p.args().empty());
  p.reset();
  ASSERT_EQ(p.parse("PING\r\n"), Status::request);
  EXPECT_EQ(p.args()[0], "PING");
  // reset() also drops a request half read
  ASSERT_EQ(p.parse("*2\r\n$4\r\nECHO\r\n"), Status::incomplete);
  p.reset();
  ASSERT_EQ(p.parse("*1\r\n$4\r\nPING\r\n"), Status::request);
  EXPECT_EQ(p.args().size(), 1u);
}

TEST(RespParser, InputThatShrankIsParsedAfresh) {
  RequestParser p;
  ASSERT_EQ(p.parse("*2\r\n$4\r\nECHO\r\n$3\r\nab"), Status::incomplete);
  ASSERT_EQ(p.parse("PING\r\n"), Status::request);  // not read as the rest of the first
  EXPECT_EQ(p.args().size(), 1u);
  EXPECT_EQ(p.args()[0], "PING");
}

// --- work and memory ----------------------------------------------------------------------------

std::string many_arguments(std::size_t n) {
  std::string in = "*" + std::to_string(n) + "\r\n";
  for (std::size_t i = 0; i < n; ++i) in += "$1\r\nx\r\n";
  return in;
}

// Bytes examined feeding `in` in pieces of `piece` bytes (each call gets the whole input so far,
// as a server passes its buffer), and the number of calls.
std::pair<std::uint64_t, std::size_t> examined_in_pieces(const std::string& in, std::size_t piece) {
  RequestParser p;
  std::size_t calls = 0;
  for (std::size_t n = std::min(piece, in.size());; n = std::min(n + piece, in.size())) {
    ++calls;
    const Status s = p.parse(std::string_view(in).substr(0, n));
    if (s != Status::incomplete) {
      EXPECT_EQ(s, Status::request);
      EXPECT_EQ(p.consumed(), in.size());
      break;
    }
  }
  return {p.bytes_examined(), calls};
}

TEST(RespParser, LargeRequestInSmallPiecesIsScannedOnce) {
  const std::string big = many_arguments(200'000);  // 1.4 MB
  const auto [whole, one_call] = examined_in_pieces(big, big.size());
  ASSERT_EQ(one_call, 1u);
  EXPECT_LE(whole, 2 * big.size());  // each header byte scanned once, its digits read once
  const auto [pieces, calls] = examined_in_pieces(big, 64);
  EXPECT_GT(calls, big.size() / 64);
  // A call may look again at one byte (a '\r' waiting for the byte after it), no more: the
  // quadratic parser this guards against would have examined ~calls * size / 2 = 10^10 bytes.
  EXPECT_LE(pieces, whole + calls);
}

TEST(RespParser, LongLinesInOneBytePiecesAreScannedOnce) {
  const std::string inline_line = "ECHO " + std::string(60'000, 'a') + "\r\n";
  const auto [whole, one_call] = examined_in_pieces(inline_line, inline_line.size());
  const auto [pieces, calls] = examined_in_pieces(inline_line, 1);
  EXPECT_EQ(calls, inline_line.size());
  EXPECT_LE(whole, 2 * inline_line.size());
  EXPECT_LE(pieces, whole + calls);
  // a bulk header's line with a NUL in it (scanning stops there, and stays stopped)
  const std::string blocked = "*1\r\n$1\0"s + std::string(65'540, '1');
  const auto [blocked_examined, blocked_calls] = [&] {
    RequestParser p;
    std::size_t n = 1;
    for (; p.parse(std::string_view(blocked).substr(0, n)) == Status::incomplete; ++n) {}
    EXPECT_EQ(p.error(), "Protocol error: too big bulk count string");
    return std::pair{p.bytes_examined(), n};
  }();
  EXPECT_EQ(blocked_calls, 4 + 65'537u);  // too big once the line holds 65537 bytes
  EXPECT_LE(blocked_examined, 16u);
}

TEST(RespParser, ClaimedCountReservesNothing) {
  RequestParser p;
  std::string in = "*1000000000\r\n";
  for (int i = 0; i < 3; ++i) in += "$1\r\na\r\n";
  ASSERT_EQ(p.parse(in), Status::incomplete);
  EXPECT_LT(p.memory_bytes(), 1024u);  // 3 arguments' offsets, not 10^9
  // It grows as arguments arrive.
  for (int i = 0; i < 10'000; ++i) in += "$1\r\nb\r\n";
  ASSERT_EQ(p.parse(in), Status::incomplete);
  EXPECT_GE(p.memory_bytes(), 10'003 * 2 * sizeof(std::size_t));
  EXPECT_LE(p.memory_bytes(), 4 * 10'003 * 2 * sizeof(std::size_t));
  // A request of 200,000 arguments takes memory for those, and gives it back once consumed.
  const std::string big = many_arguments(200'000);
  p.reset();
  ASSERT_EQ(p.parse(big), Status::request);
  EXPECT_EQ(p.args().size(), 200'000u);
  EXPECT_GE(p.memory_bytes(), 200'000 * sizeof(std::string_view));
  EXPECT_LE(p.memory_bytes(), 4 * 200'000 * sizeof(std::string_view));
  ASSERT_EQ(p.parse("PING\r\n"), Status::request);
  EXPECT_LT(p.memory_bytes(), 1024u);
}

// --- the fuzz target's seeds --------------------------------------------------------------------

#ifdef CDSBENCH_TEST_DATA
// apps/zset_server/fuzz_resp_parser.cpp: a seed's first byte picks the piece size, the limits and
// whether the connection is authenticated; the rest is the connection's input. Each seed is
// checked to end as its name says, so the corpus keeps covering every outcome.
TEST(RespParser, FuzzSeedsEndAsNamed) {
  const std::map<std::string, std::string> expected_end = {
      {"multibulk.bin", "incomplete"},
      {"multibulk-binary.bin", "incomplete"},
      {"pipeline-mixed.bin", "incomplete"},
      {"inline-quotes.bin", "incomplete"},
      {"empty-requests.bin", "incomplete"},
      {"unauthenticated-ok.bin", "incomplete"},
      {"err-expected-dollar.bin", "Protocol error: expected '$', got ':'"},
      {"err-invalid-multibulk-length.bin", "Protocol error: invalid multibulk length"},
      {"err-invalid-bulk-length.bin", "Protocol error: invalid bulk length"},
      {"err-unauthenticated-multibulk-length.bin", "Protocol error: unauthenticated multibulk length"},
      {"err-unauthenticated-bulk-length.bin", "Protocol error: unauthenticated bulk length"},
      {"err-unbalanced-quotes.bin", "Protocol error: unbalanced quotes in request"},
      {"err-too-big-inline.bin", "Protocol error: too big inline request"},
      {"err-too-big-mbulk-count.bin", "Protocol error: too big mbulk count string"},
      {"err-too-big-bulk-count.bin", "Protocol error: too big bulk count string"},
  };
  const std::filesystem::path dir = std::filesystem::path(CDSBENCH_TEST_DATA) / "zset" / "fuzz-seeds";
  std::size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const auto it = expected_end.find(name);
    ASSERT_NE(it, expected_end.end()) << "a seed this test does not know: " << name;
    std::ifstream file(entry.path(), std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(file), {}};
    ASSERT_FALSE(bytes.empty());
    const auto control = static_cast<unsigned char>(bytes[0]);
    ParserLimits limits;
    if ((control >> 4 & 3) == 1) limits = {8, 8, 4};  // the fuzz target's "small" profile
    ASSERT_TRUE((control >> 4 & 3) <= 1) << name;
    const std::vector<Outcome> got = serve_whole(std::string_view(bytes).substr(1), (control & 8) == 0, limits);
    ASSERT_GE(got.size(), 2u) << name << ": every seed holds a request before its end";
    const std::string end = got.back().status == Status::error ? got.back().error : "incomplete";
    EXPECT_EQ(end, it->second) << name;
    ++seen;
  }
  EXPECT_EQ(seen, expected_end.size());
}
#endif

}  // namespace resp_parser_test
