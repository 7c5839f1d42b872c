// tool_effects/json/turn.hpp — internal to <tool_effects/json.hpp>: a model
// turn's tool calls, given as JSON, resolved against a `tool_registry`,
// identified, planned and run under the same rules as static calls.
//
//   tool_effects::json_tool_host host(registry);          // static tools take (const json&)
//   host.add(manifest_tool, [](const json& args) { ... }); // dynamic tools bring a function
//   auto calls = tool_effects::parse_tool_calls(model_output);
//   auto plan  = host.plan(calls);                         // who waits for whom, and why
//   auto out   = host.run(pool, options, calls);           // std::vector<outcome<json>>
#ifndef TOOL_EFFECTS_JSON_TURN_HPP
#define TOOL_EFFECTS_JSON_TURN_HPP

#include <array>
#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/asio/awaitable.hpp>

#include <tool_effects/attempt.hpp>
#include <tool_effects/call_description.hpp>
#include <tool_effects/dispatch.hpp>
#include <tool_effects/identity.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/json/identity.hpp>
#include <tool_effects/plan.hpp>
#include <tool_effects/registry.hpp>
#include <tool_effects/retry.hpp>

namespace tool_effects {

/// One model-chosen tool call: an id, the tool's name, and JSON arguments.
struct tool_call {
  std::string id;
  std::string name;
  nlohmann::json arguments = nlohmann::json::object();
};

namespace detail {
inline tool_call parse_one_tool_call(const nlohmann::json& c, std::size_t index) {
  const std::string at = "/" + std::to_string(index);
  if (!c.is_object()) throw json_error(at, expected("a tool call object", c), preview(c));
  for (auto it = c.begin(); it != c.end(); ++it)
    if (it.key() != "id" && it.key() != "type" && it.key() != "name" && it.key() != "arguments" &&
        it.key() != "input" && it.key() != "function")
      throw json_error(at + "/" + pointer_token(it.key()),
                       unknown_key_message(it.key(), {"id", "type", "name", "arguments", "input", "function"}),
                       it.key());
  tool_call out;
  if (const auto id = c.find("id"); id != c.end()) {
    if (!id->is_string()) throw json_error(at + "/id", expected("a string", *id), preview(*id));
    out.id = id->get<std::string>();
  } else {
    out.id = "call-" + std::to_string(index + 1);
  }
  // The function object of the OpenAI form, or the call itself.
  const nlohmann::json* holder = &c;
  std::string base = at;
  if (const auto f = c.find("function"); f != c.end()) {
    if (!f->is_object()) throw json_error(at + "/function", expected("an object", *f), preview(*f));
    holder = &*f;
    base = at + "/function";
  }
  const auto name = holder->find("name");
  if (name == holder->end()) throw json_error(base + "/name", "missing tool name", preview(*holder));
  if (!name->is_string() || name->get_ref<const std::string&>().empty())
    throw json_error(base + "/name", expected("a non-empty string", *name), preview(*name));
  out.name = name->get<std::string>();
  const auto args = holder->find("arguments");
  const auto input = holder->find("input");
  if (args != holder->end() && input != holder->end())
    throw json_error(base + "/input", "both \"arguments\" and \"input\" given", "input");
  const auto value = args != holder->end() ? args : input;
  const std::string where = base + (args != holder->end() ? "/arguments" : "/input");
  if (value == holder->end() || value->is_null()) {
    out.arguments = nlohmann::json::object();
  } else if (value->is_string()) {  // OpenAI sends the arguments as a JSON text
    try {
      out.arguments = parse_json(value->get_ref<const std::string&>(), {});
    } catch (const json_error& e) {
      throw json_error(where + e.pointer(), "arguments text: " + e.message(), e.input());
    }
  } else {
    out.arguments = *value;
  }
  if (!out.arguments.is_object())
    throw json_error(where, expected("an object of arguments", out.arguments), preview(out.arguments));
  return out;
}
}  // namespace detail

/// Parses a model turn's tool calls: a JSON array whose elements are
/// `{"id"?, "name", "arguments"?}`, the OpenAI form
/// `{"id", "type": "function", "function": {"name", "arguments": "<json text>"}}`,
/// or the Anthropic form `{"type": "tool_use", "id", "name", "input"}`.
/// A missing id becomes "call-<n>" (1-based). Errors are `json_error`s whose
/// pointer names the call and field; unknown keys are errors.
inline std::vector<tool_call> parse_tool_calls(const nlohmann::json& calls) {
  if (!calls.is_array()) throw json_error("", detail::expected("an array of tool calls", calls), detail::preview(calls));
  std::vector<tool_call> out;
  out.reserve(calls.size());
  for (std::size_t i = 0; i < calls.size(); ++i) out.push_back(detail::parse_one_tool_call(calls[i], i));
  return out;
}

/// As above, from JSON text (a `std::string`, `std::string_view` or string literal).
template <class Text>
  requires std::convertible_to<const Text&, std::string_view> && (!std::same_as<Text, nlohmann::json>)
std::vector<tool_call> parse_tool_calls(const Text& text) {
  return parse_tool_calls(detail::parse_json(std::string_view(text), "in tool calls"));
}

namespace detail {
template <class Tool, class = void>
struct static_identity {
  static identity_policy get() {
    identity_policy p;
    if constexpr (requires { std::string_view(Tool::operation_arg); })
      p.operation_arg = std::string(Tool::operation_arg);
    if constexpr (requires { std::string_view(Tool::target_arg); }) p.target_arg = std::string(Tool::target_arg);
    return p;
  }
};
template <class Tool>
struct static_identity<Tool, std::void_t<decltype(Tool::identity())>> {
  static identity_policy get() { return Tool::identity(); }
};
}  // namespace detail

/// The identity policy of a static tool: `Tool::identity()` if it has one;
/// else built from `static constexpr std::string_view operation_arg` and
/// `target_arg` members when present; else the default (no target).
template <class Tool>
identity_policy static_identity_policy() {
  return detail::static_identity<Tool>::get();
}

/// The plan of one turn: each call's tool index, identity and description
/// (with its target), the dependency graph, and every edge with its reason.
struct turn_plan {
  std::vector<std::size_t> tools;
  std::vector<call_identity> identities;
  std::vector<call_description> calls;
  runtime_plan plan;
  std::vector<plan_edge> edges;
};

/// A tool implemented at runtime: receives the attempt context (idempotency
/// key, attempt number) and the call's JSON arguments; returns the result,
/// or an awaitable of it (I/O-bound tools then hold no pool thread).
using json_tool_function = std::function<nlohmann::json(const attempt_context&, const nlohmann::json&)>;
using json_async_tool_function =
    std::function<boost::asio::awaitable<nlohmann::json>(const attempt_context&, const nlohmann::json&)>;

namespace detail {
// One synchronous step: `tool(ctx, args)` or `tool(args)`.
template <class T>
decltype(auto) call_json_tool(T& tool, const attempt_context& ctx, const nlohmann::json& args) {
  if constexpr (std::is_invocable_v<T&, const attempt_context&, const nlohmann::json&>) return tool(ctx, args);
  else return tool(args);
}

#if defined(__GNUC__) && !defined(__clang__)
// g++ 12 warns about coroutine frames that hold references to types with
// internal linkage (tools declared in an unnamed namespace); the frame never
// leaves this translation unit, so the warning does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsubobject-linkage"
#endif
// Calls static tool T with JSON arguments, synchronous or awaitable; the
// result converts to JSON (void gives null).
template <class T>
boost::asio::awaitable<nlohmann::json> invoke_json_tool(T& tool, const attempt_context& ctx,
                                                        const nlohmann::json& args) {
  using raw = std::remove_cvref_t<decltype(call_json_tool(tool, ctx, args))>;
  if constexpr (detail::is_awaitable<raw>::value) {
    if constexpr (std::is_void_v<typename raw::value_type>) {
      co_await call_json_tool(tool, ctx, args);
      co_return nlohmann::json(nullptr);
    } else {
      co_return nlohmann::json(co_await call_json_tool(tool, ctx, args));
    }
  } else if constexpr (std::is_void_v<raw>) {
    call_json_tool(tool, ctx, args);
    co_return nlohmann::json(nullptr);
  } else {
    co_return nlohmann::json(call_json_tool(tool, ctx, args));
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

template <class T>
concept JsonTool = std::is_invocable_v<T&, const nlohmann::json&> ||
                   std::is_invocable_v<T&, const attempt_context&, const nlohmann::json&>;

// Instantiated once per static tool: its diagnostic names the tool.
template <class Tool>
struct json_tool_check {
  static_assert(JsonTool<Tool>,
                "tool_effects::json_tool_host: this static tool is not invocable with (const nlohmann::json&) or "
                "(const tool_effects::attempt_context&, const nlohmann::json&) (see json_tool_check<Tool>)");
  static constexpr bool value = true;
};
}  // namespace detail

/// The runtime side of a `tool_registry` for model-chosen calls given as
/// JSON: resolves each call's tool by name, identifies it (operation,
/// target, identity key — static tools declare `operation_arg`/`target_arg`
/// members or an `identity()` function, dynamic tools bring an
/// `identity_policy`), describes it with its target so that calls on
/// different targets of one resource do not conflict, plans the turn, and
/// runs it on the dispatcher's runtime engine with the recovery rules of the
/// options (retry only where safe, approval of destructive calls).
/// Static tools must be invocable as `tool(args)` or `tool(ctx, args)` with
/// `const nlohmann::json&` arguments.
template <class... Tools>
class json_tool_host {
  static_assert([] {
    constexpr bool ok[] = {true, detail::json_tool_check<Tools>::value...};
    for (const bool b : ok)
      if (!b) return false;
    return true;
  }());

 public:
  using registry_type = tool_registry<Tools...>;

  /// Hosts the tools of `registry` (which must outlive the host).
  explicit json_tool_host(registry_type& registry)
      : registry_(&registry), static_identities_{static_identity_policy<Tools>()...} {}

  /// Registers a dynamic tool (e.g. from `parse_manifest` or
  /// `import_mcp_tool`) with its implementation; returns its index.
  std::size_t add(dynamic_tool tool, json_tool_function fn) {
    if (!fn) throw std::invalid_argument("json_tool_host::add: empty function for tool \"" + tool.name + "\"");
    return add_impl(std::move(tool),
                    [f = std::move(fn)](const attempt_context& ctx,
                                        const nlohmann::json& args) -> boost::asio::awaitable<nlohmann::json> {
                      co_return f(ctx, args);
                    });
  }
  /// As above, for an awaitable implementation.
  std::size_t add(dynamic_tool tool, json_async_tool_function fn) {
    if (!fn) throw std::invalid_argument("json_tool_host::add: empty function for tool \"" + tool.name + "\"");
    return add_impl(std::move(tool), std::move(fn));
  }

  /// The registry.
  [[nodiscard]] registry_type& registry() noexcept { return *registry_; }

  /// The index of the tool a call names; throws `unknown_tool_error`.
  [[nodiscard]] std::size_t resolve(const tool_call& c) const { return registry_->at(c.name); }

  /// The identity of a call (see `identify` in identity.hpp).
  [[nodiscard]] call_identity identify(const tool_call& c) const {
    const std::size_t i = resolve(c);
    return tool_effects::identify(c.name, policy(i), c.arguments);
  }

  /// The description of one call: its tool's, with the call's target.
  [[nodiscard]] call_description describe(const tool_call& c) const {
    const std::size_t i = resolve(c);
    auto d = describe_call(registry_->description(i), target_of(policy(i), c.arguments));
    d.name = c.name + "#" + c.id;
    return d;
  }

  /// Plans a turn: resolves every call (throws `unknown_tool_error` for an
  /// unknown name, naming it), describes it and plans under the conflict rule.
  [[nodiscard]] turn_plan plan(std::span<const tool_call> calls) const {
    turn_plan p;
    p.tools.reserve(calls.size());
    p.identities.reserve(calls.size());
    p.calls.reserve(calls.size());
    for (const auto& c : calls) {
      p.tools.push_back(resolve(c));
      p.identities.push_back(identify(c));
      p.calls.push_back(describe(c));
    }
    p.plan = plan_calls(p.calls);
    p.edges = explain(p.calls, p.plan);
    return p;
  }

  /// Runs a turn: plans it and dispatches every call on `executor` under
  /// `options` (a `dispatch_options`, e.g. with a `retry_policy` and an
  /// `approver`). Each call's attempts carry one idempotency key derived from
  /// its identity and `scope` + its id (`idempotency_key` in identity.hpp), so
  /// `scope` should be unique per turn. Returns the outcomes in call order.
  template <class Executor, class Options>
  std::vector<outcome<nlohmann::json>> run(Executor&& executor, const Options& options,
                                           std::span<const tool_call> calls, std::string_view scope = "turn") {
    turn_plan p = plan(calls);
    std::vector<task> tasks;
    tasks.reserve(calls.size());
    for (std::size_t k = 0; k < calls.size(); ++k)
      tasks.push_back(task{this, p.tools[k], &calls[k],
                           idempotency_key(p.identities[k], std::string(scope) + "/" + calls[k].id)});
    return run_plan(std::forward<Executor>(executor), options, std::span<const call_description>(p.calls), tasks);
  }

 private:
  using async_fn = json_async_tool_function;

  // One call as a dispatcher task: invoked with the attempt context (whose
  // idempotency key it replaces by the identity-derived one) or without.
  struct task {
    json_tool_host* host;
    std::size_t tool;
    const tool_call* call;
    std::string key;

    // A coroutine that owns the context for the whole call (the tool's
    // awaitable may hold references to it and to the arguments, which live
    // in the caller's span until `run` returns).
    boost::asio::awaitable<nlohmann::json> operator()(attempt_context ctx) const {
      attempt_context c = ctx;
      c.idempotency_key = key;
      // A repaired attempt keeps the recovery layer's ".r<k>" suffix.
      if (const auto r = ctx.idempotency_key.rfind(".r"); ctx.is_repair && r != std::string::npos)
        c.idempotency_key += ctx.idempotency_key.substr(r);
      co_return co_await host->invoke(tool, c, call->arguments);
    }
    boost::asio::awaitable<nlohmann::json> operator()() const { return (*this)(attempt_context{key, 1, false}); }
  };

  boost::asio::awaitable<nlohmann::json> invoke(std::size_t i, const attempt_context& ctx,
                                                const nlohmann::json& args) {
    if constexpr (sizeof...(Tools) > 0)  // json_tool_host<>: dynamic tools only (e.g. MCP servers)
      if (registry_type::is_static(i))
        return registry_->visit_static(i, [&](auto& tool) { return detail::invoke_json_tool(tool, ctx, args); });
    return dynamic_.at(i - registry_type::static_size).fn(ctx, args);
  }

  std::size_t add_impl(dynamic_tool tool, async_fn fn) {
    const std::size_t i = registry_->add(tool.name, tool.description);
    if (i - registry_type::static_size != dynamic_.size())
      throw std::logic_error("json_tool_host: the registry gained dynamic tools the host does not know");
    dynamic_.push_back({std::move(tool.identity), std::move(fn)});
    return i;
  }

  [[nodiscard]] const identity_policy& policy(std::size_t i) const {
    if (registry_type::is_static(i)) return static_identities_[i];
    return dynamic_.at(i - registry_type::static_size).identity;
  }

  struct dynamic_entry {
    identity_policy identity;
    async_fn fn;
  };
  registry_type* registry_;
  std::array<identity_policy, sizeof...(Tools)> static_identities_;
  std::vector<dynamic_entry> dynamic_;
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_TURN_HPP
