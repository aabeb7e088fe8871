// `cdsbench-testing`: the harness with the deliberately broken structures registered.
#include "bench/cli.hpp"
#include "support/broken_sets.hpp"

int main(int argc, char** argv) {
  return cdsb::bench::run_cli(argc, argv, cdsb::testing::registry_with_broken_sets());
}
