// The scheduler of scripted tests (architecture.md §5, "Scripted interleavings"): a test parks a
// thread at a named interleaving point of the library (CDSB_INTERLEAVE, cdsbench/platform/
// interleave.hpp), lets other threads act, then releases it, so the interleaving its check
// needs happens on every run instead of when the OS scheduler is unlucky.
//
//   Script script;                                          // installs the hook
//   auto marked = script.park_at("hm.erase.marked", 1);     // actor 1, its first pass there
//   script.spawn(1, [&] { erased = list.erase(1, 20); });   // actor 1: a thread (tid 1)
//   script.wait_parked(marked);                             // node 20 marked, not unlinked
//   EXPECT_FALSE(list.contains(0, 20));                     // the test's thread acts meanwhile
//   script.release(marked);
//   script.join(1);                                         // then `erased` may be read
//
// Actors are threads the script started, numbered by the test (by convention the thread id
// they pass to the structure). The test's own thread is no actor and never parks; it may act
// itself or through other actors. A breakpoint parks one actor (or any_actor) the n-th time
// that actor passes a point (passes are counted per actor from its start). Every other thread
// passes every point untouched: no lock, no shared write. Test code may mark its own points
// with CDSB_INTERLEAVE("test....") inside an actor's body (e.g. "holds the node, inside its
// guard").
//
// Nothing hangs. A wait of the test's thread (wait_parked, join) that is not satisfied within
// the timeout throws ScriptTimeout, naming the point and where the actor last was (a
// wait_parked fails at once if the actor finished without reaching the point). An actor parked
// for longer than the timeout is released and the test fails. The destructor releases every
// breakpoint and joins every actor; one that still does not finish aborts the binary with a
// message (a deadlock that no release can end). So an operation that would wait for a parked
// actor (a lock it holds, a grace period it delays) runs in another actor, joined after the
// release, never on the test's thread.
//
// Only for the scripted test binary, which defines CDSBENCH_SCRIPTED for itself alone.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cdsbench/platform/interleave.hpp"

#if !defined(CDSBENCH_SCRIPTED)
#error "tests/support/script.hpp belongs to the scripted test binary (compiled with CDSBENCH_SCRIPTED)"
#endif

namespace cdsb::testing {

// A wait of the test's thread that was not satisfied in time: the test fails with this message.
class ScriptTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Switches one seeded bug (CDSB_MUTANT) on for its scope. Create it before the actors start.
class Mutant {
 public:
  explicit Mutant(const char* name) { interleave::mutant.store(name, std::memory_order_release); }
  ~Mutant() { interleave::mutant.store(nullptr, std::memory_order_release); }
  Mutant(const Mutant&) = delete;
  Mutant& operator=(const Mutant&) = delete;
};

class Script {
 public:
  static constexpr int any_actor = -1;
  static constexpr int max_actors = 16;

  struct Breakpoint {
    int index;
  };

  explicit Script(std::chrono::milliseconds timeout = std::chrono::seconds(10)) : timeout_(timeout) {
    interleave::Hook none = nullptr;
    // release: this script's state is visible to a thread whose acquire load finds the hook.
    if (!interleave::hook.compare_exchange_strong(none, &on_point, std::memory_order_release))
      throw std::logic_error("one Script at a time");
  }

  Script(const Script&) = delete;
  Script& operator=(const Script&) = delete;

  // Releases every breakpoint, joins every actor, reports what went wrong while it ran.
  ~Script() {
    {
      std::lock_guard lock(mutex_);
      for (Point& p : points_) p.state = State::released;
      for (Actor& a : actors_) a.armed.store(0, std::memory_order_relaxed);
      armed_any_.store(0, std::memory_order_relaxed);
    }
    cv_.notify_all();
    for (int id = 0; id < max_actors; ++id) {
      Actor& a = actors_[id];
      if (!a.thread.joinable()) continue;
      std::unique_lock lock(mutex_);
      if (!cv_.wait_for(lock, timeout_, [&] { return a.finished; })) {
        std::fprintf(stderr, "Script: actor %d still runs %lld ms after its script ended, %s: a deadlock, aborting\n", id,
                     static_cast<long long>(timeout_.count()), where(id).c_str());
        std::abort();
      }
      lock.unlock();
      a.thread.join();
    }
    interleave::hook.store(nullptr, std::memory_order_release);
    for (const std::string& p : problems_) ADD_FAILURE() << p;
  }

  // Arms a breakpoint: `actor` parks the `pass`-th time it reaches `point` (any_actor: the
  // first actor whose own pass count there reaches `pass`). Arm before the actor gets there.
  Breakpoint park_at(std::string point, int actor, int pass = 1) {
    if (actor != any_actor && (actor < 0 || actor >= max_actors)) throw std::out_of_range("actor id");
    std::lock_guard lock(mutex_);
    points_.push_back({std::move(point), actor, pass});
    // release: with on_point's acquire, an actor that sees the count sees the breakpoint.
    (actor == any_actor ? armed_any_ : actors_[actor].armed).fetch_add(1, std::memory_order_release);
    return {static_cast<int>(points_.size()) - 1};
  }

  // Starts actor `actor` (not running) on a thread of its own.
  void spawn(int actor, std::function<void()> body) {
    Actor& a = actors_.at(actor);
    if (a.thread.joinable()) throw std::logic_error("actor " + std::to_string(actor) + " is already running");
    {
      std::lock_guard lock(mutex_);
      a.finished = false;
      a.last_point.store(nullptr, std::memory_order_relaxed);
    }
    a.thread = std::thread([this, actor, body = std::move(body)] {
      Self me{this, actor, {}};
      self_ = &me;
      std::string failure;
      try {
        body();
      } catch (const std::exception& e) {
        failure = "actor " + std::to_string(actor) + " threw: " + e.what();
      } catch (...) {
        failure = "actor " + std::to_string(actor) + " threw a non-standard exception";
      }
      self_ = nullptr;
      {
        std::lock_guard lock(mutex_);
        if (!failure.empty()) problems_.push_back(failure);
        actors_[actor].finished = true;
      }
      cv_.notify_all();
    });
  }

  // Returns once the breakpoint's actor is parked there; throws ScriptTimeout if it finished
  // without getting there, or did not get there within the timeout.
  void wait_parked(Breakpoint b) {
    std::unique_lock lock(mutex_);
    Point& p = points_.at(b.index);
    const auto actor_finished = [&] { return p.actor != any_actor && actors_[p.actor].finished; };
    cv_.wait_for(lock, timeout_, [&] { return p.state != State::armed || actor_finished(); });
    if (p.state == State::parked) return;
    if (p.state == State::released) throw std::logic_error("wait_parked: '" + p.name + "' was already released");
    const std::string who = p.actor == any_actor ? std::string("no actor") : "actor " + std::to_string(p.actor);
    const std::string when = actor_finished() ? "and finished" : "within " + std::to_string(timeout_.count()) + " ms";
    throw ScriptTimeout(who + " did not reach '" + p.name + "' (pass " + std::to_string(p.pass) + ") " + when +
                        (p.actor == any_actor ? std::string() : "; " + where(p.actor)));
  }

  // Lets the actor parked at the breakpoint go on.
  void release(Breakpoint b) {
    {
      std::lock_guard lock(mutex_);
      Point& p = points_.at(b.index);
      if (p.state != State::parked) throw std::logic_error("release: nothing is parked at '" + p.name + "'");
      p.state = State::released;
    }
    cv_.notify_all();
  }

  // Waits for the actor to finish (then what it wrote may be read); throws ScriptTimeout if it
  // does not finish within the timeout.
  void join(int actor) {
    Actor& a = actors_.at(actor);
    if (!a.thread.joinable()) throw std::logic_error("join: actor " + std::to_string(actor) + " is not running");
    {
      std::unique_lock lock(mutex_);
      if (!cv_.wait_for(lock, timeout_, [&] { return a.finished; }))
        throw ScriptTimeout("actor " + std::to_string(actor) + " did not finish within " +
                            std::to_string(timeout_.count()) + " ms; " + where(actor));
    }
    a.thread.join();
  }

 private:
  enum class State { armed, parked, released };

  struct Point {  // a breakpoint; guarded by mutex_
    std::string name;
    int actor;
    int pass;
    State state = State::armed;
  };

  struct Actor {
    std::thread thread;
    bool finished = false;                        // guarded by mutex_
    std::atomic<int> armed{0};                    // breakpoints armed for this actor
    std::atomic<const char*> last_point{nullptr};  // for messages only
    std::atomic<int> last_pass{0};
  };

  // The calling thread's actor: its script, id, and passes per point.
  struct Self {
    Script* script;
    int actor;
    std::vector<std::pair<const char*, int>> passes;
    int pass(const char* point) {
      for (auto& [name, n] : passes)
        if (std::strcmp(name, point) == 0) return ++n;
      passes.emplace_back(point, 1);
      return 1;
    }
  };
  static inline thread_local Self* self_ = nullptr;

  // The hook: counts the pass, and parks only if a breakpoint may be armed for this actor.
  static void on_point(const char* point) {
    Self* me = self_;
    if (!me) return;  // not an actor: untouched
    const int pass = me->pass(point);
    Script& s = *me->script;
    Actor& a = s.actors_[me->actor];
    // relaxed: read by the test's thread for its messages only, under no ordering.
    a.last_point.store(point, std::memory_order_relaxed);
    a.last_pass.store(pass, std::memory_order_relaxed);
    // acquire: pairs with park_at's release (the breakpoints themselves are read under the mutex).
    if (a.armed.load(std::memory_order_acquire) == 0 && s.armed_any_.load(std::memory_order_acquire) == 0) return;
    s.park_if_armed(me->actor, point, pass);
  }

  void park_if_armed(int actor, const char* point, int pass) {
    std::unique_lock lock(mutex_);
    for (Point& p : points_) {
      if (p.state != State::armed || p.pass != pass || (p.actor != any_actor && p.actor != actor)) continue;
      if (p.name != point) continue;
      p.state = State::parked;
      (p.actor == any_actor ? armed_any_ : actors_[actor].armed).fetch_sub(1, std::memory_order_relaxed);
      cv_.notify_all();
      if (!cv_.wait_for(lock, timeout_, [&] { return p.state == State::released; })) {
        problems_.push_back("actor " + std::to_string(actor) + " was parked at '" + p.name + "' for " +
                            std::to_string(timeout_.count()) + " ms and never released (did the test's thread wait for it?)");
        p.state = State::released;
      }
      return;
    }
  }

  // Where an actor is, for messages.
  std::string where(int actor) const {
    const char* last = actors_[actor].last_point.load(std::memory_order_relaxed);
    if (!last) return "it passed no interleaving point";
    return "it last passed '" + std::string(last) + "' (pass " +
           std::to_string(actors_[actor].last_pass.load(std::memory_order_relaxed)) + ")";
  }

  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Point> points_;  // a deque: a parked actor keeps a reference while others are armed
  std::array<Actor, max_actors> actors_;
  std::atomic<int> armed_any_{0};
  std::vector<std::string> problems_;  // guarded by mutex_ until the actors are joined
};

}  // namespace cdsb::testing
