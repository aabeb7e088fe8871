#include "apps/zset_server/commands.hpp"

#include <malloc.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <unordered_map>

#include "apps/zset_server/reply.hpp"
#include "apps/zset_server/resp_parser.hpp"
#include "bench/core/machine_info.hpp"

namespace cdsb::bench {
extern const char* const git_commit;
}

namespace cdsb::zset {

using seq::SortedSet;

// ---- argument parsing, as Redis 7.0 parses each kind ------------------------------------

namespace {

constexpr std::string_view syntax_error = "ERR syntax error";
constexpr std::string_view not_integer = "ERR value is not an integer or out of range";
constexpr std::string_view not_float = "ERR value is not a valid float";
constexpr std::string_view range_not_float = "ERR min or max is not a float";

bool equals_nocase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y)); });
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}


// Redis's getDoubleFromObject: strtod over the whole argument, no leading space, no overflow
// or underflow to zero, no NaN ("inf", "-inf" and hexadecimal are accepted, as strtod does).
bool parse_score(std::string_view s, double& out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  const std::string text(s);  // strtod needs the terminating NUL
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return false;
  if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || std::fpclassify(v) == FP_ZERO)) return false;
  if (std::isnan(v)) return false;
  out = v;
  return true;
}

// Redis's zslParseRange for one bound: "(x" is exclusive; strtod up to the first NUL.
bool parse_bound(std::string_view s, SortedSet::ScoreBound& out) {
  const std::string text(s);
  const char* p = text.c_str();
  out.exclusive = p[0] == '(';
  if (out.exclusive) ++p;
  char* end = nullptr;
  out.value = std::strtod(p, &end);
  return end[0] == '\0' && !std::isnan(out.value);
}

// Redis's stringmatchlen, case-insensitive: *, ?, [...] with ranges and ^, and \ escapes.
bool glob_match(std::string_view pattern, std::string_view s) {
  auto fold = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  std::size_t p = 0, i = 0;
  while (p < pattern.size()) {
    const char c = pattern[p];
    if (c == '*') {
      while (p + 1 < pattern.size() && pattern[p + 1] == '*') ++p;
      if (p + 1 == pattern.size()) return true;
      for (std::size_t k = i; k <= s.size(); ++k)
        if (glob_match(pattern.substr(p + 1), s.substr(k))) return true;
      return false;
    }
    if (i == s.size()) return false;
    if (c == '?') {
      ++p, ++i;
      continue;
    }
    if (c == '[') {
      std::size_t q = p + 1;
      const bool negate = q < pattern.size() && pattern[q] == '^';
      if (negate) ++q;
      bool matched = false;
      for (; q < pattern.size() && pattern[q] != ']'; ++q) {
        if (pattern[q] == '\\' && q + 1 < pattern.size()) {
          matched |= fold(pattern[++q]) == fold(s[i]);
        } else if (q + 2 < pattern.size() && pattern[q + 1] == '-' && pattern[q + 2] != ']') {
          char lo = fold(pattern[q]), hi = fold(pattern[q + 2]);
          if (lo > hi) std::swap(lo, hi);
          matched |= fold(s[i]) >= lo && fold(s[i]) <= hi;
          q += 2;
        } else {
          matched |= fold(pattern[q]) == fold(s[i]);
        }
      }
      if (matched == negate) return false;
      p = q < pattern.size() ? q + 1 : q;
      ++i;
      continue;
    }
    const char want = c == '\\' && p + 1 < pattern.size() ? pattern[++p] : c;
    if (fold(want) != fold(s[i])) return false;
    ++p, ++i;
  }
  return i == s.size();
}

// Error text carries client bytes: Redis turns CR and LF into spaces so the reply stays one line.
std::string one_line(std::string text) {
  std::replace_if(text.begin(), text.end(), [](char c) { return c == '\r' || c == '\n'; }, ' ');
  return text;
}

std::string human_bytes(std::uint64_t n) {
  const char* units[] = {"B", "K", "M", "G", "T"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f%s" : "%.0f%s", v, units[u]);
  return buf;
}

void field(std::string& out, std::string_view name, const std::string& value) {
  out.append(name).append(":").append(value).append("\r\n");
}
template <class T>
void field(std::string& out, std::string_view name, T value) {
  field(out, name, std::to_string(value));
}

double seconds_of(const timespec& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9; }

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

// ---- the command table ----------------------------------------------------------------------

struct Commands::Spec {
  const char* name;
  int arity;  // Redis's: n exactly n arguments (the name included), -n at least n
  const char* flags;       // COMMAND's flags, space-separated
  const char* categories;  // COMMAND's ACL categories, space-separated
  int first_key, last_key, step;
  void (Commands::*handler)(Call&);
  bool before_auth = false;  // allowed before AUTH when a password is required
};

namespace {

// Latency buckets kept per command: LatencyHistogram's, up to 2^36 ns (the last takes the rest).
constexpr int latency_buckets = bench::LatencyHistogram::bucket_of(std::uint64_t{1} << 36) + 1;

}  // namespace

struct Commands::Call {
  int tid;
  std::span<const std::string_view> args;
  Session& session;
  Reply reply;
  bool failed = false;
  void error(std::string_view message) {
    reply.error(message);
    failed = true;
  }
  std::string_view key() const { return args[1]; }
};

const std::vector<Commands::Spec>& Commands::specs() {
  static const std::vector<Spec> table = {
    {"auth", -2, "noscript loading stale fast no_auth allow_busy", "@fast @connection", 0, 0, 0, &Commands::auth, true},
    {"hello", -1, "noscript loading stale fast no_auth allow_busy", "@fast @connection", 0, 0, 0, &Commands::hello, true},
    {"ping", -1, "fast", "@fast @connection", 0, 0, 0, &Commands::ping},
    {"echo", 2, "fast", "@fast @connection", 0, 0, 0, &Commands::echo},
    {"quit", -1, "allow_loading allow_stale fast no_auth allow_busy", "@fast @connection", 0, 0, 0, &Commands::quit, true},
    {"select", 2, "loading stale fast", "@keyspace @fast", 0, 0, 0, &Commands::select},
    {"dbsize", 1, "readonly fast", "@keyspace @read @fast", 0, 0, 0, &Commands::dbsize},
    {"flushall", -1, "write", "@keyspace @write @slow @dangerous", 0, 0, 0, &Commands::flushall},
    {"del", -2, "write", "@keyspace @write @slow", 1, -1, 1, &Commands::del},
    {"exists", -2, "readonly fast", "@keyspace @read @fast", 1, -1, 1, &Commands::exists},
    {"type", 2, "readonly fast", "@keyspace @read @fast", 1, 1, 1, &Commands::type},
    {"info", -1, "loading stale", "@slow @dangerous", 0, 0, 0, &Commands::info_command},
    {"config", -2, "", "@slow", 0, 0, 0, &Commands::config},
    {"command", -1, "loading stale", "@slow @connection", 0, 0, 0, &Commands::command},
    {"client", -2, "", "@slow", 0, 0, 0, &Commands::client},
    {"exec", 1, "noscript loading stale skip_slowlog", "@slow @transaction", 0, 0, 0, &Commands::exec},
    {"discard", 1, "noscript loading stale fast allow_busy", "@fast @transaction", 0, 0, 0, &Commands::discard},
    {"multi", 1, "noscript loading stale fast allow_busy", "@fast @transaction", 0, 0, 0, &Commands::multi},
    {"zadd", -4, "write denyoom fast", "@write @sortedset @fast", 1, 1, 1, &Commands::zadd},
    {"zincrby", 4, "write denyoom fast", "@write @sortedset @fast", 1, 1, 1, &Commands::zincrby},
    {"zrem", -3, "write fast", "@write @sortedset @fast", 1, 1, 1, &Commands::zrem},
    {"zscore", 3, "readonly fast", "@read @sortedset @fast", 1, 1, 1, &Commands::zscore},
    {"zmscore", -3, "readonly fast", "@read @sortedset @fast", 1, 1, 1, &Commands::zmscore},
    {"zrank", 3, "readonly fast", "@read @sortedset @fast", 1, 1, 1, &Commands::zrank},
    {"zrevrank", 3, "readonly fast", "@read @sortedset @fast", 1, 1, 1, &Commands::zrevrank},
    {"zcard", 2, "readonly fast", "@read @sortedset @fast", 1, 1, 1, &Commands::zcard},
    {"zcount", 4, "readonly fast", "@read @sortedset @fast", 1, 1, 1, &Commands::zcount},
    {"zrange", -4, "readonly", "@read @sortedset @slow", 1, 1, 1, &Commands::zrange},
    {"zrangebyscore", -4, "readonly", "@read @sortedset @slow", 1, 1, 1, &Commands::zrangebyscore},
    {"zrevrange", -4, "readonly", "@read @sortedset @slow", 1, 1, 1, &Commands::zrevrange},
  };
  return table;
}

namespace {

// A command's index by its lowercase name, looked up with no allocation (the request path).
const std::unordered_map<std::string_view, int>& spec_index() {
  static const std::unordered_map<std::string_view, int> index = [] {
    std::unordered_map<std::string_view, int> m;
    for (std::size_t i = 0; i < Commands::specs().size(); ++i) m.emplace(Commands::specs()[i].name, static_cast<int>(i));
    return m;
  }();
  return index;
}

// name's index, or -1: case-insensitive, as Redis looks commands up.
int find_spec(std::string_view name) {
  char folded[32];
  if (name.size() > sizeof folded) return -1;
  for (std::size_t i = 0; i < name.size(); ++i) folded[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
  const auto it = spec_index().find(std::string_view(folded, name.size()));
  return it == spec_index().end() ? -1 : it->second;
}

// One command's figures on one thread: one writer (the thread), read by INFO, so relaxed
// loads and stores, never a read-modify-write.
struct CommandStats {
  std::atomic<std::uint64_t> calls{0}, nanoseconds{0}, failed{0}, rejected{0};
  std::atomic<std::uint64_t> latency[latency_buckets]{};
};

void add(std::atomic<std::uint64_t>& c, std::uint64_t by) {
  c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

}  // namespace

struct alignas(false_sharing_range) Commands::ThreadStats {
  std::unique_ptr<CommandStats[]> per_command = std::make_unique<CommandStats[]>(specs().size());
  std::atomic<std::uint64_t> unknown_commands{0}, error_replies{0};
};

Commands::Commands(Keyspace& keys, const ServerSettings& settings, const ServerStatus& status)
    : keys_(keys), settings_(settings), status_(status), stats_(std::make_unique<ThreadStats[]>(keys.config().threads)) {}

Commands::~Commands() = default;

void Commands::execute(int tid, std::span<const std::string_view> args, Session& session, std::string& out) {
  Call call{tid, args, session, Reply(out)};
  ThreadStats& stats = stats_[tid];
  const int found = find_spec(args[0]);
  // In Redis's order: unknown command, wrong arity, then authentication.
  if (found < 0) {
    // Redis 7.0's text: the name up to 128 bytes, then quoted arguments while the list is
    // under 128 bytes, each cut to what is left (%.*s: also cut at a NUL byte).
    auto c_string = [](std::string_view s, std::size_t most) { return s.substr(0, std::min(most, s.find('\0'))); };
    std::string rest;
    for (std::size_t i = 1; i < args.size() && rest.size() < 128; ++i) {
      const std::string_view shown = c_string(args[i], 128 - rest.size());
      rest.append("'").append(shown).append("' ");
    }
    std::string message = "ERR unknown command '" + std::string(c_string(args[0], 128)) + "', with args beginning with: " + rest;
    call.error(one_line(std::move(message)));
    add(stats.unknown_commands, 1);
    add(stats.error_replies, 1);
    return;
  }
  const Spec& spec = specs()[found];
  CommandStats& cs = stats.per_command[found];
  const auto argc = static_cast<int>(args.size());
  if ((spec.arity > 0 && argc != spec.arity) || argc < -spec.arity) {
    call.error(std::string("ERR wrong number of arguments for '") + spec.name + "' command");
    add(cs.rejected, 1);
    add(stats.error_replies, 1);
    return;
  }
  if (!settings_.requirepass.empty() && !session.authenticated && !spec.before_auth) {
    call.error("NOAUTH Authentication required.");
    add(cs.rejected, 1);
    add(stats.error_replies, 1);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  (this->*spec.handler)(call);
  const auto ns = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  add(cs.calls, 1);
  add(cs.nanoseconds, ns);
  add(cs.latency[std::min(bench::LatencyHistogram::bucket_of(ns), latency_buckets - 1)], 1);
  if (call.failed) {
    add(cs.failed, 1);
    add(stats.error_replies, 1);
  }
}

// ---- connection and server commands -----------------------------------------------------

void Commands::auth(Call& c) {
  if (c.args.size() > 3) return c.error(syntax_error);
  if (settings_.requirepass.empty() && c.args.size() == 2)
    return c.error(
        "ERR AUTH <password> called without any password configured for the default user. Are you sure your "
        "configuration is correct?");
  if (authenticate(c, c.args.size() == 3 ? c.args[1] : "default", c.args.back())) c.reply.simple("OK");
}

// The one user, "default", with --requirepass as its password (or none). Replies on failure.
bool Commands::authenticate(Call& c, std::string_view user, std::string_view password) {
  if (user == "default" && (settings_.requirepass.empty() || password == settings_.requirepass)) {
    c.session.authenticated = true;
    return true;
  }
  c.error("WRONGPASS invalid username-password pair or user is disabled.");
  return false;
}

// HELLO [protover [AUTH user password] [SETNAME name]]: RESP2 only, so protover 3 (the default
// of redis-py 6 and later) is refused as Redis refuses a version it lacks; such a client is
// told to use protocol 2.
void Commands::hello(Call& c) {
  std::size_t i = 1;
  if (c.args.size() > 1) {
    long long version = 0;
    if (!parse_redis_integer(c.args[1], version)) return c.error("ERR Protocol version is not an integer or out of range");
    if (version != 2) return c.error("NOPROTO unsupported protocol version");
    i = 2;
  }
  for (; i < c.args.size(); ++i) {
    const std::size_t left = c.args.size() - i - 1;
    if (equals_nocase(c.args[i], "auth") && left >= 2) {
      if (!authenticate(c, c.args[i + 1], c.args[i + 2])) return;
      i += 2;
    } else if (equals_nocase(c.args[i], "setname") && left >= 1) {
      ++i;  // connection names are not kept
    } else {
      return c.error(one_line("ERR Syntax error in HELLO option '" + std::string(c.args[i].substr(0, 128)) + "'"));
    }
  }
  if (!c.session.authenticated)
    return c.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> "
                   "AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol "
                   "version at the same time");
  c.reply.array(14);
  c.reply.bulk("server");
  c.reply.bulk("redis");
  c.reply.bulk("version");
  c.reply.bulk("7.0.15");
  c.reply.bulk("proto");
  c.reply.integer(2);
  c.reply.bulk("id");
  c.reply.integer(static_cast<std::int64_t>(c.session.id));
  c.reply.bulk("mode");
  c.reply.bulk("standalone");
  c.reply.bulk("role");
  c.reply.bulk("master");
  c.reply.bulk("modules");
  c.reply.array(0);
}

void Commands::ping(Call& c) {
  if (c.args.size() > 2) return c.error("ERR wrong number of arguments for 'ping' command");
  if (c.args.size() == 2) return c.reply.bulk(c.args[1]);
  c.reply.simple("PONG");
}

void Commands::echo(Call& c) { c.reply.bulk(c.args[1]); }

void Commands::quit(Call& c) {
  c.session.close_after_reply = true;
  c.reply.simple("OK");
}

void Commands::select(Call& c) {
  long long db = 0;
  if (!parse_redis_integer(c.args[1], db)) return c.error(not_integer);
  if (db != 0) return c.error("ERR DB index is out of range");  // one database, as Redis with `databases 1`
  c.reply.simple("OK");
}

void Commands::dbsize(Call& c) { c.reply.integer(keys_.counts().keys); }

void Commands::flushall(Call& c) {
  if (c.args.size() > 2 || (c.args.size() == 2 && !equals_nocase(c.args[1], "async") && !equals_nocase(c.args[1], "sync")))
    return c.error(syntax_error);
  keys_.remove_all(c.tid);
  c.reply.simple("OK");
}

void Commands::del(Call& c) {
  std::int64_t removed = 0;
  for (std::size_t i = 1; i < c.args.size(); ++i) removed += keys_.remove(c.tid, c.args[i]);
  c.reply.integer(removed);
}

void Commands::exists(Call& c) {
  std::int64_t found = 0;
  for (std::size_t i = 1; i < c.args.size(); ++i) found += keys_.exists(c.tid, c.args[i]);
  c.reply.integer(found);
}

void Commands::type(Call& c) { c.reply.simple(keys_.exists(c.tid, c.key()) ? "zset" : "none"); }

void Commands::info_command(Call& c) {
  std::string text;
  if (c.args.size() == 1) text = info(c.tid, "default");
  for (std::size_t i = 1; i < c.args.size(); ++i) {
    if (!text.empty()) text += "\r\n";
    text += info(c.tid, lower(c.args[i]));
  }
  c.reply.bulk(text);
}

void Commands::config(Call& c) {
  const std::string sub = lower(c.args[1]);
  if (sub == "get") {
    if (c.args.size() < 3) return c.error("ERR wrong number of arguments for 'config|get' command");
    const std::pair<const char*, std::string> values[] = {
        {"bind", settings_.bind},
        {"port", std::to_string(settings_.port)},
        {"unixsocket", settings_.unixsocket},
        {"requirepass", settings_.requirepass},
        {"maxclients", std::to_string(settings_.maxclients)},
        {"proto-max-bulk-len", std::to_string(settings_.proto_max_bulk_len)},
        {"client-query-buffer-limit", std::to_string(settings_.client_query_buffer_limit)},
        {"client-output-buffer-limit", "normal " + std::to_string(settings_.client_output_buffer_limit) + " 0 0"},
        {"databases", "1"},
        {"save", ""},
        {"appendonly", "no"},
        {"maxmemory", "0"},
        {"timeout", "0"},
        {"io-threads", std::to_string(keys_.config().threads)},
    };
    std::vector<const std::pair<const char*, std::string>*> matched;
    for (const auto& v : values)
      for (std::size_t i = 2; i < c.args.size(); ++i)
        if (glob_match(c.args[i], v.first)) {
          matched.push_back(&v);
          break;
        }
    c.reply.array(2 * matched.size());
    for (const auto* v : matched) {
      c.reply.bulk(v->first);
      c.reply.bulk(v->second);
    }
    return;
  }
  if (sub == "set") return c.error("ERR CONFIG SET is not supported: this server takes its settings from its command line");
  c.error(one_line("ERR unknown subcommand '" + std::string(c.args[1].substr(0, 128)) + "'. Try CONFIG HELP."));
}

void Commands::command(Call& c) {
  auto describe = [&](const Spec& s) {
    auto words = [](std::string_view text) {
      std::vector<std::string_view> out;
      for (std::size_t i = 0; i < text.size();) {
        const std::size_t j = std::min(text.find(' ', i), text.size());
        if (j > i) out.push_back(text.substr(i, j - i));
        i = j + 1;
      }
      return out;
    };
    c.reply.array(10);
    c.reply.bulk(s.name);
    c.reply.integer(s.arity);
    const auto flags = words(s.flags);
    c.reply.array(flags.size());
    for (auto f : flags) c.reply.simple(f);
    c.reply.integer(s.first_key);
    c.reply.integer(s.last_key);
    c.reply.integer(s.step);
    const auto categories = words(s.categories);
    c.reply.array(categories.size());
    for (auto cat : categories) c.reply.simple(cat);
    c.reply.array(0);  // tips
    c.reply.array(0);  // key specifications
    c.reply.array(0);  // subcommands
  };
  if (c.args.size() == 1) {
    c.reply.array(specs().size());
    for (const Spec& s : specs()) describe(s);
    return;
  }
  const std::string sub = lower(c.args[1]);
  if (sub == "count" && c.args.size() == 2) return c.reply.integer(static_cast<std::int64_t>(specs().size()));
  if (sub == "info") {
    c.reply.array(c.args.size() - 2);
    for (std::size_t i = 2; i < c.args.size(); ++i) {
      const int i_spec = find_spec(c.args[i]);
      if (i_spec < 0) c.reply.nil_array();
      else describe(specs()[i_spec]);
    }
    return;
  }
  if (sub == "docs") return c.reply.array(0);  // no documentation: redis-cli falls back to its own help
  c.error(one_line("ERR unknown subcommand '" + std::string(c.args[1].substr(0, 128)) + "'. Try COMMAND HELP."));
}

void Commands::client(Call& c) {
  // No CLIENT subcommand is served (Redis 7.0 has no SETINFO either: redis-py ignores the error).
  c.error(one_line("ERR unknown subcommand '" + std::string(c.args[1].substr(0, 128)) + "'. Try CLIENT HELP."));
}

void Commands::multi(Call& c) { c.error("ERR MULTI is not supported: this server has no transactions"); }
void Commands::exec(Call& c) { c.error("ERR EXEC without MULTI"); }  // as Redis answers outside a transaction
void Commands::discard(Call& c) { c.error("ERR DISCARD without MULTI"); }

// ---- sorted-set commands ----------------------------------------------------------------------

void Commands::zadd(Call& c) {
  std::uint8_t flags = 0;
  std::size_t i = 2;
  for (; i < c.args.size(); ++i) {
    const std::string_view o = c.args[i];
    if (equals_nocase(o, "nx")) flags |= SortedSet::nx;
    else if (equals_nocase(o, "xx")) flags |= SortedSet::xx;
    else if (equals_nocase(o, "gt")) flags |= SortedSet::gt;
    else if (equals_nocase(o, "lt")) flags |= SortedSet::lt;
    else if (equals_nocase(o, "ch")) flags |= SortedSet::ch;
    else if (equals_nocase(o, "incr")) flags |= SortedSet::incr;
    else break;
  }
  const std::size_t elements = c.args.size() - i;
  if (elements == 0 || elements % 2) return c.error(syntax_error);
  const bool nx = flags & SortedSet::nx, xx = flags & SortedSet::xx, gt = flags & SortedSet::gt, lt = flags & SortedSet::lt;
  const bool incr = flags & SortedSet::incr;
  if (nx && xx) return c.error("ERR XX and NX options at the same time are not compatible");
  if ((gt && nx) || (lt && nx) || (gt && lt)) return c.error("ERR GT, LT, and/or NX options at the same time are not compatible");
  if (incr && elements > 2) return c.error("ERR INCR option supports a single increment-element pair");
  std::vector<SortedSet::ScoredMember> items(elements / 2);
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (!parse_score(c.args[i + 2 * k], items[k].score)) return c.error(not_float);
    items[k].member = c.args[i + 2 * k + 1];
  }
  const auto o = keys_.run(c.tid, c.key(), !xx, [&] { return SortedSet::zadd(flags, items); });
  if (o.value.nan) return c.error("ERR resulting score is not a number (NaN)");
  if (incr) {
    if (o.exists && o.value.ok) return c.reply.score(o.value.score);
    return c.reply.nil();
  }
  c.reply.integer(o.exists ? o.value.integer : 0);
}

void Commands::zincrby(Call& c) {
  double increment = 0;
  if (!parse_score(c.args[2], increment)) return c.error(not_float);
  const std::string_view member = c.args[3];
  const auto o = keys_.run(c.tid, c.key(), true, [&] { return SortedSet::zincrby(member, increment); });
  if (o.value.nan) return c.error("ERR resulting score is not a number (NaN)");
  c.reply.score(o.value.score);
}

void Commands::zrem(Call& c) {
  const auto members = c.args.subspan(2);
  const auto o = keys_.run(c.tid, c.key(), false, [&] { return SortedSet::zrem(members); });
  c.reply.integer(o.exists ? o.value.integer : 0);
}

void Commands::zscore(Call& c) {
  const std::string_view member = c.args[2];
  const auto o = keys_.run(c.tid, c.key(), false, [&] { return SortedSet::zscore(member); });
  if (o.exists && o.value.ok) return c.reply.score(o.value.score);
  c.reply.nil();
}

void Commands::zmscore(Call& c) {
  const auto members = c.args.subspan(2);
  const auto o = keys_.run(c.tid, c.key(), false, [&] { return SortedSet::zmscore(members); });
  c.reply.array(members.size());
  for (std::size_t k = 0; k < members.size(); ++k) {
    if (o.exists && o.value.scores[k]) c.reply.score(*o.value.scores[k]);
    else c.reply.nil();
  }
}

void Commands::zrank(Call& c) {
  const std::string_view member = c.args[2];
  const auto o = keys_.run(c.tid, c.key(), false, [&] { return SortedSet::zrank(member, false); });
  if (o.exists && o.value.ok) return c.reply.integer(o.value.integer);
  c.reply.nil();
}

void Commands::zrevrank(Call& c) {
  const std::string_view member = c.args[2];
  const auto o = keys_.run(c.tid, c.key(), false, [&] { return SortedSet::zrank(member, true); });
  if (o.exists && o.value.ok) return c.reply.integer(o.value.integer);
  c.reply.nil();
}

void Commands::zcard(Call& c) {
  const auto o = keys_.run(c.tid, c.key(), false, [] { return SortedSet::zcard(); });
  c.reply.integer(o.exists ? o.value.integer : 0);
}

void Commands::zcount(Call& c) {
  SortedSet::ScoreBound min{}, max{};
  if (!parse_bound(c.args[2], min) || !parse_bound(c.args[3], max)) return c.error(range_not_float);
  const auto o = keys_.run(c.tid, c.key(), false, [&] { return SortedSet::zcount(min, max); });
  c.reply.integer(o.exists ? o.value.integer : 0);
}

void Commands::zrange(Call& c) { range(c, 4, false, false, true); }
void Commands::zrangebyscore(Call& c) { range(c, 4, true, false, false); }
void Commands::zrevrange(Call& c) { range(c, 4, false, true, false); }

// Redis 7.0's zrangeGenericCommand: options first (ZRANGE alone may choose BYSCORE and REV),
// then the checks of their combinations, then the range, then the key.
void Commands::range(Call& c, int first_option, bool by_score, bool reverse, bool options_choose_type) {
  bool withscores = false, by_lex = false;
  long long offset = 0, count = -1;
  for (std::size_t i = static_cast<std::size_t>(first_option); i < c.args.size(); ++i) {
    const std::string_view o = c.args[i];
    const std::size_t left = c.args.size() - i - 1;
    if (equals_nocase(o, "withscores")) {
      withscores = true;
    } else if (equals_nocase(o, "limit") && left >= 2) {
      if (!parse_redis_integer(c.args[i + 1], offset) || !parse_redis_integer(c.args[i + 2], count)) return c.error(not_integer);
      i += 2;
    } else if (options_choose_type && equals_nocase(o, "byscore")) {
      by_score = true;
    } else if (options_choose_type && equals_nocase(o, "bylex")) {
      by_lex = true;
    } else if (options_choose_type && equals_nocase(o, "rev")) {
      reverse = true;
    } else {
      return c.error(syntax_error);
    }
  }
  if (by_lex && withscores) return c.error("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
  if ((offset != 0 || count != -1) && !by_score && !by_lex)
    return c.error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
  if (by_lex) return c.error("ERR BYLEX is not supported by this server");
  std::string_view first = c.args[2], second = c.args[3];
  Keyspace::Outcome o;
  if (by_score) {
    if (reverse) std::swap(first, second);  // ZRANGE key max min BYSCORE REV
    SortedSet::ScoreBound min{}, max{};
    if (!parse_bound(first, min) || !parse_bound(second, max)) return c.error(range_not_float);
    o = keys_.run(c.tid, c.key(), false, [&] { return SortedSet::range_by_score(min, max, reverse, offset, count); });
  } else {
    long long start = 0, stop = 0;
    if (!parse_redis_integer(first, start) || !parse_redis_integer(second, stop)) return c.error(not_integer);
    o = keys_.run(c.tid, c.key(), false, [&] { return SortedSet::range_by_rank(start, stop, reverse); });
  }
  if (!o.exists) return c.reply.array(0);
  c.reply.array(o.value.items.size() * (withscores ? 2 : 1));
  for (const auto& [member, score] : o.value.items) {
    c.reply.bulk(member);
    if (withscores) c.reply.score(score);
  }
}

// ---- INFO ---------------------------------------------------------------------------------

std::string Commands::info(int tid, std::string_view section) const {
  using Writer = void (Commands::*)(int, std::string&) const;
  const std::pair<const char*, Writer> sections[] = {
      {"server", &Commands::section_server},     {"clients", &Commands::section_clients},
      {"memory", &Commands::section_memory},     {"stats", &Commands::section_stats},
      {"cpu", &Commands::section_cpu},           {"method", &Commands::section_method},
      {"commandstats", &Commands::section_commandstats}, {"latencystats", &Commands::section_latencystats},
      {"keyspace", &Commands::section_keyspace},
  };
  const bool all = section == "all" || section == "everything";
  const bool standard = all || section.empty() || section == "default";
  std::string out;
  for (const auto& [name, write] : sections) {
    const bool extra = std::string_view(name) == "commandstats" || std::string_view(name) == "latencystats";
    if (section == name || (standard && (!extra || all))) {
      if (!out.empty()) out += "\r\n";
      (this->*write)(tid, out);
    }
  }
  return out;
}

void Commands::section_server(int /*tid*/, std::string& out) const {
  out += "# Server\r\n";
  field(out, "redis_version", std::string("7.0.15"));  // the release whose replies this server keeps to
  field(out, "server_name", std::string("cdsbench-zset-server"));
  field(out, "cdsbench_git_commit", std::string(bench::git_commit));
  field(out, "redis_mode", std::string("standalone"));
  utsname u{};
  if (uname(&u) == 0) field(out, "os", std::string(u.sysname) + " " + u.release + " " + u.machine);
  field(out, "arch_bits", 64);
  field(out, "multiplexing_api", std::string("epoll"));
  field(out, "process_id", static_cast<long>(getpid()));
  field(out, "tcp_port", settings_.port);
  const auto up = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - status_.started).count();
  field(out, "uptime_in_seconds", static_cast<long long>(up));
  field(out, "uptime_in_days", static_cast<long long>(up / 86400));
  field(out, "worker_threads", keys_.config().threads);
  field(out, "idle_poll_us", settings_.idle_poll_us);
  field(out, "persistence", std::string("none (in-memory only)"));
}

void Commands::section_clients(int /*tid*/, std::string& out) const {
  out += "# Clients\r\n";
  field(out, "connected_clients", static_cast<long long>(status_.connected_clients.load(std::memory_order_relaxed)));
  field(out, "maxclients", settings_.maxclients);
  field(out, "client_query_buffer_limit", static_cast<unsigned long long>(settings_.client_query_buffer_limit));
  field(out, "client_output_buffer_limit", static_cast<unsigned long long>(settings_.client_output_buffer_limit));
  field(out, "blocked_clients", 0);
}

void Commands::section_memory(int /*tid*/, std::string& out) const {
  out += "# Memory\r\n";
  const struct mallinfo2 m = mallinfo2();
  const std::uint64_t used = m.uordblks + m.hblkhd;  // bytes malloc has handed out (glibc's allocator)
  field(out, "used_memory", static_cast<unsigned long long>(used));
  field(out, "used_memory_human", human_bytes(used));
  const auto rss = bench::current_rss_bytes();
  const auto peak = bench::peak_rss_bytes();
  field(out, "used_memory_rss", rss ? std::to_string(*rss) : "unavailable");
  field(out, "used_memory_rss_human", rss ? human_bytes(*rss) : "unavailable");
  field(out, "used_memory_peak_rss", peak ? std::to_string(*peak) : "unavailable");
  field(out, "maxmemory", 0);
  field(out, "mem_allocator", std::string("libc"));
}

void Commands::section_stats(int /*tid*/, std::string& out) const {
  out += "# Stats\r\n";
  std::uint64_t commands = 0, errors = 0, unknown = 0;
  for (int t = 0; t < keys_.config().threads; ++t) {
    for (std::size_t i = 0; i < specs().size(); ++i) {
      const CommandStats& cs = stats_[t].per_command[i];
      commands += cs.calls.load(std::memory_order_relaxed) + cs.rejected.load(std::memory_order_relaxed);
    }
    errors += stats_[t].error_replies.load(std::memory_order_relaxed);
    unknown += stats_[t].unknown_commands.load(std::memory_order_relaxed);
  }
  auto load = [](const std::atomic<std::uint64_t>& a) { return static_cast<unsigned long long>(a.load(std::memory_order_relaxed)); };
  field(out, "total_connections_received", load(status_.total_connections_received));
  field(out, "total_commands_processed", static_cast<unsigned long long>(commands + unknown));
  field(out, "total_net_input_bytes", static_cast<unsigned long long>(status_.sum(&WorkerCounters::input_bytes)));
  field(out, "total_net_output_bytes", static_cast<unsigned long long>(status_.sum(&WorkerCounters::output_bytes)));
  field(out, "rejected_connections", load(status_.rejected_connections));
  field(out, "total_error_replies", static_cast<unsigned long long>(errors));
  field(out, "unknown_commands", static_cast<unsigned long long>(unknown));
  field(out, "protocol_errors", static_cast<unsigned long long>(status_.sum(&WorkerCounters::protocol_errors)));
  field(out, "client_buffer_limit_disconnections", static_cast<unsigned long long>(status_.sum(&WorkerCounters::buffer_limit_closes)));
}

void Commands::section_cpu(int /*tid*/, std::string& out) const {
  out += "# CPU\r\n";
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto tv = [](const timeval& t) { return fixed(static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6, 6); };
  field(out, "used_cpu_sys", tv(u.ru_stime));
  field(out, "used_cpu_user", tv(u.ru_utime));
  for (std::size_t w = 0; w < status_.worker_cpu_clocks.size(); ++w) {
    timespec t{};
    const bool ok = clock_gettime(status_.worker_cpu_clocks[w], &t) == 0;
    field(out, "used_cpu_worker_" + std::to_string(w), ok ? fixed(seconds_of(t), 6) : "unavailable");
  }
}

void Commands::section_method(int tid, std::string& out) const {
  out += "# Method\r\n";
  const KeyspaceConfig& k = keys_.config();
  field(out, "method", std::string(method_name(k.method)));
  if (k.method == Method::nr) {
    field(out, "nr_replicas", k.nr_replicas);
    field(out, "nr_log_entries_per_key", static_cast<unsigned long long>(k.nr_log_entries));
  }
  const MethodCounters m = keys_.method_counters(tid);
  auto put = [&](const char* name, std::uint64_t v) { field(out, name, static_cast<unsigned long long>(v)); };
  if (k.method == Method::nr || k.method == Method::fc || k.method == Method::fcplus) {
    put("combines", m.combines);
    put("combined_ops", m.combined_ops);
    field(out, "avg_batch", fixed(m.combines ? static_cast<double>(m.combined_ops) / static_cast<double>(m.combines) : 0.0, 2));
  }
  if (k.method == Method::nr) {
    put("nr_log_entries_written", m.log_entries_written);
    put("nr_log_full_waits", m.log_full_waits);
    put("nr_catch_ups_by_others", m.catch_ups_by_others);
  }
  if (k.method == Method::sl || k.method == Method::rwl) put("lock_waits", m.lock_waits);
  const KeyspaceCounts counts = keys_.counts();
  field(out, "keys_created", static_cast<unsigned long long>(counts.created));
  field(out, "keys_removed", static_cast<unsigned long long>(counts.removed));
  field(out, "dead_set_retries", static_cast<unsigned long long>(counts.dead_retries));
}

void Commands::section_commandstats(int /*tid*/, std::string& out) const {
  out += "# Commandstats\r\n";
  for (std::size_t i = 0; i < specs().size(); ++i) {
    std::uint64_t calls = 0, ns = 0, failed = 0, rejected = 0;
    for (int t = 0; t < keys_.config().threads; ++t) {
      const CommandStats& cs = stats_[t].per_command[i];
      calls += cs.calls.load(std::memory_order_relaxed);
      ns += cs.nanoseconds.load(std::memory_order_relaxed);
      failed += cs.failed.load(std::memory_order_relaxed);
      rejected += cs.rejected.load(std::memory_order_relaxed);
    }
    if (calls + rejected == 0) continue;
    const double usec = static_cast<double>(ns) / 1e3;
    out += std::string("cmdstat_") + specs()[i].name + ":calls=" + std::to_string(calls) +
           ",usec=" + std::to_string(ns / 1000) + ",usec_per_call=" + fixed(calls ? usec / static_cast<double>(calls) : 0.0, 2) +
           ",rejected_calls=" + std::to_string(rejected) + ",failed_calls=" + std::to_string(failed) + "\r\n";
  }
}

// Redis 7's latencystats line: p50, p99 and p99.9 in microseconds (each a bucket's midpoint:
// within 1/32 of the true value, bench/core/latency.hpp).
void Commands::section_latencystats(int /*tid*/, std::string& out) const {
  out += "# Latencystats\r\n";
  for (std::size_t i = 0; i < specs().size(); ++i) {
    std::vector<std::uint64_t> buckets(latency_buckets, 0);
    std::uint64_t total = 0;
    for (int t = 0; t < keys_.config().threads; ++t)
      for (int b = 0; b < latency_buckets; ++b) {
        const std::uint64_t n = stats_[t].per_command[i].latency[b].load(std::memory_order_relaxed);
        buckets[b] += n;
        total += n;
      }
    if (total == 0) continue;
    auto percentile = [&](double q) {
      const auto rank = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(q * static_cast<double>(total)));
      std::uint64_t seen = 0;
      for (int b = 0; b < latency_buckets; ++b)
        if ((seen += buckets[b]) >= rank)
          return 0.5 * static_cast<double>(bench::LatencyHistogram::lower_bound(b) + bench::LatencyHistogram::upper_bound(b)) / 1e3;
      return static_cast<double>(bench::LatencyHistogram::lower_bound(latency_buckets - 1)) / 1e3;
    };
    out += std::string("latency_percentiles_usec_") + specs()[i].name + ":p50=" + fixed(percentile(0.5), 3) +
           ",p99=" + fixed(percentile(0.99), 3) + ",p99.9=" + fixed(percentile(0.999), 3) + "\r\n";
  }
}

void Commands::section_keyspace(int /*tid*/, std::string& out) const {
  out += "# Keyspace\r\n";
  const std::int64_t keys = keys_.counts().keys;
  if (keys > 0) out += "db0:keys=" + std::to_string(keys) + ",expires=0,avg_ttl=0\r\n";
}

}  // namespace cdsb::zset
