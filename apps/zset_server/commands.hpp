// The server's commands: one parsed request in, its RESP2 reply out, as Redis 7.0 answers it
// (errors included, word for word). Called by the network workers right after the protocol
// layer, and by the in-process load generator, which takes the network out of the measurement.
//
// Thread safety: execute() may be called by every worker at once, each with its own tid
// (0..threads-1) and its own Session; what it counts is per thread, summed by INFO.
#pragma once

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "apps/zset_server/keyspace.hpp"
#include "bench/core/latency.hpp"
#include "cdsbench/platform/cache.hpp"

namespace cdsb::zset {

// What CONFIG GET and INFO report of the server's settings.
struct ServerSettings {
  std::string bind = "127.0.0.1";
  int port = 6380;
  std::string unixsocket;
  std::string requirepass;
  int maxclients = 10000;
  std::size_t proto_max_bulk_len = std::size_t{512} << 20;
  std::size_t client_query_buffer_limit = std::size_t{1} << 30;
  std::size_t client_output_buffer_limit = std::size_t{256} << 20;
  // A worker with nothing to do polls its connections this long before it sleeps (server.cpp).
  int idle_poll_us = 0;
};

// One worker's network figures: one writer (the worker), read by INFO.
struct alignas(false_sharing_range) WorkerCounters {
  std::atomic<std::uint64_t> input_bytes{0}, output_bytes{0}, protocol_errors{0}, buffer_limit_closes{0};
  void add(std::atomic<std::uint64_t> WorkerCounters::*field, std::uint64_t by) {
    (this->*field).store((this->*field).load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
};

// The network side's live figures, written by the server, read by INFO.
struct ServerStatus {
  explicit ServerStatus(int workers) : workers(workers), counters(std::make_unique<WorkerCounters[]>(workers)) {}
  std::uint64_t sum(std::atomic<std::uint64_t> WorkerCounters::*field) const {
    std::uint64_t total = 0;
    for (int w = 0; w < workers; ++w) total += (counters[w].*field).load(std::memory_order_relaxed);
    return total;
  }
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  const int workers;
  std::unique_ptr<WorkerCounters[]> counters;
  std::atomic<std::int64_t> connected_clients{0};  // changed at connect and close only
  std::atomic<std::uint64_t> total_connections_received{0}, rejected_connections{0};  // the acceptor's
  std::vector<clockid_t> worker_cpu_clocks;  // set before any INFO can run
};

// One connection's state that commands see and change.
struct Session {
  std::uint64_t id = 0;  // HELLO's client id
  bool authenticated = false;
  bool close_after_reply = false;  // QUIT
};

class Commands {
 public:
  Commands(Keyspace& keys, const ServerSettings& settings, const ServerStatus& status);
  ~Commands();

  // Runs one request (args not empty) of the worker tid; appends its reply to out.
  void execute(int tid, std::span<const std::string_view> args, Session& session, std::string& out);

  // INFO's text for a section name ("" or "default", "all", "everything", or one section).
  std::string info(int tid, std::string_view section) const;

  struct Spec;  // a command: name, arity, flags, handler (commands.cpp)
  static const std::vector<Spec>& specs();

 private:
  struct Call;
  struct ThreadStats;
  void dispatch(const Spec& spec, Call& call);
  void auth(Call& c);
  void hello(Call& c);
  bool authenticate(Call& c, std::string_view user, std::string_view password);
  void ping(Call& c);
  void echo(Call& c);
  void quit(Call& c);
  void select(Call& c);
  void dbsize(Call& c);
  void flushall(Call& c);
  void del(Call& c);
  void exists(Call& c);
  void type(Call& c);
  void info_command(Call& c);
  void config(Call& c);
  void command(Call& c);
  void client(Call& c);
  void multi(Call& c);
  void exec(Call& c);
  void discard(Call& c);
  void zadd(Call& c);
  void zincrby(Call& c);
  void zrem(Call& c);
  void zscore(Call& c);
  void zmscore(Call& c);
  void zrank(Call& c);
  void zrevrank(Call& c);
  void zcard(Call& c);
  void zcount(Call& c);
  void zrange(Call& c);
  void zrangebyscore(Call& c);
  void zrevrange(Call& c);
  void range(Call& c, int first_option, bool by_score, bool reverse, bool options_choose_type);

  void section_server(int tid, std::string& out) const;
  void section_clients(int tid, std::string& out) const;
  void section_memory(int tid, std::string& out) const;
  void section_stats(int tid, std::string& out) const;
  void section_cpu(int tid, std::string& out) const;
  void section_method(int tid, std::string& out) const;
  void section_commandstats(int tid, std::string& out) const;
  void section_latencystats(int tid, std::string& out) const;
  void section_keyspace(int tid, std::string& out) const;

  Keyspace& keys_;
  const ServerSettings& settings_;
  const ServerStatus& status_;
  std::unique_ptr<ThreadStats[]> stats_;
};

}  // namespace cdsb::zset
