// Shared by the fault-injected soaks (recovery_soak_test.cpp, json_turn_soak_test.cpp): the number of turns,
// the injected error types and the logical clock that stamps every attempt.
#ifndef TOOL_EFFECTS_TEST_SOAK_SUPPORT_HPP
#define TOOL_EFFECTS_TEST_SOAK_SUPPORT_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

namespace soak {

// True in a ThreadSanitizer or AddressSanitizer build (g++ and clang spell it differently): the soaks and
// sampled properties run fewer rounds there, since every memory access costs 5-15 times as much.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
inline constexpr bool under_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
inline constexpr bool under_sanitizer = true;
#else
inline constexpr bool under_sanitizer = false;
#endif
#else
inline constexpr bool under_sanitizer = false;
#endif

inline constexpr std::size_t default_turns = under_sanitizer ? 1'000 : 10'000;

// TOOL_EFFECTS_SOAK_TURNS, else 10,000 (1,000 under sanitizers).
inline std::size_t turns() {
  if (const char* s = std::getenv("TOOL_EFFECTS_SOAK_TURNS")) return std::strtoull(s, nullptr, 10);
  return default_turns;
}

// A transient failure (the retry policies of the soaks retry it) and a permanent one.
struct timeout_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct permanent_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Stamps the start and end of every attempt: two attempts overlapped unless one ended before the other began.
inline std::atomic<std::uint64_t> logical_clock{0};

}  // namespace soak

#endif  // TOOL_EFFECTS_TEST_SOAK_SUPPORT_HPP
