// `cdsbench-lincheck-testing`: the lincheck driver with the deliberately broken structures.
#include "bench/lincheck.hpp"
#include "support/broken_sets.hpp"

int main(int argc, char** argv) {
  return cdsb::bench::run_lincheck(argc, argv, cdsb::testing::registry_with_broken_sets());
}
