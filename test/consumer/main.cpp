// Consumer of an installed tool_effects (ctest consumer.find_package): the
// umbrella header, a compile-time check and a dispatched turn on an Asio pool.
#include <cstdio>
#include <string>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/tool_effects.hpp>

namespace te = tool_effects;

struct records {};
struct fetch {
  using side_effects = te::effects<te::reads<records>, te::idempotent>;
  int operator()(int id) const { return id * 2; }
};
struct store {
  using side_effects = te::effects<te::writes<records>>;
  std::string operator()(int id) const { return "stored " + std::to_string(id); }
};

static_assert(te::ParallelSafe<fetch> && !te::ConflictFree<fetch, store>);

int main() {
  boost::asio::thread_pool pool(2);
  auto [a, b, c] = te::run_plan(pool, te::call(fetch{}, 1), te::call(store{}, 2), te::call(fetch{}, 3));
  if (a.value() != 2 || b.value() != "stored 2" || c.value() != 6) {
    std::fputs("consumer: unexpected results\n", stderr);
    return 1;
  }
  std::puts("consumer: tool_effects found, compiled and ran a plan");
  return 0;
}
