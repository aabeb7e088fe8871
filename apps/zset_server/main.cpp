// cdsbench-zset-server: a Redis-protocol (RESP2) server of sorted sets, each made concurrent by
// Node Replication or one of its black-box baselines (README "Sorted-set server").
//
// Exit status: 0 stopped by SIGINT or SIGTERM; 1 could not listen or start; 2 a usage error
// (one line naming the option and what is allowed).
#include <sched.h>
#include <sys/random.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>

#include "apps/zset_server/server.hpp"
#include "bench/harness/options.hpp"

namespace {

using cdsb::bench::HelpShown;
using cdsb::bench::UsageError;
using namespace cdsb::zset;

constexpr const char* program = "cdsbench-zset-server";

std::atomic<cdsb::zset::Server*> running{nullptr};  // lock-free: read by the signal handler

extern "C" void on_signal(int) {
  if (Server* s = running.load()) s->stop();
}

// Redis's memory sizes: a count of bytes, or with k, kb, m, mb, g, gb (k = 1000, kb = 1024).
std::size_t parse_size(const std::string& option, const std::string& text, std::size_t min) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  std::string unit = text.substr(digits);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::pair<const char*, std::uint64_t> units[] = {{"", 1},         {"b", 1},           {"k", 1000},
                                                         {"kb", 1 << 10}, {"m", 1000 * 1000}, {"mb", 1 << 20},
                                                         {"g", 1000ull * 1000 * 1000},        {"gb", 1ull << 30}};
  const std::string allowed = "; allowed: bytes (at least " + std::to_string(min) + ", at most 2^40), optionally with k, kb, m, mb, g or gb";
  std::uint64_t scale = 0;
  for (const auto& [name, factor] : units)
    if (unit == name) scale = factor;
  if (digits == 0 || digits > 13 || scale == 0) throw UsageError{option + ": '" + text + "' is not a size" + allowed};
  const std::uint64_t bytes = std::stoull(text.substr(0, digits)) * scale;
  if (bytes < min || bytes > (std::uint64_t{1} << 40)) throw UsageError{option + ": " + text + " is out of range" + allowed};
  return static_cast<std::size_t>(bytes);
}

int allowed_cpus() {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "cdsbench-zset-server: a Redis-protocol (RESP2) server of sorted sets, each made concurrent by Node "
      "Replication or a black-box baseline. In-memory only: nothing is saved, a restart starts empty. One "
      "database (SELECT 0). Each single-key command is linearizable; DEL and EXISTS of several keys and "
      "FLUSHALL run key by key, not as one atomic step (Redis's are atomic). No transactions (MULTI is an "
      "error).",
      program};
  ServerSettings s;
  KeyspaceConfig k;
  std::string method = "nr", port = "6380", threads, replicas = "1", log_entries = "1024", maxclients = "10000";
  std::string bulk = "512mb", query = "1gb", output = "256mb", seed, idle_poll = "0";
  app.add_option("--bind", s.bind, "Listen on this numeric IPv4 or IPv6 address [127.0.0.1]");
  app.add_option("--port", port, "TCP port; 0: no TCP, only --unixsocket [6380]");
  app.add_option("--unixsocket", s.unixsocket, "Also listen on a Unix socket at PATH (replaced if it exists)");
  app.add_option("--requirepass", s.requirepass, "Require AUTH with this password before any other command");
  app.add_option("--threads", threads, "Worker threads, each serving its own connections [the CPUs this process may use]");
  app.add_option("--method", method,
                 "How each sorted set is made concurrent: nr (Node Replication), sl (spin lock), rwl (readers-writer "
                 "lock), fc (flat combining), fcplus (flat combining, reads under a readers-writer lock) [nr]");
  app.add_option("--nr-replicas", replicas, "nr: replicas of each set; the workers split into this many groups [1]");
  app.add_option("--nr-log-entries", log_entries,
                 "nr: log entries of each key, fixed at its creation: 48 bytes each, so 1024 is 48 KiB a key "
                 "(the study's one hot set used 1048576) [1024]");
  app.add_option("--maxclients", maxclients, "Connections served at once; more are refused with an error [10000]");
  app.add_option("--proto-max-bulk-len", bulk, "Longest bulk string a request may carry [512mb]");
  app.add_option("--client-query-buffer-limit", query, "A connection whose requests read but not yet run exceed this is closed [1gb]");
  app.add_option("--client-output-buffer-limit", output,
                 "A connection whose unsent replies exceed this is closed; its requests wait unrun from 4mb of "
                 "unsent replies [256mb]");
  app.add_option("--idle-poll-us", idle_poll,
                 "A worker with no request to run polls its connections this many microseconds before it "
                 "sleeps: a request arriving meanwhile needs no wake-up (work for the sender's core, a local "
                 "client's), for the CPU the polling spends; 0: sleep at once, as Redis [0]");
  app.add_option("--hash-seed", seed, "The hashes' secret, for a reproducible run [random at each start]");
  if (auto stop = cdsb::bench::parse_with_cli11(app, argc, argv)) {
    if (std::holds_alternative<HelpShown>(*stop)) return 0;
    std::cerr << program << ": " << std::get<UsageError>(*stop).message << '\n';
    return 2;
  }
  const int parsed = cdsb::bench::exit_status_of(program, [&] {
    using cdsb::bench::parse_integer;
    s.port = parse_integer<int>("--port", port, 0, 65535);
    k.threads = threads.empty() ? allowed_cpus() : parse_integer<int>("--threads", threads, 1, 1024);
    const auto chosen = method_named(method);
    if (!chosen) throw UsageError{"--method: '" + method + "' is not a method; allowed: nr, sl, rwl, fc or fcplus"};
    k.method = *chosen;
    k.nr_replicas = parse_integer<int>("--nr-replicas", replicas, 1, k.threads);
    k.nr_log_entries = parse_integer<std::size_t>("--nr-log-entries", log_entries, 2, std::size_t{1} << 26);
    s.maxclients = parse_integer<int>("--maxclients", maxclients, 1, 1 << 20);
    s.idle_poll_us = parse_integer<int>("--idle-poll-us", idle_poll, 0, 100'000);
    s.proto_max_bulk_len = parse_size("--proto-max-bulk-len", bulk, 1);
    s.client_query_buffer_limit = parse_size("--client-query-buffer-limit", query, 1 << 10);
    s.client_output_buffer_limit = parse_size("--client-output-buffer-limit", output, 1 << 10);
    if (!seed.empty()) {
      k.seed = parse_integer<std::uint64_t>("--hash-seed", seed, 0, UINT64_MAX);
    } else if (getrandom(&k.seed, sizeof k.seed, 0) != sizeof k.seed) {
      throw std::runtime_error("cannot read a random hash seed (getrandom)");
    }
    return 0;
  });
  if (parsed != 0) return parsed;
  return cdsb::bench::exit_status_of(program, [&] {
    Server server(s, k);
    server.listen();
    running = &server;
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
    std::cerr << program << ": ready on " << (s.port ? s.bind + ":" + std::to_string(s.port) : std::string())
              << (s.port && !s.unixsocket.empty() ? " and " : "") << s.unixsocket << " (method " << method << ", "
              << k.threads << " worker threads)" << std::endl;
    server.run();
    running = nullptr;
    return 0;
  });
}
