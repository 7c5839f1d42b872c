// Consumer of tool_effects::compiled (separate compilation): this translation unit only declares the engine,
// the recovery drivers, the approver's erasure and the failure records; the library defines them once.
// A turn with a retry policy and an approver runs through all four: a transient error retried, a destructive
// call approved, a denied one failing with its record. Built from two translation units by CMake (the second,
// compiled_other.cpp, dispatches too: one definition for both), from this one alone by pkg-config.
#include <cstdio>
#include <stdexcept>
#include <string>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/dispatch.hpp>

#ifndef TOOL_EFFECTS_SEPARATE_COMPILATION
#error "consumer_compiled: tool_effects::compiled must define TOOL_EFFECTS_SEPARATE_COMPILATION"
#endif

namespace te = tool_effects;

struct flaky_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct records {};
struct fetch {
  using side_effects = te::effects<te::reads<records>, te::idempotent>;
  int* calls;
  int operator()(int id) const {
    if (++*calls == 1) throw flaky_error("first attempt fails");
    return id * 2;
  }
};
struct erase {
  using side_effects = te::effects<te::writes<records>, te::destructive>;
  std::string operator()(int id) const { return "erased " + std::to_string(id); }
};

#ifdef TOOL_EFFECTS_CONSUMER_TWO_TUS
int other_translation_unit();  // compiled_other.cpp
#endif

int main() {
  boost::asio::thread_pool pool(2);
  int fetch_calls = 0;
  int asked = 0;
  const auto options = te::run_options{}
                           .with(te::retry_policy{.max_attempts = 3, .is_transient = te::transient_on<flaky_error>()})
                           .with(te::approver([&](const te::confirmation_request& r) {
                             ++asked;
                             return r.idempotency_key.empty() ? te::confirmation::deny : te::confirmation::approve;
                           }));
  auto [a, b] = te::run_plan(pool, options, te::call(fetch{&fetch_calls}, 21), te::call(erase{}, 7));
  if (a.value() != 42 || fetch_calls != 2 || b.value() != "erased 7" || asked != 1) {
    std::fputs("consumer_compiled: unexpected results of the approved turn\n", stderr);
    return 1;
  }
  auto [denied] = te::run_plan(pool, te::run_options{}.with(te::deny_all()), te::call(erase{}, 8));
  try {
    (void)denied.value();
    std::fputs("consumer_compiled: a denied call ran\n", stderr);
    return 1;
  } catch (const te::call_failure& f) {
    if (f.reason() != te::failure_reason::confirmation_denied) {
      std::fprintf(stderr, "consumer_compiled: unexpected record: %s\n", f.what());
      return 1;
    }
  }
#ifdef TOOL_EFFECTS_CONSUMER_TWO_TUS
  if (other_translation_unit() != 0) return 1;
#endif
  std::puts("consumer_compiled: a retried, an approved and a denied call through tool_effects::compiled");
  return 0;
}
