// `cdsbench-lincheck-testing`: the lincheck driver with the deliberately broken structures.
#include "bench/check/lincheck.hpp"
#include "bench/core/process_allocator.hpp"
#include "support/broken_sets.hpp"

int main(int argc, char** argv) {
  cdsb::bench::prepare_process(argc, argv);
  return cdsb::bench::run_lincheck(argc, argv, cdsb::testing::registry_with_broken_sets());
}
