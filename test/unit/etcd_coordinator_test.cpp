// etcd_coordinator (etcd/coordinator.hpp) under the dispatcher, against the three-member cluster of the fixture
// etcd_cluster (skipped without one): tokens reach the tool; a fleet soak of 4 forked processes doing
// read-modify-write increments of one counter file plus appends (0 lost increments, 0 overlapping conflicting
// intervals in an access log), with an uncoordinated control that loses updates; faults: a client SIGKILLed
// while holding a grant, a client SIGSTOPped past its TTL (lease_lost, and its fenced write refused), the etcd
// leader SIGKILLed mid-run.
#include <tool_effects/dispatch.hpp>
#include <tool_effects/etcd.hpp>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <csignal>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etcd_test_support.hpp"

namespace etcd_coordinator_test_ns {

namespace te = tool_effects;
namespace etcd = tool_effects::etcd;
using namespace std::chrono_literals;

using etcd_test::cluster;
using etcd_test::endpoints;

etcd::coordinator_options options(const std::string& prefix, std::chrono::seconds ttl) {
  return etcd_test::coordinator_options(prefix, ttl);
}
std::string fresh_prefix() { return etcd_test::fresh_prefix("te-coord"); }
std::string temp_dir() { return etcd_test::temp_dir("te_etcd_coord"); }

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// ---------------------------------------------------------------------------------------------- the world
// Files shared by the processes: the counter (read-modify-write), an append-only file, and an access log with
// one line per access: "<resource> <mode> <start ns> <end ns> <pid> <token>" (steady_clock is CLOCK_MONOTONIC,
// one clock for every process of the machine). Each line is one write(2) to an O_APPEND file.
struct files {
  std::string counter, appended, log;
};

void log_access(const files& f, const char* resource, const char* mode, long long start, long long end,
                std::uint64_t token) {
  const auto line = std::string(resource) + " " + mode + " " + std::to_string(start) + " " + std::to_string(end) +
                    " " + std::to_string(getpid()) + " " + std::to_string(token) + "\n";
  const int fd = open(f.log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd >= 0) {
    if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::perror("log");
    close(fd);
  }
}

long read_long(const std::string& path) {
  std::ifstream in(path);
  long v = 0;
  in >> v;
  return v;
}

struct counter_file : te::resource<> {
  static constexpr std::string_view resource_name = "counter";
};
struct appended_file : te::resource<> {
  static constexpr std::string_view resource_name = "appended";
};

// A read-modify-write increment with a window between the read and the write (another process's overlapping
// increment is lost).
struct increment {
  using side_effects = te::effects<te::writes<counter_file>>;
  const files* f;
  long operator()(const te::attempt_context& ctx) const {
    const auto start = now_ns();
    const long v = read_long(f->counter) + 1;
    std::this_thread::sleep_for(1ms);
    {
      std::ofstream out(f->counter + ".tmp", std::ios::trunc);
      out << v;
    }
    std::rename((f->counter + ".tmp").c_str(), f->counter.c_str());
    log_access(*f, "counter", "write", start, now_ns(), ctx.fencing_token);
    return v;
  }
};
struct append_line {
  using side_effects = te::effects<te::appends<appended_file>>;
  const files* f;
  long operator()(const te::attempt_context& ctx) const {
    const auto start = now_ns();
    const auto line = std::to_string(getpid()) + "\n";
    const int fd = open(f->appended.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0 || write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return -1;
    close(fd);
    log_access(*f, "appended", "append", start, now_ns(), ctx.fencing_token);
    return 0;
  }
};

struct interval {
  std::string resource, mode;
  long long start = 0, end = 0;
  long pid = 0;
};

std::vector<interval> read_log(const std::string& path) {
  std::vector<interval> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    interval i;
    std::uint64_t token = 0;
    l >> i.resource >> i.mode >> i.start >> i.end >> i.pid >> token;
    out.push_back(i);
  }
  return out;
}

// Pairs of accesses of different processes to the same resource, in conflicting modes, whose intervals overlap.
long conflicting_overlaps(std::vector<interval> v) {
  std::sort(v.begin(), v.end(), [](const interval& a, const interval& b) { return a.start < b.start; });
  const auto mode = [](const std::string& m) {
    return m == "write" ? te::access_mode::write : m == "append" ? te::access_mode::append : te::access_mode::read;
  };
  long n = 0;
  for (std::size_t i = 0; i < v.size(); ++i)
    for (std::size_t j = i + 1; j < v.size() && v[j].start < v[i].end; ++j)
      if (v[i].resource == v[j].resource && te::access_modes_conflict(mode(v[i].mode), mode(v[j].mode))) ++n;
  return n;
}

// One fleet member: `turns` turns of (increment, append) through the dispatcher, with or without the etcd
// coordinator. Exit code: the number of calls that failed (capped), 100+ on an exception.
// A call that did not succeed: 1, and its reason on stderr (0 when it succeeded).
template <class Outcome>
int failed_call(const Outcome& o, const char* what) {
  if (o.has_value()) return 0;
  std::string why = o.aborted() ? "aborted" : "(no reason)";
  if (o.has_error()) {
    try {
      std::rethrow_exception(o.error());
    } catch (const std::exception& e) {
      why = e.what();
    } catch (...) {
    }
  }
  std::fprintf(stderr, "fleet member %d: %s failed: %s\n", static_cast<int>(getpid()), what, why.c_str());
  return 1;
}

// Exit status: failed increments + 10 x failed appends (each at most 9), 100 on an exception.
int fleet_member(const files& f, const std::string& prefix, int turns, bool coordinated) {
  try {
    boost::asio::thread_pool pool(2);
    int failed_increments = 0, failed_appends = 0;
    if (coordinated) {
      etcd::etcd_coordinator coord(options(prefix, 5s));
      const auto opts = te::run_options{}.with(coord);
      for (int t = 0; t < turns; ++t) {
        auto [a, b] = te::run_plan(pool, opts, te::call(increment{&f}), te::call(append_line{&f}));
        failed_increments += failed_call(a, "increment");
        failed_appends += failed_call(b, "append");
      }
    } else {
      for (int t = 0; t < turns; ++t) {
        auto [a, b] = te::run_plan(pool, te::call(increment{&f}), te::call(append_line{&f}));
        failed_increments += failed_call(a, "increment");
        failed_appends += failed_call(b, "append");
      }
    }
    pool.join();
    return std::min(failed_increments, 9) + 10 * std::min(failed_appends, 9);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fleet member: %s\n", e.what());
    return 100;
  }
}

struct fleet_result {
  long counter = 0, appended = 0, overlaps = 0, failed_processes = 0;
  long failed_increments = 0, failed_appends = 0;  // calls whose outcome was a failure (exit status < 100)
  long crashed = 0;                                 // members that threw (exit 100) or were killed
  double seconds = 0;
};

// Forks `n` members, then optionally runs `during(pids)` (faults), waits for all.
template <class During>
fleet_result run_fleet(int n, int turns, bool coordinated, During&& during) {
  const auto dir = temp_dir();
  const files f{dir + "/counter", dir + "/appended", dir + "/access.log"};
  { std::ofstream(f.counter) << 0; }
  const auto prefix = fresh_prefix();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = fork();
    if (pid == 0) _exit(fleet_member(f, prefix, turns, coordinated));
    pids.push_back(pid);
  }
  during(pids);
  fleet_result r;
  for (const auto pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) < 100) {
      r.failed_increments += WEXITSTATUS(status) % 10;
      r.failed_appends += WEXITSTATUS(status) / 10;
    } else {
      ++r.crashed;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++r.failed_processes;
      std::printf("member %d: %s %d\n", pid, WIFEXITED(status) ? "exit" : "signal",
                  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.counter = read_long(f.counter);
  {
    std::ifstream in(f.appended);
    std::string line;
    while (std::getline(in, line)) ++r.appended;
  }
  r.overlaps = conflicting_overlaps(read_log(f.log));
  std::filesystem::remove_all(dir);
  return r;
}

#undef REQUIRE_CLUSTER  // unity-built with the other etcd tests, which define their own
#define REQUIRE_CLUSTER()                                                                    \
  if (endpoints().size() < 3) GTEST_SKIP() << "no etcd cluster (the fixture etcd_cluster needs etcd)"

// ---------------------------------------------------------------------------------------------- tests
TEST(EtcdCoordinator, GrantsReachTheToolAndConflictingCallsOfTwoCoordinatorsTakeTurns) {
  REQUIRE_CLUSTER();
  const auto prefix = fresh_prefix();
  etcd::etcd_coordinator a(options(prefix, 5s)), b(options(prefix, 5s));
  const auto d = te::describe<increment>("increment");
  auto g1 = a.acquire(d, {});
  EXPECT_GT(g1.fencing_token(), 0u);
  // b waits for a's grant: a short wait limit times out
  EXPECT_THROW((void)b.with_wait_limit(300ms).acquire(d, b.with_wait_limit(300ms).default_acquire_options()),
               boost::system::system_error);
  const auto held_token = g1.fencing_token();
  g1.release();
  auto g2 = b.acquire(d, {});
  EXPECT_GT(g2.fencing_token(), held_token);
  g2.release();
  // through the dispatcher: the tool sees the grant's token
  const auto dir = temp_dir();
  const files f{dir + "/counter", dir + "/appended", dir + "/access.log"};
  boost::asio::thread_pool pool(2);
  auto [x, y] = te::run_plan(pool, te::run_options{}.with(a), te::call(increment{&f}), te::call(append_line{&f}));
  ASSERT_TRUE(x.has_value());
  ASSERT_TRUE(y.has_value());
  const auto log = read_log(f.log);
  ASSERT_EQ(log.size(), 2u);
  std::ifstream in(f.log);
  std::string r, m;
  long long s = 0, e = 0;
  long pid = 0;
  std::uint64_t token = 0;
  in >> r >> m >> s >> e >> pid >> token;
  EXPECT_GT(token, held_token) << "the tool's attempt_context carries the etcd grant's token";
}

// The soak: 4 processes x 200 turns. Pass: 0 lost increments, every append present, 0 conflicting overlaps.
TEST(EtcdCoordinator, FleetSoakLosesNoIncrementAndNoConflictingAccessesOverlap) {
  REQUIRE_CLUSTER();
  constexpr int members = 4, turns = 200;
  const auto r = run_fleet(members, turns, true, [](const std::vector<pid_t>&) {});
  std::printf("coordinated fleet: %d x %d turns in %.1f s; counter %ld of %d, appends %ld, overlaps %ld\n",
              members, turns, r.seconds, r.counter, members * turns, r.appended, r.overlaps);
  EXPECT_EQ(r.failed_processes, 0);
  EXPECT_EQ(r.counter, members * turns) << "lost increments";
  EXPECT_EQ(r.appended, members * turns);
  EXPECT_EQ(r.overlaps, 0);
}

// The control: the same fleet without the coordinator loses increments and overlaps.
TEST(EtcdCoordinator, ControlWithoutTheCoordinatorLosesIncrements) {
  constexpr int members = 4, turns = 40;
  const auto r = run_fleet(members, turns, false, [](const std::vector<pid_t>&) {});
  std::printf("uncoordinated fleet: counter %ld of %d, overlaps %ld\n", r.counter, members * turns, r.overlaps);
  EXPECT_EQ(r.failed_processes, 0);
  EXPECT_LT(r.counter, members * turns);
  EXPECT_GT(r.overlaps, 0);
}

// SIGKILL the etcd leader while the fleet runs: the two others keep quorum; no increment lost or doubled.
TEST(EtcdCoordinator, FleetSurvivesTheLeaderKilledMidRun) {
  REQUIRE_CLUSTER();
  const auto eps = endpoints();
  constexpr int members = 4, turns = 30;
  pid_t killed = 0;
  std::size_t killed_index = 0;
  std::string killed_endpoint;
  const auto r = run_fleet(members, turns, true, [&](const std::vector<pid_t>&) {
    std::this_thread::sleep_for(1500ms);
    // the leader: the member whose /v3/maintenance/status says leader == its own member id
    const auto j = cluster();
    for (std::size_t i = 0; i < eps.size(); ++i) {
      try {
        etcd::client_options o;
        o.endpoints = {eps[i]};
        etcd::client c(o);
        const auto st = c.status();
        if (st.leader == st.member_id) {
          killed = j["members"][i]["pid"].get<pid_t>();
          killed_index = i;
          killed_endpoint = eps[i];
          kill(killed, SIGKILL);
          break;
        }
      } catch (const etcd::error&) {
      }
    }
  });
  std::printf("leader %d (%s) killed; fleet: counter %ld of %d, appends %ld, overlaps %ld, %.1f s\n", killed,
              killed_endpoint.c_str(), r.counter, members * turns, r.appended, r.overlaps, r.seconds);
  // bring the member back for the tests that follow
  if (killed != 0) {
    const auto cmd = std::string("python3 ") + TOOL_EFFECTS_ETCD_CLUSTER_SCRIPT + " restart " +
                     TOOL_EFFECTS_ETCD_STATE_DIR + " " + std::to_string(killed_index) + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) std::printf("could not restart the killed member\n");
  }
  ASSERT_NE(killed, 0) << "no leader found";
  // A call whose grant could not be had while the cluster elected a new leader may fail (alone, with its
  // reason on stderr): its effect must then not have happened. Every call that succeeded happened once.
  EXPECT_EQ(r.crashed, 0);
  EXPECT_LE(r.failed_increments + r.failed_appends, 2) << "more than a call or two failed over the election";
  EXPECT_EQ(r.counter, members * turns - r.failed_increments) << "an increment was lost or doubled";
  EXPECT_EQ(r.appended, members * turns - r.failed_appends);
  EXPECT_EQ(r.overlaps, 0);
}

using etcd_test::fenced_write;

struct fenced_resource : te::resource<> {
  static constexpr std::string_view resource_name = "fenced";
};
// Tells the parent (pipe) it runs, waits for the parent's word, then writes the fenced file with its token.
struct fenced_writer {
  using side_effects = te::effects<te::writes<fenced_resource>>;
  std::string path;
  int ready_fd, go_fd;
  std::atomic<int>* write_result;
  long operator()(const te::attempt_context& ctx) const {
    char b = 'r';
    if (write(ready_fd, &b, 1) != 1) return -1;
    if (read(go_fd, &b, 1) != 1) return -1;
    *write_result = fenced_write(path, ctx.fencing_token, 1) ? 1 : 2;
    return 0;
  }
};

// A child holding a grant inside a call is SIGSTOPped past its 2 s TTL; meanwhile the parent is granted the
// same resource and writes the fenced file with its newer token. After SIGCONT the child's write is refused,
// and its call fails with lease_lost. Exit code: 10 + 10*(write refused) + (lease_lost reported).
// Control: the same child, not stopped, writes and succeeds (exit 0 + ...).
int stopped_child(const std::string& prefix, const std::string& path, int ready_fd, int go_fd) {
  try {
    boost::asio::thread_pool pool(1);
    etcd::etcd_coordinator coord(options(prefix, 2s));
    std::atomic<int> wrote{0};
    auto [o] = te::run_plan(pool, te::run_options{}.with(coord), te::call(fenced_writer{path, ready_fd, go_fd, &wrote}));
    bool lease_lost = false;
    if (!o.has_value()) {
      try {
        std::rethrow_exception(o.error());
      } catch (const te::call_failure& f) {
        lease_lost = f.reason() == te::failure_reason::lease_lost;
      } catch (...) {
      }
    }
    return (wrote == 2 ? 20 : wrote == 1 ? 10 : 0) + (lease_lost ? 1 : 0);
  } catch (...) {
    return 100;
  }
}

TEST(EtcdCoordinator, AClientStoppedPastItsTtlFailsWithLeaseLostAndItsFencedWriteIsRefused) {
  REQUIRE_CLUSTER();
  for (const bool stop_it : {true, false}) {
    const auto prefix = fresh_prefix();
    const auto path = temp_dir() + "/fenced";
    int ready[2], go[2];
    ASSERT_EQ(pipe(ready), 0);
    ASSERT_EQ(pipe(go), 0);
    const pid_t pid = fork();
    if (pid == 0) _exit(stopped_child(prefix, path, ready[1], go[0]));
    char b = 0;
    ASSERT_EQ(read(ready[0], &b, 1), 1);  // the child runs its call, holding the grant
    etcd::etcd_coordinator parent(options(prefix, 5s));
    const auto d = te::describe<fenced_writer>("fenced_writer");
    std::uint64_t parent_token = 0;
    if (stop_it) {
      kill(pid, SIGSTOP);
      const auto t0 = std::chrono::steady_clock::now();
      auto g = parent.acquire(d, {.wait_limit = 15s});  // granted once the child's lease expires
      const auto waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("granted to the parent %.2f s after the child (TTL 2 s) was stopped\n", waited);
      parent_token = g.fencing_token();
      EXPECT_TRUE(fenced_write(path, parent_token, 2));
      g.release();
      kill(pid, SIGCONT);
      std::this_thread::sleep_for(200ms);  // the keeper's clock check runs as soon as the child does
    } else {
      // the control: the grant is held; a conflicting acquisition of the parent times out
      EXPECT_THROW((void)parent.acquire(d, {.wait_limit = 3s}), boost::system::system_error);
    }
    b = 'g';
    ASSERT_EQ(write(go[1], &b, 1), 1);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    const int code = WEXITSTATUS(status);
    for (const int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
    if (stop_it) {
      EXPECT_EQ(code, 21) << "expected: write refused (20) + lease_lost (1)";
      std::ifstream in(path);
      unsigned long long t = 0;
      long v = 0;
      in >> t >> v;
      EXPECT_EQ(t, parent_token);
      EXPECT_EQ(v, 2) << "the stale holder overwrote the newer write";
    } else {
      EXPECT_EQ(code, 10) << "the control: write accepted, no lease_lost";
    }
  }
}

// A client SIGKILLed while its call holds a grant: the others are granted once its lease expires (TTL 2 s).
TEST(EtcdCoordinator, OthersProceedAfterAKilledHoldersLeaseExpires) {
  REQUIRE_CLUSTER();
  const auto prefix = fresh_prefix();
  const auto path = temp_dir() + "/fenced";
  int ready[2], go[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(go), 0);
  const pid_t pid = fork();
  if (pid == 0) _exit(stopped_child(prefix, path, ready[1], go[0]));
  char b = 0;
  ASSERT_EQ(read(ready[0], &b, 1), 1);
  etcd::etcd_coordinator parent(options(prefix, 5s));
  const auto d = te::describe<fenced_writer>("fenced_writer");
  // held: not granted within 1 s
  EXPECT_THROW((void)parent.acquire(d, {.wait_limit = 1s}), boost::system::system_error);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto g = parent.acquire(d, {.wait_limit = 15s});
  const auto waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("granted %.2f s after the holder (TTL 2 s) was killed\n", waited);
  EXPECT_TRUE(g.held());
  EXPECT_LT(waited, 10.0);
  for (const int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
}

// Measurements (printed, not asserted on time; docs/benchmarks.md): acquire + release of etcd_coordinator against
// local_coordinator, uncontended and the contended hand-off (from the holder's release to the waiter's grant),
// and one coordinated call through the dispatcher.
template <class C>
void measure(const char* what, const C& holder, const C& waiter, int n) {
  const auto d = te::describe<increment>("increment");
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  for (int i = 0; i < n; ++i) {
    auto g = holder.acquire(d, {});
    g.release();
  }
  const double uncontended = std::chrono::duration<double, std::micro>(clock::now() - t0).count() / n;
  double handoff = 0;
  const int m = std::min(n, 30);
  for (int i = 0; i < m; ++i) {
    auto held = holder.acquire(d, {});
    std::atomic<long long> granted_at{0};
    std::thread t([&] {
      auto g = waiter.acquire(d, {});
      granted_at = clock::now().time_since_epoch().count();
      g.release();
    });
    std::this_thread::sleep_for(20ms);
    const auto released = clock::now();
    held.release();
    t.join();
    handoff += std::chrono::duration<double, std::micro>(clock::duration(granted_at.load()) -
                                                         released.time_since_epoch()).count();
  }
  boost::asio::thread_pool pool(2);
  const auto dir = temp_dir();
  const files f{dir + "/counter", dir + "/appended", dir + "/access.log"};
  const auto opts = te::run_options{}.with(holder);
  const auto t1 = clock::now();
  for (int i = 0; i < m; ++i) (void)te::run_plan(pool, opts, te::call(append_line{&f}));
  const double coordinated = std::chrono::duration<double, std::micro>(clock::now() - t1).count() / m;
  const auto t2 = clock::now();
  for (int i = 0; i < m; ++i) (void)te::run_plan(pool, te::call(append_line{&f}));
  const double bare = std::chrono::duration<double, std::micro>(clock::now() - t2).count() / m;
  std::printf("%s: acquire+release uncontended %.2f us (mean of %d), contended hand-off %.1f us (mean of %d); "
              "one call through run_plan %.1f us coordinated vs %.1f us without\n",
              what, uncontended, n, handoff / m, m, coordinated, bare);
}

TEST(EtcdCoordinator, RoundTripsAgainstLocalCoordinator) {
  REQUIRE_CLUSTER();
  const te::local_coordinator local;
  measure("local_coordinator", local, local, 10000);
  const auto prefix = fresh_prefix();
  const etcd::etcd_coordinator a(options(prefix, 10s)), b(options(prefix, 10s));
  measure("etcd_coordinator (3 members)", a, b, 200);
}

// Fleet throughput: turns per second with 1, 2 and 4 processes on the shared counter (each turn: one
// increment, serialized fleet-wide, and one append).
TEST(EtcdCoordinator, FleetThroughputByProcessCount) {
  REQUIRE_CLUSTER();
  for (const int members : {1, 2, 4}) {
    constexpr int turns = 50;
    const auto r = run_fleet(members, turns, true, [](const std::vector<pid_t>&) {});
    std::printf("%d process(es) x %d turns on one shared counter: %.1f s, %.0f turns/s; counter %ld\n", members,
                turns, r.seconds, members * turns / r.seconds, r.counter);
    EXPECT_EQ(r.counter, members * turns);
    EXPECT_EQ(r.overlaps, 0);
  }
}

// A loopback TCP proxy to one etcd member that can be cut (every connection closed, new ones closed at once)
// and resumed: a network partition between one client and the cluster.
class cut_proxy {
 public:
  explicit cut_proxy(const std::string& upstream_url) {
    const auto colon = upstream_url.rfind(':');
    upstream_port_ = static_cast<unsigned short>(std::stoi(upstream_url.substr(colon + 1)));
    acceptor_.open(boost::asio::ip::tcp::v4());
    acceptor_.bind({boost::asio::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~cut_proxy() {
    boost::asio::post(io_, [this] {
      boost::system::error_code ec;
      acceptor_.close(ec);
      close_all();
    });
    work_.reset();
    io_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()); }
  void cut(bool c) {
    cut_ = c;
    if (c) boost::asio::post(io_, [this] { close_all(); });
  }

 private:
  using tcp = boost::asio::ip::tcp;
  struct pair_t {
    tcp::socket a, b;
    std::array<char, 16384> ab{}, ba{};
    explicit pair_t(boost::asio::io_context& io) : a(io), b(io) {}
  };
  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket s) {
      if (ec) return;
      if (!cut_) {
        auto p = std::make_shared<pair_t>(io_);
        p->a = std::move(s);
        boost::system::error_code e2;
        p->b.connect({boost::asio::ip::make_address("127.0.0.1"), upstream_port_}, e2);
        if (!e2) {
          pairs_.push_back(p);
          pump(p, p->a, p->b, p->ab);
          pump(p, p->b, p->a, p->ba);
        }
      }
      accept();
    });
  }
  void pump(std::shared_ptr<pair_t> p, tcp::socket& from, tcp::socket& to, std::array<char, 16384>& buf) {
    from.async_read_some(boost::asio::buffer(buf), [this, p, &from, &to, &buf](boost::system::error_code ec, std::size_t n) {
      if (ec) return shut(*p);
      boost::asio::async_write(to, boost::asio::buffer(buf.data(), n), [this, p, &from, &to, &buf](boost::system::error_code e, std::size_t) {
        if (e) return shut(*p);
        pump(p, from, to, buf);
      });
    });
  }
  static void shut(pair_t& p) {
    boost::system::error_code ec;
    p.a.close(ec);
    p.b.close(ec);
  }
  void close_all() {
    for (auto& w : pairs_)
      if (const auto p = w.lock()) shut(*p);
    pairs_.clear();
  }
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{io_.get_executor()};
  tcp::acceptor acceptor_{io_};
  unsigned short upstream_port_ = 0;
  std::atomic<bool> cut_{false};
  std::vector<std::weak_ptr<pair_t>> pairs_;
  std::thread thread_;
};

// Partition: a coordinator that reaches etcd only through the proxy holds a grant inside a call; the proxy is cut
// past the 2 s TTL, another coordinator is granted meanwhile and writes the fenced file, the proxy is resumed: the
// partitioned call fails with lease_lost and its fenced write is refused. Nothing hangs. The control: not cut.
TEST(EtcdCoordinator, APartitionedHolderFailsWithLeaseLostAndItsFencedWriteIsRefused) {
  REQUIRE_CLUSTER();
  for (const bool cut : {true, false}) {
    const auto prefix = fresh_prefix();
    const auto path = temp_dir() + "/fenced";
    cut_proxy proxy(endpoints().front());
    auto o = options(prefix, 2s);
    o.client.endpoints = {proxy.url()};
    o.client.request_timeout = 1000ms;
    etcd::etcd_coordinator partitioned(o);
    etcd::etcd_coordinator other(options(prefix, 5s));
    int ready[2], go[2];
    ASSERT_EQ(pipe(ready), 0);
    ASSERT_EQ(pipe(go), 0);
    std::atomic<int> wrote{0};
    boost::asio::thread_pool pool(1);
    std::optional<te::outcome<long>> result;
    std::thread turn([&] {
      auto [r] = te::run_plan(pool, te::run_options{}.with(partitioned), te::call(fenced_writer{path, ready[1], go[0], &wrote}));
      result = std::move(r);
    });
    char b = 0;
    ASSERT_EQ(read(ready[0], &b, 1), 1);
    const auto d = te::describe<fenced_writer>("fenced_writer");
    if (cut) {
      proxy.cut(true);
      const auto t0 = std::chrono::steady_clock::now();
      auto g = other.acquire(d, {.wait_limit = 15s});
      std::printf("granted to the other side %.2f s after the cut (TTL 2 s)\n",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      EXPECT_TRUE(fenced_write(path, g.fencing_token(), 2));
      g.release();
      proxy.cut(false);
    } else {  // the control: not cut, the grant holds; the other side waits in vain
      EXPECT_THROW((void)other.acquire(d, {.wait_limit = 3s}), boost::system::system_error);
    }
    b = 'g';
    ASSERT_EQ(write(go[1], &b, 1), 1);
    turn.join();
    for (const int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
    ASSERT_TRUE(result.has_value());
    if (!cut) {
      EXPECT_EQ(wrote.load(), 1) << "the control's fenced write was refused";
      EXPECT_TRUE(result->has_value());
      EXPECT_FALSE(partitioned.lease_lost());
      continue;
    }
    EXPECT_EQ(wrote.load(), 2) << "the partitioned holder's fenced write was accepted";
    ASSERT_FALSE(result->has_value());
    try {
      std::rethrow_exception(result->error());
    } catch (const te::call_failure& f) {
      EXPECT_EQ(f.reason(), te::failure_reason::lease_lost);
    }
    EXPECT_TRUE(partitioned.lease_lost());
  }
}

// Cancellation of an asynchronous acquisition: the handler gets operation_aborted at once, and the cancelled
// request's keys go (a younger conflicting request is granted once the holder releases, instead of waiting
// behind them): by the time its coroutine has ended, with no grace period.
TEST(EtcdCoordinator, ACancelledAsyncAcquisitionCompletesAtOnceAndLeavesNoKeys) {
  REQUIRE_CLUSTER();
  const auto prefix = fresh_prefix();
  etcd::etcd_coordinator a(options(prefix, 5s)), b(options(prefix, 5s)), c(options(prefix, 5s));
  const auto d = te::describe<increment>("increment");
  auto held = a.acquire(d, {});
  boost::asio::io_context io;
  boost::asio::cancellation_signal cancel;
  boost::system::error_code got;
  bool called = false;
  b.async_acquire(d, {},
                  boost::asio::bind_cancellation_slot(
                      cancel.slot(), boost::asio::bind_executor(io, [&](boost::system::error_code ec, etcd::etcd_grant g) {
                        called = true;
                        got = ec;
                        EXPECT_FALSE(g.held());
                      })));
  boost::asio::steady_timer t(io, 300ms);
  t.async_wait([&](boost::system::error_code) { cancel.emit(boost::asio::cancellation_type::terminal); });
  io.run();
  EXPECT_TRUE(called);
  EXPECT_EQ(got, boost::asio::error::operation_aborted);
  // io.run() returned: the acquisition's coroutine (on io) has ended, and it deleted b's keys before it did
  held.release();
  EXPECT_NO_THROW((void)c.acquire(d, {.wait_limit = 3s})) << "the cancelled request's keys still block";
}

// coordinator_options::executor: an asynchronous acquisition does its I/O there, not on the handler's executor
// (here none: the system executor) and not on a thread of the coordinator's. While `io` is not run nothing
// happens (no key is put); once it runs, the call is granted, and the handler runs on the system executor.
TEST(EtcdCoordinator, AsyncAcquisitionsDoTheirIoOnTheGivenExecutor) {
  REQUIRE_CLUSTER();
  const auto prefix = fresh_prefix();
  boost::asio::io_context io;
  auto o = options(prefix, 5s);
  o.executor = io.get_executor();
  std::optional<etcd::etcd_coordinator> holder(std::in_place, o);
  auto& c = *holder;
  const auto d = te::describe<increment>("increment");
  std::atomic<bool> called{false};
  std::atomic<std::uint64_t> token{0};
  c.async_acquire(d, {}, [&](boost::system::error_code ec, etcd::etcd_grant g) {
    EXPECT_FALSE(ec) << ec.message();
    token = g.fencing_token();
    called = true;
  });
  etcd::client adm(o.client);
  etcd::range_request q(prefix, etcd::detail::prefix_end(prefix));
  q.count_only = true;
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(adm.range(q).count, 0) << "the acquisition ran without its executor";
  EXPECT_FALSE(called.load());
  // `io` also renews the lease (it never runs out of work while the coordinator lives): run it in slices
  for (int i = 0; i < 1000 && !called; ++i) io.run_for(10ms);  // the handler, on the system executor
  EXPECT_TRUE(called.load());
  EXPECT_GT(token.load(), 0u);
  EXPECT_FALSE(c.lease_lost());
  // The last of the coordinator and the grant (released on the system executor's thread after the handler,
  // maybe after this test has ended and `io` is gone) stops the keeper; its coroutine ends on `io`, and the
  // keeper may then outlive `io` (see EtcdLease.AKeeperWhoseCoroutineEndedMayOutliveItsExecutorsContext).
  std::thread runner([&] { io.run(); });
  holder.reset();
  runner.join();
}

}  // namespace etcd_coordinator_test_ns
