// `cdsbench-testing`: the harness with the deliberately broken structures registered.
#include "bench/harness/cli.hpp"
#include "bench/core/process_allocator.hpp"
#include "support/broken_sets.hpp"

int main(int argc, char** argv) {
  cdsb::bench::prepare_process(argc, argv);
  return cdsb::bench::run_cli(argc, argv, cdsb::testing::registry_with_broken_sets());
}
