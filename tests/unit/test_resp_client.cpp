// The client side of RESP2 (apps/zset_server/resp_client.hpp), which the load generator and the
// linearizability recorder trust with a server's bytes: replies parsed whole or reported
// incomplete, bytes that are no reply refused in one error (never a crash, a hang or an
// allocation the bytes received do not back), and a server that stops answering ends the wait.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include "apps/zset_server/resp_client.hpp"

namespace resp_client_test {

using cdsb::zset::BlockingClient;
using cdsb::zset::parse_reply;
using cdsb::zset::RespValue;

TEST(RespClient, ParsesEveryReplyTypeWhole) {
  RespValue v;
  const std::string reply = "*4\r\n:-7\r\n$3\r\na\r\n\r\n$-1\r\n*2\r\n+OK\r\n-ERR no\r\n";
  ASSERT_EQ(parse_reply(reply, v), reply.size());
  ASSERT_EQ(v.type, '*');
  ASSERT_EQ(v.items.size(), 4u);
  EXPECT_EQ(v.items[0].integer, -7);
  EXPECT_EQ(v.items[1].text, "a\r\n");  // a bulk string holds any bytes
  EXPECT_EQ(v.items[2].type, '$');
  EXPECT_EQ(v.items[2].integer, -1);
  EXPECT_EQ(v.items[3].items[1].text, "ERR no");
  for (std::size_t cut = 0; cut < reply.size(); ++cut) EXPECT_EQ(parse_reply(reply.substr(0, cut), v), 0u) << cut;
}

TEST(RespClient, RefusesBytesThatAreNoReply) {
  for (const char* bad : {"\r\n", "?x\r\n", ":12abc\r\n", ":\r\n", "$-5\r\n", "*-7\r\n", "$3\r\nabcXY", "$1e3\r\n",
                          "$999999999999\r\n"}) {
    RespValue v;
    EXPECT_THROW(parse_reply(bad, v), std::runtime_error) << bad;
  }
}

TEST(RespClient, NeitherRecursesNorAllocatesPastWhatArrived) {
  std::string deep;
  for (int i = 0; i < 100'000; ++i) deep += "*1\r\n";
  RespValue v;
  EXPECT_THROW(parse_reply(deep + ":1\r\n", v), std::runtime_error);
  // A claimed count of 10^8 elements with 20 bytes behind it: incomplete, and nothing reserved.
  EXPECT_EQ(parse_reply("*100000000\r\n:1\r\n:2\r\n:3\r\n:4\r\n", v), 0u);
  EXPECT_LE(v.items.capacity(), 4u);
}

TEST(RespClient, AServerThatNeverAnswersEndsTheWait) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(listener, 1), 0);  // the kernel accepts the connection; nobody reads or answers
  socklen_t length = sizeof a;
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&a), &length), 0);
  {
    BlockingClient client("127.0.0.1:" + std::to_string(ntohs(a.sin_port)), std::chrono::seconds(1));
    try {
      client.call({"PING"});
      ADD_FAILURE() << "a reply from a server that sends nothing";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "the server sent no reply within the timeout");
    }
  }
  close(listener);
}

TEST(RespClient, TargetsAreCheckedBeforeAnyConnection) {
  EXPECT_EQ(cdsb::zset::target_error("127.0.0.1:6380"), "");
  EXPECT_EQ(cdsb::zset::target_error("unix:/tmp/s"), "");
  EXPECT_EQ(cdsb::zset::target_error("localhost:6380"), "--target: 'localhost:6380' is not IPV4:PORT or unix:PATH");
  EXPECT_EQ(cdsb::zset::target_error("127.0.0.1:70000"), "--target: '127.0.0.1:70000' is not IPV4:PORT or unix:PATH");
  EXPECT_EQ(cdsb::zset::target_error("127.0.0.1:63x"), "--target: '127.0.0.1:63x' is not IPV4:PORT or unix:PATH");
  EXPECT_EQ(cdsb::zset::target_error("unix:"), "--target: 'unix:' names no path");
  EXPECT_EQ(cdsb::zset::target_error("unix:" + std::string(200, 'p')), "--target: the path is longer than 107 bytes");
}

}  // namespace resp_client_test
