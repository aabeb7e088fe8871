// cdsbench-zset-load: the sorted-set server's own load generator, for the Node Replication
// study's Redis experiment (Calciu et al., ASPLOS 2017, §7): one sorted set of --items members
// chosen uniformly, ZRANK reads and ZINCRBY updates at a given update ratio, for a timed window
// after a warm-up.
//
// Two paths, measured apart:
//   --target HOST:PORT | unix:PATH   through the network and the protocol, to our server or to
//                                    a real redis-server (C connections, P requests in flight
//                                    on each, driven by --client-threads event loops);
//   --in-process                     the study's mode: the commands invoked just after the
//                                    protocol layer (Commands::execute, the function our server's
//                                    workers call), by --threads threads, no network, no parsing.
// Every reply is checked (ZRANK: a rank in [0, items); ZINCRBY: a score), and at the end every
// member's score must equal its start plus the increments acknowledged: exact validation.
//
// Output: key=value lines (config, machine, the trial, in the measurement core's form) and
// --json FILE. Exit status: 0 valid; 1 a bad reply, a failed validation or an unreachable
// server; 2 a usage error.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <charconv>
#include <cinttypes>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "apps/zset_server/commands.hpp"
#include "apps/zset_server/keyspace.hpp"
#include "apps/zset_server/resp_client.hpp"
#include "bench/core/latency.hpp"
#include "bench/core/machine_info.hpp"
#include "bench/core/report.hpp"
#include "bench/harness/options.hpp"
#include "cdsbench/platform/topology.hpp"

namespace {

using cdsb::bench::HelpShown;
using cdsb::bench::Json;
using cdsb::bench::LatencyHistogram;
using cdsb::bench::UsageError;
using Clock = std::chrono::steady_clock;
using namespace cdsb::zset;

constexpr const char* program = "cdsbench-zset-load";

struct Options {
  std::string target;
  bool in_process = false;
  int clients = 50, pipeline = 1, client_threads = 1, update_percent = 10;
  std::uint64_t items = 10'000, seed = 1;
  double duration_s = 5, warmup_s = 1;
  std::string key = "zset_bench", json;
  KeyspaceConfig keyspace;  // --in-process
  std::string driver = "load";         // or redis-benchmark
  std::vector<std::string> spawn;      // the server to start, after --
  std::vector<int> server_cpus, client_cpus;
};

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double seconds_of(const rusage& u) {
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// "m:" and 12 digits: what redis-benchmark's -r makes of m:__rand_int__, so both drivers hit the
// members the prefill added.
std::string member_name(std::uint64_t i) {
  char buf[32];
  const int n = std::snprintf(buf, sizeof buf, "m:%012llu", static_cast<unsigned long long>(i));
  return std::string(buf, static_cast<std::size_t>(n));
}

// ---- what a run counts ------------------------------------------------------------------------

enum OpType { zrank_op, zincrby_op };

struct Tally {
  LatencyHistogram latency[2];
  std::uint64_t in_window[2] = {0, 0};
  std::uint64_t completed = 0;            // every request answered: warm-up, window and drain
  std::vector<std::uint32_t> increments;  // acknowledged ZINCRBYs per member, whenever they ended
  explicit Tally(std::uint64_t items) : increments(items, 0) {}
};

// Checks one reply to a request of the run; false when it is not what the command returns.
bool valid_reply(OpType type, const RespValue& v, std::uint64_t items) {
  if (type == zrank_op) return v.type == ':' && v.integer >= 0 && static_cast<std::uint64_t>(v.integer) < items;
  if (v.type != '$' || v.integer <= 0) return false;
  double d = 0;
  return std::from_chars(v.text.data(), v.text.data() + v.text.size(), d).ec == std::errc();
}

struct Window {
  Clock::time_point start, end;
  bool contains(Clock::time_point sent, Clock::time_point done) const { return sent >= start && done <= end; }
};

// ---- the network path -------------------------------------------------------------------------

// "0", "0,2", "1-3": CPU numbers; empty: none asked.
std::vector<int> parse_cpus(const std::string& option, const std::string& text) {
  std::vector<int> cpus;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t e = std::min(text.find(',', i), text.size());
    const std::string part = text.substr(i, e - i);
    const std::size_t dash = part.find('-');
    const int lo = cdsb::bench::parse_integer<int>(option, part.substr(0, dash), 0, CPU_SETSIZE - 1);
    const int hi = dash == std::string::npos ? lo : cdsb::bench::parse_integer<int>(option, part.substr(dash + 1), lo, CPU_SETSIZE - 1);
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    i = e + 1;
  }
  return cpus;
}

void pin(pid_t pid, const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  if (sched_setaffinity(pid, sizeof set, &set) != 0)
    throw Failure(std::string("pinning to the CPUs asked: ") + std::strerror(errno));
}

// "name:value" lines of an INFO reply.
std::map<std::string, std::string> info_fields(std::string_view text) {
  std::map<std::string, std::string> f;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t e = text.find("\r\n", i);
    if (e == std::string_view::npos) e = text.size();
    const std::string_view line = text.substr(i, e - i);
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && line[0] != '#') f.emplace(line.substr(0, colon), line.substr(colon + 1));
    i = e + 2;
  }
  return f;
}

struct Connection {
  int fd = -1;
  std::mt19937_64 rng;
  std::string in, out;
  std::size_t out_sent = 0;
  struct Pending {
    OpType type;
    std::uint32_t member;
    Clock::time_point sent;
  };
  std::deque<Pending> pending;
};

void issue(Connection& c, const Options& o, const std::string& key, Clock::time_point now) {
  const auto member = static_cast<std::uint32_t>(c.rng() % o.items);
  const OpType type = static_cast<int>(c.rng() % 100) < o.update_percent ? zincrby_op : zrank_op;
  const std::string name = member_name(member);
  if (type == zincrby_op) append_request(c.out, {"ZINCRBY", key, "1", name});
  else append_request(c.out, {"ZRANK", key, name});
  c.pending.push_back({type, member, now});
}

bool flush(Connection& c) {
  while (c.out_sent < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      if (errno == EINTR) continue;
      return false;
    }
    c.out_sent += static_cast<std::size_t>(n);
  }
  c.out.clear();
  c.out_sent = 0;
  return true;
}

// One client thread: its connections, each with `pipeline` requests in flight until the
// window ends, then drained.
void drive(std::vector<Connection>& conns, const Options& o, const Window& window, Tally& tally, std::string& error) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  for (auto& c : conns) {
    fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) | O_NONBLOCK);
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.ptr = &c;
    epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &e);
    for (int p = 0; p < o.pipeline; ++p) issue(c, o, o.key, Clock::now());
    if (!flush(c)) error = "sending to the server failed";
  }
  std::size_t outstanding = conns.size() * static_cast<std::size_t>(o.pipeline);
  const auto give_up = window.end + std::chrono::seconds(30);
  epoll_event events[64];
  while (outstanding > 0 && error.empty()) {
    const int n = epoll_wait(ep, events, 64, 100);
    const auto now = Clock::now();
    if (now > give_up) {
      error = "the server stopped answering (30 s after the window)";
      break;
    }
    for (int i = 0; i < n && error.empty(); ++i) {
      auto& c = *static_cast<Connection*>(events[i].data.ptr);
      char chunk[1 << 16];
      const ssize_t got = ::recv(c.fd, chunk, sizeof chunk, 0);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
        error = "the server closed a connection";
        break;
      }
      if (got < 0) continue;
      c.in.append(chunk, static_cast<std::size_t>(got));
      std::size_t used = 0;
      RespValue v;
      while (const std::size_t k = parse_reply(std::string_view(c.in).substr(used), v)) {
        used += k;
        if (c.pending.empty()) {
          error = "a reply to no request";
          break;
        }
        const auto p = c.pending.front();
        c.pending.pop_front();
        --outstanding;
        if (!valid_reply(p.type, v, o.items)) {
          error = std::string("a bad reply to ") + (p.type == zrank_op ? "ZRANK" : "ZINCRBY") + ": " +
                  std::string(v.type == '-' ? v.text : std::string_view("unexpected type"));
          break;
        }
        if (p.type == zincrby_op) ++tally.increments[p.member];
        ++tally.completed;
        if (window.contains(p.sent, now)) {
          ++tally.in_window[p.type];
          tally.latency[p.type].record(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - p.sent).count()));
        }
        if (now < window.end) {
          issue(c, o, o.key, now);
          ++outstanding;
        }
      }
      c.in.erase(0, used);
      if (!flush(c)) error = "sending to the server failed";
    }
  }
  ::close(ep);
}

// ---- the two paths' common frame ----------------------------------------------------------------

// What each side of a network run spent, sampled after the prefill and at the end: the pinned
// CPUs' busy time (so a table says which side was the limit) and the server's sleeps.
struct CostSample {
  std::map<int, std::pair<std::uint64_t, std::uint64_t>> cpus;  // CPU -> (busy, all) clock ticks
  std::optional<std::uint64_t> server_sleeps;
};

// /proc/stat's per-CPU lines: busy is every field but idle and iowait (guest time is in user).
std::map<int, std::pair<std::uint64_t, std::uint64_t>> cpu_ticks() {
  std::map<int, std::pair<std::uint64_t, std::uint64_t>> ticks;
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);) {
    int cpu = -1;
    std::uint64_t v[8]{};
    if (std::sscanf(line.c_str(), "cpu%d %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                    " %" SCNu64, &cpu, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9)
      continue;  // the "cpu " total line, or a line of something else
    std::uint64_t all = 0;
    for (std::uint64_t x : v) all += x;
    ticks[cpu] = {all - v[3] - v[4], all};
  }
  return ticks;
}

// The times the process's threads blocked: their voluntary context switches, summed. A server
// asleep in epoll_wait is woken by the core whose request makes a socket ready.
std::optional<std::uint64_t> sleeps_of(pid_t pid) {
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code error;
  std::uint64_t total = 0;
  bool found = false;
  for (const auto& task : std::filesystem::directory_iterator(tasks, error)) {
    std::ifstream in(task.path() / "status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) {
        total += std::stoull(line.substr(line.find(':') + 1));
        found = true;
      }
  }
  if (error || !found) return std::nullopt;
  return total;
}

CostSample sample_costs(pid_t server_pid) {
  return {cpu_ticks(), server_pid > 0 ? sleeps_of(server_pid) : std::nullopt};
}

// The share of the listed CPUs' time that was busy between two samples; nullopt when none is listed.
std::optional<double> busy_share(const CostSample& before, const CostSample& after, const std::vector<int>& cpus) {
  std::uint64_t busy = 0, all = 0;
  for (int c : cpus) {
    if (!before.cpus.count(c) || !after.cpus.count(c)) return std::nullopt;
    busy += after.cpus.at(c).first - before.cpus.at(c).first;
    all += after.cpus.at(c).second - before.cpus.at(c).second;
  }
  if (all == 0) return std::nullopt;
  return static_cast<double>(busy) / static_cast<double>(all);
}

// What a path gives the report.
struct Run {
  Tally tally;
  double window_s = 0;
  std::map<std::string, std::string> info_before, info_after;  // network: the server's INFO
  pid_t server_pid = -1;                                      // network: the server we started, if any
  CostSample costs_before, costs_after;                       // network
  double driver_cpu_s = 0;                                    // redis-benchmark's processes' CPU
  std::vector<double> thread_cpu_s;                           // in-process: each thread's CPU
  MethodCounters counters;                                    // in-process: the method's figures
  std::map<std::string, double> final_scores;
  // redis-benchmark knows no per-member counts: then only the total of the scores is checked.
  bool per_member = true;
  Json driver_figures = Json::object();                       // what redis-benchmark reported
  explicit Run(std::uint64_t items) : tally(items) {}
};

// The threads' tallies into the run's, once every thread is done; their first error, if any.
void gather(Run& run, const std::vector<Tally>& tallies, const std::vector<std::string>& errors, const Options& o) {
  for (const auto& e : errors)
    if (!e.empty()) throw Failure(e);
  for (const Tally& t : tallies) {
    for (int k = 0; k < 2; ++k) {
      run.tally.latency[k].merge(t.latency[k]);
      run.tally.in_window[k] += t.in_window[k];
    }
    run.tally.completed += t.completed;
    for (std::uint64_t i = 0; i < o.items; ++i) run.tally.increments[i] += t.increments[i];
  }
  run.window_s = o.duration_s;
}

Window make_window(const Options& o) {
  const auto start = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.warmup_s));
  return {start, start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.duration_s))};
}

std::string prefill_request(const Options& o, std::uint64_t from, std::uint64_t to) {
  std::vector<std::string> words{"ZADD", o.key};
  for (std::uint64_t i = from; i < to; ++i) {
    words.push_back(std::to_string(i));
    words.push_back(member_name(i));
  }
  std::string r = "*" + std::to_string(words.size()) + "\r\n";
  for (const auto& w : words) r += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
  return r;
}

std::map<std::string, double> scores_of(const RespValue& v) {
  std::map<std::string, double> scores;
  for (std::size_t i = 0; i + 1 < v.items.size(); i += 2) {
    double d = 0;
    std::from_chars(v.items[i + 1].text.data(), v.items[i + 1].text.data() + v.items[i + 1].text.size(), d);
    scores.emplace(std::string(v.items[i].text), d);
  }
  return scores;
}

// The set, made afresh, and the server's INFO before the run.
void prepare(const Options& o, Run& run) {
  BlockingClient setup(o.target);
  setup.call({"DEL", o.key});
  for (std::uint64_t i = 0; i < o.items; i += 1000) {
    setup.send(prefill_request(o, i, std::min(o.items, i + 1000)));
    if (setup.reply().type != ':') throw Failure("prefilling the set failed");
  }
  run.info_before = info_fields(setup.call({"INFO", "all"}).text);
  run.costs_before = sample_costs(run.server_pid);
}

void finish(const Options& o, Run& run) {
  run.costs_after = sample_costs(run.server_pid);
  BlockingClient after(o.target);
  run.info_after = info_fields(after.call({"INFO", "all"}).text);
  run.final_scores = scores_of(after.call({"ZRANGE", o.key, "0", "-1", "WITHSCORES"}));
}

Run run_network(const Options& o, pid_t server_pid) {
  Run run(o.items);
  run.server_pid = server_pid;
  prepare(o, run);
  std::vector<std::vector<Connection>> groups(o.client_threads);
  for (int c = 0; c < o.clients; ++c) {
    Connection conn;
    conn.fd = connect_to(o.target);
    conn.rng.seed(o.seed * 1000003 + static_cast<std::uint64_t>(c));
    groups[c % o.client_threads].push_back(std::move(conn));
  }
  const Window window = make_window(o);
  std::vector<Tally> tallies(o.client_threads, Tally(o.items));
  std::vector<std::string> errors(o.client_threads);
  std::vector<std::thread> threads;
  for (int t = 0; t < o.client_threads; ++t)
    threads.emplace_back([&, t] { drive(groups[t], o, window, tallies[t], errors[t]); });
  for (auto& t : threads) t.join();
  for (auto& g : groups)
    for (auto& c : g) ::close(c.fd);
  gather(run, tallies, errors, o);
  finish(o, run);
  return run;
}

// ---- processes: the server under test, and redis-benchmark ---------------------------------------

// Starts argv pinned to cpus; its standard output goes to out_fd (-1: inherited).
pid_t start_process(const std::vector<std::string>& argv, const std::vector<int>& cpus, int out_fd) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw Failure(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    if (out_fd >= 0) dup2(out_fd, STDOUT_FILENO);
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus) CPU_SET(c, &set);
    if (!cpus.empty() && sched_setaffinity(0, sizeof set, &set) != 0) _exit(126);
    execvp(args[0], args.data());
    std::fprintf(stderr, "%s: cannot run %s: %s\n", program, args[0], std::strerror(errno));
    _exit(127);
  }
  return pid;
}

// Its exit status (128 + the signal if one ended it); its CPU time into *cpu_s if given.
int wait_process(pid_t pid, double* cpu_s = nullptr) {
  int status = 0;
  rusage usage{};
  while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  if (cpu_s) *cpu_s += seconds_of(usage);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The server started after --: started pinned, ready once it answers PING, stopped with SIGTERM.
class SpawnedServer {
 public:
  // Its standard output goes to our standard error: ours carries only the key=value report.
  explicit SpawnedServer(const Options& o) : pid_(start_process(o.spawn, o.server_cpus, STDERR_FILENO)) {
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    for (;;) {
      try {
        BlockingClient probe(o.target);
        if (probe.call({"PING"}).type == '+') return;
      } catch (const std::runtime_error&) {  // not listening yet
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw Failure("the server started after -- exited at start");
      }
      if (Clock::now() > deadline) throw Failure("the server started after -- did not answer PING within 20 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  SpawnedServer(const SpawnedServer&) = delete;
  SpawnedServer& operator=(const SpawnedServer&) = delete;
  ~SpawnedServer() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      wait_process(pid_);
    }
  }
  pid_t pid() const { return pid_; }
  // Stops it: its exit status (0 for a clean stop).
  int stop() {
    kill(pid_, SIGTERM);
    const int status = wait_process(pid_);
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_;
};

// redis-benchmark's --csv: a header line ("test","rps","avg_latency_ms",...) and a line of values.
std::map<std::string, double> benchmark_figures(const std::string& csv) {
  auto fields = [](std::string_view line) {
    std::vector<std::string> f;
    for (std::size_t i = 0; i < line.size() && line[i] == '"';) {
      const std::size_t e = line.find('"', i + 1);
      if (e == std::string_view::npos) break;
      f.emplace_back(line.substr(i + 1, e - i - 1));
      i = e + 2;  // past the closing quote and the comma
    }
    return f;
  };
  std::vector<std::string_view> lines;
  for (std::size_t i = 0; i < csv.size();) {
    const std::size_t e = std::min(csv.find('\n', i), csv.size());
    lines.push_back(std::string_view(csv).substr(i, e - i));
    i = e + 1;
  }
  std::map<std::string, double> figures;
  for (std::size_t l = 0; l + 1 < lines.size(); ++l) {
    const auto names = fields(lines[l]);
    if (names.empty() || names[0] != "test") continue;
    const auto values = fields(lines[l + 1]);
    for (std::size_t k = 1; k < names.size() && k < values.size(); ++k) figures[names[k]] = std::stod(values[k]);
  }
  if (!figures.count("rps")) throw Failure("redis-benchmark printed no CSV result");
  return figures;
}

// The real redis-benchmark drives the server. It sends one command per run, so a mix is one
// process per command, at once, the clients split by the update ratio (10% of 50: 45 clients of
// ZRANK, 5 of ZINCRBY), each sending about --duration seconds of requests (at the rates seen
// here: 1,600 a client-second one at a time, about 8x that pipelined).
Run run_redis_benchmark(const Options& o, pid_t server_pid) {
  Run run(o.items);
  run.per_member = false;
  run.server_pid = server_pid;
  prepare(o, run);
  const int updaters = o.update_percent == 0 ? 0 : std::max(1, (o.clients * o.update_percent + 50) / 100);
  const int readers = o.update_percent == 100 ? 0 : std::max(1, o.clients - updaters);
  const auto per_client = static_cast<std::uint64_t>(o.duration_s * 1600 * (o.pipeline > 1 ? 8 : 1));
  const std::size_t colon = o.target.rfind(':');
  struct Part {
    OpType type;
    int clients;
    std::uint64_t requests;
    std::vector<std::string> argv;
    int fd = -1;
    pid_t pid = -1;
    std::string out;
  };
  std::vector<Part> parts;
  for (OpType type : {zrank_op, zincrby_op}) {
    const int clients = type == zrank_op ? readers : updaters;
    if (clients == 0) continue;
    const std::uint64_t requests = per_client * static_cast<std::uint64_t>(clients);
    Part part{type, clients, requests,
              {"redis-benchmark", "-h", o.target.substr(0, colon), "-p", o.target.substr(colon + 1), "-c",
               std::to_string(clients), "-n", std::to_string(requests), "-P", std::to_string(o.pipeline), "-r",
               std::to_string(o.items), "--csv"}};
    if (type == zrank_op) part.argv.insert(part.argv.end(), {"ZRANK", o.key, "m:__rand_int__"});
    else part.argv.insert(part.argv.end(), {"ZINCRBY", o.key, "1", "m:__rand_int__"});
    parts.push_back(std::move(part));
  }
  for (Part& part : parts) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw Failure(std::string("pipe: ") + std::strerror(errno));
    part.pid = start_process(part.argv, o.client_cpus, fds[1]);
    ::close(fds[1]);
    part.fd = fds[0];
  }
  for (Part& part : parts) {
    char chunk[4096];
    for (ssize_t n; (n = ::read(part.fd, chunk, sizeof chunk)) > 0;) part.out.append(chunk, static_cast<std::size_t>(n));
    ::close(part.fd);
    if (const int status = wait_process(part.pid, &run.driver_cpu_s); status != 0)
      throw Failure("redis-benchmark exited with status " + std::to_string(status));
  }
  double rps = 0;
  for (const Part& part : parts) {
    const auto f = benchmark_figures(part.out);
    const std::string op = part.type == zrank_op ? "zrank" : "zincrby";
    rps += f.at("rps");
    run.tally.in_window[part.type] = part.requests;
    run.tally.completed += part.requests;
    run.driver_figures[op + "_requests_per_s"] = f.at("rps");
    run.driver_figures[op + "_clients"] = part.clients;
    for (const std::string q : {"p50", "p95", "p99"})
      if (f.count(q + "_latency_ms")) run.driver_figures["latency_" + op + "_" + q + "_ns"] = f.at(q + "_latency_ms") * 1e6;
    if (part.type == zincrby_op) run.tally.increments[0] = static_cast<std::uint32_t>(part.requests);  // the total (validate)
  }
  run.driver_figures["requests_per_s"] = rps;  // each process's own rate, summed
  finish(o, run);
  return run;
}


// ---- the in-process path --------------------------------------------------------------------------

Run run_in_process(const Options& o) {
  Run run(o.items);
  Keyspace keys(o.keyspace);
  const ServerSettings settings;
  ServerStatus status(o.keyspace.threads);
  Commands commands(keys, settings, status);
  Session session{.authenticated = true};
  auto execute = [&](int tid, std::initializer_list<std::string_view> args, std::string& out) {
    out.clear();
    commands.execute(tid, std::span<const std::string_view>(args.begin(), args.size()), session, out);
  };
  std::string out;
  for (std::uint64_t i = 0; i < o.items; ++i) {
    const std::string score = std::to_string(i), name = member_name(i);
    execute(0, {"ZADD", o.key, score, name}, out);
  }
  const Window window = make_window(o);
  const int n = o.keyspace.threads;
  std::vector<Tally> tallies(n, Tally(o.items));
  std::vector<std::string> errors(n);
  run.thread_cpu_s.assign(n, 0.0);
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(o.seed * 1000003 + static_cast<std::uint64_t>(t));
      Session own{.authenticated = true};
      std::string reply, name;
      RespValue v;
      for (auto now = Clock::now(); now < window.end; now = Clock::now()) {
        const auto member = static_cast<std::uint32_t>(rng() % o.items);
        const OpType type = static_cast<int>(rng() % 100) < o.update_percent ? zincrby_op : zrank_op;
        name = member_name(member);  // short: no allocation (the string's own buffer)
        reply.clear();
        const std::string_view zincrby[] = {"ZINCRBY", o.key, "1", name}, zrank[] = {"ZRANK", o.key, name};
        if (type == zincrby_op) commands.execute(t, zincrby, own, reply);
        else commands.execute(t, zrank, own, reply);
        const auto done = Clock::now();
        if (parse_reply(reply, v) != reply.size() || !valid_reply(type, v, o.items)) {
          errors[t] = std::string("a bad reply to ") + (type == zrank_op ? "ZRANK: " : "ZINCRBY: ") + reply;
          return;
        }
        if (type == zincrby_op) ++tallies[t].increments[member];
        ++tallies[t].completed;
        if (window.contains(now, done)) {
          ++tallies[t].in_window[type];
          tallies[t].latency[type].record(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(done - now).count()));
        }
      }
      timespec cpu{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
      run.thread_cpu_s[t] = static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) * 1e-9;
    });
  for (auto& t : threads) t.join();
  gather(run, tallies, errors, o);
  run.counters = keys.method_counters(0);
  execute(0, {"ZRANGE", o.key, "0", "-1", "WITHSCORES"}, out);
  RespValue v;
  if (parse_reply(out, v) != out.size()) throw Failure("ZRANGE's reply is malformed");
  run.final_scores = scores_of(v);
  return run;
}

// ---- the report -----------------------------------------------------------------------------------

double cpu_of(const std::map<std::string, std::string>& info, const std::string& field) {
  const auto it = info.find(field);
  return it == info.end() ? -1.0 : std::stod(it->second);
}

// Every member's score is its start (its index) plus the ZINCRBYs acknowledged for it.
std::string validate(const Options& o, const Run& run) {
  if (run.final_scores.size() != o.items)
    return "the set holds " + std::to_string(run.final_scores.size()) + " members, not " + std::to_string(o.items);
  if (!run.per_member) {  // the scores' total: the start's plus one per ZINCRBY answered
    double total = 0;
    for (const auto& [member, score] : run.final_scores) total += score;
    const double want = static_cast<double>(o.items) * static_cast<double>(o.items - 1) / 2 + static_cast<double>(run.tally.increments[0]);
    if (total != want) return "the scores add up to " + std::to_string(total) + ", not " + std::to_string(want);
    return {};
  }
  for (std::uint64_t i = 0; i < o.items; ++i) {
    const auto it = run.final_scores.find(member_name(i));
    const double want = static_cast<double>(i) + static_cast<double>(run.tally.increments[i]);
    if (it == run.final_scores.end()) return member_name(i) + " is missing";
    if (it->second != want) return member_name(i) + " has score " + std::to_string(it->second) + ", not " + std::to_string(want);
  }
  return {};
}

Json report(const Options& o, const Run& run, const std::string& validation_error, Json machine) {
  Json doc;
  Json& config = doc["config"];
  config["program"] = program;
  config["path"] = o.in_process ? "in_process" : "network";
  if (!o.in_process) {
    config["target"] = o.target;
    config["server"] = run.info_before.count("server_name") ? run.info_before.at("server_name") : "redis-server";
    config["clients"] = o.clients;
    config["pipeline"] = o.pipeline;
    config["client_threads"] = o.client_threads;
  }
  const auto method = o.in_process ? std::string(method_name(o.keyspace.method))
                                   : (run.info_before.count("method") ? run.info_before.at("method") : "single_thread");
  config["method"] = method;
  if (o.in_process) {
    config["threads"] = o.keyspace.threads;
    if (o.keyspace.method == Method::nr) {
      config["nr_replicas"] = o.keyspace.nr_replicas;
      config["nr_log_entries"] = o.keyspace.nr_log_entries;
    }
  } else if (run.info_before.count("worker_threads")) {
    config["threads"] = std::stoi(run.info_before.at("worker_threads"));
  }
  config["driver"] = o.in_process ? "in_process" : o.driver;
  if (!o.spawn.empty()) {
    std::string cpus;
    for (int c : o.server_cpus) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
    config["server_cpus"] = cpus.empty() ? "any" : cpus;
  }
  config["update_percent"] = o.update_percent;
  config["items"] = o.items;
  config["duration_s"] = o.duration_s;
  config["warmup_s"] = o.warmup_s;
  config["seed"] = o.seed;
  doc["machine"] = std::move(machine);
  doc["warnings"] = Json::array();

  Json t;
  t["trial"] = 0;
  const std::uint64_t reads = run.tally.in_window[zrank_op], updates = run.tally.in_window[zincrby_op];
  t["requests"] = reads + updates;
  t["requests_per_s"] = run.driver_figures.contains("requests_per_s") ? run.driver_figures["requests_per_s"].get<double>()
                                                                     : static_cast<double>(reads + updates) / run.window_s;
  t["zrank_requests"] = reads;
  t["zincrby_requests"] = updates;
  Json histograms = Json::object();
  cdsb::bench::put_latency(t, histograms, "zrank", run.tally.latency[zrank_op]);
  cdsb::bench::put_latency(t, histograms, "zincrby", run.tally.latency[zincrby_op]);
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  const double own_cpu = seconds_of(self);
  // The method's own figures (from after the prefill to the end; the network path's from INFO).
  auto put_method = [&](const std::string& name, double value) {
    if (name == "avg_batch") t["method_avg_batch"] = value;
    else t["method_" + name] = static_cast<std::uint64_t>(value);
  };
  if (o.in_process) {
    double total = 0;
    for (double s : run.thread_cpu_s) total += s;
    t["thread_cpu_s"] = run.thread_cpu_s;
    t["server_cpu_s"] = total;  // the threads' CPU over warm-up and window (the server's part here)
    const MethodCounters& m = run.counters;
    const Method k = o.keyspace.method;
    if (k == Method::nr || k == Method::fc || k == Method::fcplus) {
      put_method("combines", static_cast<double>(m.combines));
      put_method("combined_ops", static_cast<double>(m.combined_ops));
      put_method("avg_batch", m.combines ? static_cast<double>(m.combined_ops) / static_cast<double>(m.combines) : 0.0);
    }
    if (k == Method::nr) {
      put_method("nr_log_entries_written", static_cast<double>(m.log_entries_written));
      put_method("nr_log_full_waits", static_cast<double>(m.log_full_waits));
      put_method("nr_catch_ups_by_others", static_cast<double>(m.catch_ups_by_others));
    }
    if (k == Method::sl || k == Method::rwl) put_method("lock_waits", static_cast<double>(m.lock_waits));
    const auto rss = cdsb::bench::current_rss_bytes(), peak = cdsb::bench::peak_rss_bytes();
    t["rss_bytes"] = rss ? Json(*rss) : Json("unavailable");
    t["peak_rss_bytes"] = peak ? Json(*peak) : Json("unavailable");
  } else {
    for (const char* name : {"combines", "combined_ops", "nr_log_entries_written", "nr_log_full_waits",
                             "nr_catch_ups_by_others", "lock_waits"})
      if (run.info_after.count(name) && run.info_before.count(name))
        put_method(name, std::stod(run.info_after.at(name)) - std::stod(run.info_before.at(name)));
    t["client_cpu_s"] = own_cpu + run.driver_cpu_s;
    // Which side was the limit: the pinned CPUs' busy share from after the prefill to the end.
    for (const auto& [name, cpus] : {std::pair{"client_cpus_busy", &o.client_cpus}, std::pair{"server_cpus_busy", &o.server_cpus}}) {
      const auto share = busy_share(run.costs_before, run.costs_after, *cpus);
      t[name] = share ? Json(*share) : Json("unavailable");
    }
    if (run.costs_before.server_sleeps && run.costs_after.server_sleeps && run.tally.completed > 0)
      t["server_sleeps_per_request"] = static_cast<double>(*run.costs_after.server_sleeps - *run.costs_before.server_sleeps) /
                                       static_cast<double>(run.tally.completed);
    else
      t["server_sleeps_per_request"] = "unavailable";  // a server this program did not start
    const double before = cpu_of(run.info_before, "used_cpu_user") + cpu_of(run.info_before, "used_cpu_sys");
    const double after = cpu_of(run.info_after, "used_cpu_user") + cpu_of(run.info_after, "used_cpu_sys");
    // The server's CPU from after the prefill to the end (warm-up, window, drain), against every
    // request it answered in that time.
    const double server_cpu = after - before;
    t["server_cpu_s"] = server_cpu;
    t["requests_per_server_cpu_s"] = server_cpu > 0 ? static_cast<double>(run.tally.completed) / server_cpu : 0.0;
    std::vector<double> workers;
    for (int w = 0; run.info_after.count("used_cpu_worker_" + std::to_string(w)); ++w)
      workers.push_back(cpu_of(run.info_after, "used_cpu_worker_" + std::to_string(w)) -
                        cpu_of(run.info_before, "used_cpu_worker_" + std::to_string(w)));
    if (!workers.empty()) t["server_worker_cpu_s"] = workers;
    if (run.info_after.count("used_memory_rss")) t["server_rss_bytes"] = std::stoull(run.info_after.at("used_memory_rss"));
    if (run.info_after.count("used_memory")) t["server_used_memory_bytes"] = std::stoull(run.info_after.at("used_memory"));
  }
  for (const auto& [k, v] : run.driver_figures.items())
    if (k != "requests_per_s") t[k] = v;
  t["valid"] = validation_error.empty();
  if (!validation_error.empty()) t["validation_error"] = validation_error;
  t["latency_histogram_ns"] = histograms;  // [lower, upper, count]; JSON output only
  // The harness's shape (docs/output.md), so the runner reads it as a trial: a failed
  // validation is the summary's FAIL.
  doc["trials"] = Json::array({t});
  doc["summary"] = {{"trials_run", 1}, {"result", validation_error.empty() ? "PASS" : "FAIL"}};
  return doc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cdsbench-zset-load: ZRANK/ZINCRBY load over one sorted set, through the network to a Redis-protocol "
               "server, or in process (the commands called directly); every reply checked, every score validated",
               program};
  Options o;
  std::string clients = "50", pipeline = "1", client_threads = "1", update = "10", items = "10000", duration = "5",
              warmup = "1", seed = "1", method = "nr", threads = "1", replicas = "1", log_entries = "1048576";
  app.add_option("--target", o.target, "The server: IPV4:PORT or unix:PATH");
  app.add_flag("--in-process", o.in_process, "Run the commands in this process, with no network (the study's mode)");
  app.add_option("--clients", clients, "Network: connections [50]");
  app.add_option("--pipeline", pipeline, "Network: requests in flight on each connection [1]");
  app.add_option("--client-threads", client_threads, "Network: threads driving the connections [1]");
  app.add_option("--update-ratio", update, "Percent of requests that are ZINCRBY, the rest ZRANK [10]");
  app.add_option("--items", items, "Members of the sorted set, added before measuring [10000]");
  app.add_option("--key", o.key, "The sorted set's key (deleted first) [zset_bench]");
  app.add_option("--duration", duration, "Seconds measured [5]");
  app.add_option("--warmup", warmup, "Seconds run before measuring [1]");
  app.add_option("--seed", seed, "Seed of the request streams [1]");
  app.add_option("--method", method, "In process: nr, sl, rwl, fc or fcplus [nr]");
  app.add_option("--threads", threads, "In process: threads calling the commands [1]");
  app.add_option("--nr-replicas", replicas, "In process, nr: replicas [1]");
  app.add_option("--nr-log-entries", log_entries, "In process, nr: log entries of the key (the study's 1048576) [1048576]");
  app.add_option("--json", o.json, "Also write the report to FILE as JSON");
  std::string server_cpus, client_cpus;
  app.add_option("--driver", o.driver,
                 "Network: who sends the requests: load (this program's clients) or redis-benchmark (the real one, "
                 "one process per command, at once) [load]");
  app.add_option("--server-cpus", server_cpus, "The CPUs the server started after -- may use, e.g. 1 or 2-3");
  app.add_option("--client-cpus", client_cpus, "Network: the CPUs the clients may use, e.g. 0");
  app.add_option("server", o.spawn,
                 "After --: a server command to start before the run (pinned to --server-cpus) and stop after "
                 "(SIGTERM; it must exit with status 0)");
  if (auto stop = cdsb::bench::parse_with_cli11(app, argc, argv)) {
    if (std::holds_alternative<HelpShown>(*stop)) return 0;
    std::cerr << program << ": " << std::get<UsageError>(*stop).message << '\n';
    return 2;
  }
  const int parsed = cdsb::bench::exit_status_of(program, [&] {
    using cdsb::bench::parse_integer;
    if (o.in_process == !o.target.empty()) throw UsageError{"choose one path: --target IPV4:PORT, --target unix:PATH or --in-process"};
    o.clients = parse_integer<int>("--clients", clients, 1, 10000);
    o.pipeline = parse_integer<int>("--pipeline", pipeline, 1, 1000);
    o.client_threads = parse_integer<int>("--client-threads", client_threads, 1, 256);
    if (o.client_threads > o.clients) throw UsageError{"--client-threads: more threads than --clients"};
    o.update_percent = parse_integer<int>("--update-ratio", update, 0, 100);
    o.items = parse_integer<std::uint64_t>("--items", items, 1, 100'000'000);
    o.duration_s = parse_integer<int>("--duration", duration, 1, 86400);
    o.warmup_s = parse_integer<int>("--warmup", warmup, 0, 3600);
    o.seed = parse_integer<std::uint64_t>("--seed", seed, 0, UINT64_MAX);
    const auto chosen = method_named(method);
    if (!chosen) throw UsageError{"--method: '" + method + "' is not a method; allowed: nr, sl, rwl, fc or fcplus"};
    o.keyspace.method = *chosen;
    o.keyspace.threads = parse_integer<int>("--threads", threads, 1, 1024);
    o.keyspace.nr_replicas = parse_integer<int>("--nr-replicas", replicas, 1, o.keyspace.threads);
    o.keyspace.nr_log_entries = parse_integer<std::size_t>("--nr-log-entries", log_entries, 2, std::size_t{1} << 26);
    o.keyspace.seed = o.seed;
    if (!o.target.empty())
      if (const std::string error = target_error(o.target); !error.empty()) throw UsageError{error};
    if (o.driver != "load" && o.driver != "redis-benchmark")
      throw UsageError{"--driver: '" + o.driver + "' is not a driver; allowed: load or redis-benchmark"};
    if (o.driver == "redis-benchmark" && (o.in_process || o.target.rfind("unix:", 0) == 0))
      throw UsageError{"--driver redis-benchmark: needs --target IPV4:PORT"};
    if (o.in_process && (!o.spawn.empty() || !client_cpus.empty()))
      throw UsageError{"a server command after -- and --client-cpus: network runs only; allowed without --in-process"};
    if (!server_cpus.empty() && o.spawn.empty()) throw UsageError{"--server-cpus: pins the server started after --; name one"};
    o.server_cpus = parse_cpus("--server-cpus", server_cpus);
    o.client_cpus = parse_cpus("--client-cpus", client_cpus);
    return 0;
  });
  if (parsed != 0) return parsed;
  return cdsb::bench::exit_status_of(program, [&] {
    Json machine = cdsb::bench::machine_json(cdsb::Topology());  // the machine's, before --client-cpus narrows ours
    pin(0, o.client_cpus);
    std::optional<SpawnedServer> server;
    if (!o.spawn.empty()) server.emplace(o);
    const pid_t server_pid = server ? server->pid() : -1;
    const Run run = o.in_process                  ? run_in_process(o)
                    : o.driver == "redis-benchmark" ? run_redis_benchmark(o, server_pid)
                                                    : run_network(o, server_pid);
    if (server) {
      if (const int status = server->stop(); status != 0)
        throw Failure("the server started after -- exited with status " + std::to_string(status) + " when stopped");
    }
    const std::string validation_error = validate(o, run);
    const Json doc = report(o, run, validation_error, std::move(machine));
    if (!o.json.empty() && !cdsb::bench::write_file_atomically(o.json, doc.dump(2) + "\n"))
      throw Failure(o.json + ": cannot write the report");
    cdsb::bench::print_kv(std::cout, doc["config"]);
    cdsb::bench::print_kv(std::cout, doc["machine"]);
    cdsb::bench::print_kv(std::cout, doc["trials"][0]);
    cdsb::bench::print_kv(std::cout, doc["summary"]);
    if (!validation_error.empty()) {
      std::cerr << program << ": validation failed: " << validation_error << '\n';
      return 1;
    }
    return 0;
  });
}
