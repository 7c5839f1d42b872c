// tool_effects/identity.hpp — call identity: which calls of a tool are "the
// same operation on the same target".
//
// A tool declares, once, an identity policy (after the `ToolIdentityPolicy`
// of an agent runtime): the argument that names its operation (for
// action-dispatched tools), how to find the call's persistent target (a file
// path, a URL) and, optionally, a custom identity key. From a call's
// arguments that gives the operation, the target and the identity key, which
// feed three consumers with one answer:
//  - conflicts: `describe_call` puts the target on the tool's scoped
//    accesses, so writes to different targets of one resource do not
//    conflict (the rule itself stays in access.hpp / call_description.hpp);
//  - idempotency keys: `idempotency_key(identity, call_scope)`;
//  - loop guards: `repeat_detector` flags the same identity N times within
//    the last W calls and/or a time window.
//
// This header is independent of any JSON library: arguments are read through
// the `identity_arguments<Args>` customisation point. <tool_effects/json.hpp>
// specialises it for `nlohmann::json` and names the policy `identity_policy`.
// See docs/runtime.md.
#ifndef TOOL_EFFECTS_IDENTITY_HPP
#define TOOL_EFFECTS_IDENTITY_HPP

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/uuid/name_generator_sha1.hpp>
#include <boost/uuid/uuid.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <tool_effects/call_description.hpp>
#include <tool_effects/detail/str_cat.hpp>

namespace tool_effects {

/// Customisation point: how the identity code reads a call's arguments of
/// type `Args`. A specialisation provides
///   static std::optional<std::string> string_arg(const Args&, std::string_view name);
///     // the top-level argument `name` as text; nullopt when absent
///   static std::string canonical(const Args&);
///     // a canonical text of all arguments: equal arguments give equal text
/// and, optionally (multi-target arguments, see `targets_of`),
///   static std::optional<std::vector<std::string>> target_list(const Args&, std::string_view name);
///     // the targets the argument `name` names, one per element of a list;
///     // nullopt when absent or of a shape that names no target (the call
///     // then holds the whole resource)
/// Without `target_list`, `string_arg` gives the one target.
template <class Args>
struct identity_arguments;

/// Argument types the identity code can read (see `identity_arguments`).
template <class Args>
concept IdentityArguments = requires(const Args& a, std::string_view name) {
  { identity_arguments<Args>::string_arg(a, name) } -> std::same_as<std::optional<std::string>>;
  { identity_arguments<Args>::canonical(a) } -> std::convertible_to<std::string>;
};

/// A tool's identity contract. Every member is optional; a default policy
/// means "one operation, no persistent target, opaque arguments", so two
/// calls have the same identity iff their canonical arguments are equal.
template <class Args>
struct basic_identity_policy {
  /// Top-level argument whose value names the operation ("action").
  std::optional<std::string> operation_arg{};
  /// Top-level argument holding the persistent target ("path", "url").
  std::optional<std::string> target_arg{};
  /// Target extractor; when set it replaces `target_arg`. nullopt: no target.
  std::function<std::optional<std::string>(const Args&)> target_fn{};
  /// Identity-key override, given the tool name and the arguments; nullopt
  /// falls back to the default key.
  std::function<std::optional<std::string>(std::string_view tool, const Args&)> key_fn{};

  /// Whether the policy can yield a target (`target_fn` or `target_arg`).
  [[nodiscard]] bool declares_target() const noexcept { return static_cast<bool>(target_fn) || target_arg.has_value(); }
};

/// The identity of one call. Two calls are "the same" iff their keys are
/// equal; `operation` and `target` are for display and per-target state.
struct call_identity {
  std::string tool{};                   ///< the tool's name
  std::string operation = "default";  ///< the operation ("default" without an operation argument)
  std::optional<std::string> target{};  ///< the persistent target, if any
  std::string key{};                  ///< the identity key (see `identify`)

  friend bool operator==(const call_identity&, const call_identity&) = default;
};

/// 64-bit FNV-1a of the bytes of `s`: stable across platforms and versions,
/// but NOT collision-resistant (anyone can craft two inputs with one hash).
/// For indexing and tests only; keys use `uuid_v5` (SHA-1, RFC 9562).
constexpr std::uint64_t stable_hash(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

/// `h` as 16 lowercase hex digits.
inline std::string to_hex(std::uint64_t h) {
  std::string out(16, '0');
  constexpr char digits[] = "0123456789abcdef";
  for (std::size_t i = 16; i-- > 0; h >>= 4) out[i] = digits[h & 0xf];
  return out;
}

/// Appends `field` to `out` as a netstring, `<decimal byte length>:<bytes>,`
/// (so "ab" becomes "2:ab,"): a sequence of netstrings decodes to exactly
/// one sequence of fields, which makes the key material unambiguous.
inline void append_netstring(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out.append(field);
  out += ',';
}

/// The RFC 9562 name-based UUID, version 5 (SHA-1), of the bytes `name` in
/// the namespace `ns`, in the standard lowercase 8-4-4-4-12 text form. The
/// same inputs give the same text in every process, platform and language
/// (Python: `str(uuid.uuid5(ns, name))` for a text name).
inline std::string uuid_v5(const boost::uuids::uuid& ns, std::string_view name) {
  boost::uuids::name_generator_sha1 gen(ns);
  return boost::uuids::to_string(gen(name.data(), name.size()));
}

/// The namespace of identity keys (format version 1):
/// uuid5(NAMESPACE_URL, "urn:tool-effects:call-identity:v1") =
/// 88de213b-a60e-59ec-8da1-5cb35c60f593 (docs/recovery.md, "Key format").
inline const boost::uuids::uuid& identity_key_namespace() {
  static const boost::uuids::uuid ns =
      boost::uuids::name_generator_sha1(boost::uuids::ns::url())("urn:tool-effects:call-identity:v1");
  return ns;
}

/// The namespace of idempotency keys (format version 1):
/// uuid5(NAMESPACE_URL, "urn:tool-effects:idempotency-key:v1") =
/// 22279f16-7034-54cf-afce-25536a9c14db (docs/recovery.md, "Key format").
inline const boost::uuids::uuid& idempotency_key_namespace() {
  static const boost::uuids::uuid ns =
      boost::uuids::name_generator_sha1(boost::uuids::ns::url())("urn:tool-effects:idempotency-key:v1");
  return ns;
}

/// The operation of a call: the value of the policy's `operation_arg`, or
/// "default" when none is declared or the call does not carry it.
template <IdentityArguments Args>
std::string operation_of(const basic_identity_policy<Args>& policy, const Args& args) {
  if (policy.operation_arg)
    if (auto op = identity_arguments<Args>::string_arg(args, *policy.operation_arg)) return std::move(*op);
  return "default";
}

/// The persistent target of a call: `target_fn(args)` when set, else the
/// value of `target_arg`; nullopt when neither is declared or yields one.
template <IdentityArguments Args>
std::optional<std::string> target_of(const basic_identity_policy<Args>& policy, const Args& args) {
  if (policy.target_fn) return policy.target_fn(args);
  if (policy.target_arg) return identity_arguments<Args>::string_arg(args, *policy.target_arg);
  return std::nullopt;
}

/// At most this many targets per call: an argument listing more (or, after
/// removing duplicates, more distinct ones) makes the call hold the whole
/// resource, so a call's description stays small (conflict checks compare
/// accesses pairwise) whatever a model sends.
inline constexpr std::size_t max_call_targets = 64;

/// The targets of a call, for conflicts (`describe_call`): empty means the
/// call holds every declared resource whole. `target_fn` when set gives at
/// most one target. Else `target_arg`: through `identity_arguments<Args>::
/// target_list` when the specialisation offers it (JSON does: a string is one
/// target, an array of strings one target per element, any other shape —
/// object, number, boolean, an array with a non-string element, an empty
/// array — names no target, so the call holds the whole resource: never
/// narrower than the declaration covers), else `string_arg`. Sorted, without
/// duplicates; more than `max_call_targets` distinct targets: empty.
template <IdentityArguments Args>
std::vector<std::string> targets_of(const basic_identity_policy<Args>& policy, const Args& args) {
  std::vector<std::string> out;
  if (policy.target_fn) {
    if (auto t = policy.target_fn(args)) out.push_back(std::move(*t));
    return out;
  }
  if (!policy.target_arg) return out;
  if constexpr (requires {
                  {
                    identity_arguments<Args>::target_list(args, std::string_view())
                  } -> std::same_as<std::optional<std::vector<std::string>>>;
                }) {
    if (auto list = identity_arguments<Args>::target_list(args, *policy.target_arg)) out = std::move(*list);
  } else {
    if (auto t = identity_arguments<Args>::string_arg(args, *policy.target_arg)) out.push_back(std::move(*t));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.size() > max_call_targets) out.clear();
  return out;
}

/// The identity of a call of `tool` with arguments `args`. The key is, in
/// order of precedence:
///  1. `key_fn(tool, args)` when it yields a value (taken as is);
///  2. else `uuid_v5(identity_key_namespace(), material)`, where `material`
///     is five netstrings (`append_netstring`):
///       kind      "target" when the call has a target, else "args";
///       tool      the tool's name;
///       declared  "1" when the policy declares an operation_arg, else "0";
///       operation the operation when declared, else "";
///       payload   the target, or `canonical(args)` (RFC 8785 for JSON).
///     Distinct (kind, tool, operation, payload) tuples give distinct
///     material, so equal keys mean equal tuples unless SHA-1 collides.
/// The format is stable (version 1; docs/recovery.md, "Key format").
template <IdentityArguments Args>
call_identity identify(std::string_view tool, const basic_identity_policy<Args>& policy, const Args& args) {
  call_identity id;
  id.tool = std::string(tool);
  id.operation = operation_of(policy, args);
  id.target = target_of(policy, args);
  if (policy.key_fn)
    if (auto key = policy.key_fn(tool, args)) {
      id.key = std::move(*key);
      return id;
    }
  std::string material;
  append_netstring(material, id.target ? "target" : "args");
  append_netstring(material, id.tool);
  append_netstring(material, policy.operation_arg ? "1" : "0");
  append_netstring(material, policy.operation_arg ? std::string_view(id.operation) : std::string_view());
  if (id.target)
    append_netstring(material, *id.target);
  else
    append_netstring(material, std::string(identity_arguments<Args>::canonical(args)));
  id.key = uuid_v5(identity_key_namespace(), material);
  return id;
}

/// A stable idempotency key for one logical call: identical for every
/// attempt (retry, repair) that passes the same `call_scope`, in every
/// process; different for different tools, identities or scopes.
/// `call_scope` must be unique per logical call (e.g.
/// "session-7/turn-3/call-1"). Form: an RFC 9562 UUID (version 5),
/// `uuid_v5(idempotency_key_namespace(), netstring(tool) +
/// netstring(identity key) + netstring(call_scope))`: 36 characters, safe
/// for HTTP headers. Pass it as `call_settings::idempotency_key` of
/// <tool_effects/retry.hpp>. The format is stable (version 1).
inline std::string idempotency_key(const call_identity& id, std::string_view call_scope) {
  std::string material;
  append_netstring(material, id.tool);
  append_netstring(material, id.key);
  append_netstring(material, call_scope);
  return uuid_v5(idempotency_key_namespace(), material);
}

/// The description of one call of a tool: a copy of the tool's template
/// (from `describe_runtime` or a manifest) whose scoped accesses (resource
/// path not empty) carry `target`; accesses of the root stay untargeted, and
/// without a target the call holds every declared resource whole. Conflicts
/// then follow `conflicts(call_description, call_description)`.
inline call_description describe_call(const call_description& tool, const std::optional<std::string>& target) {
  call_description d = tool;
  if (target)
    for (auto& a : d.accesses)
      if (!a.resource.empty()) a.target = *target;
  return d;
}

/// The description of a call on several targets (e.g. a `delete` given a list
/// of keys): a copy of the tool's template in which every scoped access is
/// repeated once per target, so the call overlaps any call on any one of
/// them; accesses of the root stay untargeted. No targets: every declared
/// resource whole, as `describe_call(tool, std::nullopt)`.
inline call_description describe_call(const call_description& tool, const std::vector<std::string>& targets) {
  if (targets.empty()) return tool;
  call_description d = tool;
  d.accesses.clear();
  for (const auto& a : tool.accesses) {
    if (a.resource.empty()) {
      d.accesses.push_back(a);
      continue;
    }
    for (const auto& t : targets) d.accesses.push_back({a.resource, a.mode, t});
  }
  return d;
}

/// The description of a call of a tool with identity `policy` and arguments
/// `args`: `describe_call(tool, targets_of(policy, args))`.
template <IdentityArguments Args>
call_description describe_call(const call_description& tool, const basic_identity_policy<Args>& policy,
                               const Args& args) {
  return describe_call(tool, targets_of(policy, args));
}

/// When a repeat is flagged. A past call counts when it is among the last
/// `last_calls` observed calls (this one included) and, when `within` is
/// set, no older than `within` at the time of this call.
struct repeat_policy {
  std::size_t threshold = 3;                                  ///< flag when the same key occurs this many times (>= 1)
  std::size_t last_calls = 20;                                ///< sliding window, in calls (>= threshold)
  std::optional<std::chrono::steady_clock::duration> within{};  ///< optional time window (> 0)
};

/// The answer for one observed call.
struct repeat_verdict {
  std::size_t count = 0;  ///< occurrences of the key in the window, this call included
  bool repeated = false;  ///< count >= threshold
};

/// A loop guard: observes calls' identity keys and flags the same key seen
/// `threshold` times within the window. Time is passed in by the caller
/// (no clock is read), so behaviour is deterministic. Memory is bounded by
/// `last_calls` entries. Not thread-safe. It sees identity keys only: for a
/// tool without a declared target (or `key_fn`) every argument is part of
/// the key, so varying an argument the tool ignores evades it; arguments are
/// not normalised against a schema (docs/runtime.md, "Repeat detection").
class repeat_detector {
 public:
  using clock = std::chrono::steady_clock;

  /// Throws std::invalid_argument naming the bad field when `threshold` is
  /// 0, `last_calls` < `threshold`, or `within` is not positive.
  explicit repeat_detector(repeat_policy policy = {}) : policy_(policy) {
    if (policy_.threshold == 0) throw std::invalid_argument("repeat_policy.threshold must be at least 1, got 0");
    if (policy_.last_calls < policy_.threshold)
      throw std::invalid_argument(detail::str_cat("repeat_policy.last_calls (", std::to_string(policy_.last_calls),
                                                  ") must be at least threshold (",
                                                  std::to_string(policy_.threshold), ")"));
    if (policy_.within && *policy_.within <= clock::duration::zero())
      throw std::invalid_argument(detail::str_cat("repeat_policy.within must be positive, got ",
                                                  std::to_string(policy_.within->count()), " ticks"));
  }

  /// Records a call with identity key `key` at time `now` (times must not
  /// decrease) and says whether it is a repeat.
  repeat_verdict observe(std::string_view key, clock::time_point now = {}) {
    if (calls_.size() == policy_.last_calls) calls_.pop_front();
    calls_.push_back({std::string(key), now});
    repeat_verdict v;
    for (const auto& c : calls_)
      if (c.key == key && (!policy_.within || now - c.at <= *policy_.within)) ++v.count;
    v.repeated = v.count >= policy_.threshold;
    return v;
  }
  /// As above, with the call's identity key.
  repeat_verdict observe(const call_identity& id, clock::time_point now = {}) { return observe(id.key, now); }

  /// Forgets every observed call.
  void reset() noexcept { calls_.clear(); }
  /// The policy in force.
  [[nodiscard]] const repeat_policy& policy() const noexcept { return policy_; }

 private:
  struct seen {
    std::string key;
    clock::time_point at;
  };
  repeat_policy policy_;
  std::deque<seen> calls_;
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_IDENTITY_HPP
