// etcd_coordinator (etcd/coordinator.hpp) under faults that need a network between it and etcd: the loopback
// proxy test/etcd/blackhole_proxy.py (started by the test, stopped by its pid) holds connections silently (no RST,
// no FIN) or holds only new ones. Against the three-member cluster of the fixture etcd_cluster (skipped without
// one):
// - a lost lease stays lost (revoked by etcd; given up after a TTL of silence while etcd, after a leader change,
//   still holds it): nothing held is reported held again, later acquisitions fail with lease_lost;
// - compaction of the revision a waiter watches from: it re-reads, re-watches and is granted in FIFO order;
// - a silent partition of the holder: it learns within its TTL that its lease is lost, its call fails with
//   lease_lost and its fenced write is refused;
// - waiting asynchronous acquisitions share a bounded set of threads.
#include <tool_effects/dispatch.hpp>
#include <tool_effects/etcd.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <mutex>
#include <thread>
#include <vector>

#include <csignal>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etcd_test_support.hpp"

namespace etcd_faults_test_ns {

namespace te = tool_effects;
namespace etcd = tool_effects::etcd;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

using etcd_test::endpoints;

etcd::coordinator_options options(const std::string& prefix, std::chrono::seconds ttl) {
  return etcd_test::coordinator_options(prefix, ttl);
}
std::string fresh_prefix() { return etcd_test::fresh_prefix("te-faults"); }
std::string temp_dir() { return etcd_test::temp_dir("te_etcd_faults"); }

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Polls `pred` every 10 ms for at most `limit`; whether it held.
template <class Pred>
bool eventually(std::chrono::milliseconds limit, Pred&& pred) {
  const auto until = clock_type::now() + limit;
  while (!pred()) {
    if (clock_type::now() >= until) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

etcd::client admin() {
  etcd::client_options o;
  o.endpoints = endpoints();
  return etcd::client(o);
}

boost::system::error_code acquire_error(const etcd::etcd_coordinator& c, const te::call_description& d,
                                        te::acquire_options o = {}) {
  try {
    (void)c.acquire(d, o);
  } catch (const boost::system::system_error& e) {
    return e.code();
  }
  return {};
}

// ---------------------------------------------------------------------------------------------- the proxy
// test/etcd/blackhole_proxy.py to one member, driven through its stdin; killed by its pid.
class blackhole_proxy {
 public:
  explicit blackhole_proxy(const std::string& upstream_url) {
    std::signal(SIGPIPE, SIG_IGN);
    const auto port = upstream_url.substr(upstream_url.rfind(':') + 1);
    const auto script =
        (std::filesystem::path(TOOL_EFFECTS_ETCD_CLUSTER_SCRIPT).parent_path() / "blackhole_proxy.py").string();
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      for (const int fd : {in[0], in[1], out[0], out[1]}) close(fd);
      execlp("python3", "python3", script.c_str(), port.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = fdopen(out[0], "r");
    const auto first = line();
    if (first.rfind("port ", 0) != 0) throw std::runtime_error("blackhole_proxy.py did not start: " + first);
    port_ = first.substr(5);
  }
  blackhole_proxy(const blackhole_proxy&) = delete;
  blackhole_proxy& operator=(const blackhole_proxy&) = delete;
  ~blackhole_proxy() {
    close(to_);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    if (from_) std::fclose(from_);
  }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + port_; }
  // "hold", "hold_new", "pass": true when the proxy answered ok
  bool command(const std::string& c) {
    const auto l = c + "\n";
    if (write(to_, l.data(), l.size()) != static_cast<ssize_t>(l.size())) return false;
    return line() == "ok";
  }
  // "held H conns C compacted K"
  long stat(const std::string& field) {
    const std::string l = "stat\n";
    if (write(to_, l.data(), l.size()) != static_cast<ssize_t>(l.size())) return -1;
    std::istringstream in(line());
    std::string name;
    long value = 0;
    while (in >> name >> value)
      if (name == field) return value;
    return -1;
  }

 private:
  std::string line() {
    char buf[256] = {};
    if (!from_ || !std::fgets(buf, sizeof buf, from_)) return {};
    std::string s(buf);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
  }
  pid_t pid_ = -1;
  int to_ = -1;
  std::FILE* from_ = nullptr;
  std::string port_;
};

// ---------------------------------------------------------------------------------------------- resources
struct res_a : te::resource<> {
  static constexpr std::string_view resource_name = "a";
};
struct res_b : te::resource<> {
  static constexpr std::string_view resource_name = "b";
};
struct write_a {
  using side_effects = te::effects<te::writes<res_a>>;
  int operator()() const { return 0; }
};
struct write_b {
  using side_effects = te::effects<te::writes<res_b>>;
  int operator()() const { return 0; }
};

using etcd_test::fenced_write;

// Tells the test (pipe) it runs holding its grant, waits for the test's word, then writes the fenced file.
struct fenced_writer {
  using side_effects = te::effects<te::writes<res_a>>;
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

#undef REQUIRE_CLUSTER  // unity-built with the other etcd tests, which define their own
#define REQUIRE_CLUSTER()                                                                    \
  if (endpoints().size() < 3) GTEST_SKIP() << "no etcd cluster (the fixture etcd_cluster needs etcd)"

// ---------------------------------------------------------------------------------------------- 1. lost stays lost
// etcd revokes the lease under a held grant: the coordinator learns it within a keepalive period; from then on the
// grant reports lost, every later acquisition of that coordinator fails at once with lease_lost (none puts a key
// under the dead lease), and another coordinator is granted at once. The control: a lock_session that skips the
// coordinator's check and puts keys under the dead lease is refused by etcd (with a reason that is not the stable
// lease_lost), so without the check a call would fail as "unavailable" instead.
TEST(EtcdFaults, ARevokedLeaseStaysLostAndLaterAcquisitionsFailWithLeaseLost) {
  REQUIRE_CLUSTER();
  const auto prefix = fresh_prefix();
  etcd::etcd_coordinator c(options(prefix, 4s)), other(options(prefix, 5s));
  const auto a = te::describe<write_a>("write_a");
  const auto b = te::describe<write_b>("write_b");
  auto g = c.acquire(a, {});
  ASSERT_FALSE(g.lost());
  auto adm = admin();
  adm.lease_revoke(c.lease_id());
  const auto t0 = clock_type::now();
  ASSERT_TRUE(eventually(3s, [&] { return c.lease_lost(); })) << "the revoked lease was not noticed";
  std::printf("revoked lease noticed after %.2f s (keepalive period 1 s)\n", seconds_since(t0));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(g.lost());
    EXPECT_EQ(acquire_error(c, b), make_error_code(te::coordination_errc::lease_lost));
    EXPECT_EQ(acquire_error(c, a), make_error_code(te::coordination_errc::lease_lost));
    std::this_thread::sleep_for(400ms);
  }
  EXPECT_TRUE(c.lease_lost());
  // nothing under the prefix: the revoke took the grant's keys, and no later call put one
  const auto keys = adm.range(etcd::range_request(prefix, etcd::detail::prefix_end(prefix)));
  EXPECT_EQ(keys.kvs.size(), 0u);
  auto h = other.acquire(a, {.wait_limit = 2s});
  EXPECT_GT(h.fencing_token(), g.fencing_token());
  // the control: keys put under the dead lease without the coordinator's check
  auto raw = admin();
  etcd::lock_session s(raw, c.lease_id(), "control", prefix);
  std::string reason;
  try {
    (void)s.acquire(b, 1s);
  } catch (const etcd::error& e) {
    reason = e.reason();
  }
  std::printf("control: a session under the dead lease fails with \"%s\"\n", reason.c_str());
  EXPECT_FALSE(reason.empty()) << "etcd accepted a key under a revoked lease";
  EXPECT_NE(reason, "lease_lost");
}

// A TTL of silence (the proxy holds every connection), during which a leader change makes etcd extend the lease:
// the coordinator gives the lease up although etcd still holds it (the control: etcd renews it for another client
// at that moment, so a keeper that believed the next keepalive would report it held again). After the silence
// ends, nothing is reported held again for 2 s, later acquisitions fail with lease_lost, and the keeper revokes the
// lease it gave up, so another coordinator is granted without waiting for it to expire.
TEST(EtcdFaults, ALeaseGivenUpAfterATtlOfSilenceStaysLostThoughEtcdStillHoldsIt) {
  REQUIRE_CLUSTER();
  const auto eps = endpoints();
  const auto prefix = fresh_prefix();
  blackhole_proxy proxy(eps[0]);
  auto o = options(prefix, 2s);
  o.client.endpoints = {proxy.url()};
  etcd::etcd_coordinator c(o), other(options(prefix, 5s));
  const auto a = te::describe<write_a>("write_a");
  const auto b = te::describe<write_b>("write_b");
  auto g = c.acquire(a, {});
  ASSERT_TRUE(proxy.command("hold"));
  const auto t0 = clock_type::now();
  std::this_thread::sleep_for(300ms);
  // a leader change: the new leader extends every lease by its TTL (and the election timeout)
  std::vector<etcd::member_status> st;
  for (const auto& e : eps) {
    etcd::client_options co;
    co.endpoints = {e};
    st.push_back(etcd::client(co).status());
  }
  for (std::size_t i = 0; i < eps.size(); ++i) {
    if (st[i].member_id != st[i].leader) continue;
    etcd::client_options co;
    co.endpoints = {eps[i]};
    etcd::client(co).transfer_leadership(st[(i + 1) % eps.size()].member_id);
  }
  ASSERT_TRUE(eventually(4s, [&] { return c.lease_lost(); }));
  std::printf("given up %.2f s into the silence (TTL 2 s)\n", seconds_since(t0));
  // the control: etcd still holds the lease now
  auto adm = admin();
  EXPECT_NO_THROW((void)adm.lease_keepalive(c.lease_id())) << "no leader extension: the control shows nothing";
  ASSERT_TRUE(proxy.command("pass"));
  const auto t1 = clock_type::now();
  while (clock_type::now() - t1 < 2s) {
    ASSERT_TRUE(c.lease_lost()) << "a lost lease was reported held again";
    ASSERT_TRUE(g.lost());
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(acquire_error(c, b), make_error_code(te::coordination_errc::lease_lost));
  const auto t2 = clock_type::now();
  auto h = other.acquire(a, {.wait_limit = 10s});
  std::printf("another coordinator granted %.2f s after the silence ended\n", seconds_since(t2));
  EXPECT_TRUE(h.held());
}

// ---------------------------------------------------------------------------------------------- 2. compaction
// A waiter's watch request is held by the proxy (hold_new) while etcd compacts past the revision it watches from;
// released, the watch is canceled (compact_revision; the proxy counts it), and the waiter must re-read and
// re-watch. A younger waiter queues behind it. Pass: the first waiter is granted once the holder releases, the
// younger one only after the first releases (FIFO), tokens grow, nothing hangs. The control: a watch opened from
// that compacted revision ends canceled without the delete it waits for, so a waiter that only waited for a
// delete would hang.
TEST(EtcdFaults, AWaiterWhoseWatchRevisionIsCompactedRewatchesAndIsGrantedInFifoOrder) {
  REQUIRE_CLUSTER();
  const auto eps = endpoints();
  const auto prefix = fresh_prefix();
  blackhole_proxy proxy(eps[0]);
  auto wo = options(prefix, 20s);
  wo.lease.keepalive = 10s;  // no keepalive connection during the test: the only new connection is the watch
  wo.client.endpoints = {proxy.url()};
  wo.client.request_timeout = 10s;
  etcd::etcd_coordinator holder(options(prefix, 5s)), waiter(wo), younger(options(prefix, 5s));
  const auto a = te::describe<write_a>("write_a");
  const auto b = te::describe<write_b>("write_b");
  auto adm = admin();
  const auto r0 = adm.put(prefix + "junk", "0");
  auto hg = holder.acquire(a, {});
  waiter.acquire(b, {}).release();  // a connected client in the waiter's pool: its requests use no new connection
  ASSERT_TRUE(proxy.command("hold_new"));
  std::optional<etcd::etcd_grant> wg, yg;
  std::atomic<bool> w_done{false}, y_done{false};
  boost::system::error_code w_ec, y_ec;
  std::thread tw([&] {
    try {
      wg = waiter.acquire(a, {.wait_limit = 30s});
    } catch (const boost::system::system_error& e) {
      w_ec = e.code();
    }
    w_done = true;
  });
  ASSERT_TRUE(eventually(5s, [&] { return proxy.stat("held") >= 1; })) << "the waiter opened no watch";
  std::thread ty([&] {
    try {
      yg = younger.acquire(a, {.wait_limit = 30s});
    } catch (const boost::system::system_error& e) {
      y_ec = e.code();
    }
    y_done = true;
  });
  std::this_thread::sleep_for(300ms);
  std::int64_t rev = 0;
  for (int i = 0; i < 3; ++i) rev = adm.put(prefix + "junk", std::to_string(i));
  adm.compact(rev, true);
  {  // the control
    auto w = adm.watch(prefix + "junk", {}, r0);
    std::optional<etcd::watch_response> m;
    bool deleted = false;
    for (int i = 0; i < 4 && !(m && m->canceled); ++i) {
      m = w.next(1s);
      if (m)
        for (const auto& e : m->events) deleted = deleted || e.is_delete;
    }
    ASSERT_TRUE(m.has_value());
    EXPECT_TRUE(m->canceled) << "a watch from a compacted revision was not canceled";
    EXPECT_GE(m->compact_revision, rev);
    EXPECT_FALSE(deleted);
  }
  ASSERT_TRUE(proxy.command("pass"));
  EXPECT_TRUE(eventually(5s, [&] { return proxy.stat("compacted") >= 1; }))
      << "the waiter's watch was not canceled by the compaction (the test did not test it)";
  std::this_thread::sleep_for(500ms);
  EXPECT_FALSE(w_done.load()) << "granted while the holder holds";
  EXPECT_FALSE(y_done.load());
  const auto t0 = clock_type::now();
  hg.release();
  EXPECT_TRUE(eventually(10s, [&] { return w_done.load(); })) << "the waiter hangs after the compaction";
  std::printf("waiter granted %.3f s after the holder released (its watch was canceled by compaction)\n",
              seconds_since(t0));
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(y_done.load()) << "the younger waiter overtook the older one";
  ASSERT_TRUE(wg.has_value()) << w_ec.message();
  const auto w_token = wg->fencing_token();
  wg->release();
  EXPECT_TRUE(eventually(10s, [&] { return y_done.load(); }));
  tw.join();
  ty.join();
  ASSERT_TRUE(yg.has_value()) << y_ec.message();
  EXPECT_GT(w_token, hg.fencing_token());
  EXPECT_GT(yg->fencing_token(), w_token);
}

// ---------------------------------------------------------------------------------------------- 3. silent partition
// The holder reaches etcd only through the proxy and holds a grant inside a call; the proxy then delivers nothing
// (no RST, no FIN). The holder must learn within its TTL (plus one keepalive period) that its lease is lost; the
// other side is granted once etcd expires it and writes the fenced file; the holder's call then fails with
// lease_lost and its fenced write is refused. Nothing hangs: the partition lasts until the end. The control: the
// proxy passes everything; the grant holds and the holder's write is accepted.
TEST(EtcdFaults, ASilentlyPartitionedHolderLearnsWithinItsTtlFailsWithLeaseLostAndIsFenced) {
  REQUIRE_CLUSTER();
  for (const bool partition : {true, false}) {
    const auto prefix = fresh_prefix();
    const auto path = temp_dir() + "/fenced";
    blackhole_proxy proxy(endpoints().front());
    auto o = options(prefix, 2s);
    o.client.endpoints = {proxy.url()};
    o.client.request_timeout = 1000ms;
    etcd::etcd_coordinator held_by(o), other(options(prefix, 5s));
    int ready[2], go[2];
    ASSERT_EQ(pipe(ready), 0);
    ASSERT_EQ(pipe(go), 0);
    std::atomic<int> wrote{0};
    boost::asio::thread_pool pool(1);
    std::optional<te::outcome<long>> result;
    std::thread turn([&] {
      auto [r] = te::run_plan(pool, te::run_options{}.with(held_by),
                              te::call(fenced_writer{path, ready[1], go[0], &wrote}));
      result = std::move(r);
    });
    char ch = 0;
    ASSERT_EQ(read(ready[0], &ch, 1), 1);
    const auto d = te::describe<fenced_writer>("fenced_writer");
    if (partition) {
      ASSERT_TRUE(proxy.command("hold"));
      const auto t0 = clock_type::now();
      ASSERT_TRUE(eventually(5s, [&] { return held_by.lease_lost(); }));
      const auto noticed = seconds_since(t0);
      auto g = other.acquire(d, {.wait_limit = 15s});
      std::printf("silent partition: the holder gave its lease up %.2f s in (TTL 2 s, keepalive 0.5 s); the other "
                  "side was granted %.2f s in\n",
                  noticed, seconds_since(t0));
      EXPECT_LE(noticed, 2.0 + 0.5 + 0.25) << "the holder learnt too late that its lease is lost";
      EXPECT_TRUE(fenced_write(path, g.fencing_token(), 2));
      g.release();
    } else {
      EXPECT_EQ(acquire_error(other, d, {.wait_limit = 3s}), boost::asio::error::timed_out);
    }
    ch = 'g';
    ASSERT_EQ(write(go[1], &ch, 1), 1);
    const auto t_end = clock_type::now();
    turn.join();
    if (partition) std::printf("the partitioned turn ended %.2f s after its call did\n", seconds_since(t_end));
    pool.join();
    for (const int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
    ASSERT_TRUE(result.has_value());
    if (!partition) {
      EXPECT_EQ(wrote.load(), 1) << "the control's fenced write was refused";
      EXPECT_TRUE(result->has_value());
      EXPECT_FALSE(held_by.lease_lost());
      continue;
    }
    EXPECT_EQ(wrote.load(), 2) << "the partitioned holder's fenced write was accepted";
    ASSERT_FALSE(result->has_value());
    try {
      std::rethrow_exception(result->error());
    } catch (const te::call_failure& f) {
      EXPECT_EQ(f.reason(), te::failure_reason::lease_lost);
    }
    std::ifstream in(path);
    unsigned long long t = 0;
    long v = 0;
    in >> t >> v;
    EXPECT_EQ(v, 2) << "the stale holder overwrote the newer write";
  }
}

// ---------------------------------------------------------------------------------------------- 4. threads
long threads_now() {
  long n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// 200 asynchronous acquisitions of one resource wait behind a holder, on one io_context run by one thread: the
// process does not grow by a thread per waiting call (the coordinator has no thread for them: each is a
// coroutine on the caller's executor, its wait a watch connection; Asio's name resolution keeps one thread per
// io_context that resolved). Once the holder releases, all 200 are
// granted, one after the other in the order of their tokens (FIFO), each released by its handler.
TEST(EtcdFaults, TwoHundredWaitingAsyncAcquisitionsShareAFewThreads) {
  REQUIRE_CLUSTER();
  constexpr int n = 200;
  const auto prefix = fresh_prefix();
  etcd::etcd_coordinator holder(options(prefix, 10s)), waiter(options(prefix, 10s));
  const auto a = te::describe<write_a>("write_a");
  auto hg = holder.acquire(a, {});
  const auto held_token = hg.fencing_token();
  // The test's own client, which counts the keys, resolves (and so has its resolver thread) before the count.
  auto adm = admin();
  etcd::range_request q(prefix, etcd::detail::prefix_end(prefix));
  q.count_only = true;
  (void)adm.range(q);
  const long before = threads_now();
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });  // the one thread of every acquisition's I/O
  std::mutex m;
  std::vector<std::uint64_t> tokens;
  int failed = 0;
  for (int i = 0; i < n; ++i)
    waiter.async_acquire(a, {.wait_limit = 120s},
                         boost::asio::bind_executor(io, [&](boost::system::error_code ec, etcd::etcd_grant g) {
                           std::lock_guard lock(m);
                           if (ec) ++failed;
                           else tokens.push_back(g.fencing_token());
                         }));
  const auto t0 = clock_type::now();
  const bool all_wait = eventually(60s, [&] { return adm.range(q).count == n + 1; });
  std::this_thread::sleep_for(500ms);  // every waiter has opened its watch
  const long waiting = threads_now();
  std::printf("%d acquisitions waiting %.2f s after they were made; threads: %ld before, %ld while they wait\n", n,
              seconds_since(t0), before, waiting);
  EXPECT_TRUE(all_wait) << "not every acquisition put its key";
  // at most: the runner, Asio's resolver thread of `io` and that of the blocking client that releases grants
  // (one per io_context, whatever the number of acquisitions)
  EXPECT_LE(waiting - before, 4) << "a thread per waiting acquisition";
  const auto t1 = clock_type::now();
  hg.release();
  work.reset();
  runner.join();  // io.run() returns when every acquisition has ended
  std::printf("%d hand-offs in %.2f s\n", n, seconds_since(t1));
  EXPECT_EQ(failed, 0);
  ASSERT_EQ(tokens.size(), std::size_t{n});
  EXPECT_TRUE(std::is_sorted(tokens.begin(), tokens.end())) << "granted out of FIFO order";
  EXPECT_GT(tokens.front(), held_token);
}

}  // namespace etcd_faults_test_ns
