// Makespan of simulated agent turns under five strategies, side by side in one run (Google Benchmark).
// See docs/benchmarks.md ("Runtime: scheduling overhead and makespans"); benchmarks/plot_makespan.py turns the JSON output into docs/makespan.svg.
//
// Every call is an awaitable that waits on a steady_timer for its duration (1-20 ms), so no pool thread is held
// and the measured time is the schedule's, not the CPU's. Each turn mixes reads, writes and appends over a few
// resources (files with targets, db/users, db/orders, an audit log, the web). Strategies:
//   run_plan        the dataflow dispatcher (each call waits only for the earlier calls it conflicts with);
//   sequential      every call alone, in order;
//   safe_first      the reference packages: all parallel-safe calls at once, then the others one by one
//                   (reorders calls: a read may run before an earlier write);
//   batched         popular agent CLIs: consecutive parallel-safe calls run together, each other call alone;
//   critical_path   the lower bound, computed (not run): the longest chain of the dependency DAG.
// Every strategy runs through the same engine (run_plan's runtime form) with the descriptions it implies, on
// the same 2-thread pool. Counters: critical_ms (the bound) and vs_critical (measured / bound).
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/dispatch.hpp>

namespace te = tool_effects;
namespace asio = boost::asio;
using te::access_mode;

namespace {
struct sim_call {
  std::string name;
  std::vector<te::runtime_access> accesses;
  int ms;
};
struct turn {
  std::string name;
  std::vector<sim_call> calls;
};

te::runtime_access R(std::string r, std::optional<std::string> t = std::nullopt) { return {std::move(r), access_mode::read, std::move(t)}; }
te::runtime_access W(std::string r, std::optional<std::string> t = std::nullopt) { return {std::move(r), access_mode::write, std::move(t)}; }
te::runtime_access A(std::string r) { return {std::move(r), access_mode::append, std::nullopt}; }

const std::vector<turn>& turns() {
  static const std::vector<turn> t{
      {"research",
       {{"search_web", {R("web")}, 12}, {"search_web", {R("web")}, 15}, {"read_file", {R("files", "a.md")}, 3},
        {"write_file", {W("files", "notes.md")}, 5}, {"search_web", {R("web")}, 9}, {"read_file", {R("files", "notes.md")}, 2},
        {"log", {A("audit")}, 1}}},
      {"two_writers",
       {{"write_file", {W("files", "a")}, 10}, {"write_file", {W("files", "b")}, 12}, {"read_file", {R("files", "a")}, 3},
        {"read_file", {R("files", "b")}, 4}, {"log", {A("audit")}, 2}, {"log", {A("audit")}, 2}}},
      {"user_update",
       {{"fetch_user", {R("db/users")}, 6}, {"fetch_orders", {R("db/orders")}, 8},
        {"upsert_preferences", {W("db/users")}, 10}, {"send_email", {A("outbox")}, 15},
        {"fetch_user", {R("db/users")}, 5}, {"log", {A("audit")}, 1}}},
      {"read_heavy",
       {{"search_web", {R("web")}, 18}, {"fetch_user", {R("db/users")}, 6}, {"read_file", {R("files", "x")}, 4},
        {"read_file", {R("files", "y")}, 4}, {"fetch_orders", {R("db/orders")}, 7}, {"search_web", {R("web")}, 11},
        {"write_file", {W("files", "report")}, 6}}},
      {"write_chain",
       {{"write_file", {W("files", "a")}, 4}, {"read_file", {R("files", "a")}, 3}, {"write_file", {W("files", "a")}, 4},
        {"read_file", {R("files", "a")}, 3}, {"search_web", {R("web")}, 20}, {"fetch_user", {R("db/users")}, 8}}},
      {"appends",
       {{"log", {A("audit")}, 5}, {"log", {A("audit")}, 5}, {"write_db", {W("db/orders")}, 7}, {"log", {A("audit")}, 5},
        {"read_log", {R("audit")}, 3}, {"fetch_user", {R("db/users")}, 4}, {"log", {A("audit")}, 5}}},
      {"fan_in",
       {{"read_file", {R("files", "x")}, 10}, {"read_file", {R("files", "y")}, 10}, {"fetch_user", {R("db/users")}, 10},
        {"write_file", {W("files", "summary")}, 5}, {"read_file", {R("files", "summary")}, 2}, {"search_web", {R("web")}, 20}}},
      {"interleaved",
       {{"write_file", {W("files", "a")}, 6}, {"read_file", {R("files", "b")}, 4}, {"write_file", {W("files", "b")}, 6},
        {"read_file", {R("files", "a")}, 4}, {"write_db", {W("db/users")}, 8}, {"fetch_user", {R("db/users")}, 3},
        {"search_web", {R("web")}, 14}}},
  };
  return t;
}

asio::thread_pool& pool() {
  static asio::thread_pool p(2);
  return p;
}

std::vector<te::call_description> describe_turn(const turn& t) {
  std::vector<te::call_description> d;
  for (const auto& c : t.calls) d.push_back(te::describe_runtime(c.name, {}, c.accesses));
  return d;
}

// The lower bound: longest path through the dependency DAG, by duration.
double critical_path_ms(const turn& t) {
  const auto d = describe_turn(t);
  const auto plan = te::plan_calls(d);
  std::vector<double> finish(d.size(), 0);
  double best = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    double start = 0;
    for (const auto j : plan.predecessors(i)) start = std::max(start, finish[j]);
    finish[i] = start + t.calls[i].ms;
    best = std::max(best, finish[i]);
  }
  return best;
}

asio::awaitable<void> simulate(int ms) {
  asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::milliseconds(ms));
  co_await timer.async_wait(asio::use_awaitable);
}

// Runs the given calls (by index into the turn) with the given descriptions through the engine.
void run_group(const turn& t, const std::vector<std::size_t>& idx, const std::vector<te::call_description>& descs) {
  std::vector<std::function<asio::awaitable<void>()>> tasks;
  for (const auto i : idx) tasks.emplace_back([ms = t.calls[i].ms] { return simulate(ms); });
  auto out = te::run_plan(pool(), descs, tasks);
  for (auto& o : out) o.value();
}

te::call_description independent(const std::string& name) { return te::call_description{name, {}, {}, false}; }
te::call_description alone(const std::string& name) { return te::call_description{name, {}, {}, true}; }

enum class strategy { run_plan, sequential, safe_first, batched };

void run_strategy(const turn& t, strategy s) {
  const auto d = describe_turn(t);
  const std::size_t n = d.size();
  std::vector<std::size_t> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = i;
  switch (s) {
    case strategy::run_plan: run_group(t, all, d); break;
    case strategy::sequential: {
      std::vector<te::call_description> ex;
      for (const auto& c : d) ex.push_back(alone(c.name));
      run_group(t, all, ex);
      break;
    }
    case strategy::safe_first: {
      std::vector<std::size_t> safe, rest;
      for (std::size_t i = 0; i < n; ++i) (te::is_parallel_safe(d[i].effects) ? safe : rest).push_back(i);
      std::vector<te::call_description> s1, s2;
      for (const auto i : safe) s1.push_back(independent(d[i].name));
      for (const auto i : rest) s2.push_back(alone(d[i].name));
      run_group(t, safe, s1);
      run_group(t, rest, s2);
      break;
    }
    case strategy::batched: {
      for (std::size_t i = 0; i < n;) {
        std::vector<std::size_t> batch{i};
        std::vector<te::call_description> bd{independent(d[i].name)};
        if (te::is_parallel_safe(d[i].effects))
          while (i + batch.size() < n && te::is_parallel_safe(d[i + batch.size()].effects)) {
            bd.push_back(independent(d[i + batch.size()].name));
            batch.push_back(i + batch.size());
          }
        run_group(t, batch, bd);
        i += batch.size();
      }
      break;
    }
  }
}

void BM_makespan(benchmark::State& state, const turn* t, strategy s) {
  const double bound = critical_path_ms(*t);
  double total_ms = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    run_strategy(*t, s);
    total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  const double mean_ms = total_ms / static_cast<double>(state.iterations());
  state.counters["critical_ms"] = bound;
  state.counters["mean_ms"] = mean_ms;
  state.counters["vs_critical"] = mean_ms / bound;
}

void BM_critical_path(benchmark::State& state, const turn* t) {
  const double bound = critical_path_ms(*t);
  for (auto _ : state) benchmark::DoNotOptimize(bound);
  state.counters["critical_ms"] = bound;
}
}  // namespace

int main(int argc, char** argv) {
  const std::pair<const char*, strategy> strategies[] = {{"run_plan", strategy::run_plan},
                                                         {"sequential", strategy::sequential},
                                                         {"safe_first", strategy::safe_first},
                                                         {"batched", strategy::batched}};
  for (const auto& t : turns()) {
    for (const auto& [name, s] : strategies)
      benchmark::RegisterBenchmark(("makespan/" + t.name + "/" + name).c_str(), BM_makespan, &t, s)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->Iterations(5);
    benchmark::RegisterBenchmark(("makespan/" + t.name + "/critical_path").c_str(), BM_critical_path, &t)
        ->Iterations(1);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
