// tool_effects/confirmation.hpp — human-in-the-loop confirmation of
// destructive calls. A caller-supplied approver receives a description of the
// call (tool name, its MCP server, the call's id and arguments, effects,
// class, the reason approval is needed, idempotency key) and answers approve
// or deny; synchronously, or as a Boost.Asio awaitable. No approver means
// "deny". `to_string(const confirmation_request&)` is the request's text
// form: safe to print on a terminal, and distinct for distinct requests.
//
// The dispatcher and `run_with_recovery` ask before the first attempt of a
// call that `needs_confirmation` (destructive, or unknown effects) and never
// run it unless the answer is `approve`; a denial
// (or an approver that throws) yields a failure record with reason
// `confirmation_denied`. See docs/recovery.md.
#ifndef TOOL_EFFECTS_CONFIRMATION_HPP
#define TOOL_EFFECTS_CONFIRMATION_HPP

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <tool_effects/detail/config.hpp>
#include <tool_effects/detail/utf8.hpp>
#include <tool_effects/effect.hpp>
#include <tool_effects/rules.hpp>

namespace tool_effects {

/// An approver's answer. Only `approve` lets a destructive call run.
enum class confirmation : std::uint8_t { deny, approve };

/// Stable slugs: "deny", "approve".
constexpr std::string_view to_string(confirmation c) noexcept {
  return c == confirmation::approve ? "approve" : "deny";
}

/// Why a call needs approval; a function of its effects (`confirmation_reason_of`).
enum class confirmation_reason : std::uint8_t {
  destructive,     ///< its declared effects include `destructive`
  unknown_effects  ///< it declares no effects (undeclared, `effects<>`, an untrusted MCP server's tool)
};

/// Stable slugs: "destructive", "unknown effects".
constexpr std::string_view to_string(confirmation_reason r) noexcept {
  return r == confirmation_reason::unknown_effects ? "unknown effects" : "destructive";
}

/// The reason a call with effects `s` needs approval (meaningful where
/// `needs_confirmation(s)`: the empty set is unknown, otherwise destructive).
constexpr confirmation_reason confirmation_reason_of(effect_set s) noexcept {
  return s.empty() ? confirmation_reason::unknown_effects : confirmation_reason::destructive;
}

/// What a call shows its approver besides its name and effects (owned
/// strings; `call_settings::subject`). `json_tool_host` fills it for every
/// model call; a static call (`call<Tool>(args...)`) leaves it empty: its
/// C++ arguments are not shown, since the library does not require users'
/// argument types to be printable.
struct call_subject {
  std::string tool{};                      ///< the tool's name (empty: the call's name is used)
  std::string call_id{};                   ///< the model's id for the call (empty: none)
  std::string server{};                    ///< the MCP server the tool belongs to (empty: not an MCP tool)
  std::optional<std::string> arguments{};  ///< the arguments as canonical JSON (RFC 8785); nullopt: not shown
};

/// What an approver is shown: the call about to run. The views are valid for
/// the duration of the approver's call (copy them to keep them). Every
/// string is as given (model-chosen text may hold control characters): print
/// a request with `to_string(request)`, never its fields raw.
struct confirmation_request {
  std::string_view tool{};             ///< the tool's name (for a JSON call without the "#id")
  effect_set effects{};                ///< its declared effects
  side_effect_class effect_class{};  ///< classify(effects)
  std::string_view idempotency_key{};  ///< the key its attempts will carry
  std::string_view server{};           ///< its MCP server (empty: not an MCP tool)
  std::string_view call_id{};          ///< the model's id for the call (empty: none)
  std::optional<std::string_view> arguments{};  ///< canonical JSON (RFC 8785); nullopt: not shown (static calls)
  confirmation_reason reason{};        ///< why approval is needed: confirmation_reason_of(effects)
  bool may_already_have_happened = false;  ///< a journal shows the call started in an earlier run that did not end (journal.hpp)
};

/// The request of a call named `name` (used when `subject.tool` is empty)
/// with effects `s` and idempotency key `key`. Views into the arguments.
inline confirmation_request make_confirmation_request(std::string_view name, const call_subject& subject, effect_set s,
                                                      std::string_view key) noexcept {
  confirmation_request r{subject.tool.empty() ? name : std::string_view(subject.tool), s, classify(s), key};
  r.server = subject.server;
  r.call_id = subject.call_id;
  if (subject.arguments) r.arguments = std::string_view(*subject.arguments);
  r.reason = confirmation_reason_of(s);
  return r;
}

namespace detail {
// Whether code point `c` must not reach a terminal raw: C0 controls, DEL, C1
// controls (ESC, CSI, NEL...), and the invisible or reordering format
// characters (soft hyphen, ALM, zero-width spaces and joiners, LRM/RLM, line
// and paragraph separators, bidi embeddings, overrides and isolates, word
// joiner and invisible operators, BOM, Hangul fillers, interlinear
// annotations, tag characters).
constexpr bool terminal_unsafe(char32_t c) noexcept {
  return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0xAD || c == 0x34F || c == 0x61C || c == 0x115F ||
         c == 0x1160 || c == 0x180E || (c >= 0x200B && c <= 0x200F) || (c >= 0x2028 && c <= 0x202E) ||
         (c >= 0x2060 && c <= 0x206F) || c == 0x3164 || c == 0xFEFF || c == 0xFFA0 || (c >= 0xFFF9 && c <= 0xFFFB) ||
         (c >= 0xE0000 && c <= 0xE007F);
}

inline void append_hex(std::string& out, unsigned long v, int min_digits) {
  constexpr char digits[] = "0123456789ABCDEF";
  char buf[8];
  int n = 0;
  do {
    buf[n++] = digits[v & 0xF];
    v >>= 4;
  } while (v != 0 || n < min_digits);
  while (n > 0) out += buf[--n];
}

// Appends `s` so that a terminal shows it as text: a byte that is not
// well-formed UTF-8 as \xNN, an unsafe code point (`terminal_unsafe`) as
// \x{HEX}. `quoted`: inside double quotes, `"` and `\` are escaped too. Else
// (JSON text) a backslash that starts a JSON escape is copied with the
// character after it, and any other backslash is written \x{5C}. Both are
// injective: the input can be read back from the output.
inline void append_terminal_safe(std::string& out, std::string_view s, bool quoted) {
  for (std::size_t i = 0; i < s.size();) {
    const char ch = s[i];
    if (ch == '\\') {
      if (quoted) {
        out += "\\\\";
      } else if (i + 1 < s.size() && std::string_view("\"\\/bfnrtu").find(s[i + 1]) != std::string_view::npos) {
        out += s.substr(i, 2);
        i += 2;
        continue;
      } else {
        out += "\\x{5C}";
      }
      ++i;
      continue;
    }
    if (ch == '"' && quoted) {
      out += "\\\"";
      ++i;
      continue;
    }
    const utf8_char u = decode_utf8(s, i);
    if (u.size == 0) {
      out += "\\x";
      append_hex(out, static_cast<unsigned char>(ch), 2);
      ++i;
    } else if (terminal_unsafe(u.code)) {
      out += "\\x{";
      append_hex(out, u.code, 2);
      out += '}';
      i += u.size;
    } else {
      out += s.substr(i, u.size);
      i += u.size;
    }
  }
}
}  // namespace detail

/// `s` in double quotes, safe to print on a terminal: `"` and `\` are
/// escaped with a backslash, a byte that is not well-formed UTF-8 is written
/// \xNN, and every control character (C0, DEL, C1, including ESC and NEL)
/// and every invisible or bidi-reordering format character (U+200B-U+200F,
/// U+202A-U+202E, U+2066-U+2069, ...) is written \x{HEX}. Injective.
inline std::string terminal_quote(std::string_view s) {
  std::string out = "\"";
  detail::append_terminal_safe(out, s, true);
  out += '"';
  return out;
}

/// The request's text form, one line, safe to print on a terminal (only
/// printable characters; model-chosen strings quoted by `terminal_quote`, the
/// arguments' JSON with unsafe characters written \x{HEX}), e.g.
///   tool "delete_file" of MCP server "filesystem", call "c1": needs approval (destructive);
///   effects {write,destructive,idempotent}; class idempotent; idempotency key "k"; arguments: {"path":"/"}
/// (one line). Injective, for any strings: two requests that differ in any
/// field render differently (every string can be read back from the text;
/// the arguments come last).
inline std::string to_string(const confirmation_request& r) {
  std::string out = "tool ";
  out += terminal_quote(r.tool);
  if (!r.server.empty()) out += " of MCP server " + terminal_quote(r.server);
  if (!r.call_id.empty()) out += ", call " + terminal_quote(r.call_id);
  out += ": needs approval (";
  out += to_string(r.reason);
  if (r.may_already_have_happened) out += "; in doubt: it may already have happened";
  out += "); effects {";
  bool first = true;
  for (const effect e : r.effects) {
    if (!first) out += ',';
    first = false;
    out += to_string(e);
  }
  out += "}; class ";
  out += to_string(r.effect_class);
  out += "; idempotency key " + terminal_quote(r.idempotency_key);
  if (r.arguments) {
    out += "; arguments: ";
    detail::append_terminal_safe(out, *r.arguments, false);
  } else {
    out += "; arguments not shown";
  }
  return out;
}

/// Writes `to_string(r)`.
inline std::ostream& operator<<(std::ostream& os, const confirmation_request& r) { return os << to_string(r); }

/// A synchronous approver: `confirmation a(const confirmation_request&)`.
template <class A>
concept SyncApprover = std::is_invocable_r_v<confirmation, A&, const confirmation_request&> &&
                       std::is_same_v<std::remove_cvref_t<std::invoke_result_t<A&, const confirmation_request&>>,
                                      confirmation>;

/// An awaitable approver: `boost::asio::awaitable<confirmation> a(const confirmation_request&)`.
/// The request's views stay valid until the awaitable completes.
template <class A>
concept AsyncApprover =
    std::is_invocable_v<A&, const confirmation_request&> &&
    std::is_same_v<std::invoke_result_t<A&, const confirmation_request&>, boost::asio::awaitable<confirmation>>;

/// Either kind of approver.
template <class A>
concept Approver = SyncApprover<A> || AsyncApprover<A>;

#include <tool_effects/detail/push_options.hpp>

namespace detail {
// Runs an approver's awaitable to its end on a private io_context in this
// thread; rethrows its error. (A template: compiled only where used.)
template <class Awaitable>
confirmation run_to_completion(Awaitable aw) {
  boost::asio::io_context io;
  std::exception_ptr error;
  confirmation answer = confirmation::deny;
  boost::asio::co_spawn(io, std::move(aw), [&](std::exception_ptr e, confirmation c) {
    error = e;
    answer = c;
  });
  io.run();
  if (error) std::rethrow_exception(error);
  return answer;
}
}  // namespace detail

/// A type-erased, copyable approver (shared state). Default-constructed it is
/// empty, and an empty approver denies every call.
class approver {
 public:
  /// The empty approver: denies everything.
  approver() = default;
  /// Wraps `a` (sync or awaitable).
  template <class A>
    requires(Approver<std::decay_t<A>> && !std::is_same_v<std::decay_t<A>, approver>)
  approver(A&& a) {  // NOLINT(google-explicit-constructor): an approver is its callable
    using F = std::decay_t<A>;
    const auto f = std::make_shared<F>(std::forward<A>(a));
    if constexpr (SyncApprover<F>) {
      sync_ = [f](const confirmation_request& r) { return (*f)(r); };
    } else {
      async_ = [f](const confirmation_request& r) { return (*f)(r); };
      // `ask` runs it to completion on a private io_context (instantiated
      // only where an awaitable approver is made).
      sync_ = [f](const confirmation_request& r) { return detail::run_to_completion((*f)(r)); };
    }
  }

  /// Whether a callable is held.
  [[nodiscard]] bool has_value() const noexcept { return sync_ || async_; }
  explicit operator bool() const noexcept { return has_value(); }
  /// Whether the held callable is awaitable.
  [[nodiscard]] bool is_async() const noexcept { return static_cast<bool>(async_); }

  /// Asks synchronously. Empty: `deny`. An awaitable approver is run to
  /// completion on a private io_context. Exceptions of the approver propagate.
  [[nodiscard]] TOOL_EFFECTS_DECL confirmation ask(const confirmation_request& r) const;

  /// Asks without blocking a thread: an awaitable approver is awaited, a
  /// synchronous one is called inline. Empty: `deny`.
  [[nodiscard]] TOOL_EFFECTS_DECL boost::asio::awaitable<confirmation> ask_async(const confirmation_request& r) const;

 private:
  // Every non-empty approver has `sync_` (for an awaitable one: run to completion); `async_` only an awaitable one.
  std::function<confirmation(const confirmation_request&)> sync_;
  std::function<boost::asio::awaitable<confirmation>(const confirmation_request&)> async_;
};

#include <tool_effects/detail/pop_options.hpp>

/// The explicit opt-out of approval for tools with UNKNOWN effects, as an
/// extra of the dispatch options:
/// `run_options{}.with(tool_effects::run_unknown_tools_unconfirmed{})`
/// (and `recovery_options::unknown_tools_unconfirmed` for
/// `run_with_recovery`). Unknown calls then run without asking anyone
/// (still alone: unknown effects conflict with every call). Destructive calls
/// still need an approver. Without it, an unknown call needs an approver like
/// a destructive one (`needs_confirmation`).
struct run_unknown_tools_unconfirmed {};

/// An approver that approves everything (tests, trusted batch jobs).
inline approver approve_all() {
  return approver([](const confirmation_request&) { return confirmation::approve; });
}
/// An approver that denies everything (same as the empty approver, but explicit).
inline approver deny_all() {
  return approver([](const confirmation_request&) { return confirmation::deny; });
}

}  // namespace tool_effects

#if TOOL_EFFECTS_HEADER_ONLY
#include <tool_effects/impl/confirmation.ipp>
#endif

#endif  // TOOL_EFFECTS_CONFIRMATION_HPP
