// tool_effects/composite.hpp — a tool made of other tools run in sequence,
// whose declaration is computed from its parts ("declare a class per node in
// a composite", as the side-effect safety design note puts it).
#ifndef TOOL_EFFECTS_COMPOSITE_HPP
#define TOOL_EFFECTS_COMPOSITE_HPP

#include <array>
#include <cstddef>
#include <span>

#include <boost/mp11/algorithm.hpp>
#include <boost/mp11/list.hpp>

#include <tool_effects/rules.hpp>
#include <tool_effects/side_effects.hpp>
#include <tool_effects/tags.hpp>

namespace tool_effects {

/// THE composition rule on values: the effects of running tools with effect
/// sets `parts` in sequence. The union of the flags, except that
///  - `idempotent` is kept only if every part is retry-safe;
///  - `write` is added if some part is not parallel-safe (such a part may
///    change something, so the whole may too);
///  - an unknown (empty) part makes the whole unknown (empty).
/// Hence `classify(compose(p))` is the worst class of the parts, the whole is
/// parallel-safe (retry-safe) iff every part is, and destructive iff any is.
template <class Range>
constexpr effect_set compose(const Range& parts) noexcept {
  effect_set out;
  bool all_retry_safe = true, all_parallel_safe = true;
  for (const effect_set s : parts) {
    if (s.empty()) return effect_set{};
    out |= s;
    all_retry_safe = all_retry_safe && is_retry_safe(s);
    all_parallel_safe = all_parallel_safe && is_parallel_safe(s);
  }
  if (!all_retry_safe) out.erase(effect::idempotent);
  if (!all_parallel_safe && !out.empty()) out.insert(effect::write);
  return out;
}

namespace detail {
template <class T>
constexpr tag_info part_info() noexcept {
  using decl = side_effects_of_t<T>;
  return tag_info{decl::value, decl::exclusive, decl::accesses.data(), decl::accesses.size()};
}

// Marks the resource list of a composite, expanded only for diagnostics.
template <class... Tools>
struct composed_resources {};
template <class... Tools>
struct expand_resources<composed_resources<Tools...>> {
  using type = boost::mp11::mp_append<boost::mp11::mp_list<>, typename resources_of<side_effects_of_t<Tools>>::type...>;
};

// A tag whose flags and accesses are those of a sequence of tools: the
// composed flags, the union of the parts' accesses, exclusive if any part is.
template <class... Tools>
struct composed : tag_marker {
 private:
  static constexpr tag_info parts_[sizeof...(Tools) + 1] = {part_info<Tools>()..., tag_info{}};
  static constexpr effect_set flags_ = [] {
    effect_set sets[sizeof...(Tools) + 1] = {side_effects_v<Tools>..., effect_set{}};
    return compose(std::span<const effect_set>(sets, sizeof...(Tools)));
  }();
  static constexpr declaration_head head_ = fold_head(parts_, sizeof...(Tools));

 public:
  static constexpr std::array<access, head_.count> tool_effects_array =
      fold_accesses<head_.count>(parts_, sizeof...(Tools), head_);
  static constexpr tag_info tool_effects_info{flags_, head_.exclusive, tool_effects_array.data(), head_.count};
  using tool_effects_resources = composed_resources<Tools...>;
};
}  // namespace detail

/// Derive a tool from `composite<Parts...>` (or use it directly) to declare
/// "runs these tools in sequence": its `side_effects_of` is computed from the
/// parts by `compose`, and its accesses are the union of theirs.
template <class... Tools>
struct composite {
  using side_effects = effects<detail::composed<Tools...>>;
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_COMPOSITE_HPP
