// The turns of bench_coordination, for counting instructions (valgrind's callgrind): a plain program, no timing.
// scripts/bench-coordination runs it under callgrind at two turn counts and divides the difference by the extra
// turns, so start-up (the pool's threads, the queue's first nodes) cancels out. See docs/benchmarks.md
// ("A coordinated turn's cost").
//
//   bench_coordination_count <case> <turns>
//   case: runtime16 | runtime256 | static16, with a suffix `_coordinated` for the same turn under one
//         local_coordinator (created before the first turn, shared by every turn).
//
// The turns are BM_turn_runtime/N (N one-access writes of distinct targets of one resource, no-op tasks, the
// runtime form) and BM_turn_static16 (16 static reads of one resource) on a 2-thread pool. No call of a turn
// waits for another, with or without the coordinator, so the difference is the coordinator's own cost.
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/coordination.hpp>
#include <tool_effects/dispatch.hpp>

namespace te = tool_effects;

namespace {

struct noop_task {
  int operator()() const { return 1; }
};

struct users : te::resource<> {};
struct read_user {
  using side_effects = te::effects<te::reads<users>, te::idempotent>;
  int operator()() const { return 1; }
};

// A checksum of the results, printed, so that no turn can be optimised away.
template <class Options>
long runtime_turns(boost::asio::thread_pool& pool, const Options& o, std::size_t n, long turns) {
  std::vector<te::call_description> d;
  for (std::size_t i = 0; i < n; ++i)
    d.push_back(te::describe_runtime("w", {}, {{"db/users", te::access_mode::write, std::to_string(i)}}));
  std::vector<noop_task> tasks(n);
  long sum = 0;
  for (long t = 0; t < turns; ++t) {
    const auto out = te::run_plan(pool, o, std::span<const te::call_description>(d), tasks);
    for (const auto& r : out) sum += r.has_value() ? r.value() : 1000;
  }
  return sum;
}

template <class Options>
long static_turns(boost::asio::thread_pool& pool, const Options& o, long turns) {
  const read_user r;
  long sum = 0;
  for (long t = 0; t < turns; ++t) {
    auto out = te::run_plan(pool, o, te::call(r), te::call(r), te::call(r), te::call(r), te::call(r),
                                  te::call(r), te::call(r), te::call(r), te::call(r), te::call(r), te::call(r),
                                  te::call(r), te::call(r), te::call(r), te::call(r), te::call(r));
    out.apply([&](const auto&... r) { ((sum += r.has_value() ? r.value() : 1000), ...); });
  }
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s runtime16|runtime256|static16[_coordinated] <turns>\n", argv[0]);
    return 2;
  }
  std::string_view which = argv[1];
  const long turns = std::atol(argv[2]);
  constexpr std::string_view suffix = "_coordinated";
  const bool coordinated = which.ends_with(suffix);
  if (coordinated) which.remove_suffix(suffix.size());
  boost::asio::thread_pool pool(2);
  te::local_coordinator c;
  long sum = -1;
  if (which == "runtime16" || which == "runtime256") {
    const std::size_t n = which == "runtime16" ? 16 : 256;
    sum = coordinated ? runtime_turns(pool, te::run_options{}.with(c), n, turns)
                      : runtime_turns(pool, te::run_options{}, n, turns);
  } else if (which == "static16") {
    sum = coordinated ? static_turns(pool, te::run_options{}.with(c), turns) : static_turns(pool, te::run_options{}, turns);
  } else {
    std::fprintf(stderr, "unknown case: %s\n", argv[1]);
    return 2;
  }
  pool.join();
  std::printf("%s %ld turns: checksum %ld\n", argv[1], turns, sum);
  return 0;
}
