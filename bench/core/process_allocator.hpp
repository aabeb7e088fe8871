// The process's global allocator (`--malloc`) and what the segregated allocator needs.
//
// The harness runs under glibc's malloc unless --malloc names another: it then re-executes
// itself once with that allocator's library in LD_PRELOAD (so every allocation, the
// structure's and the harness's, goes to it) and reports which allocator actually serves
// malloc, found from the address `malloc` resolves to. The segregated allocation policy
// loads jemalloc with dlopen, which needs glibc to reserve static TLS space at start-up:
// the same re-execution adds that tunable.
#pragma once

#include <string>
#include <vector>

namespace cdsb::bench {

// The names --malloc accepts.
const std::vector<std::string>& malloc_names();

// The allocator serving malloc in this process: glibc, jemalloc, mimalloc, tcmalloc,
// asan or tsan (a sanitizer's own), or the file name of another library.
std::string served_malloc();

// First thing in main(): re-executes the process when --malloc asks for an allocator that
// does not serve it yet, or when glibc lacks the static-TLS reserve; returns otherwise (also
// when that cannot be done: the command line then reports what is wrong).
void prepare_process(int argc, char** argv);

}  // namespace cdsb::bench
