// tool_effects/json/turn.hpp — internal to <tool_effects/json.hpp>: a model
// turn's tool calls, given as JSON, resolved against a `tool_registry`,
// identified, planned and run under the same rules as static calls.
//
//   tool_effects::json_tool_host host(registry);          // static tools take (const json&)
//   host.add(manifest_tool, [](const json& args) { ... }); // dynamic tools bring a function
//   auto calls = tool_effects::parse_tool_calls(response); // any vendor's shape (json/calls.hpp)
//   auto plan  = host.plan(calls);                         // who waits for whom, and why
//   auto out   = host.run(pool, options, calls);           // std::vector<outcome<json>>
//   auto reply = tool_effects::tool_results(calls, out);   // in the vendor's shape (json/results.hpp)
// A bad call (unknown tool, invalid arguments) fails alone: plan and run
// never throw for bad model output.
#ifndef TOOL_EFFECTS_JSON_TURN_HPP
#define TOOL_EFFECTS_JSON_TURN_HPP

#include <algorithm>
#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/asio/awaitable.hpp>

#include <tool_effects/attempt.hpp>
#include <tool_effects/call_description.hpp>
#include <tool_effects/detail/invoke.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/dispatch.hpp>
#include <tool_effects/identity.hpp>
#include <tool_effects/failure.hpp>
#include <tool_effects/confirmation.hpp>
#include <tool_effects/json/calls.hpp>
#include <tool_effects/json/canonical.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/json/detail/json_tool_invoke.hpp>
#include <tool_effects/json/identity.hpp>
#include <tool_effects/plan.hpp>
#include <tool_effects/registry.hpp>
#include <tool_effects/retry.hpp>

namespace tool_effects {

/// The identity policy of a static tool: `Tool::identity()` if it has one;
/// else built from `static constexpr std::string_view operation_arg` and
/// `target_arg` members when present; else the default (no target).
template <class Tool>
identity_policy static_identity_policy() {
  return detail::static_identity<Tool>::get();
}

/// The plan of one turn: each call's tool index, identity and description
/// (with its target), the dependency graph, and every edge with its reason.
/// A call that cannot run (unknown tool, invalid arguments) has a
/// `failures[k]` record, tool index `npos`, an empty identity key and a
/// description with no effects: it waits for nothing and nothing waits for it.
struct turn_plan {
  std::vector<std::size_t> tools{};
  std::vector<call_identity> identities{};
  std::vector<call_description> calls{};
  runtime_plan plan{};
  std::vector<plan_edge> edges{};
  std::vector<std::optional<failure_record>> failures{};

  /// The tool index of a call that cannot run.
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
};

/// At most this many tool names are listed by an `unknown_tool` failure's
/// message (each cut to 60 bytes), so the message stays under 2 KiB (plus
/// the quoted call name, also cut) however many tools are registered.
inline constexpr std::size_t max_suggested_tools = 16;

/// A run option of `json_tool_host::run` (`options.with(loop_guard{&detector})`):
/// before dispatching, the host observes the identity of every call that can
/// run, in call order, on `detector` (not owned, not shared between threads
/// while a run is under way). For each flagged call `on_repeat(call, verdict)`
/// is told its count; with `refuse`, the call is not run and fails with
/// `repeated_call` (its count in the message). `now` gives the time of the
/// turn (default: steady_clock::now()).
struct loop_guard {
  repeat_detector* detector = nullptr;
  bool refuse = false;
  std::function<void(const tool_call&, const repeat_verdict&)> on_repeat{};
  std::function<repeat_detector::clock::time_point()> now{};
};

/// Where a dynamic tool of a `json_tool_host` comes from: its MCP server and
/// the server's own name for it (registered under a name the model sees,
/// which may differ: `add_mcp_server`'s naming). Empty for other tools.
struct tool_origin {
  std::string server{};  ///< the MCP server's name
  std::string tool{};    ///< the tool's name on that server
};

/// A tool implemented at runtime: receives the attempt context (idempotency
/// key, attempt number) and the call's JSON arguments; returns the result,
/// or an awaitable of it (I/O-bound tools then hold no pool thread).
using json_tool_function = std::function<nlohmann::json(const attempt_context&, const nlohmann::json&)>;
using json_async_tool_function =
    std::function<boost::asio::awaitable<nlohmann::json>(const attempt_context&, const nlohmann::json&)>;

/// Whether a dynamic tool reads `attempt_context::idempotency_key`. A call's
/// key is derived from its identity (RFC 8785 canonical arguments and two
/// SHA-1s: linear in the arguments, but 37% of the client's CPU for large
/// ones), so `json_tool_host::run` derives it only when something uses it:
/// a tool that reads it (`used`, the default: static tools that take the
/// context and every dynamic tool not registered as `unused`), a journal,
/// a retry policy or approver (the recovery layer keys attempts with it), a
/// call that needs confirmation, or a `loop_guard` (which observes every
/// call's identity). An `unused` tool run without any of these gets an empty
/// key in its context.
enum class idempotency_key_use : std::uint8_t { used, unused };

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
  /// `import_mcp_tool`) with its implementation and origin (shown to the
  /// approver); returns its index.
  std::size_t add(dynamic_tool tool, json_tool_function fn, tool_origin origin = {},
                  idempotency_key_use key_use = idempotency_key_use::used) {
    if (!fn) throw std::invalid_argument(detail::str_cat("json_tool_host::add: empty function for tool \"", tool.name, "\""));
    return add_impl(std::move(tool),
                    [f = std::move(fn)](const attempt_context& ctx,
                                        const nlohmann::json& args) -> boost::asio::awaitable<nlohmann::json> {
                      co_return f(ctx, args);
                    },
                    std::move(origin), key_use);
  }
  /// As above, for an awaitable implementation.
  std::size_t add(dynamic_tool tool, json_async_tool_function fn, tool_origin origin = {},
                  idempotency_key_use key_use = idempotency_key_use::used) {
    if (!fn) throw std::invalid_argument(detail::str_cat("json_tool_host::add: empty function for tool \"", tool.name, "\""));
    return add_impl(std::move(tool), std::move(fn), std::move(origin), key_use);
  }

  /// The origin of tool `i` (empty for static tools and tools added without one).
  [[nodiscard]] const tool_origin& origin(std::size_t i) const {
    static const tool_origin none{};
    if constexpr (registry_type::static_size > 0)
      if (registry_type::is_static(i)) return none;
    return dynamic_.at(i - registry_type::static_size).origin;
  }

  /// What the approver is shown of call `c` of tool `i`: the tool (its
  /// server's own name for an MCP tool), the call's id, the MCP server, and
  /// the arguments as canonical JSON (RFC 8785).
  [[nodiscard]] call_subject subject(std::size_t i, const tool_call& c) const {
    const tool_origin& o = origin(i);
    call_subject s{o.tool.empty() ? c.name : o.tool, c.id, o.server, std::nullopt};
    s.arguments = detail::canonical_json(c.arguments, static_cast<std::size_t>(-1) / 2, true);
    return s;
  }

  /// The identity policy of tool `i` (static: `static_identity_policy`;
  /// dynamic: the one it was added with). What an MCP server publishes.
  [[nodiscard]] const identity_policy& identity_policy_of(std::size_t i) const { return policy(i); }

  /// The registry.
  [[nodiscard]] registry_type& registry() noexcept { return *registry_; }
  [[nodiscard]] const registry_type& registry() const noexcept { return *registry_; }

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
    auto d = describe_call(registry_->description(i), policy(i), c.arguments);
    d.name = c.name + "#" + c.id;
    return d;
  }

  /// Plans a turn: resolves every call, describes it and plans under the
  /// conflict rule, and explains every kept edge (`turn_plan::edges`). Never
  /// throws for bad model output: a call naming an unknown tool gets an
  /// `unknown_tool` failure (its message suggests the closest tool name), one
  /// whose arguments did not parse, are not an object or nest deeper than 64
  /// levels, or whose id an earlier call of the turn already has, an
  /// `invalid_arguments` failure (quoting them); such calls have no effects in
  /// the plan. A turn of more than `limits.max_calls` calls is not resolved
  /// at all: every call gets a `turn_too_large` failure.
  [[nodiscard]] turn_plan plan(std::span<const tool_call> calls, plan_limits limits = {}) const {
    turn_plan p = describe_turn(calls, limits);
    p.plan = plan_described(p);
    p.edges = explain(p.calls, p.plan);
    return p;
  }

  /// Runs a turn: plans it (once; no explanation is built) and dispatches
  /// every call that can run on `executor` under `options` (a
  /// `dispatch_options`, e.g. with a `retry_policy`, an `approver`, a
  /// `loop_guard` and `plan_limits`). Each call's attempts
  /// carry one idempotency key derived from its identity and `scope` + its id
  /// (`idempotency_key` in identity.hpp), so `scope` must be unique per
  /// turn (and the same when the turn runs again, for a journal to replay
  /// it). Empty (the default): a fresh random scope per call of `run`, so two
  /// turns never share keys; with a journal in the options an empty scope
  /// throws std::invalid_argument (nothing could ever be replayed). Returns one outcome per call, in call order; a call that cannot
  /// run (see `plan`) or that the loop guard refused is a failure outcome
  /// holding a `call_failure` (attempts 0) and does not affect the others
  /// (not even under `abort_on_error`). Bad model output never throws.
  template <class Executor, class Options>
  std::vector<outcome<nlohmann::json>> run(Executor&& executor, const Options& options,
                                           std::span<const tool_call> calls, std::string_view scope = {});

  /// `run` as an Asio coroutine: the same turn, dispatched on `executor`, holding no thread while it waits (a
  /// synchronous tool still runs on a thread of `executor`, as with `run`; an approver in the options is called
  /// on one of its threads and must not block it). Resumes the awaiting coroutine on its executor.
  template <class Executor, class Options>
  boost::asio::awaitable<std::vector<outcome<nlohmann::json>>> async_run(Executor executor, Options options,
                                                                         std::vector<tool_call> calls,
                                                                         std::string scope = {});

 private:
  using async_fn = json_async_tool_function;
  struct task;

  // A turn ready to dispatch: the outcomes of the calls that cannot run (the others' slots empty), which calls
  // run, their descriptions, tasks and plan. The tasks point into `calls` and `scope`, which must outlive it.
  struct prepared_turn {
    std::vector<outcome<nlohmann::json>> out;
    std::vector<std::size_t> runnable;
    std::vector<call_description> descriptions;
    std::vector<task> tasks;
    std::optional<runtime_plan> plan_of_runnable;
    std::vector<call_identity> identities;  // the loop guard's (the tasks point into it)
    std::string fresh_scope;  // the random scope of a turn given none (the tasks' scope points into it)
  };

  // What `run` and `async_run` do before dispatching (see `run`).
  // Fills `t` in place (the tasks point into it).
  template <class Options>
  void prepare(prepared_turn& t, const Options& options, std::span<const tool_call> calls, std::string_view scope);

  // Resolves, identifies (unless `identify` is false: the identities are then left empty) and describes
  // every call of a turn (no plan yet).
  [[nodiscard]] turn_plan describe_turn(std::span<const tool_call> calls, plan_limits limits,
                                        bool identify = true) const;

  // The plan of a described turn; a turn over the limit (every call failed) has no edge. Calls that
  // cannot run are left out of the planning, as `run` leaves them out: an exclusive call conflicts even
  // with a call of no effects, and the reduction would route waits through a call that never runs.
  static runtime_plan plan_described(const turn_plan& p);

  // One call as a dispatcher task: invoked with the attempt context (whose
  // idempotency key it replaces by the identity-derived one) or without.
  // The key, `idempotency_key(identity, scope + "/" + id)`, is derived on
  // first use (the dispatcher uses one task object per call, one step at a
  // time: journal, recovery, attempts), from the loop guard's identity when
  // there is one.
  struct task {
    json_tool_host* host;
    std::size_t tool;
    const tool_call* call;
    std::string_view scope;          // the turn's, alive until `run` returns
    const call_identity* identity;   // the loop guard's, else nullptr
    mutable std::optional<std::string> key;
    const attempt_reporter* reporter = nullptr;  // the options' `reporting`, else nullptr

    // A coroutine that owns the context for the whole call (the tool's
    // awaitable may hold references to it and to the arguments, which live
    // in the caller's span until `run` returns).
    boost::asio::awaitable<nlohmann::json> operator()(attempt_context ctx) const {
      attempt_context c = ctx;
      if (reporter) c.reporter = reporter;
      if (host->reads_key(tool)) {
        c.idempotency_key = idempotency_key();
        // A repaired attempt keeps the recovery layer's ".r<k>" suffix.
        if (const auto r = ctx.idempotency_key.rfind(".r"); ctx.is_repair && r != std::string::npos)
          c.idempotency_key += ctx.idempotency_key.substr(r);
      }
      co_return co_await host->invoke(tool, c, call->arguments);
    }
    boost::asio::awaitable<nlohmann::json> operator()() const {
      return (*this)(attempt_context{host->reads_key(tool) ? idempotency_key() : std::string(), 1, false});
    }
    // The key the recovery layer gives the attempts and shows the approver (`confirmation_request`).
    [[nodiscard]] const std::string& idempotency_key() const {
      if (!key) {
        std::string call_scope(scope);
        call_scope += '/';
        call_scope += call->id;
        key = identity ? tool_effects::idempotency_key(*identity, call_scope)
                       : tool_effects::idempotency_key(host->identify_as(tool, *call), call_scope);
      }
      return *key;
    }
    // What the approver is shown besides (asked only for calls that need confirmation).
    [[nodiscard]] call_subject confirmation_subject() const { return host->subject(tool, *call); }
  };

  boost::asio::awaitable<nlohmann::json> invoke(std::size_t i, const attempt_context& ctx,
                                                const nlohmann::json& args) {
    if constexpr (registry_type::static_size > 0)
      if (registry_type::is_static(i))
        return registry_->visit_static(i, [&](auto& tool) { return detail::invoke_json_tool(tool, ctx, args); });
    return dynamic_.at(i - registry_type::static_size).fn(ctx, args);
  }

  std::size_t add_impl(dynamic_tool tool, async_fn fn, tool_origin origin, idempotency_key_use key_use) {
    const std::size_t i = registry_->add(tool.name, tool.description);
    if (i - registry_type::static_size != dynamic_.size())
      throw std::logic_error("json_tool_host: the registry gained dynamic tools the host does not know");
    dynamic_.push_back({std::move(tool.identity), std::move(fn), std::move(origin), key_use});
    return i;
  }

  // The identity of a call of tool `i` (as `identify`, without resolving the name again).
  [[nodiscard]] call_identity identify_as(std::size_t i, const tool_call& c) const {
    return tool_effects::identify(c.name, policy(i), c.arguments);
  }
  // Whether tool `i` may read its context's idempotency key: a static tool that takes an attempt_context (one
  // that does not cannot see it: its key is then derived only if something else asks, e.g. an approver); a
  // dynamic tool unless registered `idempotency_key_use::unused`.
  [[nodiscard]] bool reads_key(std::size_t i) const {
    if constexpr (registry_type::static_size > 0)
      if (registry_type::is_static(i)) return static_reads_key_[i];
    return dynamic_.at(i - registry_type::static_size).key_use == idempotency_key_use::used;
  }

  // The reporter of the options' `reporting`, else nullptr.
  template <class Options>
  static const attempt_reporter* reporter_of(const Options& options) {
    if constexpr (requires { requires Options::template has<reporting>; }) return options.template get<reporting>().reporter;
    else {
      (void)options;
      return nullptr;
    }
  }

  // The loop guard: observes the calls that can run; refuses flagged ones if asked.
  static void guard(const loop_guard& g, std::span<const tool_call> calls, turn_plan& p) {
    if (g.detector == nullptr) return;
    const auto now = g.now ? g.now() : repeat_detector::clock::now();
    for (std::size_t k = 0; k < calls.size(); ++k) {
      if (p.failures[k]) continue;
      const repeat_verdict v = g.detector->observe(p.identities[k], now);
      if (!v.repeated) continue;
      if (g.on_repeat) g.on_repeat(calls[k], v);
      if (!g.refuse) continue;
      std::string msg = detail::str_cat(calls[k].name, " was not run: the same call was made ", std::to_string(v.count),
                                        " times in a row of recent calls (identity ", p.identities[k].key,
                                        "); change the arguments or do something else");
      failure_record r = make_failure_record(calls[k].name, 0, classify(p.calls[k].effects), failure_reason::repeated_call,
                                             std::make_exception_ptr(std::runtime_error(msg)));
      p.failures[k] = std::move(r);
    }
  }

  [[nodiscard]] failure_record invalid_arguments_failure(const tool_call& c, std::size_t i,
                                                         const std::string& message) const {
    return make_failure_record(c.name, 0, classify(registry_->description(i).effects),
                               failure_reason::invalid_arguments,
                               std::make_exception_ptr(std::invalid_argument(message)));
  }

  [[nodiscard]] const identity_policy& policy(std::size_t i) const {
    if constexpr (registry_type::static_size > 0)
      if (registry_type::is_static(i)) return static_identities_[i];
    return dynamic_.at(i - registry_type::static_size).identity;
  }

  struct dynamic_entry {
    identity_policy identity;
    async_fn fn;
    tool_origin origin;
    idempotency_key_use key_use = idempotency_key_use::used;
  };
  registry_type* registry_;
  std::array<identity_policy, sizeof...(Tools)> static_identities_;
  static constexpr std::array<bool, sizeof...(Tools)> static_reads_key_{
      AttemptAware<Tools, const nlohmann::json>...};
  std::vector<dynamic_entry> dynamic_;
};

}  // namespace tool_effects

#include <tool_effects/json/impl/turn.hpp>

#endif  // TOOL_EFFECTS_JSON_TURN_HPP
