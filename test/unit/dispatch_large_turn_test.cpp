// A static turn of 1,024 calls compiles and runs (issue 13): the outcomes are a flat turn_outcomes (a
// std::tuple of that size exceeds libstdc++'s template depth), the calls are stored flat, and calls of one tool
// type share every instantiation but the engine's table. Every call ran exactly once, and every conflicting
// pair ran in program order.
#include <array>
#include <cstddef>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/dispatch.hpp>

namespace te = tool_effects;

namespace {
struct users : te::resource<> {};
struct audit : te::resource<> {};

// The order in which calls started.
struct start_log {
  std::mutex m;
  std::vector<int> order;
  void add(int i) {
    const std::lock_guard lock(m);
    order.push_back(i);
  }
};
start_log* current_log = nullptr;

struct reader {
  using side_effects = te::effects<te::reads<users>>;
  int operator()(int i) const {
    current_log->add(i);
    return i;
  }
};
struct writer {
  using side_effects = te::effects<te::writes<users>>;
  int operator()(int i) const {
    current_log->add(i);
    return i + 1;
  }
};
struct logger {
  using side_effects = te::effects<te::appends<audit>>;
  int operator()(int i) const {
    current_log->add(i);
    return i + 2;
  }
};
struct fetch {
  using side_effects = te::effects<te::network, te::idempotent>;
  int operator()(int i) const {
    current_log->add(i);
    return i + 3;
  }
};
template <std::size_t K>
using tool_of = std::tuple_element_t<K, std::tuple<reader, writer, logger, fetch>>;

constexpr std::size_t n = 1024;

template <std::size_t... I>
auto run_turn(boost::asio::thread_pool& pool, std::index_sequence<I...>) {
  return te::run_plan(pool, te::call(tool_of<I % 4>{}, static_cast<int>(I))...);
}
template <std::size_t... I>
std::array<int, sizeof...(I)> values(const auto& outcomes, std::index_sequence<I...>) {
  return {get<I>(outcomes).value()...};
}
}  // namespace

TEST(LargeStaticTurn, OneThousandTwentyFourCallsRunOnceInConflictOrder) {
  start_log log;
  current_log = &log;
  boost::asio::thread_pool pool(2);
  auto r = run_turn(pool, std::make_index_sequence<n>{});
  pool.join();
  static_assert(std::tuple_size_v<decltype(r)> == n);
  static_assert(std::is_same_v<std::tuple_element_t<n - 1, decltype(r)>, te::outcome<int>>);

  const auto v = values(r, std::make_index_sequence<n>{});
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], static_cast<int>(i + i % 4)) << "call " << i;

  // Every call started exactly once.
  ASSERT_EQ(log.order.size(), n);
  std::vector<std::size_t> position(n, n);
  for (std::size_t k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(log.order[k]);
    ASSERT_EQ(position[i], n) << "call " << i << " started twice";
    position[i] = k;
  }
  // Calls on `users` (reader i % 4 == 0, writer i % 4 == 1) with a writer among them started in program
  // order: a call starts only after every earlier call it conflicts with ended.
  std::size_t ordered_pairs = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j)
      if (i % 4 < 2 && j % 4 < 2 && (i % 4 == 1 || j % 4 == 1)) {
        ASSERT_LT(position[i], position[j]) << "calls " << i << " and " << j;
        ++ordered_pairs;
      }
  // 512 calls on `users`: every pair but the reader-reader ones.
  EXPECT_EQ(ordered_pairs, 512u * 511u / 2 - 256u * 255u / 2);
  current_log = nullptr;
}
