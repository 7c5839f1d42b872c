// The etcd coordinator (issue 18) measured by Google Benchmark. See docs/benchmarks.md ("Coordination across
// processes on etcd").
//
// The benchmark starts its own single-member etcd on a free 127.0.0.1 port with test/etcd/cluster.py (data
// under <build>/etcd-cluster-bench, on the build's disk: its fsync is what a commit costs; the environment
// variable TOOL_EFFECTS_ETCD_BENCH_DIR puts it elsewhere, e.g. on tmpfs, where fsync costs nothing) and stops
// it by the pid the script recorded when the program ends. Without an etcd binary (Debian: etcd-server) every benchmark here is
// skipped with that message.
//
//  - BM_fleet_disjoint/P, BM_fleet_shared/P: P forked processes (1, 2, 4), each with its own etcd_coordinator
//    (its own lease), run `turns` turns of one coordinated call through run_plan; disjoint: process i writes its
//    own resource; shared: every process writes the same one (serialized fleet-wide). Wall time from the moment
//    every process is ready (coordinator made) until the last ends; counter turns_per_s = P * turns / time.
//  - BM_call/<coordinator>: one call through run_plan on a 2-thread pool: no coordinator, local_coordinator,
//    etcd_coordinator (side by side, one run).
//  - BM_acquire_release/<coordinator>: a blocking acquire + release of a one-write call, uncontended.
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include <tool_effects/coordination.hpp>
#include <tool_effects/dispatch.hpp>
#include <tool_effects/etcd.hpp>

namespace te = tool_effects;
namespace etcd = tool_effects::etcd;

namespace {

#if defined(TOOL_EFFECTS_ETCD_STATE_DIR) && defined(TOOL_EFFECTS_ETCD_CLUSTER_SCRIPT)
// One etcd member for this program: started at the first use, stopped (by pid, by the script) at exit.
class bench_etcd {
 public:
  static bench_etcd& get() {
    static bench_etcd e;
    return e;
  }
  [[nodiscard]] const std::string& endpoint() const { return endpoint_; }
  [[nodiscard]] const std::string& why_not() const { return why_not_; }
  ~bench_etcd() {
    if (started_) run("stop");
  }

 private:
  bench_etcd() : dir_(std::getenv("TOOL_EFFECTS_ETCD_BENCH_DIR") ? std::getenv("TOOL_EFFECTS_ETCD_BENCH_DIR")
                                                                  : std::string(TOOL_EFFECTS_ETCD_STATE_DIR) + "-bench") {
    const int rc = run("start", " --members 1");
    if (rc != 0) {
      why_not_ = rc == 77 ? "no etcd binary (Debian: apt-get install etcd-server)"
                          : "test/etcd/cluster.py could not start etcd (exit " + std::to_string(rc) + ")";
      return;
    }
    started_ = true;
    std::ifstream in(dir_ + "/cluster.json");
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_object() && j.contains("endpoints") && !j["endpoints"].empty())
      endpoint_ = j["endpoints"][0].get<std::string>();
    else
      why_not_ = "no endpoint in " + dir_ + "/cluster.json";
  }
  int run(const char* what, const char* extra = "") const {
    const auto cmd = std::string("python3 ") + TOOL_EFFECTS_ETCD_CLUSTER_SCRIPT + " " + what + " " + dir_ + extra +
                     " >/dev/null 2>&1";
    const int status = std::system(cmd.c_str());
    return status == -1 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string dir_;
  std::string endpoint_;
  std::string why_not_;
  bool started_ = false;
};

bool have_etcd(benchmark::State& state) {
  const auto& e = bench_etcd::get();
  if (!e.why_not().empty()) {
    state.SkipWithError(("skipped: " + e.why_not()).c_str());
    return false;
  }
  return true;
}
std::string endpoint() { return bench_etcd::get().endpoint(); }
#else
bool have_etcd(benchmark::State& state) {
  state.SkipWithError("skipped: built without the etcd test support (TOOL_EFFECTS_ETCD_CLUSTER_SCRIPT)");
  return false;
}
std::string endpoint() { return {}; }
#endif

etcd::coordinator_options options(const std::string& prefix) {
  etcd::coordinator_options o;
  o.client.endpoints = {endpoint()};
  o.prefix = prefix;
  o.lease.ttl = std::chrono::seconds(10);
  return o;
}

std::string fresh_prefix() { return "te-bench/" + std::to_string(std::random_device{}()) + "/"; }

template <int I>
struct res : te::resource<> {
  static constexpr std::string_view resource_name = I == 0 ? "r0" : I == 1 ? "r1" : I == 2 ? "r2" : "r3";
};
template <int I>
struct touch {
  using side_effects = te::effects<te::writes<res<I>>>;
  int operator()() const { return I; }
};

template <int I, class Opts>
bool one_turn(boost::asio::thread_pool& pool, const Opts& opts) {
  auto [r] = te::run_plan(pool, opts, te::call(touch<I>{}));
  return r.has_value();
}

// A fleet member: makes its coordinator, says it is ready, waits for the word, runs `turns` turns.
// Exit code: failed turns (capped), 100 on an exception.
int member(int index, bool shared, const std::string& prefix, int turns, int ready_fd, int go_fd) {
  try {
    etcd::etcd_coordinator c(options(prefix));
    boost::asio::thread_pool pool(2);
    const auto opts = te::run_options{}.with(c);
    char b = 'r';
    if (write(ready_fd, &b, 1) != 1 || read(go_fd, &b, 1) != 1) return 100;
    int failed = 0;
    const int which = shared ? 0 : index;
    for (int t = 0; t < turns; ++t) {
      const bool ok = which == 0   ? one_turn<0>(pool, opts)
                      : which == 1 ? one_turn<1>(pool, opts)
                      : which == 2 ? one_turn<2>(pool, opts)
                                   : one_turn<3>(pool, opts);
      failed += ok ? 0 : 1;
    }
    pool.join();
    return failed > 99 ? 99 : failed;
  } catch (...) {
    return 100;
  }
}

void fleet(benchmark::State& state, bool shared) {
  if (!have_etcd(state)) return;
  const int processes = static_cast<int>(state.range(0));
  constexpr int turns = 100;
  long failures = 0;
  for (auto _ : state) {
    const auto prefix = fresh_prefix();
    int ready[2], go[2];
    if (pipe(ready) != 0 || pipe(go) != 0) {
      state.SkipWithError("pipe");
      return;
    }
    std::vector<pid_t> pids;
    for (int i = 0; i < processes; ++i) {
      const pid_t pid = fork();
      if (pid == 0) _exit(member(i, shared, prefix, turns, ready[1], go[0]));
      pids.push_back(pid);
    }
    char b = 0;
    for (int i = 0; i < processes; ++i)
      if (read(ready[0], &b, 1) != 1) ++failures;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < processes; ++i) {
      b = 'g';
      if (write(go[1], &b, 1) != 1) ++failures;
    }
    for (const auto pid : pids) {
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
    }
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    for (const int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
  }
  if (failures) state.SkipWithError(("a fleet member failed " + std::to_string(failures) + " time(s)").c_str());
  state.counters["turns_per_s"] =
      benchmark::Counter(static_cast<double>(processes) * turns * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

void BM_fleet_disjoint(benchmark::State& state) { fleet(state, false); }
void BM_fleet_shared(benchmark::State& state) { fleet(state, true); }
// Fleets first: they fork, and the process has no coordinator threads yet.
BENCHMARK(BM_fleet_disjoint)->Arg(1)->Arg(2)->Arg(4)->Iterations(3)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fleet_shared)->Arg(1)->Arg(2)->Arg(4)->Iterations(3)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_call_uncoordinated(benchmark::State& state) {
  boost::asio::thread_pool pool(2);
  for (auto _ : state) benchmark::DoNotOptimize(one_turn<0>(pool, te::run_options{}));
}
void BM_call_local(benchmark::State& state) {
  boost::asio::thread_pool pool(2);
  const te::local_coordinator c;
  const auto opts = te::run_options{}.with(c);
  for (auto _ : state) benchmark::DoNotOptimize(one_turn<0>(pool, opts));
}
void BM_call_etcd(benchmark::State& state) {
  if (!have_etcd(state)) return;
  boost::asio::thread_pool pool(2);
  const etcd::etcd_coordinator c(options(fresh_prefix()));
  const auto opts = te::run_options{}.with(c);
  for (auto _ : state) benchmark::DoNotOptimize(one_turn<0>(pool, opts));
}
BENCHMARK(BM_call_uncoordinated)->Name("BM_call/none")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_call_local)->Name("BM_call/local_coordinator")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_call_etcd)->Name("BM_call/etcd_coordinator")->Unit(benchmark::kMicrosecond);

void BM_acquire_release_local(benchmark::State& state) {
  const te::local_coordinator c;
  const auto d = te::describe<touch<0>>("touch");
  for (auto _ : state) {
    auto g = c.acquire(d, {});
    benchmark::DoNotOptimize(g.fencing_token());
    g.release();
  }
}
void BM_acquire_release_etcd(benchmark::State& state) {
  if (!have_etcd(state)) return;
  const etcd::etcd_coordinator c(options(fresh_prefix()));
  const auto d = te::describe<touch<0>>("touch");
  for (auto _ : state) {
    auto g = c.acquire(d, {});
    benchmark::DoNotOptimize(g.fencing_token());
    g.release();
  }
}
BENCHMARK(BM_acquire_release_local)->Name("BM_acquire_release/local_coordinator")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_acquire_release_etcd)->Name("BM_acquire_release/etcd_coordinator")->Unit(benchmark::kMicrosecond);

}  // namespace
