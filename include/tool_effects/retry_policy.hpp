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
#include <random>
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
  std::optional<std::uint64_t> seed{};                   ///< fixed seed for deterministic jitter; none: random_device
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
/// (std::mt19937_64): `next()` is the sleep before the next retry.
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
  duration uniform(duration lo, duration hi) {
    if (hi <= lo) return lo;
    return duration(std::uniform_int_distribution<duration::rep>(lo.count(), hi.count())(rng_));
  }

  duration base_, cap_;
  jitter_mode mode_;
  std::mt19937_64 rng_;
  duration prev_;
  std::size_t retries_ = 0;
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_RETRY_POLICY_HPP
