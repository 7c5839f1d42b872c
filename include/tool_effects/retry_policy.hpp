// tool_effects/retry_policy.hpp — how often and how patiently a call is
// attempted again: `retry_policy` (attempts, base delay, cap, jitter, which
// errors are transient, a seed), `transient_on<E...>()`, and the `backoff`
// generator of one logical call's delays (AWS "Exponential Backoff and
// Jitter": full, equal, decorrelated, none). Values only: which calls MAY be
// retried is rules.hpp's `may_retry`; the loop that applies both is
// retry.hpp (and the dispatcher). Light on purpose: mcp/errors.hpp needs
// nothing else.
#ifndef TOOL_EFFECTS_RETRY_POLICY_HPP
#define TOOL_EFFECTS_RETRY_POLICY_HPP

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>

namespace tool_effects {

/// How a retry's sleep is randomised (AWS "Exponential Backoff and Jitter"),
/// with `exp(n) = min(cap, base * 2^n)` for the n-th retry (n = 0, 1, ...):
enum class jitter_mode : std::uint8_t {
  none,         ///< sleep = exp(n)
  full,         ///< sleep = uniform(0, exp(n))
  equal,        ///< sleep = exp(n)/2 + uniform(0, exp(n)/2)
  decorrelated  ///< sleep = min(cap, uniform(base, previous_sleep * 3)), previous_sleep starts at base
};

/// Stable slugs: "none", "full", "equal", "decorrelated".
constexpr std::string_view to_string(jitter_mode j) noexcept {
  switch (j) {
    case jitter_mode::none: return "none";
    case jitter_mode::full: return "full";
    case jitter_mode::equal: return "equal";
    case jitter_mode::decorrelated: return "decorrelated";
  }
  return {};
}

/// Decides whether an error is transient (worth another attempt).
using transient_predicate = std::function<bool(const std::exception_ptr&)>;

/// A predicate that calls an error transient iff it is (derived from) one of `E...`.
template <class... E>
transient_predicate transient_on() {
  return [](const std::exception_ptr& e) {
    if (!e) return false;
    bool hit = false;
    try {
      std::rethrow_exception(e);
    } catch (...) {
      const auto is = [&]<class X>() {
        try {
          throw;
        } catch (const X&) {
          return true;
        } catch (...) {
          return false;
        }
      };
      hit = (is.template operator()<E>() || ...);
    }
    return hit;
  };
}

/// A retry policy. Aggregate: `retry_policy{.max_attempts = 4, .is_transient = transient_on<timeout>()}`.
/// With the default (empty) `is_transient` nothing is transient, so nothing is
/// ever retried by accident.
struct retry_policy {
  std::size_t max_attempts = 3;                          ///< attempts in total (>= 1), the first included
  std::chrono::nanoseconds base_delay = std::chrono::milliseconds(100);
  std::chrono::nanoseconds max_delay = std::chrono::seconds(10);  ///< the cap
  jitter_mode jitter = jitter_mode::full;
  transient_predicate is_transient{};                    ///< empty: no error is transient
  std::optional<std::uint64_t> seed{};                   ///< fixed seed for deterministic jitter; none: the platform's entropy
};

/// Whether `policy` calls `e` transient. An empty predicate, a null error, or
/// a predicate that throws: false.
inline bool is_transient_error(const retry_policy& policy, const std::exception_ptr& e) noexcept {
  if (!policy.is_transient || !e) return false;
  try {
    return policy.is_transient(e);
  } catch (...) {
    return false;
  }
}

/// The delays of one logical call's retries, drawn from a seeded generator
/// (SplitMix64; uniform draws by rejection, without bias): `next()` is the
/// sleep before the next retry. The same seed gives the same delays.
class backoff {
 public:
  using duration = std::chrono::nanoseconds;

  backoff(const retry_policy& p, std::uint64_t seed)
      : base_(std::max(p.base_delay, duration::zero())),
        cap_(std::max(p.max_delay, duration::zero())),
        mode_(p.jitter),
        rng_(seed),
        prev_(base_) {}

  /// The sleep before the next retry, in [0, cap] (decorrelated: [min(base, cap), cap]).
  duration next() {
    const std::size_t n = retries_++;
    switch (mode_) {
      case jitter_mode::none: return exp(n);
      case jitter_mode::full: return uniform(duration::zero(), exp(n));
      case jitter_mode::equal: {
        const duration half = exp(n) / 2;
        return half + uniform(duration::zero(), exp(n) - half);
      }
      case jitter_mode::decorrelated: {
        const duration hi = prev_.count() > std::numeric_limits<duration::rep>::max() / 3 ? cap_ : prev_ * 3;
        prev_ = std::min(cap_, uniform(base_, std::max(base_, hi)));
        return prev_;
      }
    }
    return exp(n);
  }

  /// How many delays were drawn.
  [[nodiscard]] std::size_t retries() const noexcept { return retries_; }

  /// min(cap, base * 2^n), without overflow.
  [[nodiscard]] duration exp(std::size_t n) const noexcept {
    duration d = std::min(base_, cap_);
    for (std::size_t i = 0; i < n && d < cap_; ++i)
      d = d.count() > std::numeric_limits<duration::rep>::max() / 2 ? cap_ : std::min(cap_, d * 2);
    return d;
  }

 private:
  // Uniform in [lo, hi].
  duration uniform(duration lo, duration hi) {
    if (hi <= lo) return lo;
    const std::uint64_t span = static_cast<std::uint64_t>(hi.count() - lo.count()) + 1;  // <= 2^63
    const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % span;
    std::uint64_t x = draw();
    while (x >= limit) x = draw();
    return lo + duration(static_cast<duration::rep>(x % span));
  }
  // SplitMix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number generators", 2014).
  std::uint64_t draw() noexcept {
    std::uint64_t z = (rng_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  duration base_, cap_;
  jitter_mode mode_;
  std::uint64_t rng_;  // SplitMix64's state
  duration prev_;
  std::size_t retries_ = 0;
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_RETRY_POLICY_HPP
