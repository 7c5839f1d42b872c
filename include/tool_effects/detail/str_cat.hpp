// tool_effects/detail/str_cat.hpp — internal: building a message from pieces.
#ifndef TOOL_EFFECTS_DETAIL_STR_CAT_HPP
#define TOOL_EFFECTS_DETAIL_STR_CAT_HPP

#include <cstddef>
#include <string>
#include <string_view>

namespace tool_effects::detail {

// The concatenation of `pieces` (anything convertible to std::string_view), built with one allocation.
// The library builds its messages with this rather than with chains of `operator+`: besides the single
// allocation, g++ 12 reports a false -Wrestrict at -O2/-O3 inside `"literal" + std::string&&`
// (GCC bug 105329), which -Werror turns into a build failure for every user who compiles warning-free.
template <class... Pieces>
[[nodiscard]] std::string str_cat(const Pieces&... pieces) {
  const std::string_view views[] = {std::string_view(pieces)...};
  std::size_t size = 0;
  for (const auto v : views) size += v.size();
  std::string out;
  out.reserve(size);
  for (const auto v : views) out.append(v);
  return out;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_DETAIL_STR_CAT_HPP
