// Dispatcher overhead and planning cost (Google Benchmark). See docs/benchmarks.md ("Runtime: scheduling overhead and makespans").
//
//  - BM_hand_post/N: the baseline. N no-op lambdas posted by hand to an asio::thread_pool, then wait for all
//    (an atomic countdown + condition variable).
//  - BM_run_plan_static/N: the same N no-op calls through run_plan(pool, call(noop)...) (a static pack; N = 16
//    and 64: each static call instantiates its own launcher, so a pack of hundreds of calls costs minutes of -O2
//    compile time; large turns use the runtime form, as a registry does).
//  - BM_run_plan_runtime/N: the same through the runtime form (N call_descriptions + std::function tasks),
//    planning included.
//    All use the SAME pool (2 threads), in the same run. The no-op tool only reads, so no call waits for another:
//    the comparison measures the engine, not the plan.
//  - BM_paired_*: the ratio run_plan / hand-posted, measured in interleaved pairs (see `paired`).
//  - BM_plan_calls/N: runtime planning of N random described calls (N = 8, 64, 512, 4096): the kept-edge
//    planner of plan_calls (successor lists). BM_plan_calls_dense/N: the same calls through dense bitset rows
//    (bench::conflict_rows in dense_planner.hpp, then every edge of the rows as lists), the planner plan_calls used before.
//    BM_plan_calls_writers/N and BM_plan_calls_writers_dense/N: N writers of one resource (N (N - 1) / 2
//    conflicting pairs, N - 1 kept edges).
//  - BM_plan_calls_typed/N: runtime planning of N calls of static tool types from the compile-time matrix.
#include <atomic>
#include <chrono>
#include <ctime>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "dense_planner.hpp"
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <tool_effects/dispatch.hpp>

namespace te = tool_effects;
namespace asio = boost::asio;

namespace {
asio::thread_pool& pool() {
  static asio::thread_pool p(2);
  return p;
}

struct noop {
  using side_effects = te::effects<te::read>;
  void operator()() const { benchmark::ClobberMemory(); }
};

void BM_hand_post(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    std::atomic<std::size_t> left{n};
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    for (std::size_t i = 0; i < n; ++i)
      asio::post(pool(), [&] {
        noop{}();
        if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
          std::lock_guard l(m);
          done = true;
          cv.notify_one();
        }
      });
    std::unique_lock l(m);
    cv.wait(l, [&] { return done; });
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_hand_post)->Arg(16)->Arg(256)->Arg(1024)->UseRealTime();

template <std::size_t N>
void BM_run_plan_static(benchmark::State& state) {
  for (auto _ : state) {
    auto r = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return te::run_plan(pool(), te::call((void(I), noop{}))...);
    }(std::make_index_sequence<N>{});
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * N));
}
BENCHMARK(BM_run_plan_static<16>)->Name("BM_run_plan_static/16")->UseRealTime();
BENCHMARK(BM_run_plan_static<64>)->Name("BM_run_plan_static/64")->UseRealTime();

void BM_run_plan_runtime(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<te::call_description> calls(n, te::describe<noop>("noop"));
  std::vector<std::function<void()>> tasks(n, [] { noop{}(); });
  for (auto _ : state) {
    auto r = te::run_plan(pool(), calls, tasks);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_run_plan_runtime)->Arg(16)->Arg(256)->Arg(1024)->UseRealTime();

// Paired measurement, robust to the shared machine's load: every iteration runs the hand-posted baseline and
// run_plan back to back (alternating which goes first) and accumulates both times; the counter `ratio` is
// run_plan time / hand time over the whole run (wall), `cpu_ratio` the same in process CPU time (user + sys of
// every thread: the caller and the pool), which other jobs on the machine disturb far less than wall time.
void hand_post_once(std::size_t n) {
  std::atomic<std::size_t> left{n};
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  for (std::size_t i = 0; i < n; ++i)
    asio::post(pool(), [&] {
      noop{}();
      if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard l(m);
        done = true;
        cv.notify_one();
      }
    });
  std::unique_lock l(m);
  cv.wait(l, [&] { return done; });
}

double process_cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

template <class F>
void paired(benchmark::State& state, std::size_t n, F&& through_run_plan) {
  using clock = std::chrono::steady_clock;
  double hand = 0, plan = 0, hand_cpu = 0, plan_cpu = 0;
  bool hand_first = true;
  for (auto _ : state) {
    for (int k = 0; k < 2; ++k) {
      const bool is_hand = hand_first == (k == 0);
      const double c0 = process_cpu_us();
      const auto t0 = clock::now();
      if (is_hand) hand_post_once(n);
      else through_run_plan();
      const double dt = std::chrono::duration<double, std::micro>(clock::now() - t0).count();
      const double dc = process_cpu_us() - c0;
      (is_hand ? hand : plan) += dt;
      (is_hand ? hand_cpu : plan_cpu) += dc;
    }
    hand_first = !hand_first;
  }
  const auto it = static_cast<double>(state.iterations());
  state.counters["hand_us"] = hand / it;
  state.counters["run_plan_us"] = plan / it;
  state.counters["ratio"] = plan / hand;
  state.counters["hand_cpu_us"] = hand_cpu / it;
  state.counters["run_plan_cpu_us"] = plan_cpu / it;
  state.counters["cpu_ratio"] = plan_cpu / hand_cpu;
}

void BM_paired_static_16(benchmark::State& state) {
  paired(state, 16, [] {
    auto r = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return te::run_plan(pool(), te::call((void(I), noop{}))...);
    }(std::make_index_sequence<16>{});
    benchmark::DoNotOptimize(r);
  });
}
BENCHMARK(BM_paired_static_16)->UseRealTime();

void BM_paired_runtime(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<te::call_description> calls(n, te::describe<noop>("noop"));
  std::vector<std::function<void()>> tasks(n, [] { noop{}(); });
  paired(state, n, [&] {
    auto r = te::run_plan(pool(), calls, tasks);
    benchmark::DoNotOptimize(r);
  });
}
BENCHMARK(BM_paired_runtime)->Arg(16)->Arg(256)->Arg(1024)->UseRealTime();

std::vector<te::call_description> random_calls(std::size_t n) {
  std::mt19937 rng(42);
  const std::vector<std::string> paths{"db", "db/users", "db/orders", "files", "files/docs", "log", "web", ""};
  std::vector<te::call_description> out;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<te::runtime_access> acc;
    const int k = 1 + static_cast<int>(rng() % 2);
    for (int a = 0; a < k; ++a) {
      te::runtime_access x{paths[rng() % (paths.size() - 1)], static_cast<te::access_mode>(rng() % 3), std::nullopt};
      if (rng() % 3 == 0) x.target = "t" + std::to_string(rng() % 16);
      acc.push_back(std::move(x));
    }
    out.push_back(rng() % 50 == 0 ? te::call_description{"unknown", {}, {}, true}
                                  : te::describe_runtime("call" + std::to_string(i), {}, std::move(acc)));
  }
  return out;
}

void BM_plan_calls(benchmark::State& state) {
  const auto calls = random_calls(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    auto p = te::plan_calls(calls);
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * state.range(0)));
}
BENCHMARK(BM_plan_calls)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);

void BM_plan_calls_dense(benchmark::State& state) {
  const auto calls = random_calls(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    te::runtime_plan p(calls.size(), bench::conflict_rows(calls));
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * state.range(0)));
}
BENCHMARK(BM_plan_calls_dense)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);

std::vector<te::call_description> writers(std::size_t n) {
  return std::vector<te::call_description>(n, te::describe_runtime("w", {}, {{"db", te::access_mode::write, std::nullopt}}));
}
void BM_plan_calls_writers(benchmark::State& state) {
  const auto calls = writers(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    auto p = te::plan_calls(calls);
    benchmark::DoNotOptimize(p);
  }
  state.counters["edges"] = static_cast<double>(te::plan_calls(calls).edge_count());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * state.range(0)));
}
BENCHMARK(BM_plan_calls_writers)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);
void BM_plan_calls_writers_dense(benchmark::State& state) {
  const auto calls = writers(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    te::runtime_plan p(calls.size(), bench::conflict_rows(calls));
    benchmark::DoNotOptimize(p);
  }
  state.counters["edges"] = static_cast<double>(te::runtime_plan(calls.size(), bench::conflict_rows(calls)).edge_count());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * state.range(0)));
}
BENCHMARK(BM_plan_calls_writers_dense)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);

struct users : te::resource<> {};
struct orders : te::resource<> {};
struct t0 { using side_effects = te::effects<te::reads<users>>; };
struct t1 { using side_effects = te::effects<te::writes<users>>; };
struct t2 { using side_effects = te::effects<te::reads<orders>, te::appends<users>>; };
struct t3 { using side_effects = te::effects<te::writes<orders>>; };
struct t4 { using side_effects = te::effects<te::network, te::idempotent>; };

void BM_plan_calls_typed(benchmark::State& state) {
  const auto& m = te::conflict_matrix_v<t0, t1, t2, t3, t4>;
  std::mt19937 rng(1);
  std::vector<std::size_t> types(static_cast<std::size_t>(state.range(0)));
  for (auto& t : types) t = rng() % 5;
  for (auto _ : state) {
    auto p = te::plan_calls(m, types);
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * state.range(0)));
}
BENCHMARK(BM_plan_calls_typed)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);
}  // namespace
