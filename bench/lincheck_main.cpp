#include "bench/lincheck.hpp"

int main(int argc, char** argv) {
  return cdsb::bench::run_lincheck(argc, argv, cdsb::bench::builtin_registry());
}
