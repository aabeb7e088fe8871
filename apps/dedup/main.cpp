// cdsbench-dedup: PARSEC 3.0 dedup's deduplicating compressor, in the command-line conventions
// of gzip and zstd (README "Dedup" and docs/dedup-format.md).
//
// Exit status: 0 done; 1 a bad archive or a failing file (one line naming it); 2 a usage error
// (one line naming the option and what is allowed). An output appears only when complete (a
// temporary file renamed), an existing one is refused without -f, and the input is never changed.
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "apps/dedup/archive.hpp"
#include "apps/dedup/encoder.hpp"
#include "apps/dedup/generator.hpp"
#include "apps/dedup/io.hpp"
#include "apps/dedup/pipeline.hpp"
#include "apps/dedup/report.hpp"
#include "apps/dedup/stage_costs.hpp"
#include "bench/core/report.hpp"
#include "bench/harness/cli.hpp"
#include "bench/harness/options.hpp"
#include "bench/registry/registry.hpp"

namespace {

using namespace cdsb::dedup;
using cdsb::bench::HelpShown;
using cdsb::bench::UsageError;

constexpr const char* program = "cdsbench-dedup";
constexpr std::string_view suffix = ".ddp";

struct Options {
  std::string input = "-";
  std::string output;
  bool decompress = false, test = false, to_stdout = false, force = false, verbose = false;
  std::string format = "cdsbench", compress = "gzip", chunker = "gear";
  std::optional<int> level;
  std::string generate;
  double dup_ratio = 0.0, compressibility = 0.5;
  std::uint64_t seed = 1;
  int threads = 0;  // 0: the CPUs this process may run on (zstd's -T0)
  int threads_per_queue = 4, batch = 20;
  // Defaults chosen by experiments/dedup.py (docs/results-dedup.md): in the pipeline the maps and
  // queues are within the noise of each other, so the wait-free map (it grows, and kept peak RSS
  // within the goal where seqlock_probe_map did not) and PARSEC's ring (its consumers sleep);
  // gear finds far more repeats than PARSEC's Rabin scan, and cuts faster.
  std::string map = "feldman_wait_free_map", queue = "locked_ring_queue", hash = "even";
  bool stats = false, measure_stages = false, list = false;
  std::string json;
};

// Where the bytes go: a file created complete or not at all, or standard output.
struct Destination {
  std::unique_ptr<AtomicOutput> file;
  int fd = STDOUT_FILENO;
  std::string name = "(standard output)";
};

Destination open_destination(const Options& o, const std::string& derived) {
  Destination d;
  if (o.to_stdout || o.output == "-") return d;
  const std::string path = o.output.empty() ? derived : o.output;
  struct stat in_st, out_st;
  if (o.input != "-" && ::stat(o.input.c_str(), &in_st) == 0 && ::stat(path.c_str(), &out_st) == 0 &&
      in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino)
    throw UsageError{path + ": is the input itself; name another output"};
  d.file = std::make_unique<AtomicOutput>(path, o.force);
  d.fd = d.file->fd();
  d.name = path;
  return d;
}

int input_fd(const Options& o) {
  if (o.input == "-") return STDIN_FILENO;
  const int fd = ::open(o.input.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(o.input + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) throw IoError(o.input + ": is a directory");
  return fd;
}

// The output's name a command derives from its input's, or a usage error saying how to name it.
std::string derived_output(const Options& o) {
  if (o.to_stdout || !o.output.empty() || o.test) return {};
  if (o.input == "-") throw UsageError{"reading standard input: name the output with -o FILE, or write to standard output with -c"};
  if (!o.decompress) return o.input + std::string(suffix);
  if (o.input.size() > suffix.size() && o.input.ends_with(suffix)) return o.input.substr(0, o.input.size() - suffix.size());
  throw UsageError{o.input + ": does not end in .ddp: name the output with -o FILE, or write to standard output with -c"};
}

// The encoder's settings from the options, or a usage error.
EncodeSettings encode_settings(const Options& o) {
  EncodeSettings settings;
  settings.format = *parse_format(o.format);
  settings.codec = *parse_codec(o.compress);
  settings.chunker = *parse_chunker(o.chunker);
  const LevelRange range = level_range(settings.codec);
  settings.level = o.level.value_or(range.default_level);
  if (settings.level < range.min || settings.level > range.max)
    throw UsageError{"--level " + std::to_string(settings.level) + ": " + o.compress + " allows " + std::to_string(range.min) +
                     " to " + std::to_string(range.max)};
  if (settings.format == Format::parsec && settings.codec == Codec::zstd)
    throw UsageError{"--format parsec: PARSEC's format has no zstd; allowed --compress gzip, bzip2 or none"};
  return settings;
}

// The registry's structures a pipeline can use, by name, or a usage error listing them.
struct ChosenStructures {
  const cdsb::bench::StructureEntry* map;
  const cdsb::bench::StructureEntry* queue;
};

ChosenStructures choose_structures(const cdsb::bench::Registry& registry, const Options& o) {
  std::string maps, queues;
  for (const auto& e : registry.entries()) {
    if (e.make_digest_map) maps += (maps.empty() ? "" : ", ") + e.name;
    if (e.make_item_queue) queues += (queues.empty() ? "" : ", ") + e.name;
  }
  const auto* map = registry.find(o.map);
  if (!map || !map->make_digest_map)
    throw UsageError{"--map: '" + o.map + "' is not a map dedup can use (digest or byte-string keys, growing safely "
                     "beside its users); allowed: " + maps};
  const auto& hashes = map->digest_map_hashes;
  if (std::find(hashes.begin(), hashes.end(), o.hash) == hashes.end()) {
    std::string allowed;
    for (const auto& h : hashes) allowed += (allowed.empty() ? "" : ", ") + h;
    throw UsageError{"--hash: '" + o.hash + "' is not built for map " + o.map + "; allowed: " + allowed};
  }
  const auto* queue = registry.find(o.queue);
  if (!queue || !queue->make_item_queue) throw UsageError{"--queue: '" + o.queue + "' is not a FIFO queue; allowed: " + queues};
  return {map, queue};
}

void check_pipeline_options(const Options& o) {
  if (o.threads < 0 || o.threads > 1024)
    throw UsageError{"--threads " + std::to_string(o.threads) + ": allowed 0 (the CPUs) to 1024"};
  if (o.threads_per_queue < 1 || o.threads_per_queue > 1024)
    throw UsageError{"--threads-per-queue " + std::to_string(o.threads_per_queue) + ": allowed 1 to 1024"};
  if (o.batch < 1 || o.batch > 4096) throw UsageError{"--batch " + std::to_string(o.batch) + ": allowed 1 to 4096"};
}

// The CPUs this process may run on.
int allowed_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

// The input's first bytes, for measuring each stage alone; nullopt when it is not a regular file
// (a pipe cannot be read twice).
std::optional<std::vector<std::uint8_t>> stage_sample(const std::string& input) {
  constexpr std::size_t sample_bytes = std::size_t{16} << 20;
  if (input == "-") return std::nullopt;
  const int fd = ::open(input.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(input + ": cannot open it again to measure the stages: " + std::strerror(errno));
  struct stat st;
  std::optional<std::vector<std::uint8_t>> sample;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    sample.emplace(std::min<std::size_t>(sample_bytes, static_cast<std::size_t>(st.st_size)));
    read_at(fd, input, 0, *sample);
  }
  ::close(fd);
  return sample;
}

// A progress bar on standard error, redrawn a few times a second, while the pipeline runs.
class ProgressBar {
 public:
  ProgressBar(const std::atomic<std::uint64_t>& done, std::uint64_t total)
      : done_(done), total_(total), thread_([this] { draw_until_stopped(); }) {}
  ~ProgressBar() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
    std::cerr << "\r\033[K" << std::flush;  // leaves the line empty
  }

 private:
  void draw_until_stopped() {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    do {  // drawn at once, then every 250 ms
      const double done = static_cast<double>(done_.load(std::memory_order_relaxed));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const int width = 30, filled = static_cast<int>(width * done / static_cast<double>(total_));
      char line[160];
      std::snprintf(line, sizeof line, "\r[%-*s] %3.0f%%  %.0f of %.0f MiB  %.1f MiB/s", width,
                    std::string(static_cast<std::size_t>(std::clamp(filled, 0, width)), '#').c_str(),
                    100 * done / static_cast<double>(total_), done / (1 << 20), static_cast<double>(total_) / (1 << 20),
                    s > 0 ? done / (1 << 20) / s : 0.0);
      std::cerr << line << std::flush;
    } while (!wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stop_; }));
  }

  const std::atomic<std::uint64_t>& done_;
  std::uint64_t total_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest is built
};

// The input's size when it is a regular file large enough for a progress bar to be worth it
// and standard error is a terminal; 0 otherwise.
std::uint64_t progress_total(int fd) {
  constexpr std::uint64_t large = std::uint64_t{64} << 20;
  struct stat st;
  if (!::isatty(STDERR_FILENO) || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  return static_cast<std::uint64_t>(st.st_size) >= large ? static_cast<std::uint64_t>(st.st_size) : 0;
}

void refuse_terminal(int fd, const char* what) {
  if (::isatty(fd)) throw UsageError{std::string("will not write ") + what + " to a terminal (redirect it, or use -o FILE)"};
}

// --list: the maps (with their hashes) and queues a pipeline can use; with --json FILE, their
// registry entries as `cdsbench --list --json` writes them (the runner's registered_structures).
int list_structures(const Options& o) {
  const cdsb::bench::Registry registry = cdsb::bench::builtin_registry();
  for (const auto& e : registry.entries()) {
    if (e.make_digest_map) {
      std::cout << "map   " << e.name << " (hashes:";
      for (const auto& h : e.digest_map_hashes) std::cout << ' ' << h;
      std::cout << "): " << e.description << '\n';
    }
    if (e.make_item_queue) std::cout << "queue " << e.name << ": " << e.description << '\n';
  }
  const auto usable = [](const cdsb::bench::StructureEntry& e) { return e.make_digest_map || e.make_item_queue; };
  if (!o.json.empty() && !cdsb::bench::write_file_atomically(o.json, cdsb::bench::registry_json_text(registry, +usable)))
    throw IoError(o.json + ": cannot write");
  return 0;
}

int run(const Options& o) {
  if (o.list) return list_structures(o);
  if (!o.generate.empty()) {
    const auto bytes = parse_size(o.generate);
    if (!bytes) throw UsageError{"--generate: '" + o.generate + "' is not a size; allowed: a count of bytes up to 2^50 with B, KiB, MiB, GiB, TiB, kB, MB, GB or TB"};
    if (!(o.dup_ratio >= 0 && o.dup_ratio < 1)) throw UsageError{"--dup-ratio: allowed 0 <= R < 1"};
    if (!(o.compressibility >= 0 && o.compressibility <= 1)) throw UsageError{"--compressibility: allowed 0 <= C <= 1"};
    if (o.output.empty() && !o.to_stdout) throw UsageError{"--generate: name the output with -o FILE, or write to standard output with -c"};
    Destination d = open_destination(o, {});
    refuse_terminal(d.fd, "generated data");
    FdWriter out(d.fd, d.name);
    generate({.bytes = *bytes, .dup_ratio = o.dup_ratio, .compressibility = o.compressibility, .seed = o.seed}, out);
    if (d.file) d.file->commit();
    return 0;
  }

  const std::string derived = derived_output(o);
  std::optional<cdsb::bench::Registry> registry;
  std::optional<ChosenStructures> structures;
  if (!o.decompress && !o.test) {  // their usage errors before the input is opened
    encode_settings(o);
    check_pipeline_options(o);
    registry = cdsb::bench::builtin_registry();
    structures = choose_structures(*registry, o);
  }
  const int in_fd = input_fd(o);
  FdReader in(in_fd, o.input == "-" ? "(standard input)" : o.input);
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string spool_dir = tmpdir && *tmpdir ? tmpdir : "/tmp";

  if (o.decompress || o.test) {
    try {
      if (o.test) {
        const DecodeSummary s = decode_archive(in, nullptr, spool_dir);
        if (o.verbose)
          std::cerr << o.input << ": OK, " << format_name(s.format) << " format, " << codec_name(s.codec) << ", "
                    << s.totals.chunks << " chunks (" << s.totals.unique_chunks << " unique), " << s.totals.raw_bytes << " bytes\n";
        return 0;
      }
      Destination d = open_destination(o, derived);
      FdWriter out(d.fd, d.name);
      decode_archive(in, &out, spool_dir);
      if (d.file) d.file->commit();
      return 0;
    } catch (const ArchiveError& e) {
      throw IoError(in.name() + ": " + e.what());
    }
  }

  PipelineSettings settings;
  settings.encode = encode_settings(o);
  settings.threads = o.threads ? o.threads : allowed_cpus();
  settings.threads_per_queue = o.threads_per_queue;
  settings.batch = o.batch;
  Destination d = open_destination(o, derived);
  refuse_terminal(d.fd, "an archive");
  FdWriter out(d.fd, d.name);
  cdsb::bench::MemoryPhases memory(true);
  PipelineFigures figures;
  {
    // The map as each map builds itself by default (no size hint), as PARSEC builds its table.
    const auto map =
        structures->map->make_digest_map({.threads = pipeline_threads(settings.threads), .expected_keys = 0, .hash = o.hash});
    std::atomic<std::uint64_t> progress{0};
    std::optional<ProgressBar> bar;
    if (const std::uint64_t total = progress_total(in_fd)) bar.emplace(progress, total);
    figures = encode_pipeline(in, out, settings,
                              {.map = *map, .make_queue = structures->queue->make_item_queue, .progress = &progress});
  }
  memory.end();
  const ArchiveTotals& t = figures.totals;
  if (d.file) d.file->commit();
  if (o.stats || !o.json.empty()) {
    std::optional<StageCosts> costs;
    const char* missing = "none";
    if (o.measure_stages) {
      if (const auto sample = stage_sample(o.input)) costs = measure_stage_costs(*sample, settings.encode, allowed_cpus());
      else missing = "unavailable";
    }
    const RunChoices choices{.input = o.input, .map = o.map, .hash = o.hash, .queue = o.queue, .settings = settings};
    const cdsb::bench::Json report = encode_report(choices, figures, memory, costs, missing, allowed_cpus());
    if (!o.json.empty() && !cdsb::bench::write_file_atomically(o.json, report.dump(2) + "\n"))
      throw IoError(o.json + ": cannot write the report");
    if (o.stats) {  // as the harness prints its report, on standard error
      cdsb::bench::print_kv(std::cerr, report["config"]);
      cdsb::bench::print_kv(std::cerr, report["machine"]);
      for (const auto& w : report["warnings"]) std::cerr << "warning=" << w.get<std::string>() << '\n';
      cdsb::bench::print_kv(std::cerr, report["trials"][0]);
      cdsb::bench::print_kv(std::cerr, report["summary"]);
    }
  }
  if (o.verbose)
    std::cerr << o.input << ": " << t.raw_bytes << " bytes in " << t.chunks << " chunks (" << t.unique_chunks << " unique) -> "
              << t.archive_bytes << " bytes\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cdsbench-dedup: PARSEC 3.0 dedup's deduplicating compressor (see README.md, docs/dedup-format.md)", program};
  Options o;
  app.add_option("input", o.input, "File to read, or - for standard input [-]");
  app.add_flag("-d,--decompress", o.decompress, "Decode an archive (FILE.ddp to FILE)");
  app.add_flag("-t,--test", o.test, "Check an archive, writing nothing");
  app.add_flag("-c,--stdout", o.to_stdout, "Write to standard output");
  app.add_option("-o,--output", o.output, "Write to FILE (- for standard output)");
  app.add_flag("-f,--force", o.force, "Overwrite an existing output");
  app.add_flag("-v,--verbose", o.verbose, "Say what was done, on standard error");
  app.add_option("--format", o.format, "Archive format: cdsbench or parsec [cdsbench]")->check(CLI::IsMember({"cdsbench", "parsec"}));
  app.add_option("--compress", o.compress, std::string("Compression of each chunk: ") + codec_names + " [gzip]")
      ->check(CLI::IsMember({"gzip", "bzip2", "zstd", "none"}));
  app.add_option("--level", o.level, "Compression level (gzip 1-9 [6], bzip2 1-9 [9], zstd 1-19 [3])");
  app.add_option("--chunker", o.chunker, "Chunking: gear (FastCDC-style) or rabin (PARSEC's, exact) [gear]")
      ->check(CLI::IsMember({"rabin", "gear"}));
  auto* generate = app.add_option("--generate", o.generate, "Write SIZE bytes of generated input (e.g. 64MiB) instead of encoding");
  app.add_option("--dup-ratio", o.dup_ratio, "--generate: share of repeated blocks, 0 <= R < 1 [0]")->needs(generate);
  app.add_option("--compressibility", o.compressibility, "--generate: share of each segment that is text, 0..1 [0.5]")
      ->needs(generate);
  app.add_option("--seed", o.seed, "--generate: seed [1]")->needs(generate);
  app.add_option("-T,--threads", o.threads, "Threads of each middle stage (refine, dedup, compress); 0: the CPUs [0]");
  app.add_option("--threads-per-queue", o.threads_per_queue, "Threads of a stage sharing one queue [4]");
  app.add_option("--batch", o.batch, "Items per enqueue and dequeue [20]");
  app.add_option("--map", o.map, "The digest map: a map of the registry (--list) [feldman_wait_free_map]");
  app.add_option("--hash", o.hash, "The map's hash of a digest: a hash it is built with [even]");
  app.add_option("--queue", o.queue, "The stages' queues: a FIFO queue of the registry (--list) [locked_ring_queue]");
  app.add_flag("--list", o.list, "List the maps and queues --map and --queue allow (with --json FILE, as data)");
  app.add_flag("--stats", o.stats, "Print what the run measured as key=value lines on standard error");
  app.add_option("--json", o.json, "Write what the run measured to FILE as JSON");
  app.add_flag("--measure-stages", o.measure_stages,
               "Also measure each stage alone on the input's first 16 MiB, and the pipeline's bound (with --stats or --json)");
  if (auto stop = cdsb::bench::parse_with_cli11(app, argc, argv)) {
    if (std::holds_alternative<HelpShown>(*stop)) return 0;
    std::cerr << program << ": " << std::get<UsageError>(*stop).message << '\n';
    return 2;
  }
  try {
    if (o.decompress && o.test) throw UsageError{"-d and -t: choose one"};
    if (o.to_stdout && !o.output.empty()) throw UsageError{"-c and -o: choose one"};
    if (o.measure_stages && !o.stats && o.json.empty()) throw UsageError{"--measure-stages: reports with --stats or --json FILE"};
    if (o.list && (o.stats || o.measure_stages || o.decompress || o.test || !o.generate.empty() || o.input != "-"))
      throw UsageError{"--list: lists the structures; allowed: alone, or with --json FILE"};
    if ((o.stats || !o.json.empty() || o.measure_stages) && !o.list && (o.decompress || o.test || !o.generate.empty()))
      throw UsageError{"--stats, --json and --measure-stages: measure an encoding run; allowed: without -d, -t and --generate"};
    return run(o);
  } catch (const UsageError& e) {
    std::cerr << program << ": " << e.message << '\n';
    return 2;
  } catch (const OutputExists& e) {
    std::cerr << program << ": " << e.what() << '\n';
    return 2;
  } catch (const IoError& e) {
    std::cerr << program << ": " << e.what() << '\n';
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << program << ": out of memory\n";
    return 1;
  } catch (const std::exception& e) {  // the pipeline's threads could not start, or a structure broke its contract
    std::cerr << program << ": " << e.what() << '\n';
    return 1;
  }
}
