// tool_effects/attempt.hpp — what a tool may learn about the attempt it is
// running: the idempotency key of its logical call (identical across retries,
// different across calls; the Idempotency-Key pattern of payment APIs), the
// 1-based attempt number and whether the attempt runs a repaired request.
// A tool invocable as `tool(const attempt_context&, args...)` receives it
// (from retry/repair, the runtime path and the dispatcher); any other tool
// is called with its arguments only (detail/invoke.hpp decides). Light on
// purpose: call.hpp includes it.
#ifndef TOOL_EFFECTS_ATTEMPT_HPP
#define TOOL_EFFECTS_ATTEMPT_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include <tool_effects/side_effects.hpp>
#include <tool_effects/detail/config.hpp>
#include <tool_effects/detail/entropy.hpp>

namespace tool_effects {

/// A fresh idempotency key: a random RFC 9562 UUID (version 4: 122 random
/// bits drawn for every key from the platform's non-deterministic source:
/// getentropy(3), the kernel's random generator, where the C library has it,
/// else `std::random_device`; detail/entropy.hpp): unpredictable, unlike a
/// seeded Mersenne Twister, in the standard lowercase 36-character form
/// (8-4-4-4-12 hexadecimal digits). Keys of consecutive calls share no
/// structure, and a collision between any two keys ever made is negligible
/// (birthday bound 2^61). Thread-safe. Throws std::system_error if the source
/// fails.
// Not inlined (a key costs an entropy read anyway): inlined into a caller that
// moves the returned string (say, into a vector), g++ 12 -O2 reports a false
// -Warray-bounds on std::string's move constructor ("forming offset [32, 52]
// is out of the bounds [0, 32]"; GCC's meta-bug 56456 of bogus -Warray-bounds).
TOOL_EFFECTS_NOINLINE inline std::string random_idempotency_key() {
  unsigned char u[16];
  detail::fill_entropy(u, sizeof u);
  u[6] = static_cast<unsigned char>((u[6] & 0x0F) | 0x40);  // version 4 (RFC 9562, 5.4)
  u[8] = static_cast<unsigned char>((u[8] & 0x3F) | 0x80);  // variant 10
  constexpr char hex[] = "0123456789abcdef";
  std::string key(36, '-');
  std::size_t at = 0;
  for (std::size_t i = 0; i < sizeof u; ++i) {
    if (at == 8 || at == 13 || at == 18 || at == 23) ++at;  // the dashes
    key[at++] = hex[u[i] >> 4];
    key[at++] = hex[u[i] & 0x0F];
  }
  return key;
}

/// The former name of `random_idempotency_key` (until 0.1.0): too close to
/// `idempotency_key(identity, scope)`, which derives a logical call's key.
[[deprecated("use random_idempotency_key() (a random key) or idempotency_key(identity, scope) (a derived one)")]]
inline std::string make_idempotency_key() { return random_idempotency_key(); }

namespace detail {
// The fencing token of the coordinator grant held by the call that is being
// started in this thread (0: none). Set by the dispatcher around the
// synchronous start of a coordinated call (coordination.hpp), read when the
// call's attempt context is made.
inline std::uint64_t& current_fencing_token() noexcept {
  thread_local std::uint64_t token = 0;
  return token;
}
}  // namespace detail

/// Where a tool reports progress and log messages while it runs (an MCP
/// server forwards them to its client as notifications/progress and
/// notifications/message). Thread-safe; never blocks.
class attempt_reporter {
 public:
  virtual ~attempt_reporter() = default;
  /// Progress so far (`total` <= 0: unknown), with an optional message.
  virtual void progress(double progress, double total, const std::string& message) const = 0;
  /// A log message at `level` ("debug" ... "emergency").
  virtual void log(const std::string& level, const std::string& message) const = 0;
};

/// What a tool learns about the attempt it is running, when it is invocable
/// as `tool(const attempt_context&, args...)`.
struct attempt_context {
  std::string idempotency_key{};  ///< the same for every attempt of one logical call (a repair with changed inputs gets "<key>.r<k>")
  std::size_t attempt = 1;      ///< 1-based, counting retries and repairs
  bool is_repair = false;       ///< this attempt runs a repaired request
  /// The fencing token of the call's coordinator grant (coordination.hpp):
  /// greater than every token granted before by the same coordinator; 0
  /// when the call runs without a coordinator.
  std::uint64_t fencing_token = detail::current_fencing_token();
  /// Where to report progress and log messages; null when no one listens
  /// (set for calls an MCP server runs: `json_tool_host::run` with a `reporting` option).
  const attempt_reporter* reporter = nullptr;

  /// Reports progress, if someone listens.
  void report_progress(double progress, double total = 0, const std::string& message = {}) const {
    if (reporter) reporter->progress(progress, total, message);
  }
  /// Reports a log message, if someone listens.
  void report_log(const std::string& level, const std::string& message) const {
    if (reporter) reporter->log(level, message);
  }
};

/// A run option of `json_tool_host::run` (`options.with(reporting{&r})`): every
/// attempt of the turn's calls gets `r` (not owned; must outlive the run) as
/// its context's `reporter`.
struct reporting {
  const attempt_reporter* reporter = nullptr;
};

/// Whether `Tool` is given the attempt context (first parameter).
template <class Tool, class... Args>
concept AttemptAware = std::is_invocable_v<Tool&, const attempt_context&, Args&...>;


}  // namespace tool_effects

#endif  // TOOL_EFFECTS_ATTEMPT_HPP
