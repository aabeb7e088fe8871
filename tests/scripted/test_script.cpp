// The scheduler itself (support/script.hpp): breakpoints park only whom they target, at the
// pass they name, and a script that waits for what never happens fails with a message instead
// of hanging.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "cdsbench/platform/interleave.hpp"
#include "support/script.hpp"

namespace script_test {

using namespace std::chrono_literals;
using cdsb::testing::Script;
using cdsb::testing::ScriptTimeout;

TEST(Script, ParksTheTargetedActorAtTheNamedPassOnly) {
  std::atomic<int> progress{0};
  Script script;
  const auto second = script.park_at("test.step", 1, 2);
  script.spawn(1, [&] {
    for (int i = 0; i < 3; ++i) {
      CDSB_INTERLEAVE("test.step");
      progress.fetch_add(1);
    }
  });
  script.spawn(2, [&] {  // passes the same point, untargeted: never parked
    for (int i = 0; i < 3; ++i) CDSB_INTERLEAVE("test.step");
  });
  script.join(2);
  script.wait_parked(second);
  EXPECT_EQ(progress.load(), 1) << "parked at its second pass, after one step";
  script.release(second);
  script.join(1);
  EXPECT_EQ(progress.load(), 3);
}

TEST(Script, AnyActorParksTheFirstToArrive) {
  Script script;
  const auto first = script.park_at("test.step", Script::any_actor);
  std::atomic<int> done{0};
  for (int a = 0; a < 3; ++a)
    script.spawn(a, [&] {
      CDSB_INTERLEAVE("test.step");
      done.fetch_add(1);
    });
  script.wait_parked(first);
  // The other two pass and finish while one is parked (which one is the OS's choice).
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (done.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(done.load(), 2);
  script.release(first);
  for (int a = 0; a < 3; ++a) script.join(a);
  EXPECT_EQ(done.load(), 3);
}

TEST(Script, WaitingForAPointAnActorNeverReachesFailsAsSoonAsItFinishes) {
  Script script;
  const auto never = script.park_at("test.nowhere", 1);
  script.spawn(1, [] { CDSB_INTERLEAVE("test.elsewhere"); });
  const auto start = std::chrono::steady_clock::now();
  try {
    script.wait_parked(never);
    ADD_FAILURE() << "wait_parked returned";
  } catch (const ScriptTimeout& e) {
    EXPECT_EQ(std::string(e.what()),
              "actor 1 did not reach 'test.nowhere' (pass 1) and finished; it last passed 'test.elsewhere' (pass 1)");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "it waited for the timeout instead";
}

TEST(Script, WaitingForAnActorThatDoesNotGetThereTimesOut) {
  std::atomic<bool> stop{false};
  Script script(100ms);
  const auto never = script.park_at("test.nowhere", 1);
  script.spawn(1, [&] {
    CDSB_INTERLEAVE("test.spinning");
    while (!stop.load()) std::this_thread::yield();
  });
  try {
    script.wait_parked(never);
    ADD_FAILURE() << "wait_parked returned";
  } catch (const ScriptTimeout& e) {
    EXPECT_EQ(std::string(e.what()),
              "actor 1 did not reach 'test.nowhere' (pass 1) within 100 ms; it last passed 'test.spinning' (pass 1)");
  }
  stop.store(true);
  script.join(1);
}

// The test's thread waits for something only the parked actor would do: after the timeout
// the actor is released (so nothing hangs) and the script reports the failure.
void wait_for_a_parked_actor() {
  std::atomic<bool> done{false};
  Script script(100ms);
  const auto parked = script.park_at("test.before", 1);
  script.spawn(1, [&] {
    CDSB_INTERLEAVE("test.before");
    done.store(true);
  });
  script.wait_parked(parked);
  while (!done.load()) std::this_thread::yield();  // a mistake: nobody releases it
}

TEST(Script, AnActorNeverReleasedIsReleasedAfterTheTimeoutAndFailsTheTest) {
  EXPECT_NONFATAL_FAILURE(wait_for_a_parked_actor(),
                          "actor 1 was parked at 'test.before' for 100 ms and never released");
}

TEST(Script, TheDestructorReleasesWhatTheTestLeftParked) {
  std::atomic<bool> done{false};
  {
    Script script;
    const auto parked = script.park_at("test.before", 1);
    script.spawn(1, [&] {
      CDSB_INTERLEAVE("test.before");
      done.store(true);
    });
    script.wait_parked(parked);
  }  // e.g. the test returned early on a failed check
  EXPECT_TRUE(done.load());
}

}  // namespace script_test
