#include "bench/cli.hpp"

int main(int argc, char** argv) {
  return cdsb::bench::run_cli(argc, argv, cdsb::bench::builtin_registry());
}
