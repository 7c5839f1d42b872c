// tool_effects/json/impl/turn.hpp — the definitions of json_tool_host's turn members (<tool_effects/json/turn.hpp>
// declares them, and includes this file at its end): `run` and `async_run`, and what they and `plan` do before
// dispatching (prepare, describe_turn, plan_described).
#ifndef TOOL_EFFECTS_JSON_IMPL_TURN_HPP
#define TOOL_EFFECTS_JSON_IMPL_TURN_HPP

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/detail/foreign_completion.hpp>
#include <tool_effects/json/detail/turn_failures.hpp>
#include <tool_effects/json/turn.hpp>

namespace tool_effects {

template <class... Tools>
template <class Executor, class Options>
std::vector<outcome<nlohmann::json>> json_tool_host<Tools...>::run(Executor&& executor, const Options& options,
                                                                   std::span<const tool_call> calls,
                                                                   std::string_view scope) {
  prepared_turn t;
  prepare(t, options, calls, scope);
  if (t.tasks.empty()) return std::move(t.out);
  auto ran = run_plan(std::forward<Executor>(executor), options,
                      std::span<const call_description>(t.descriptions), std::move(*t.plan_of_runnable), t.tasks);
  for (std::size_t j = 0; j < t.runnable.size(); ++j) t.out[t.runnable[j]] = std::move(ran[j]);
  return std::move(t.out);
}

template <class... Tools>
template <class Executor, class Options>
boost::asio::awaitable<std::vector<outcome<nlohmann::json>>> json_tool_host<Tools...>::async_run(
    Executor executor, Options options, std::vector<tool_call> calls, std::string scope) {
  // By value: the calls, the scope and the prepared turn live in this frame until the turn ended.
  prepared_turn t;
  prepare(t, options, std::span<const tool_call>(calls), scope);
  if (t.tasks.empty()) co_return std::move(t.out);
  const auto ex = detail::to_executor(executor);
  // (Locals, not temporaries of the co_await expression: g++ 12 destroys such temporaries twice.)
  auto initiate = [&](auto handler) {
    // The awaiting coroutine's cancellation (e.g. its session's notifications/cancelled) cancels the turn.
    if constexpr (detail::options_have_cancellation<Options>)
      detail::forward_cancellation(handler, options.template get<turn_cancellation>());
    detail::start_runtime<nlohmann::json>(
        ex, options, std::span<const call_description>(t.descriptions), std::move(*t.plan_of_runnable),
        std::span<task>(t.tasks),
        [done = detail::foreign_completion<decltype(handler)>(std::move(handler))](
            std::vector<outcome<nlohmann::json>> r) mutable { std::move(done)(std::move(r)); });
  };
  std::vector<outcome<nlohmann::json>> ran =
      co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable),
                                           void(std::vector<outcome<nlohmann::json>>)>(initiate,
                                                                                       boost::asio::use_awaitable);
  for (std::size_t j = 0; j < t.runnable.size(); ++j) t.out[t.runnable[j]] = std::move(ran[j]);
  co_return std::move(t.out);
}

template <class... Tools>
template <class Options>
void json_tool_host<Tools...>::prepare(prepared_turn& t, const Options& options, std::span<const tool_call> calls,
                                       std::string_view scope) {
  if (scope.empty()) {
    if constexpr (detail::options_have_journal<Options>)
      throw std::invalid_argument("tool_effects::json_tool_host::run: a journaled turn needs a scope that names "
                                  "the turn (unique per turn, the same when it runs again)");
    t.fresh_scope = random_idempotency_key();
    scope = t.fresh_scope;
  }
  plan_limits limits;
  if constexpr (requires { requires Options::template has<plan_limits>; }) limits = options.template get<plan_limits>();
  // Identities only for a loop guard, which observes every call's; else each call's key is derived on
  // first use (task::idempotency_key), and not at all when nothing uses it.
  constexpr bool guarded = requires { requires Options::template has<loop_guard>; };
  turn_plan p = describe_turn(calls, limits, guarded);
  if constexpr (guarded) guard(options.template get<loop_guard>(), calls, p);
  t.out.resize(calls.size());
  t.identities = std::move(p.identities);
  for (std::size_t k = 0; k < calls.size(); ++k) {
    if (p.failures[k]) {
      t.out[k] = outcome<nlohmann::json>::failure(std::make_exception_ptr(call_failure(*p.failures[k])));
      continue;
    }
    t.runnable.push_back(k);
    t.descriptions.push_back(std::move(p.calls[k]));
    t.tasks.push_back(task{this, p.tools[k], &calls[k], scope, guarded ? &t.identities[k] : nullptr, {},
                           reporter_of(options)});
  }
  // The one plan of the turn: the calls that cannot run have no effects, so
  // planning only the others gives the same edges between them.
  if (!t.tasks.empty()) t.plan_of_runnable.emplace(plan_calls(t.descriptions, limits));
}

template <class... Tools>
turn_plan json_tool_host<Tools...>::describe_turn(std::span<const tool_call> calls, plan_limits limits,
                                                  bool identify) const {
  turn_plan p;
  p.tools.reserve(calls.size());
  p.identities.reserve(calls.size());
  p.calls.reserve(calls.size());
  p.failures.reserve(calls.size());
  const bool too_large = calls.size() > limits.max_calls;
  const std::vector<std::string> entry_errors =
      too_large ? std::vector<std::string>(calls.size()) : detail::call_entry_errors(calls);  // duplicate ids, depth
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const tool_call& c = calls[k];
    // The tool's index, npos when unknown (a plain index, not an optional: g++ 12 cannot see that the
    // optional is engaged in the last branch below and warns -Wmaybe-uninitialized at -O1).
    const std::size_t i = too_large ? turn_plan::npos : registry_->index_of(c.name).value_or(turn_plan::npos);
    std::optional<failure_record> failure;
    if (too_large) failure = detail::turn_too_large_failure(c, calls.size(), limits.max_calls);
    else if (i == turn_plan::npos) failure = detail::unknown_tool_failure(c, *registry_, max_suggested_tools);
    else if (!entry_errors[k].empty()) failure = invalid_arguments_failure(c, i, entry_errors[k]);
    if (failure) {
      p.tools.push_back(turn_plan::npos);
      p.identities.push_back(call_identity{c.name, "default", std::nullopt, {}});
      call_description d;
      d.name = c.name + "#" + c.id;
      d.exclusive = false;  // no effects: conflicts with nothing
      p.calls.push_back(std::move(d));
    } else {
      p.tools.push_back(i);
      p.identities.push_back(identify ? tool_effects::identify(c.name, policy(i), c.arguments) : call_identity{});
      auto d = describe_call(registry_->description(i), policy(i), c.arguments);
      d.name = c.name + "#" + c.id;
      p.calls.push_back(std::move(d));
    }
    p.failures.push_back(std::move(failure));
  }
  return p;
}

template <class... Tools>
runtime_plan json_tool_host<Tools...>::plan_described(const turn_plan& p) {
  if (!p.failures.empty() && p.failures.front() && p.failures.front()->reason == failure_reason::turn_too_large)
    return runtime_plan(runtime_plan::from_lists_t{}, p.calls.size(), {}, {});
  std::vector<std::uint32_t> runnable;
  for (std::size_t k = 0; k < p.calls.size(); ++k)
    if (k >= p.failures.size() || !p.failures[k]) runnable.push_back(static_cast<std::uint32_t>(k));
  if (runnable.size() == p.calls.size()) return plan_calls(p.calls, plan_limits{p.calls.size()});
  std::vector<call_description> described;
  described.reserve(runnable.size());
  for (const auto k : runnable) described.push_back(p.calls[k]);
  const runtime_plan sub = plan_calls(described, plan_limits{described.size()});
  std::vector<std::uint32_t> pred_off(p.calls.size() + 1, 0), pred;
  for (std::size_t j = 0, k = 0; k < p.calls.size(); ++k) {
    if (j < runnable.size() && runnable[j] == k) {
      for (const auto q : sub.direct_predecessors(j)) pred.push_back(runnable[q]);
      ++j;
    }
    pred_off[k + 1] = static_cast<std::uint32_t>(pred.size());
  }
  return runtime_plan(runtime_plan::from_lists_t{}, p.calls.size(), std::move(pred_off), std::move(pred));
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_IMPL_TURN_HPP
