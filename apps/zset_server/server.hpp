// The network side: RESP2 over TCP and a Unix socket.
//
// One acceptor (the thread that calls run()) hands each new connection to one of the worker
// threads, in turn. A worker owns its connections for their whole life and runs its own epoll
// loop over them: read, parse (resp_parser.hpp), execute (commands.hpp), write. So a
// connection's requests run one after another on one thread and its replies leave in request
// order (pipelining keeps its order for free), no request crosses threads, and the workers
// share nothing but the key space. (One loop that fed a separate pool would cost two handoffs
// per request, which on these 2 cores costs more than the commands themselves.)
//
// Limits, so that no client can make the server crash or grow without bound:
//   - a request's bulk string over proto-max-bulk-len, a bad type byte, bad lengths: a protocol
//     error reply, then the connection is closed (resp_parser.hpp);
//   - a query buffer over client-query-buffer-limit: the connection is closed;
//   - replies waiting for a client that does not read: past `pause_requests_at` (4 MiB, or the
//     output limit if smaller) the worker stops running that client's requests until it drains;
//     it goes on reading them (a client may send its whole pipeline before reading a reply),
//     so what waits is bounded by the query buffer's limit;
//     replies waiting past client-output-buffer-limit (checked after each reply, as Redis does:
//     one reply can be large) close the connection, unsent;
//   - connections over maxclients get "-ERR max number of clients reached" and are closed.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "apps/zset_server/commands.hpp"
#include "apps/zset_server/keyspace.hpp"

namespace cdsb::zset {

class Server {
 public:
  Server(const ServerSettings& settings, const KeyspaceConfig& keyspace);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Opens the listening sockets; throws std::runtime_error with one line naming the address
  // and the reason (e.g. the port is in use).
  void listen();
  // Serves until stop() (the signal handlers call it), then closes every connection.
  void run();
  // Async-signal-safe: asks run() to return.
  void stop() noexcept;

  static constexpr std::size_t pause_requests_at = std::size_t{4} << 20;

 private:
  struct Connection;
  class Worker;
  void accept_from(int listener);

  ServerSettings settings_;
  ServerStatus status_;
  Keyspace keys_;
  Commands commands_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<int> listeners_;
  int wake_fd_ = -1;  // eventfd: stop() writes it
  std::atomic<bool> stopping_{false};
  std::size_t next_worker_ = 0;
};

}  // namespace cdsb::zset
