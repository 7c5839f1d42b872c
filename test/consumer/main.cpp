// Consumer of an installed tool_effects (ctest consumer.find_package): the
// umbrella header, a compile-time check and a dispatched turn on an Asio pool.
#include <cstdio>
#include <cstring>
#include <string>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/tool_effects.hpp>
#include <tool_effects/version.hpp>  // in the source tree (the one statement of the version), installed with the headers

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
#ifdef TOOL_EFFECTS_CONSUMER_PACKAGE_VERSION
  if (std::strcmp(TOOL_EFFECTS_VERSION_STRING, TOOL_EFFECTS_CONSUMER_PACKAGE_VERSION) != 0) {
    std::fprintf(stderr, "consumer: version.hpp says %s, the package says %s\n", TOOL_EFFECTS_VERSION_STRING,
                 TOOL_EFFECTS_CONSUMER_PACKAGE_VERSION);
    return 1;
  }
#endif
  std::printf("consumer: tool_effects %s found, compiled and ran a plan\n", TOOL_EFFECTS_VERSION_STRING);
  return 0;
}
