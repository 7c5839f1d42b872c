// tool_effects/plan.hpp — conflict-aware plans: which earlier calls each
// call of a turn waits for, and in which wave it can run.
//
// The model (docs/scheduling.md): calls are given in program order. Call i
// waits for every EARLIER call it conflicts with (the rule of access.hpp),
// and for nothing else. Its wave is 0 if it waits for nobody, else 1 + the
// largest wave of the calls it waits for. The dispatcher does not use wave
// barriers (a call starts as soon as its own predecessors finished), so
// waves are a summary for people and for heterogeneous code; the dependency
// relation is what runs.
//
// Two front ends:
//  - compile time (detail/plan_core.hpp, on bitset rows): `plan_v<Tools...>`, `plan_waves<Tools...>()`,
//    `dependencies_v<Tools...>`, `waves_c<Tools...>` (a Hana tuple of
//    tuples of `hana::size_t` indices), all derived from
//    `conflict_matrix_v<Tools...>`; O(N²/64) constexpr work, no per-pair
//    instantiation;
//  - runtime: `plan_calls(span<const call_description>)`, with resource
//    paths interned once and only the edges that order conflicting calls
//    kept (successor lists, O(n + edges); see `runtime_plan`), or
//    `plan_calls(matrix, types)` for calls of static tool types (the
//    compile-time matrix, indexed per call; every edge kept).
//    Both compute the same waves: the wave rule over kept edges gives the
//    longest paths of the full relation, which has the same closure.
#ifndef TOOL_EFFECTS_PLAN_HPP
#define TOOL_EFFECTS_PLAN_HPP

#include <array>
#include <cstddef>
#include <utility>

#include <boost/hana/integral_constant.hpp>
#include <boost/hana/tuple.hpp>

#include <tool_effects/detail/plans.hpp>  // everything but waves_c (the dispatcher includes only that)

namespace tool_effects {

namespace detail {
template <class... Tools>
struct wave_tuple {
  static constexpr const auto& plan = plan_v<Tools...>;
  // The indices of wave W, in program order.
  template <std::size_t W>
  static constexpr auto indices = [] {
    std::array<std::size_t, plan.wave_sizes[W]> out{};
    std::size_t k = 0;
    for (std::size_t i = 0; i < sizeof...(Tools); ++i)
      if (plan.waves[i] == W) out[k++] = i;
    return out;
  }();
  template <std::size_t W, std::size_t... K>
  static constexpr auto wave(std::index_sequence<K...>) {
    return boost::hana::make_tuple(boost::hana::size_c<indices<W>[K]>...);
  }
  template <std::size_t... W>
  static constexpr auto all(std::index_sequence<W...>) {
    return boost::hana::make_tuple(wave<W>(std::make_index_sequence<plan.wave_sizes[W]>{})...);
  }
  static constexpr auto value = all(std::make_index_sequence<plan.wave_count>{});
};
}  // namespace detail

/// The waves as a Boost.Hana tuple of tuples of `hana::size_t<i>` call
/// indices, for heterogeneous code: `hana::for_each(waves_c<A, B, C>, ...)`.
/// Wave k holds the calls of wave k in program order.
template <class... Tools>
inline constexpr auto waves_c = detail::wave_tuple<Tools...>::value;

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_PLAN_HPP
