// cdsbench-zset-lincheck: records many small concurrent histories of the sorted-set server's
// single-key commands and checks them for linearizability (tools/lincheck, model `zsets`).
//
// Each history: --threads threads start together and each sends its own random commands
// (ZINCRBY, ZADD XX CH, ZREM, ZSCORE, ZRANK, ZCARD, DEL, EXISTS) to a few keys of a few members,
// so sets are created, emptied (which removes their key), deleted and created again while other
// commands run on them: the key space's life cycle (keyspace.hpp) is what the model checks,
// beside each set's own operations. A command's interval is from just before it is sent (or
// Commands::execute is called) to just after its whole reply is read.
//
// Two paths, as the load generator's:
//   in process (default)           Commands::execute of a key space per --method, called by
//                                  the threads directly (the server's workers call the same);
//   --target IPV4:PORT|unix:PATH   a running server (ours or a real redis-server), one
//                                  connection per thread.
// Every history uses keys of its own ("lincheck:<history>:<key>"), deleted after it, so the
// key space carries its past (removed sets, retired memory) into each new history.
//
// Output: one line per violation with its replay command, a summary line per method, and
// result=PASS|FAIL|UNKNOWN. Exit status: 0 every history linearizable; 1 a violation, a bad
// reply or an unreachable server; 2 a usage error; 3 no violation but some history's check
// timed out.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <barrier>
#include <charconv>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "apps/zset_server/commands.hpp"
#include "apps/zset_server/keyspace.hpp"
#include "apps/zset_server/resp_client.hpp"
#include "bench/check/checker.hpp"
#include "bench/check/history.hpp"
#include "bench/harness/options.hpp"

namespace {

using cdsb::bench::HelpShown;
using cdsb::bench::HistoryEvent;
using cdsb::bench::HistoryRecorder;
using cdsb::bench::UsageError;
using namespace cdsb::zset;
namespace fs = std::filesystem;

constexpr const char* program = "cdsbench-zset-lincheck";

struct Options {
  std::vector<Method> methods;  // in process
  std::string target;           // or a running server
  int threads = 3, ops_per_thread = 0, histories = 1000, keys = 2, members = 3;
  int nr_replicas = 1;
  std::size_t nr_log_entries = 16;  // small: the log wraps many times in each history
  std::uint64_t seed = 0;
  std::string checker, out_dir, timeout = "10s";
};

// One thread's way to the server: a request in, its reply out (valid until the next call).
class Client {
 public:
  virtual ~Client() = default;
  virtual const RespValue& execute(std::span<const std::string_view> args) = 0;
};

class InProcessClient final : public Client {
 public:
  InProcessClient(Commands& commands, int tid) : commands_(commands), tid_(tid) {}
  const RespValue& execute(std::span<const std::string_view> args) override {
    reply_.clear();
    commands_.execute(tid_, args, session_, reply_);
    const std::size_t used = parse_reply(reply_, value_);
    if (used == 0 || used != reply_.size()) throw std::runtime_error("not one whole reply: " + reply_);
    return value_;
  }

 private:
  Commands& commands_;
  const int tid_;
  Session session_{.authenticated = true};
  std::string reply_;
  RespValue value_;
};

class NetworkClient final : public Client {
 public:
  explicit NetworkClient(const std::string& target) : connection_(target) {}
  const RespValue& execute(std::span<const std::string_view> args) override { return connection_.call(args); }

 private:
  BlockingClient connection_;
};

// The model's operations (tools/lincheck/models_blackbox.go, zsetsSpec).
enum class Command { zincrby, zaddxx, zrem, zscore, zrank, zcard, del, exists };
constexpr const char* model_op[] = {"zincrby", "zaddxx", "zrem", "zscore", "zrank", "zcard", "del", "exists"};

// Draws a command as the checker's random generator does (models_blackbox_test.go): updates
// and reads in equal parts, with enough ZREM and DEL that keys die and are created again.
Command draw_command(std::mt19937_64& rng) {
  constexpr Command weights[] = {Command::zincrby, Command::zincrby, Command::zaddxx, Command::zrem, Command::zrem,
                                 Command::zscore,  Command::zrank,   Command::zcard,  Command::exists, Command::del};
  return weights[rng() % std::size(weights)];
}

// The reply as the model's result: an integer, or nullopt for nil. Throws for any other reply.
std::optional<std::int64_t> result_of(Command c, const RespValue& v) {
  const bool nil = v.type == '$' && v.integer < 0;
  if (nil && (c == Command::zscore || c == Command::zrank)) return std::nullopt;
  if (c == Command::zincrby || c == Command::zscore) {
    // Integer increments keep every score an integer, which Redis prints without a point.
    std::int64_t score = 0;
    const auto [end, ec] = std::from_chars(v.text.data(), v.text.data() + v.text.size(), score);
    if (v.type == '$' && !nil && ec == std::errc() && end == v.text.data() + v.text.size()) return score;
  } else if (v.type == ':') {
    return v.integer;
  }
  throw std::runtime_error(std::string("an unexpected reply (") + v.type + std::string(v.text.substr(0, 200)) + ")");
}

// Commands per thread in the history of this seed: --ops-per-thread, or drawn from the seed alone,
// so that --seed replays it.
int ops_per_thread_of(const Options& o, std::uint64_t history_seed) {
  std::mt19937_64 rng(history_seed);
  return o.ops_per_thread ? o.ops_per_thread : 5 + static_cast<int>(rng() % 46);
}

// Keys named after the run's seed and the history, emptied before the history begins.
std::string key_name(std::uint64_t seed, int history, int key) {
  return "lincheck:" + std::to_string(seed) + ":" + std::to_string(history) + ":" + std::to_string(key);
}

// Members by number, zero-padded: Redis breaks score ties by the members' bytes, the model by
// their numbers, and the two orders agree only at equal lengths.
std::string member_name(int member) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "m%04d", member);
  return buf;
}

// Records --histories histories into `out` (JSON lines), the clients made by make_client(tid).
// Returns what was wrong with a reply, where (empty: every reply was one the command may give).
template <class MakeClient>
std::string record(const Options& o, std::ostream& out, MakeClient&& make_client) {
  const int n = o.threads;
  std::vector<std::unique_ptr<Client>> clients;
  for (int t = 0; t < n; ++t) clients.push_back(make_client(t));
  std::vector<std::string> errors(n);
  std::barrier sync(n);
  for (int h = 0; h < o.histories; ++h) {
    const std::uint64_t history_seed = o.seed + static_cast<std::uint64_t>(h);
    const int ops_per_thread = ops_per_thread_of(o, history_seed);
    std::vector<std::string> keys;
    for (int k = 0; k < o.keys; ++k) keys.push_back(key_name(o.seed, h, k));
    // Whatever an earlier run left in these keys goes first: the model starts from nothing.
    std::vector<std::string_view> del{"DEL"};
    for (const std::string& k : keys) del.push_back(k);
    if (clients[0]->execute(del).type != ':') throw std::runtime_error("DEL of a history's keys failed");
    HistoryRecorder history(n, static_cast<std::size_t>(ops_per_thread));
    std::vector<std::thread> threads;
    for (int t = 0; t < n; ++t)
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(history_seed * 1000003 + static_cast<std::uint64_t>(t));
        sync.arrive_and_wait();  // every thread starts at once: their commands overlap
        for (int i = 0; i < ops_per_thread && errors[t].empty(); ++i) {
          const Command c = draw_command(rng);
          const int key = static_cast<int>(rng() % static_cast<std::uint64_t>(o.keys));
          const int member = static_cast<int>(rng() % static_cast<std::uint64_t>(o.members));
          // Deltas in [-2, 2] and XX scores in [0, 2]: scores collide, ranks tie, ZADD XX often changes nothing.
          const std::int64_t value = c == Command::zincrby ? static_cast<std::int64_t>(rng() % 5) - 2 : static_cast<std::int64_t>(rng() % 3);
          const std::string m = member_name(member), v = std::to_string(value);
          std::vector<std::string_view> args;
          switch (c) {
            case Command::zincrby: args = {"ZINCRBY", keys[key], v, m}; break;
            case Command::zaddxx: args = {"ZADD", keys[key], "XX", "CH", v, m}; break;
            case Command::zrem: args = {"ZREM", keys[key], m}; break;
            case Command::zscore: args = {"ZSCORE", keys[key], m}; break;
            case Command::zrank: args = {"ZRANK", keys[key], m}; break;
            case Command::zcard: args = {"ZCARD", keys[key]}; break;
            case Command::del: args = {"DEL", keys[key]}; break;
            case Command::exists: args = {"EXISTS", keys[key]}; break;
          }
          HistoryEvent e{};
          e.op = model_op[static_cast<int>(c)];
          e.args[0] = key;
          e.args[1] = member;
          e.args[2] = value;
          e.arg_count = c == Command::zcard || c == Command::del || c == Command::exists ? 1
                        : c == Command::zincrby || c == Command::zaddxx                  ? 3
                                                                                          : 2;
          e.call_ns = cdsb::bench::call_stamp_ns();
          try {
            const RespValue& reply = clients[t]->execute(args);
            e.return_ns = cdsb::bench::return_stamp_ns();
            const std::optional<std::int64_t> r = result_of(c, reply);
            e.has_result = r.has_value();
            e.result = r.value_or(0);
          } catch (const std::exception& ex) {
            errors[t] = std::string(ex.what()) + " to " + std::string(args[0]) + " in history " + std::to_string(h) +
                        ", thread " + std::to_string(t);
            break;
          }
          history.record(t, e);
        }
      });
    for (auto& t : threads) t.join();
    for (const std::string& e : errors)
      if (!e.empty()) return e;
    history.write_jsonl(out, h);
    // The history's keys go; the key space keeps what their removal left to reclaim.
    if (clients[0]->execute(del).type != ':') throw std::runtime_error("DEL of a history's keys failed");
  }
  return {};
}

// Records and checks one key space (a method in process, or the server at --target); its status.
int check(const Options& o, const std::string& name, const std::function<std::unique_ptr<Client>(int)>& make_client) {
  const fs::path dir = fs::path(o.out_dir) / name;
  fs::create_directories(dir);
  const fs::path input = dir / "histories.jsonl";
  const auto record_start = std::chrono::steady_clock::now();
  std::ofstream out(input);
  out << "{\"meta\": {\"program\": \"" << program << "\", \"method\": \"" << name << "\"}}\n";
  const std::string bad_reply = record(o, out, make_client);
  out.close();
  if (!out) throw std::runtime_error(input.string() + ": cannot write the histories");
  if (!bad_reply.empty()) {
    std::cout << "violation method=" << name << " reason=\"" << bad_reply << "\"\n";
    return 1;
  }
  const double record_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - record_start).count();
  const auto check_start = std::chrono::steady_clock::now();
  const cdsb::bench::CheckerVerdicts verdicts = cdsb::bench::run_checker(o.checker, "zsets", input, dir, o.timeout);
  const double check_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - check_start).count();
  if (verdicts.summary.empty() || verdicts.exit_code < 0 || verdicts.exit_code == 2)
    throw std::runtime_error("the checker failed on " + input.string() + " (exit " + std::to_string(verdicts.exit_code) +
                             "); run it by hand: " + o.checker + " --model zsets --input " + input.string());
  const auto replay = [&](int h) {
    std::string r = std::string(program) + (o.target.empty() ? " --method " + name : " --target " + o.target) +
                    " --threads " + std::to_string(o.threads) + " --ops-per-thread " +
                    std::to_string(ops_per_thread_of(o, o.seed + static_cast<std::uint64_t>(h))) + " --keys " +
                    std::to_string(o.keys) + " --members " + std::to_string(o.members);
    if (o.target.empty() && name == "nr")
      r += " --nr-replicas " + std::to_string(o.nr_replicas) + " --nr-log-entries " + std::to_string(o.nr_log_entries);
    return r + " --histories 1 --seed " + std::to_string(o.seed + static_cast<std::uint64_t>(h));
  };
  constexpr std::size_t shown = 20;  // lines of each kind printed per method
  for (std::size_t i = 0; i < std::min(shown, verdicts.violations.size()); ++i)
    std::cout << "violation method=" << name << " history=" << verdicts.violations[i]
              << " reason=\"not linearizable\" replay=\"" << replay(verdicts.violations[i]) << "\"\n";
  for (std::size_t i = 0; i < std::min(shown, verdicts.unknown.size()); ++i)
    std::cout << "unknown method=" << name << " history=" << verdicts.unknown[i] << " reason=\"the checker timed out ("
              << o.timeout << ")\" replay=\"" << replay(verdicts.unknown[i]) << "\"\n";
  for (std::size_t i = 0; i < std::min(shown, verdicts.visualizations.size()); ++i)
    std::cout << "visualization=" << verdicts.visualizations[i] << '\n';
  if (verdicts.violations.size() > shown) std::cout << "... " << verdicts.violations.size() - shown << " more violations not shown\n";
  std::cout << "method=" << name << " histories=" << o.histories << " violations=" << verdicts.violations.size()
            << " unknown=" << verdicts.unknown.size() << " record_s=" << record_s << " check_s=" << check_s
            << " histories_file=" << input.string() << '\n';
  if (!verdicts.violations.empty()) return 1;
  return verdicts.unknown.empty() ? 0 : 3;
}

Options parse(int argc, char** argv) {
  CLI::App app{"cdsbench-zset-lincheck: record concurrent histories of the sorted-set server's single-key commands "
               "and check them for linearizability (the checker's model zsets)",
               program};
  Options o;
  std::string methods = "all", threads = "3", ops = "0", histories = "1000", keys = "2", members = "3", replicas = "1",
              log_entries = "16", seed;
  app.add_option("--method", methods, "In process: methods, comma-separated, or all (nr, sl, rwl, fc, fcplus) [all]");
  app.add_option("--target", o.target, "Instead: a running server, IPV4:PORT or unix:PATH (one connection per thread)");
  app.add_option("--threads", threads, "Threads per history [3]");
  app.add_option("--ops-per-thread", ops, "Commands per thread and history [5..50, drawn per history]");
  app.add_option("--histories", histories, "Histories per method [1000]");
  app.add_option("--keys", keys, "Keys per history [2]");
  app.add_option("--members", members, "Members a command chooses from (at most 10000) [3]");
  app.add_option("--nr-replicas", replicas, "nr in process: replicas of each set [1]");
  app.add_option("--nr-log-entries", log_entries, "nr in process: log entries per set [16: the log wraps often]");
  app.add_option("--seed", seed, "Master seed; history h uses seed + h [drawn, printed]");
  app.add_option("--checker", o.checker, "The checker binary [next to this one]");
  app.add_option("--out", o.out_dir, "Directory for the histories and the visualisations of violations [a new one in /tmp]");
  app.add_option("--timeout-per-history", o.timeout, "The checker's limit per history [10s]");
  if (auto stop = cdsb::bench::parse_with_cli11(app, argc, argv)) {
    if (std::holds_alternative<HelpShown>(*stop)) throw HelpShown{};
    throw std::get<UsageError>(*stop);
  }
  using cdsb::bench::parse_integer;
  o.threads = parse_integer<int>("--threads", threads, 1, 64);
  o.ops_per_thread = parse_integer<int>("--ops-per-thread", ops, 0, 100000);
  o.histories = parse_integer<int>("--histories", histories, 1, 10'000'000);
  o.keys = parse_integer<int>("--keys", keys, 1, 1000);
  o.members = parse_integer<int>("--members", members, 1, 10000);
  o.nr_replicas = parse_integer<int>("--nr-replicas", replicas, 1, o.threads);
  o.nr_log_entries = parse_integer<std::size_t>("--nr-log-entries", log_entries, 2, std::size_t{1} << 26);
  o.seed = seed.empty() ? std::random_device{}() : parse_integer<std::uint64_t>("--seed", seed, 0, UINT64_MAX);
  if (!o.target.empty()) {
    if (const std::string error = target_error(o.target); !error.empty()) throw UsageError{error};
    if (app.count("--method") || app.count("--nr-replicas") || app.count("--nr-log-entries"))
      throw UsageError{"--target: the server's own options choose its method; --method, --nr-replicas and --nr-log-entries are for the in-process path"};
  } else {
    std::stringstream items(methods);
    std::string item;
    while (std::getline(items, item, ',')) {
      if (item == "all") {
        for (std::size_t m = 0; m < method_names.size(); ++m) o.methods.push_back(static_cast<Method>(m));
      } else if (const auto m = method_named(item)) {
        o.methods.push_back(*m);
      } else {
        throw UsageError{"--method: '" + item + "' is not a method; allowed: nr, sl, rwl, fc, fcplus or all"};
      }
    }
  }
  if (o.checker.empty()) o.checker = cdsb::bench::checker_beside_this_program();
  if (!fs::exists(o.checker)) throw UsageError{"--checker: '" + o.checker + "' does not exist; build it with make"};
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  return cdsb::bench::exit_status_of(program, [&] {
    Options o = parse(argc, argv);
    if (o.out_dir.empty()) {
      char tmpl[] = "/tmp/cdsbench-zset-lincheck-XXXXXX";
      if (!mkdtemp(tmpl)) throw std::runtime_error("cannot create a temporary directory");
      o.out_dir = tmpl;
    }
    std::cout << "seed=" << o.seed << "\nout=" << o.out_dir << '\n';
    int status = 0;
    const auto fold = [&](int s) {
      if (s == 1 || (s == 3 && status == 0)) status = s;
    };
    if (!o.target.empty()) {
      fold(check(o, "server", [&](int) { return std::make_unique<NetworkClient>(o.target); }));
    } else {
      for (const Method m : o.methods) {
        KeyspaceConfig config{.method = m, .threads = o.threads, .nr_replicas = m == Method::nr ? o.nr_replicas : 1,
                              .nr_log_entries = o.nr_log_entries, .seed = o.seed};
        Keyspace keys(config);
        const ServerSettings settings;
        ServerStatus status_of_server(o.threads);
        Commands commands(keys, settings, status_of_server);
        fold(check(o, method_name(m), [&](int tid) { return std::make_unique<InProcessClient>(commands, tid); }));
      }
    }
    std::cout << "result=" << (status == 0 ? "PASS" : status == 1 ? "FAIL" : "UNKNOWN") << '\n';
    return status;
  });
}
