// tool_effects/detail/entropy.hpp — random bytes from the platform's non-deterministic source, for random
// idempotency keys (attempt.hpp) and unseeded retry jitter (detail/recovery.hpp): getentropy(3) where the C
// library declares it (the kernel's random generator; see TOOL_EFFECTS_HAS_GETENTROPY in detail/config.hpp),
// else std::random_device. One place, and no <random> on the dispatcher's path.
#ifndef TOOL_EFFECTS_DETAIL_ENTROPY_HPP
#define TOOL_EFFECTS_DETAIL_ENTROPY_HPP

#include <cstddef>
#include <cstdint>
#include <system_error>

#include <tool_effects/detail/config.hpp>

#if TOOL_EFFECTS_HAS_GETENTROPY
#include <sys/random.h>  // macOS declares getentropy here,
#include <unistd.h>      // glibc here (and in <sys/random.h> since 2.25)
#include <cerrno>
#else
#include <cstring>
#include <random>
#endif

namespace tool_effects::detail {

// Fills `out` with `n` (at most 256) bytes of the platform's entropy; throws std::system_error if the source
// fails (as std::random_device would).
inline void fill_entropy(void* out, std::size_t n) {
#if TOOL_EFFECTS_HAS_GETENTROPY
  if (::getentropy(out, n) != 0) throw std::system_error(errno, std::generic_category(), "tool_effects: getentropy");
#else
  thread_local std::random_device source;
  auto* bytes = static_cast<unsigned char*>(out);
  for (std::size_t i = 0; i < n; i += 4) {
    const auto bits = static_cast<std::uint32_t>(source());
    std::memcpy(bytes + i, &bits, n - i < 4 ? n - i : 4);
  }
#endif
}

// 64 bits of the platform's entropy.
inline std::uint64_t entropy64() {
  std::uint64_t v = 0;
  fill_entropy(&v, sizeof v);
  return v;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_DETAIL_ENTROPY_HPP
