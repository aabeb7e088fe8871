// Uses the installed headers: a locked set and a generator, checked by exit status.
#include <cdsbench/random/generators.hpp>
#include <cdsbench/set/locked_std_set.hpp>

int main() {
  cdsb::LockedStdSet<cdsb::SpinLock> set(1);
  cdsb::Xoshiro256StarStar rng;
  rng.seed(1);
  const auto key = 1 + rng.next() % 100;
  const bool ok = set.insert(0, key, key) && set.contains(0, key) && !set.insert(0, key, key);
  return ok ? 0 : 1;
}
