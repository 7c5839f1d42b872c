// Coordination and journal costs (Google Benchmark). See docs/benchmarks.md ("Coordination across turns").
//
//  - BM_try_acquire_release: local_coordinator::try_acquire + release of a one-access call, uncontended (the
//    dispatcher's fast path).
//  - BM_try_acquire_release_among_holders/H: the same while H other grants (other targets) are held.
//  - BM_async_acquire_release: async_acquire on an io_context (the handler is posted, then run by poll) + release.
//  - BM_blocking_acquire_release: acquire() (the inline executor's path) + release.
//  - BM_turn_runtime/N, BM_turn_runtime_coordinated/N: a turn of N calls through the runtime form on a 2-thread
//    pool, without and with a coordinator (N = 16 and 256). Each call writes its own target of one resource: no
//    call of the turn waits for another, so the difference is the coordinator's cost (the queue holds up to N
//    requests, and each is checked against the older ones).
//  - BM_turn_static16, BM_turn_static16_coordinated: the same with 16 static calls (one tool type, reads).
//  - The turn benchmarks above also report the CPU time of the whole process (every pool thread), the cost
//    that wall time on a loaded 2-core machine hides; instruction counts (callgrind) are in docs/benchmarks.md.
//  - BM_sessions8/layout/coordinated/wait_us: 8 sessions at once (Google Benchmark threads, one session each),
//    each running turns of 8 calls through the runtime form on one shared 2-thread pool, with or without one
//    shared coordinator. layout 0: disjoint (session s writes its own targets s/0..s/7); layout 1:
//    overlapping (call i of session s writes target (s + i) % 8 of the same resource, so every call conflicts
//    with one call of every other session). wait_us 0: no-op calls (the dispatcher's and the coordinator's
//    own cost under 8-way contention); wait_us > 0: each call waits that long on an Asio timer (holds no
//    thread), as an I/O-bound tool does. Items: turns (all sessions together). Counters: the process's CPU
//    time, context switches and voluntary ones (sleeps) per turn (getrusage), to show where the time goes.
//  - BM_journal_turn/N: a turn of N calls with a sqlite_journal in the temporary directory (new keys each
//    iteration: every call records started and ended, two fsync'ed commits); per-call time = time / N.
//  - BM_journal_replay/N: the same turn replayed (every call ended): one lookup per call.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <sys/resource.h>

#include <benchmark/benchmark.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/coordination.hpp>
#include <tool_effects/dispatch.hpp>
#include <tool_effects/sqlite_journal.hpp>

namespace te = tool_effects;
namespace asio = boost::asio;

namespace {

te::call_description one_write(const std::string& target) {
  return te::describe_runtime("w", {}, {{"db/users", te::access_mode::write, target}});
}

asio::thread_pool& pool() {
  static asio::thread_pool p(2);
  return p;
}

// The micro-benchmarks below start the pool's threads first: in a process that never started a thread, glibc's
// mutex skips its atomic instructions (a single-threaded fast path no coordinated turn ever takes), which made
// std::mutex look twice as fast here as in any real use.
void BM_try_acquire_release(benchmark::State& state) {
  (void)pool();
  te::local_coordinator c;
  const auto d = one_write("a");
  for (auto _ : state) {
    auto g = c.try_acquire(d);
    benchmark::DoNotOptimize(g->fencing_token());
    g->release();
  }
}
BENCHMARK(BM_try_acquire_release);

// try_acquire + release while `range(0)` other grants are held (disjoint targets of the same resource, as
// sessions whose I/O-bound calls hold their grants): each acquisition is checked against every holder.
void BM_try_acquire_release_among_holders(benchmark::State& state) {
  (void)pool();
  te::local_coordinator c;
  const auto holders = static_cast<std::size_t>(state.range(0));
  std::vector<te::call_description> held_d;
  for (std::size_t i = 0; i < holders; ++i) held_d.push_back(one_write("h" + std::to_string(i)));
  std::vector<te::local_grant> held;
  for (const auto& h : held_d) held.push_back(*c.try_acquire(h));
  const auto d = one_write("a");
  for (auto _ : state) {
    auto g = c.try_acquire(d);
    benchmark::DoNotOptimize(g->fencing_token());
    g->release();
  }
}
BENCHMARK(BM_try_acquire_release_among_holders)->Arg(8)->Arg(64);

void BM_async_acquire_release(benchmark::State& state) {
  (void)pool();
  te::local_coordinator c;
  asio::io_context io;
  const auto d = one_write("a");
  for (auto _ : state) {
    c.async_acquire(d, {}, asio::bind_executor(io, [](boost::system::error_code, te::local_grant g) {
                      benchmark::DoNotOptimize(g.fencing_token());
                    }));
    io.restart();
    io.poll();
  }
}
BENCHMARK(BM_async_acquire_release);

void BM_blocking_acquire_release(benchmark::State& state) {
  (void)pool();
  te::local_coordinator c;
  const auto d = one_write("a");
  for (auto _ : state) {
    auto g = c.acquire(d, {});
    benchmark::DoNotOptimize(g.fencing_token());
  }
}
BENCHMARK(BM_blocking_acquire_release);

struct noop_task {
  int operator()() const { return 1; }
};

template <bool Coordinated>
void turn_runtime(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<te::call_description> d;
  for (std::size_t i = 0; i < n; ++i) d.push_back(one_write(std::to_string(i)));
  std::vector<noop_task> tasks(n);
  te::local_coordinator c;
  for (auto _ : state) {
    if constexpr (Coordinated) {
      auto out = te::run_plan(pool(), te::run_options{}.with(c), std::span<const te::call_description>(d), tasks);
      benchmark::DoNotOptimize(out.data());
    } else {
      auto out = te::run_plan(pool(), te::run_options{}, std::span<const te::call_description>(d), tasks);
      benchmark::DoNotOptimize(out.data());
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
void BM_turn_runtime(benchmark::State& s) { turn_runtime<false>(s); }
void BM_turn_runtime_coordinated(benchmark::State& s) { turn_runtime<true>(s); }
BENCHMARK(BM_turn_runtime)->Arg(16)->Arg(256)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_turn_runtime_coordinated)->Arg(16)->Arg(256)->UseRealTime()->MeasureProcessCPUTime();

struct users : te::resource<> {};
struct read_user {
  using side_effects = te::effects<te::reads<users>, te::idempotent>;
  int operator()() const { return 1; }
};

template <class Options>
void turn_static16(benchmark::State& state, const Options& o) {
  const read_user r;
  for (auto _ : state) {
    auto out = te::run_plan(pool(), o, te::call(r), te::call(r), te::call(r), te::call(r), te::call(r), te::call(r),
                            te::call(r), te::call(r), te::call(r), te::call(r), te::call(r), te::call(r), te::call(r),
                            te::call(r), te::call(r), te::call(r));
    benchmark::DoNotOptimize(&out);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * 16));
}
void BM_turn_static16(benchmark::State& s) { turn_static16(s, te::run_options{}); }
void BM_turn_static16_coordinated(benchmark::State& s) {
  te::local_coordinator c;
  turn_static16(s, te::run_options{}.with(c));
}
BENCHMARK(BM_turn_static16)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_turn_static16_coordinated)->UseRealTime()->MeasureProcessCPUTime();

// 8 sessions through one coordinator (see the header comment).
struct timed_task {
  std::chrono::microseconds wait;
  asio::awaitable<int> operator()() const {
    asio::steady_timer t(co_await asio::this_coro::executor, wait);
    co_await t.async_wait(asio::use_awaitable);
    co_return 1;
  }
};

te::local_coordinator& sessions_coordinator() {
  static te::local_coordinator c;
  return c;
}

template <class Tasks>
void run_session_turns(benchmark::State& state, const std::vector<te::call_description>& d, Tasks& tasks,
                       bool coordinated) {
  const std::span<const te::call_description> calls(d);
  for (auto _ : state) {
    if (coordinated) {
      auto out = te::run_plan(pool(), te::run_options{}.with(sessions_coordinator()), calls, tasks);
      benchmark::DoNotOptimize(out.data());
    } else {
      auto out = te::run_plan(pool(), te::run_options{}, calls, tasks);
      benchmark::DoNotOptimize(out.data());
    }
  }
}

void BM_sessions8(benchmark::State& state) {
  constexpr std::size_t calls_per_turn = 8;
  const bool overlapping = state.range(0) != 0;
  const bool coordinated = state.range(1) != 0;
  const auto wait = std::chrono::microseconds(state.range(2));
  const auto s = static_cast<std::size_t>(state.thread_index());
  std::vector<te::call_description> d;
  for (std::size_t i = 0; i < calls_per_turn; ++i)
    d.push_back(one_write(overlapping ? std::to_string((s + i) % calls_per_turn)
                                      : std::to_string(s) + "/" + std::to_string(i)));
  // Where the time goes (thread 0; the loop starts and ends at a barrier of all the sessions): the process's
  // CPU time and context switches (voluntary: a thread slept; involuntary: it was preempted) per turn.
  rusage before{};
  if (state.thread_index() == 0) getrusage(RUSAGE_SELF, &before);
  if (wait.count() == 0) {
    std::vector<noop_task> tasks(calls_per_turn);
    run_session_turns(state, d, tasks, coordinated);
  } else {
    std::vector<timed_task> tasks(calls_per_turn, timed_task{wait});
    run_session_turns(state, d, tasks, coordinated);
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    rusage after{};
    getrusage(RUSAGE_SELF, &after);
    const auto us = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec); };
    const double turns = static_cast<double>(state.iterations()) * state.threads();
    state.counters["cpu_us_per_turn"] =
        (us(after.ru_utime) + us(after.ru_stime) - us(before.ru_utime) - us(before.ru_stime)) / turns;
    state.counters["switches_per_turn"] =
        static_cast<double>(after.ru_nvcsw + after.ru_nivcsw - before.ru_nvcsw - before.ru_nivcsw) / turns;
    state.counters["sleeps_per_turn"] = static_cast<double>(after.ru_nvcsw - before.ru_nvcsw) / turns;
  }
}
BENCHMARK(BM_sessions8)
    ->ArgNames({"overlap", "coord", "wait_us"})
    ->Args({0, 0, 0})
    ->Args({0, 1, 0})
    ->Args({1, 1, 0})
    ->Args({0, 0, 200})
    ->Args({0, 1, 200})
    ->Args({1, 1, 200})
    ->Args({1, 0, 200})
    ->Threads(8)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

struct keyed_task {
  std::string key;
  int operator()() const { return 1; }
  [[nodiscard]] const std::string& idempotency_key() const noexcept { return key; }
};

template <bool Replay>
void journal_turn(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto path = std::filesystem::temp_directory_path() / "te_bench_journal.db";
  std::filesystem::remove(path);
  std::filesystem::remove(path.string() + "-wal");
  std::filesystem::remove(path.string() + "-shm");
  te::sqlite_journal j(path.string());
  std::vector<te::call_description> d;
  for (std::size_t i = 0; i < n; ++i) d.push_back(one_write(std::to_string(i)));
  std::vector<keyed_task> tasks(n);
  long turn = 0;
  auto set_keys = [&] {
    for (std::size_t i = 0; i < n; ++i) tasks[i].key = "t" + std::to_string(turn) + "/" + std::to_string(i);
  };
  set_keys();
  if constexpr (Replay) (void)te::run_plan(pool(), te::run_options{}.with(j), std::span<const te::call_description>(d), tasks);
  for (auto _ : state) {
    if constexpr (!Replay) {
      state.PauseTiming();
      ++turn;
      set_keys();
      state.ResumeTiming();
    }
    auto out = te::run_plan(pool(), te::run_options{}.with(j), std::span<const te::call_description>(d), tasks);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
void BM_journal_turn(benchmark::State& s) { journal_turn<false>(s); }
void BM_journal_replay(benchmark::State& s) { journal_turn<true>(s); }
BENCHMARK(BM_journal_turn)->Arg(16)->UseRealTime();
BENCHMARK(BM_journal_replay)->Arg(16)->UseRealTime();

}  // namespace
