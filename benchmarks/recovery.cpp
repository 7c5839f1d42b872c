// Cost of the recovery layer when nothing fails (the common case): a direct
// call vs `retry(policy, tool, ...)` (gate + key + one attempt), the sync
// per-call entry point with a confirmed destructive call, the awaitable entry
// point vs a bare coroutine on an io_context, a successful retry after one
// transient error (zero backoff), and the cost of drawing one backoff delay.
// Method and numbers: docs/benchmarks.md ("Runtime: the recovery layer").
#include <tool_effects/retry.hpp>

#include <benchmark/benchmark.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <stdexcept>

namespace te = tool_effects;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {
struct timeout_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct lookup {
  using side_effects = te::effects<te::read, te::idempotent>;
  int operator()(int x) const {
    benchmark::DoNotOptimize(x);
    return x + 1;
  }
};
struct remove_row {
  using side_effects = te::effects<te::write, te::destructive>;
  int operator()(int x) const {
    benchmark::DoNotOptimize(x);
    return x;
  }
};
struct flaky_once {
  using side_effects = te::effects<te::read, te::idempotent>;
  mutable int n = 0;
  int operator()(int x) const {
    if ((n++ & 1) == 0) throw timeout_error("t");
    return x;
  }
};

te::retry_policy policy() {
  return te::retry_policy{.max_attempts = 3, .base_delay = 0ns, .max_delay = 0ns,
                          .is_transient = te::transient_on<timeout_error>(), .seed = 1};
}

void direct_call(benchmark::State& state) {
  lookup t;
  int x = 0;
  for (auto _ : state) benchmark::DoNotOptimize(x = t(x));
}
BENCHMARK(direct_call);

void retry_success_first_try(benchmark::State& state) {
  lookup t;
  const auto p = policy();
  int x = 0;
  for (auto _ : state) benchmark::DoNotOptimize(x = te::retry(p, t, x));
}
BENCHMARK(retry_success_first_try);

void run_call_confirmed_destructive(benchmark::State& state) {
  remove_row t;
  const te::recovery_options o{policy(), te::approve_all()};
  int x = 0;
  for (auto _ : state) benchmark::DoNotOptimize(x = te::detail::run_call(o, {"remove_row"}, te::side_effects_v<remove_row>, {}, t, x));
}
BENCHMARK(run_call_confirmed_destructive);

void retry_after_one_transient_error(benchmark::State& state) {
  flaky_once t;
  const auto p = policy();
  int x = 0;
  for (auto _ : state) benchmark::DoNotOptimize(x = te::retry(p, t, x));
}
BENCHMARK(retry_after_one_transient_error);

asio::awaitable<int> bare(lookup& t, int x) { co_return t(x); }

void coroutine_bare(benchmark::State& state) {
  asio::io_context io;
  lookup t;
  int x = 0;
  for (auto _ : state) {
    asio::co_spawn(io, bare(t, x), [&](std::exception_ptr, int v) { x = v; });
    io.run();
    io.restart();
  }
  benchmark::DoNotOptimize(x);
}
BENCHMARK(coroutine_bare);

void coroutine_run_call_async(benchmark::State& state) {
  asio::io_context io;
  lookup t;
  const te::recovery_options o{policy(), {}};
  int x = 0;
  for (auto _ : state) {
    asio::co_spawn(io, te::detail::run_call_async(o, {"lookup"}, te::side_effects_v<lookup>, t, x),
                   [&](std::exception_ptr, int v) { x = v; });
    io.run();
    io.restart();
  }
  benchmark::DoNotOptimize(x);
}
BENCHMARK(coroutine_run_call_async);

void backoff_next(benchmark::State& state) {
  te::retry_policy p{.base_delay = 1ms, .max_delay = 1s, .jitter = static_cast<te::jitter_mode>(state.range(0))};
  te::backoff b(p, 42);
  for (auto _ : state) benchmark::DoNotOptimize(b.next());
  state.SetLabel(std::string(te::to_string(p.jitter)));
}
BENCHMARK(backoff_next)->DenseRange(0, 3);
}  // namespace
