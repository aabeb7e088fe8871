#include "apps/zset_server/server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_set>

#include "apps/zset_server/reply.hpp"
#include "apps/zset_server/resp_parser.hpp"

namespace cdsb::zset {

namespace {

constexpr std::size_t read_chunk = 16 << 10;     // Redis's PROTO_IOBUF_LEN
constexpr std::size_t largest_read = 1 << 20;    // a big bulk is read in pieces of at most this
constexpr int reads_per_event = 16;              // then the next connection gets its turn
constexpr std::size_t idle_buffer_keep = 64 << 10;
constexpr int idle_reclaim_ms = 100;  // a worker idle this long frees what it removed

std::string system_error(const std::string& what) { return what + ": " + std::strerror(errno); }

void wake(int fd) noexcept {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(fd, &one, sizeof one);  // a full counter still wakes the reader
}

void drain(int fd) noexcept {
  std::uint64_t v;
  [[maybe_unused]] const ssize_t n = ::read(fd, &v, sizeof v);
}

// Input bytes with room to read more at the end; consumed bytes are dropped from the front.
class InputBuffer {
 public:
  std::string_view data() const noexcept { return {bytes_.get() + begin_, end_ - begin_}; }
  std::size_t size() const noexcept { return end_ - begin_; }
  // Space for at least n more bytes at the end.
  char* room(std::size_t n) {
    if (capacity_ - end_ >= n) return bytes_.get() + end_;
    const std::size_t used = size();
    if (capacity_ - used >= n && begin_ > 0) {
      std::memmove(bytes_.get(), bytes_.get() + begin_, used);
    } else {
      const std::size_t capacity = std::max(used + n, 2 * capacity_);
      auto grown = std::make_unique_for_overwrite<char[]>(capacity);
      if (used) std::memcpy(grown.get(), bytes_.get() + begin_, used);
      bytes_ = std::move(grown);
      capacity_ = capacity;
    }
    begin_ = 0;
    end_ = used;
    return bytes_.get() + end_;
  }
  void commit(std::size_t n) noexcept { end_ += n; }
  void consume(std::size_t n) noexcept {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  void clear() noexcept { begin_ = end_ = 0; }
  // An idle connection keeps a small buffer (1,000 idle clients must not hold a big one each).
  void trim() {
    if (begin_ == end_ && capacity_ > idle_buffer_keep) {
      bytes_.reset();
      capacity_ = begin_ = end_ = 0;
    }
  }

 private:
  std::unique_ptr<char[]> bytes_;
  std::size_t capacity_ = 0, begin_ = 0, end_ = 0;
};

}  // namespace

struct Server::Connection {
  Connection(int f, ParserLimits limits) : fd(f), parser(limits) {}
  int fd;
  RequestParser parser;
  Session session;
  InputBuffer in;
  std::string out;
  std::size_t out_begin = 0;  // bytes of `out` already sent
  bool closing = false;       // send what is queued, then close
  bool runnable = false;      // requests already read wait their turn (send_and_resume)
  std::uint32_t watched = 0;  // the epoll events registered now
  std::size_t pending_output() const noexcept { return out.size() - out_begin; }
};

class Server::Worker {
 public:
  Worker(Server& server, int tid) : server_(server), tid_(tid) {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0) throw std::runtime_error(system_error("cdsbench-zset-server: epoll"));
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.ptr = nullptr;  // the wake-up descriptor
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &e);
  }
  ~Worker() {
    while (!connections_.empty()) close_connection(*connections_.begin());  // it erases what it closes
    for (int fd : incoming_) ::close(fd);
    ::close(epoll_fd_);
    ::close(wake_fd_);
  }

  void start() {
    thread_ = std::thread([this] { loop(); });
    clockid_t clock{};
    if (pthread_getcpuclockid(thread_.native_handle(), &clock) == 0) cpu_clock_ = clock;
  }
  void stop() {
    stopping_.store(true, std::memory_order_release);
    wake(wake_fd_);
    if (thread_.joinable()) thread_.join();
  }
  clockid_t cpu_clock() const { return cpu_clock_; }

  // From the acceptor: the worker takes the connection over.
  void adopt(int fd) {
    {
      std::lock_guard lock(mutex_);
      incoming_.push_back(fd);
    }
    wake(wake_fd_);
  }

 private:
  void loop() {
    epoll_event events[256];
    bool may_hold_garbage = false;  // what this worker removed is freed only by its own operations
    while (!stopping_.load(std::memory_order_acquire)) {
      const int n = wait_for_events(events, 256, may_hold_garbage ? idle_reclaim_ms : -1);
      if (n == 0) {  // idle for a while: free what we retired (Keyspace::reclaim)
        may_hold_garbage = server_.keys_.reclaim(tid_);
        continue;
      }
      may_hold_garbage = true;
      for (int i = 0; i < n; ++i) {
        auto* c = static_cast<Connection*>(events[i].data.ptr);
        if (!c) {
          drain(wake_fd_);
          take_incoming();
          continue;
        }
        serve(c, events[i].events);
      }
    }
  }

  // epoll_wait, after polling for up to --idle-poll-us when nothing is ready. A worker that
  // sleeps must be woken by the core whose send makes its socket ready (try_to_wake_up, often an
  // IPI): with a local client that is the client's core, so a server that sleeps between requests
  // slows a client that is the bottleneck. Polling takes the wake-ups away; its price is the CPU
  // spent polling.
  int wait_for_events(epoll_event* events, int max, int timeout_ms) {
    const int idle_poll_us = server_.settings_.idle_poll_us;
    if (idle_poll_us > 0) {
      int n = epoll_wait(epoll_fd_, events, max, 0);
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(idle_poll_us);
      while (n == 0 && std::chrono::steady_clock::now() < until) n = epoll_wait(epoll_fd_, events, max, 0);
      if (n != 0) return n;
    }
    return epoll_wait(epoll_fd_, events, max, timeout_ms);
  }

  void take_incoming() {
    std::vector<int> fds;
    {
      std::lock_guard lock(mutex_);
      fds.swap(incoming_);
    }
    const ParserLimits limits{.max_bulk_len = server_.settings_.proto_max_bulk_len};
    for (int fd : fds) {
      auto* c = new Connection(fd, limits);
      c->session.authenticated = server_.settings_.requirepass.empty();
      c->session.id = ++clients_adopted_ * static_cast<std::uint64_t>(server_.workers_.size()) + static_cast<std::uint64_t>(tid_);
      connections_.insert(c);
      c->watched = EPOLLIN;
      epoll_event e{};
      e.events = c->watched;
      e.data.ptr = c;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e) != 0) close_connection(c);
    }
  }

  void serve(Connection* c, std::uint32_t events) {
    bool open = true;
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) open = read_input(*c);
    if (open) open = send_and_resume(*c);
    if (open) open = watch(*c);
    if (!open) close_connection(c);
  }

  // Reads what the client sent, and runs the complete requests while fewer than pause_at()
  // bytes of replies wait. Reading goes on while replies wait (a client may write its whole
  // pipeline before it reads a reply): the query buffer's limit bounds what piles up. False:
  // close now.
  bool read_input(Connection& c) {
    if (c.closing) return true;  // what follows QUIT or a protocol error is not read
    WorkerCounters& counters = server_.status_.counters[tid_];
    for (int r = 0; r < reads_per_event; ++r) {
      const std::size_t want = std::clamp(c.parser.bytes_wanted(), read_chunk, largest_read);
      char* room = c.in.room(want);
      const ssize_t n = ::read(c.fd, room, want);
      if (n == 0) return false;  // the client closed: what it sent last was incomplete, or nothing
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        if (errno == EINTR) continue;
        return false;
      }
      c.in.commit(static_cast<std::size_t>(n));
      counters.add(&WorkerCounters::input_bytes, static_cast<std::uint64_t>(n));
      if (c.in.size() > server_.settings_.client_query_buffer_limit) {
        counters.add(&WorkerCounters::buffer_limit_closes, 1);
        return false;  // as Redis: closed without a reply
      }
      process(c);
      if (c.closing || static_cast<std::size_t>(n) < want) break;
    }
    c.in.trim();
    return true;
  }

  std::size_t pause_at() const { return std::min(pause_requests_at, server_.settings_.client_output_buffer_limit); }

  // Runs every complete request in the input, in order, until the replies waiting reach the
  // pause threshold (the rest waits in the input until the client reads).
  void process(Connection& c) {
    while (!c.closing && c.pending_output() < pause_at()) {
      const auto status = c.parser.parse(c.in.data(), c.session.authenticated);
      if (status == RequestParser::Status::incomplete) return;
      if (status == RequestParser::Status::error) {
        Reply(c.out).error("ERR " + c.parser.error());
        server_.status_.counters[tid_].add(&WorkerCounters::protocol_errors, 1);
        c.closing = true;
        c.in.clear();
        return;
      }
      const auto args = c.parser.args();
      if (!args.empty()) server_.commands_.execute(tid_, args, c.session, c.out);
      c.in.consume(c.parser.consumed());
      if (c.pending_output() > server_.settings_.client_output_buffer_limit) {  // checked as Redis does: per reply
        server_.status_.counters[tid_].add(&WorkerCounters::buffer_limit_closes, 1);
        c.out.clear();
        c.out_begin = 0;
        c.in.clear();
        c.closing = true;
        return;
      }
      if (c.session.close_after_reply) {
        c.closing = true;
        c.in.clear();  // bytes after QUIT are not requests
      }
    }
  }

  // Sends what the socket takes. When the replies waiting fall below the pause threshold, runs
  // the requests already read (no read event comes for them) and sends again, a bounded number
  // of rounds (then `runnable` keeps the connection's turn: watch()). False: close now.
  bool send_and_resume(Connection& c) {
    c.runnable = false;
    for (int round = 0;; ++round) {
      if (!send_some(c)) return false;
      if (c.closing || c.pending_output() >= pause_at() || c.in.size() == 0) break;
      if (round == reads_per_event) {
        c.runnable = true;
        break;
      }
      const std::size_t waiting = c.in.size();
      process(c);
      if (c.in.size() == waiting && !c.closing) break;  // nothing complete: wait for more input
    }
    return !(c.closing && c.pending_output() == 0);  // all sent before closing
  }

  bool send_some(Connection& c) {
    WorkerCounters& counters = server_.status_.counters[tid_];
    while (c.pending_output() > 0) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.out_begin, c.pending_output(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return false;
      }
      c.out_begin += static_cast<std::size_t>(n);
      counters.add(&WorkerCounters::output_bytes, static_cast<std::uint64_t>(n));
    }
    if (c.pending_output() == 0) {
      c.out_begin = 0;
      if (c.out.capacity() > idle_buffer_keep) std::string().swap(c.out);
      else c.out.clear();
    } else if (c.out_begin >= idle_buffer_keep && 2 * c.out_begin >= c.out.size()) {
      // What was sent goes: a client that reads a little slower than we reply never lets the
      // waiting replies reach 0, and `out` would otherwise keep every byte ever sent.
      c.out.erase(0, c.out_begin);
      c.out_begin = 0;
    }
    return true;
  }

  // Reads while not closing; writes while replies wait (or requests already read wait their turn).
  bool watch(Connection& c) {
    const std::uint32_t want = (c.closing ? 0u : EPOLLIN) | (c.pending_output() > 0 || c.runnable ? EPOLLOUT : 0u);
    if (want == c.watched) return true;
    epoll_event e{};
    e.events = want;
    e.data.ptr = &c;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &e) != 0) return false;
    c.watched = want;
    return true;
  }

  void close_connection(Connection* c) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
    connections_.erase(c);
    delete c;
    server_.status_.connected_clients.fetch_sub(1, std::memory_order_relaxed);
  }

  Server& server_;
  const int tid_;
  int epoll_fd_ = -1, wake_fd_ = -1;
  std::thread thread_;
  clockid_t cpu_clock_{};
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::vector<int> incoming_;  // handed over by the acceptor, under mutex_
  std::unordered_set<Connection*> connections_;
  std::uint64_t clients_adopted_ = 0;
};

Server::Server(const ServerSettings& settings, const KeyspaceConfig& keyspace)
    : settings_(settings), status_(keyspace.threads), keys_(keyspace), commands_(keys_, settings_, status_) {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) throw std::runtime_error(system_error("cdsbench-zset-server: eventfd"));
  for (int t = 0; t < keyspace.threads; ++t) workers_.push_back(std::make_unique<Worker>(*this, t));
}

Server::~Server() {
  for (auto& w : workers_) w->stop();
  workers_.clear();
  for (int fd : listeners_) ::close(fd);
  if (!settings_.unixsocket.empty()) ::unlink(settings_.unixsocket.c_str());
  ::close(wake_fd_);
}

void Server::listen() {
  auto fail = [](const std::string& where) { throw std::runtime_error(system_error(where)); };
  if (settings_.port > 0) {
    sockaddr_storage address{};
    socklen_t length = 0;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    if (inet_pton(AF_INET, settings_.bind.c_str(), &v4->sin_addr) == 1) {
      v4->sin_family = AF_INET;
      v4->sin_port = htons(static_cast<std::uint16_t>(settings_.port));
      length = sizeof *v4;
    } else if (inet_pton(AF_INET6, settings_.bind.c_str(), &v6->sin6_addr) == 1) {
      v6->sin6_family = AF_INET6;
      v6->sin6_port = htons(static_cast<std::uint16_t>(settings_.port));
      length = sizeof *v6;
    } else {
      throw std::runtime_error("--bind " + settings_.bind + ": not a numeric IPv4 or IPv6 address");
    }
    const std::string where = settings_.bind + ":" + std::to_string(settings_.port);
    const int fd = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) fail(where);
    listeners_.push_back(fd);
    const int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0) fail(where);
    if (::listen(fd, 511) != 0) fail(where);
  }
  if (!settings_.unixsocket.empty()) {
    sockaddr_un address{};
    if (settings_.unixsocket.size() >= sizeof address.sun_path)
      throw std::runtime_error("--unixsocket " + settings_.unixsocket + ": longer than " +
                               std::to_string(sizeof address.sun_path - 1) + " bytes");
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, settings_.unixsocket.c_str(), settings_.unixsocket.size() + 1);
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) fail(settings_.unixsocket);
    listeners_.push_back(fd);
    ::unlink(settings_.unixsocket.c_str());  // a stale socket file of an earlier run, as Redis
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) fail(settings_.unixsocket);
    if (::listen(fd, 511) != 0) fail(settings_.unixsocket);
  }
  if (listeners_.empty()) throw std::runtime_error("nothing to listen on: --port 0 needs --unixsocket PATH");
}

void Server::run() {
  for (auto& w : workers_) w->start();
  for (auto& w : workers_) status_.worker_cpu_clocks.push_back(w->cpu_clock());
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.fd = wake_fd_;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd_, &e);
  for (int fd : listeners_) {
    e.data.fd = fd;
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &e);
  }
  epoll_event events[8];
  while (!stopping_.load(std::memory_order_acquire)) {
    const int n = epoll_wait(epoll_fd, events, 8, -1);
    for (int i = 0; i < n; ++i)
      if (events[i].data.fd != wake_fd_) accept_from(events[i].data.fd);
  }
  ::close(epoll_fd);
  for (auto& w : workers_) w->stop();
}

void Server::accept_from(int listener) {
  for (;;) {
    const int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // Out of descriptors: the connection waits in the backlog; try again a little later
      // rather than spin on a listener that stays readable.
      if (errno == EMFILE || errno == ENFILE) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;  // EAGAIN: none left
    }
    status_.total_connections_received.store(status_.total_connections_received.load(std::memory_order_relaxed) + 1,
                                             std::memory_order_relaxed);
    if (status_.connected_clients.load(std::memory_order_relaxed) >= settings_.maxclients) {
      static constexpr char full[] = "-ERR max number of clients reached\r\n";
      [[maybe_unused]] const ssize_t sent = ::send(fd, full, sizeof full - 1, MSG_NOSIGNAL);
      ::close(fd);
      status_.rejected_connections.store(status_.rejected_connections.load(std::memory_order_relaxed) + 1,
                                         std::memory_order_relaxed);
      continue;
    }
    const int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);  // fails harmlessly on a Unix socket
    status_.connected_clients.fetch_add(1, std::memory_order_relaxed);
    workers_[next_worker_]->adopt(fd);
    next_worker_ = (next_worker_ + 1) % workers_.size();
  }
}

void Server::stop() noexcept {
  stopping_.store(true, std::memory_order_release);
  wake(wake_fd_);
}

}  // namespace cdsb::zset
