// cdsbench-dedup: PARSEC 3.0 dedup's deduplicating compressor, in the command-line conventions
// of gzip and zstd (README "Dedup" and docs/dedup-format.md).
//
// Exit status: 0 done; 1 a bad archive or a failing file (one line naming it); 2 a usage error
// (one line naming the option and what is allowed). An output appears only when complete (a
// temporary file renamed), an existing one is refused without -f, and the input is never changed.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "apps/dedup/archive.hpp"
#include "apps/dedup/encoder.hpp"
#include "apps/dedup/generator.hpp"
#include "apps/dedup/io.hpp"
#include "bench/harness/options.hpp"

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
  std::string format = "cdsbench", compress = "gzip", chunker = "rabin";
  std::optional<int> level;
  std::string generate;
  double dup_ratio = 0.0, compressibility = 0.5;
  std::uint64_t seed = 1;
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

void refuse_terminal(int fd, const char* what) {
  if (::isatty(fd)) throw UsageError{std::string("will not write ") + what + " to a terminal (redirect it, or use -o FILE)"};
}

int run(const Options& o) {
  if (!o.generate.empty()) {
    const auto bytes = parse_size(o.generate);
    if (!bytes) throw UsageError{"--generate: '" + o.generate + "' is not a size; allowed: a count of bytes up to 2^50 with B, KiB, MiB, GiB, TiB, kB, MB, GB or TB"};
    if (!(o.dup_ratio >= 0 && o.dup_ratio < 1)) throw UsageError{"--dup-ratio: allowed 0 <= R < 1"};
    if (!(o.compressibility >= 0 && o.compressibility <= 1)) throw UsageError{"--compressibility: allowed 0 <= C <= 1"};
    if (o.output.empty() && !o.to_stdout) throw UsageError{"--generate: name the output with -o FILE, or write to standard output with -c"};
    Destination d = open_destination(o, {});
    if (!d.file) refuse_terminal(d.fd, "generated data");
    FdWriter out(d.fd, d.name);
    generate({.bytes = *bytes, .dup_ratio = o.dup_ratio, .compressibility = o.compressibility, .seed = o.seed}, out);
    if (d.file) d.file->commit();
    return 0;
  }

  const std::string derived = derived_output(o);
  if (!o.decompress && !o.test) encode_settings(o);  // its usage errors before the input is opened
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

  const EncodeSettings settings = encode_settings(o);
  Destination d = open_destination(o, derived);
  if (!d.file) refuse_terminal(d.fd, "an archive");
  FdWriter out(d.fd, d.name);
  const ArchiveTotals t = encode_sequential(in, out, settings);
  if (d.file) d.file->commit();
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
  app.add_option("--chunker", o.chunker, "Chunking: rabin (PARSEC's, exact) or gear (FastCDC-style) [rabin]")
      ->check(CLI::IsMember({"rabin", "gear"}));
  auto* generate = app.add_option("--generate", o.generate, "Write SIZE bytes of generated input (e.g. 64MiB) instead of encoding");
  app.add_option("--dup-ratio", o.dup_ratio, "--generate: share of repeated blocks, 0 <= R < 1 [0]")->needs(generate);
  app.add_option("--compressibility", o.compressibility, "--generate: share of each segment that is text, 0..1 [0.5]")
      ->needs(generate);
  app.add_option("--seed", o.seed, "--generate: seed [1]")->needs(generate);
  if (auto stop = cdsb::bench::parse_with_cli11(app, argc, argv)) {
    if (std::holds_alternative<HelpShown>(*stop)) return 0;
    std::cerr << program << ": " << std::get<UsageError>(*stop).message << '\n';
    return 2;
  }
  try {
    if (o.decompress && o.test) throw UsageError{"-d and -t: choose one"};
    if (o.to_stdout && !o.output.empty()) throw UsageError{"-c and -o: choose one"};
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
  }
}
