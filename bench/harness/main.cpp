#include "bench/harness/cli.hpp"
#include "bench/core/process_allocator.hpp"

int main(int argc, char** argv) {
  cdsb::bench::prepare_process(argc, argv);
  return cdsb::bench::run_cli(argc, argv, cdsb::bench::builtin_registry());
}
