// cdsbench-rng-bench: the per-sample cost, in ns, of each generator and key distribution.
//
// Each figure is the median over --trials of (loop time / --samples) for a tight loop that
// sums the outputs into a volatile sink, so nothing is optimised away. An empty asm with a
// memory clobber after each draw keeps the generator's state in memory between draws and
// stops the compiler from hoisting AnyGenerator's dispatch out of the loop, as in the
// harness's measured loop, where a data-structure operation separates two draws.
//   rng_ns_per_sample.NAME                     through AnyGenerator, as the harness draws
//   rng_direct_ns_per_sample.xoshiro256starstar the concrete class: the difference to the
//                                              line above is the cost of the dispatch
//   rng_register_ns_per_sample.xoshiro256starstar  no barrier, state in registers: the floor
//   reseeding_ns_per_sample.{never,every_10000}    Reseeding<Xoshiro256StarStar>
//   dist_ns_per_sample.SPEC                    KeyDistribution with AnyGenerator(xoshiro)
//
// Usage: cdsbench-rng-bench [--key-range R] [--samples N] [--trials T]
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>
#include <variant>
#include <vector>

#include "cdsbench/random/any_generator.hpp"
#include "cdsbench/random/distributions.hpp"
#include "cdsbench/random/generators.hpp"
#include "cdsbench/random/reseeding.hpp"

namespace {

constexpr std::uint64_t bench_seed = 0x5eed5eed5eed5eedULL;

volatile std::uint64_t sink;

struct Options {
  std::uint64_t key_range = 1'000'000;
  std::uint64_t samples = 50'000'000;
  std::uint64_t trials = 5;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "cdsbench-rng-bench: %s\n", message.c_str());
  std::exit(2);
}

std::uint64_t parse_positive(std::string_view option, std::string_view text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end || value == 0) {
    usage_error(std::string(option) + ": '" + std::string(text) +
                "' is not allowed; expected a positive integer");
  }
  return value;
}

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::puts("usage: cdsbench-rng-bench [--key-range R] [--samples N] [--trials T]");
      std::exit(0);
    }
    // Both "--opt value" and "--opt=value".
    std::string_view name = arg;
    std::string_view value;
    bool has_value = false;
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    std::uint64_t* target = nullptr;
    if (name == "--key-range") target = &options.key_range;
    if (name == "--samples") target = &options.samples;
    if (name == "--trials") target = &options.trials;
    if (target == nullptr) {
      usage_error("unknown option '" + std::string(arg) +
                  "'; allowed: --key-range R, --samples N, --trials T");
    }
    if (!has_value) {
      if (i + 1 >= argc) usage_error(std::string(name) + ": missing value");
      value = argv[++i];
    }
    *target = parse_positive(name, value);
  }
  return options;
}

// Stands in for the operation between two draws: the compiler must assume memory changed.
inline void clobber_memory() { asm volatile("" ::: "memory"); }

// Out of line so the timed loop is the same code whatever surrounds it.
template <class G>
[[gnu::noinline]] std::uint64_t draw_loop(G& g, std::uint64_t samples) {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < samples; ++i) {
    sum += g.next();
    clobber_memory();
  }
  return sum;
}

template <class G>
[[gnu::noinline]] std::uint64_t register_draw_loop(G& g, std::uint64_t samples) {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < samples; ++i) sum += g.next();
  return sum;
}

template <class G>
[[gnu::noinline]] std::uint64_t key_loop(const cdsb::KeyDistribution& dist, G& g,
                                         std::uint64_t samples) {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < samples; ++i) {
    sum += dist(g);
    clobber_memory();
  }
  return sum;
}

// Median over the trials of ns per sample; run_trial(samples) returns the loop's sum.
// An untimed tenth-size run first warms caches, branch predictors and the clock frequency.
template <class RunTrial>
double median_ns_per_sample(const Options& options, std::uint64_t samples, RunTrial run_trial) {
  sink = run_trial(std::max<std::uint64_t>(1, samples / 10));
  std::vector<double> per_trial;
  for (std::uint64_t t = 0; t < options.trials; ++t) {
    const auto start = std::chrono::steady_clock::now();
    const std::uint64_t sum = run_trial(samples);
    const auto stop = std::chrono::steady_clock::now();
    sink = sum;
    const double ns = std::chrono::duration<double, std::nano>(stop - start).count();
    per_trial.push_back(ns / static_cast<double>(samples));
  }
  std::sort(per_trial.begin(), per_trial.end());
  const std::size_t mid = per_trial.size() / 2;
  return per_trial.size() % 2 == 1 ? per_trial[mid] : (per_trial[mid - 1] + per_trial[mid]) / 2;
}

void print_figure(std::string_view key, double value) {
  std::printf("%.*s=%.2f\n", static_cast<int>(key.size()), key.data(), value);
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  std::printf("key_range=%llu\nsamples=%llu\ntrials=%llu\nseed=%llu\n",
              static_cast<unsigned long long>(options.key_range),
              static_cast<unsigned long long>(options.samples),
              static_cast<unsigned long long>(options.trials),
              static_cast<unsigned long long>(bench_seed));
  std::fflush(stdout);

  for (const cdsb::GeneratorKind kind : cdsb::all_generators()) {
    const std::string key = "rng_ns_per_sample." + std::string(cdsb::generator_name(kind));
    if (!cdsb::generator_available(kind)) {
      std::printf("%s=unavailable\n", key.c_str());
      continue;
    }
    // RDRAND takes from ~100 ns to microseconds a call: fewer samples keep the run short.
    const std::uint64_t samples = kind == cdsb::GeneratorKind::rdrand
                                      ? std::max<std::uint64_t>(1, options.samples / 50)
                                      : options.samples;
    print_figure(key, median_ns_per_sample(options, samples, [kind](std::uint64_t n) {
                   cdsb::AnyGenerator g(kind, bench_seed);
                   return draw_loop(g, n);
                 }));
    std::fflush(stdout);
  }

  print_figure("rng_direct_ns_per_sample.xoshiro256starstar",
               median_ns_per_sample(options, options.samples, [](std::uint64_t n) {
                 cdsb::Xoshiro256StarStar g;
                 g.seed(bench_seed);
                 return draw_loop(g, n);
               }));
  print_figure("rng_register_ns_per_sample.xoshiro256starstar",
               median_ns_per_sample(options, options.samples, [](std::uint64_t n) {
                 cdsb::Xoshiro256StarStar g;
                 g.seed(bench_seed);
                 return register_draw_loop(g, n);
               }));
  print_figure("reseeding_ns_per_sample.never",
               median_ns_per_sample(options, options.samples, [](std::uint64_t n) {
                 cdsb::Xoshiro256StarStar inner;
                 inner.seed(bench_seed);
                 cdsb::Reseeding<cdsb::Xoshiro256StarStar> g(inner, 0);
                 return draw_loop(g, n);
               }));
  print_figure("reseeding_ns_per_sample.every_10000",
               median_ns_per_sample(options, options.samples, [](std::uint64_t n) {
                 cdsb::Xoshiro256StarStar inner;
                 inner.seed(bench_seed);
                 cdsb::Reseeding<cdsb::Xoshiro256StarStar> g(inner, 10000);
                 return draw_loop(g, n);
               }));
  std::fflush(stdout);

  for (const std::string_view text :
       {"uniform", "zipf:0.99", "zipf-unscrambled:0.99", "hotspot:10:90"}) {
    const auto parsed = cdsb::parse_distribution(text);
    const auto& spec = std::get<cdsb::DistributionSpec>(parsed);  // literals known to parse
    const cdsb::KeyDistribution dist(spec, options.key_range, bench_seed);
    print_figure("dist_ns_per_sample." + std::string(text),
                 median_ns_per_sample(options, options.samples, [&dist](std::uint64_t n) {
                   cdsb::AnyGenerator g(cdsb::GeneratorKind::xoshiro256starstar, bench_seed);
                   return key_loop(dist, g, n);
                 }));
    std::fflush(stdout);
  }
  return 0;
}
