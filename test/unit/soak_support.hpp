// Shared by the fault-injected soaks (recovery_soak_test.cpp, json_turn_soak_test.cpp): the number of turns,
// the injected error types and the logical clock that stamps every attempt.
#ifndef TOOL_EFFECTS_TEST_SOAK_SUPPORT_HPP
#define TOOL_EFFECTS_TEST_SOAK_SUPPORT_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include "sanitizers.hpp"

namespace soak {

// True in a ThreadSanitizer or AddressSanitizer build: the soaks and sampled properties run fewer rounds there,
// since every memory access costs 5-15 times as much.
inline constexpr bool under_sanitizer = TOOL_EFFECTS_TEST_TSAN || TOOL_EFFECTS_TEST_ASAN;

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
