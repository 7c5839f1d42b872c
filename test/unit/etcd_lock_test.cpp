// The etcd lock protocol (etcd/lock.hpp): its conflict ranges against access.hpp's rule on random access
// sets (in memory), and acquire / wait / release / fencing tokens against the real cluster of the fixture
// etcd_cluster (skipped without one).
#include <tool_effects/etcd.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <csignal>

#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etcd_test_support.hpp"

namespace etcd_lock_test_ns {

namespace etcd = tool_effects::etcd;
using tool_effects::access_mode;
using tool_effects::call_description;
using tool_effects::runtime_access;
using namespace std::chrono_literals;

bool in_range(const std::string& key, const etcd::key_range& r) {
  return key >= r.key && (r.range_end == std::string(1, '\0') || key < r.range_end);
}

// Whether any key of b lies in a conflict range of a (what the protocol sees), with `ranges` computing them.
template <class Ranges>
bool keys_conflict(const call_description& a, const call_description& b, Ranges&& ranges) {
  for (const auto& x : etcd::lock_accesses(a))
    for (const auto& r : ranges("p/", x))
      for (const auto& y : etcd::lock_accesses(b))
        if (in_range(etcd::lock_key("p/", y, "lease/uuid/1"), r)) return true;
  return false;
}

call_description random_call(std::mt19937& rng) {
  // paths over a small alphabet so that ancestors, equal paths and near-misses ("a" vs "ab") all occur;
  // targets that contain the separators
  static const std::vector<std::string> paths{"",    "a",     "ab",      "a/b",   "a/b/c", "a/bc",
                                              "b",   "b/a",   "a/b/c/d", "%",     "a%/b",  std::string("a\0b", 3)};
  static const std::vector<std::string> targets{"t", "u", std::string("t\0", 2), "%00", "x/y"};
  call_description d;
  d.name = "random";
  d.exclusive = rng() % 12 == 0;
  const auto n = 1 + rng() % 3;
  for (unsigned i = 0; i < n; ++i) {
    runtime_access a;
    a.resource = paths[rng() % paths.size()];
    a.mode = static_cast<access_mode>(rng() % 3);
    if (rng() % 2) a.target = targets[rng() % targets.size()];
    d.accesses.push_back(a);
  }
  return d;
}

TEST(EtcdLockRanges, GiveExactlyTheRuleOfAccessHppOnRandomAccessSets) {
  std::mt19937 rng(20261125);
  const auto ranges = [](std::string_view p, const runtime_access& a) { return etcd::conflict_ranges(p, a); };
  int conflicting = 0, mismatches = 0;
  constexpr int pairs = 20000;
  for (int i = 0; i < pairs; ++i) {
    const auto a = random_call(rng);
    const auto b = random_call(rng);
    const bool expected = tool_effects::conflicts(a, b);
    conflicting += expected;
    if (keys_conflict(a, b, ranges) != expected || keys_conflict(b, a, ranges) != expected) {
      if (++mismatches < 5) ADD_FAILURE() << "pair " << i << ": access.hpp says " << expected;
    }
  }
  EXPECT_EQ(mismatches, 0);
  // both outcomes are well represented
  EXPECT_GT(conflicting, pairs / 5);
  EXPECT_LT(conflicting, pairs * 4 / 5);
}

TEST(EtcdLockRanges, ControlRangesWithoutAncestorsOrTargetsMissConflicts) {
  std::mt19937 rng(7);
  // the control: drop the first range of every conflicting mode (the root's keys) — the comparison sees it
  const auto no_root = [](std::string_view p, const runtime_access& a) {
    auto r = etcd::conflict_ranges(p, a);
    std::vector<etcd::key_range> kept;
    for (const auto& x : r)
      if (x.key.find(std::string("|") + '\0') == std::string::npos) kept.push_back(x);
    return kept;
  };
  // and treating every targeted access as the whole resource (too many conflicts)
  const auto no_targets = [](std::string_view p, runtime_access a) {
    a.target.reset();
    return etcd::conflict_ranges(p, a);
  };
  int missed = 0, extra = 0;
  for (int i = 0; i < 5000; ++i) {
    const auto a = random_call(rng);
    const auto b = random_call(rng);
    const bool expected = tool_effects::conflicts(a, b);
    missed += expected && !keys_conflict(a, b, no_root);
    extra += !expected && keys_conflict(a, b, no_targets);
  }
  EXPECT_GT(missed, 0);
  EXPECT_GT(extra, 0);
}

using etcd_test::endpoints;

call_description call(std::vector<runtime_access> accesses) {
  call_description d;
  d.name = "call";
  d.exclusive = false;
  d.accesses = std::move(accesses);
  return d;
}

// Its lease is never renewed, so it is granted for 60 s: no test here waits for it to expire (they revoke
// it), and a run slowed by a loaded machine must not lose it first. With 10 s, the clang19 preset of a
// fresh-clone CI run once failed AWaiterWhoseLeaseExpiresFailsWithLeaseLost with "lease_not_found" after 10.47 s.
struct process {
  etcd::client c;
  etcd::lease lease;
  etcd::lock_session session;
  static etcd::client_options options(const std::vector<std::string>& eps) {
    etcd::client_options o;
    o.endpoints = eps;
    return o;
  }
  process(const std::vector<std::string>& eps, const std::string& prefix, const std::string& uuid)
      : c(options(eps)),
        lease(c.lease_grant(60)),
        session(c, lease.id, uuid, prefix) {}
};

TEST(EtcdLock, ConflictingCallsWaitInOrderAndDisjointOnesDoNot) {
  const auto eps = endpoints();
  if (eps.size() < 3) GTEST_SKIP() << "no etcd cluster (the fixture etcd_cluster needs etcd)";
  const auto prefix = "te-lock/" + std::to_string(std::random_device{}()) + "/";
  process p1(eps, prefix, "p1"), p2(eps, prefix, "p2"), p3(eps, prefix, "p3");
  const auto write_users = call({{"db/users", access_mode::write, std::nullopt}});
  const auto read_db = call({{"db", access_mode::read, std::nullopt}});
  const auto write_mail = call({{"mail", access_mode::write, std::nullopt}});

  const auto t0 = std::chrono::steady_clock::now();
  const auto g1 = p1.session.acquire(write_users, 5s);
  const auto uncontended = std::chrono::steady_clock::now() - t0;
  std::atomic<bool> second_granted{false};
  auto second = std::async(std::launch::async, [&] {
    auto g = p2.session.acquire(read_db, 10s);
    second_granted = true;
    return g;
  });
  // a disjoint call is granted while the first is held
  const auto g3 = p3.session.acquire(write_mail, 2s);
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(second_granted) << "a read of db was granted during a write of db/users";
  // a third conflicting request with a short wait limit times out, and leaves no key behind
  try {
    p3.session.acquire(read_db, 200ms);
    ADD_FAILURE() << "granted during a conflicting write";
  } catch (const etcd::error& e) {
    EXPECT_EQ(e.reason(), "coordination_timeout") << e.what();
  }
  p1.session.release(g1);
  ASSERT_EQ(second.wait_for(10s), std::future_status::ready) << "the waiting call was not granted";
  const auto g2 = second.get();
  EXPECT_GT(g2.token, g1.token) << "fencing tokens must grow along conflicting grants";
  p2.session.release(g2);
  p3.session.release(g3);
  std::printf("uncontended acquire: %.0f µs\n",
              std::chrono::duration<double, std::micro>(uncontended).count());
  EXPECT_TRUE(p1.c.range({prefix, etcd::detail::prefix_end(prefix)}).kvs.empty()) << "keys left behind";
}

TEST(EtcdLock, AWaiterWhoseLeaseExpiresFailsWithLeaseLost) {
  const auto eps = endpoints();
  if (eps.size() < 3) GTEST_SKIP() << "no etcd cluster (the fixture etcd_cluster needs etcd)";
  const auto prefix = "te-lock/" + std::to_string(std::random_device{}()) + "/";
  process holder(eps, prefix, "holder"), waiter(eps, prefix, "waiter");
  const auto w = call({{"repo", access_mode::write, std::nullopt}});
  const auto g = holder.session.acquire(w, 5s);
  auto waiting = std::async(std::launch::async, [&] { return waiter.session.acquire(w, 15s); });
  std::this_thread::sleep_for(300ms);
  waiter.c.lease_revoke(waiter.lease.id);  // its keys go, as when its TTL passes
  holder.session.release(g);               // the watch fires; the check finds the own key gone
  try {
    waiting.get();
    ADD_FAILURE() << "granted without its keys";
  } catch (const etcd::error& e) {
    EXPECT_EQ(e.reason(), "lease_lost") << e.what();
  }
}

// Round trips of the protocol on this machine (printed, not asserted on time): an uncontended acquire +
// release, and the hand-off of a contended grant (from the holder's release to the waiter's grant: the
// watch event plus the check Txn).
TEST(EtcdLock, RoundTripsUncontendedAndHandOff) {
  const auto eps = endpoints();
  if (eps.size() < 3) GTEST_SKIP() << "no etcd cluster (the fixture etcd_cluster needs etcd)";
  const auto prefix = "te-lock/" + std::to_string(std::random_device{}()) + "/";
  process p1(eps, prefix, "p1"), p2(eps, prefix, "p2");
  const auto w = call({{"counter", access_mode::write, std::nullopt}});
  constexpr int n = 30;
  std::chrono::steady_clock::duration uncontended{}, handoff{};
  std::int64_t last_token = 0;
  for (int i = 0; i < n; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto g1 = p1.session.acquire(w, 5s);
    p1.session.release(g1);
    uncontended += std::chrono::steady_clock::now() - t0;
    const auto held = p1.session.acquire(w, 5s);
    std::chrono::steady_clock::time_point released;
    auto waiter = std::async(std::launch::async, [&] {
      auto g = p2.session.acquire(w, 10s);
      return std::pair{g, std::chrono::steady_clock::now()};
    });
    std::this_thread::sleep_for(50ms);  // the waiter is watching
    released = std::chrono::steady_clock::now();
    p1.session.release(held);
    const auto [g2, granted_at] = waiter.get();
    handoff += granted_at - released;
    EXPECT_GT(g2.token, held.token);
    EXPECT_GT(held.token, last_token);
    last_token = g2.token;
    p2.session.release(g2);
  }
  const auto us = [](auto d) { return std::chrono::duration<double, std::micro>(d).count() / n; };
  std::printf("lock round trips (mean of %d, µs): uncontended acquire+release %.0f, contended hand-off %.0f\n", n,
              us(uncontended), us(handoff));
}

// A child process holding a key under a lease_keeper's lease is SIGSTOPped past the TTL: etcd expires the
// lease and deletes the key; after SIGCONT the keeper reports the lease lost at once. The control child is
// not stopped and keeps its lease and key for the same time.
int run_child(const std::vector<std::string>& eps, const std::string& key, bool stop_it) {
  int ready[2], go[2];
  if (pipe(ready) != 0 || pipe(go) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    int code = 20;
    try {
      etcd::client_options o;
      o.endpoints = eps;
      etcd::lease_keeper keeper(o, {std::chrono::seconds(2), std::chrono::milliseconds(300)});
      etcd::client c(o);
      c.put(key, "held", keeper.id());
      char b = 'r';
      if (write(ready[1], &b, 1) != 1) _exit(21);
      if (read(go[0], &b, 1) != 1) _exit(22);
      code = keeper.lost() ? 10 : 11;
    } catch (...) {
      code = 23;
    }
    _exit(code);
  }
  char b = 0;
  EXPECT_EQ(read(ready[0], &b, 1), 1);
  etcd::client_options o;
  o.endpoints = eps;
  etcd::client c(o);
  if (stop_it) kill(pid, SIGSTOP);
  // past the TTL: until the key is gone (at least 4 s), at most 30 s
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < 4s ||
         (stop_it && std::chrono::steady_clock::now() - t0 < 30s && !c.range({key}).kvs.empty()))
    std::this_thread::sleep_for(200ms);
  EXPECT_EQ(c.range({key}).kvs.empty(), stop_it) << (stop_it ? "the paused child's key survived"
                                                              : "the running child's key expired");
  if (stop_it) kill(pid, SIGCONT);
  b = 'g';
  EXPECT_EQ(write(go[1], &b, 1), 1);
  int status = 0;
  waitpid(pid, &status, 0);
  for (int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(EtcdLease, AKeeperPausedPastItsTtlKnowsItsLeaseIsLost) {
  const auto eps = endpoints();
  if (eps.size() < 3) GTEST_SKIP() << "no etcd cluster (the fixture etcd_cluster needs etcd)";
  const auto prefix = "te-lease/" + std::to_string(std::random_device{}()) + "/";
  EXPECT_EQ(run_child(eps, prefix + "running", false), 11) << "10: lost, 11: kept, 2x: the child failed";
  EXPECT_EQ(run_child(eps, prefix + "paused", true), 10) << "10: lost, 11: kept, 2x: the child failed";
}

// A lease_keeper given an executor renews the lease from a coroutine there and nowhere else: while the test
// runs `io` for longer than the TTL the lease is kept; while nobody runs `io` for longer than the TTL it is
// lost ("keepalive_timeout"), and stop() returns once the coroutine has ended on `io`. Control (by hand):
// with the keeper ignoring the executor (its own io_context and thread), the lease is not lost while `io`
// is left unrun, and the test fails.
TEST(EtcdLease, AKeeperOnAGivenExecutorRenewsOnlyWhileThatExecutorRuns) {
  const auto eps = endpoints();
  if (eps.size() < 3) GTEST_SKIP() << "no etcd cluster (the fixture etcd_cluster needs etcd)";
  etcd::client_options o;
  o.endpoints = eps;
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  etcd::lease_keeper keeper(o, {std::chrono::seconds(2), std::chrono::milliseconds(300)}, io.get_executor());
  io.run_for(std::chrono::milliseconds(3500));  // longer than the TTL: renewed from `io` only
  EXPECT_FALSE(keeper.lost()) << keeper.reason();
  EXPECT_EQ(keeper.reason(), "");
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // `io` not run for longer than the TTL
  EXPECT_TRUE(keeper.lost());
  EXPECT_EQ(keeper.reason(), "keepalive_timeout");
  work.reset();
  std::thread runner([&] { io.run(); });
  keeper.stop();
  runner.join();
  EXPECT_TRUE(keeper.lost()) << "a lost lease stays lost";
}

// The last owner of a keeper on a given executor may destroy it on that executor's only thread (a coordinator
// released by the last call of a single-threaded server): stop() cancels the coroutine and does not wait for it,
// so the destructor returns, the coroutine ends when `io` next runs it, and `io` runs out of work. Control (by
// hand): with stop() waiting for the coroutine, as it did, the destructor never returns (the test hangs until
// ctest's timeout).
TEST(EtcdLease, AKeeperDestroyedOnItsExecutorsOnlyThreadDoesNotWaitForIt) {
  const auto eps = endpoints();
  if (eps.size() < 3) GTEST_SKIP() << "no etcd cluster (the fixture etcd_cluster needs etcd)";
  etcd::client_options o;
  o.endpoints = eps;
  boost::asio::io_context io;
  auto keeper = std::make_unique<etcd::lease_keeper>(o, etcd::lease_options{std::chrono::seconds(2),
                                                                           std::chrono::milliseconds(300)},
                                                     io.get_executor());
  const std::int64_t id = keeper->id();
  bool destroyed = false;
  boost::asio::steady_timer later(io, std::chrono::milliseconds(700));  // after a keepalive or two
  later.async_wait([&](boost::system::error_code) {
    keeper.reset();  // on io's only thread
    destroyed = true;
  });
  const auto start = std::chrono::steady_clock::now();
  io.run();  // returns once the cancelled coroutine has ended: nothing else keeps io busy
  EXPECT_TRUE(destroyed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  etcd::client c(o);
  EXPECT_THROW((void)c.lease_keepalive(id), etcd::error) << "the destructor revoked the lease";
}


// A keeper whose coroutine has ended keeps nothing bound to its executor, so it may outlive that executor's
// context: here `io` is destroyed after stop() and a run, and then the keeper (as when a grant, released on
// another thread, holds the last reference to a coordinator). Control (by hand, asan preset): with the state
// keeping the strand and co_spawn's cancellation handler, the keeper's destruction reaches the destroyed
// strand service ("invalid vptr" from UBSan, heap-use-after-free from ASan).
TEST(EtcdLease, AKeeperWhoseCoroutineEndedMayOutliveItsExecutorsContext) {
  const auto eps = endpoints();
  if (eps.size() < 3) GTEST_SKIP() << "no etcd cluster (the fixture etcd_cluster needs etcd)";
  etcd::client_options o;
  o.endpoints = eps;
  auto io = std::make_unique<boost::asio::io_context>();
  auto keeper = std::make_unique<etcd::lease_keeper>(o, etcd::lease_options{std::chrono::seconds(2),
                                                                           std::chrono::milliseconds(300)},
                                                     io->get_executor());
  const std::int64_t id = keeper->id();
  io->run_for(std::chrono::milliseconds(400));  // a keepalive or so
  keeper->stop();
  io->run();  // the cancelled coroutine ends; then `io` has no work
  io.reset();
  EXPECT_FALSE(keeper->lost());
  keeper.reset();  // revokes the lease, and touches nothing of the destroyed `io`
  etcd::client c(o);
  EXPECT_THROW((void)c.lease_keepalive(id), etcd::error) << "the destructor revoked the lease";
}

}  // namespace etcd_lock_test_ns
