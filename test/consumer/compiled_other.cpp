// The second translation unit of consumer_compiled: another dispatcher TU of the same program, so that the
// definitions of tool_effects::compiled are shared by two translation units (and defined by neither).
#include <boost/asio/thread_pool.hpp>

#include <tool_effects/dispatch.hpp>

namespace te = tool_effects;

namespace {
struct notes {};
struct append_note {
  using side_effects = te::effects<te::appends<notes>>;
  int operator()(int x) const { return x + 1; }
};
}  // namespace

int other_translation_unit() {
  boost::asio::thread_pool pool(1);
  auto [a, b] = te::run_plan(pool, te::run_options{}.with(te::approve_all()), te::call(append_note{}, 1),
                             te::call(append_note{}, 2));
  return a.value() == 2 && b.value() == 3 ? 0 : 1;
}
