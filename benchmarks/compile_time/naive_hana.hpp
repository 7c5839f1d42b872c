// benchmarks/compile_time/naive_hana.hpp — the BASELINE of the compile-time benchmark: the conflict
// analysis done the naive way, on type-level sets. NOT part of the library; never include it elsewhere.
//
// A tool's accesses are three `hana::set`s of `hana::type<R>` (reads, writes, appends). Two tools conflict
// when one's writes overlap any access of the other, or reads meet appends; two sets "overlap" when one
// intersects the ancestor-or-self closure of the other (`hana::intersection` of the closures, the
// hierarchy walked as types). The N x N table instantiates `pair_conflicts<A, B>` for every ordered pair
// and computes each answer with set algebra — the approach issue 3 measured at 16.6 s / 1.4 GB for
// N = 100 on g++ 12, kept here to measure the library against in the same run.
#ifndef TOOL_EFFECTS_BENCH_NAIVE_HANA_HPP
#define TOOL_EFFECTS_BENCH_NAIVE_HANA_HPP

#include <array>
#include <cstddef>
#include <type_traits>

#include <boost/hana/fold_left.hpp>
#include <boost/hana/insert.hpp>
#include <boost/hana/intersection.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/set.hpp>
#include <boost/hana/type.hpp>
#include <boost/hana/union.hpp>

namespace naive {
namespace hana = boost::hana;

/// The root of the resource hierarchy.
struct root {};

/// Base class giving a resource its parent.
template <class Parent>
struct resource {
  using naive_parent = Parent;
};

/// A set of resource types, as a `hana::set` of `hana::type`.
template <class... R>
struct set {
  static constexpr auto value = hana::make_set(hana::type_c<R>...);
};

/// `{R, parent of R, ..., root}` as a set.
template <class R>
constexpr auto ancestors_or_self(hana::basic_type<R>) {
  if constexpr (std::is_same_v<R, root>)
    return hana::make_set(hana::type_c<root>);
  else
    return hana::insert(ancestors_or_self(hana::type_c<typename R::naive_parent>), hana::type_c<R>);
}

/// The union of the ancestor-or-self sets of the members of `s`.
template <class S>
constexpr auto closure(S s) {
  return hana::fold_left(s, hana::make_set(), [](auto acc, auto t) { return hana::union_(acc, ancestors_or_self(t)); });
}

/// A set and its ancestor-or-self closure (computed once per tool, not per pair).
template <class S>
struct closed_set {
  static constexpr auto set = S::value;
  static constexpr auto closure = naive::closure(S::value);
};

/// A tool: the sets it reads, writes and appends to, with their closures.
template <class Reads, class Writes, class Appends>
struct tool {
  using reads = closed_set<Reads>;
  using writes = closed_set<Writes>;
  using appends = closed_set<Appends>;
};

/// Whether some member of `A` is an ancestor-or-self of some member of `B`, or the reverse: two
/// `hana::intersection`s of one set with the other's closure.
template <class A, class B>
constexpr bool overlap() {
  using down = decltype(hana::length(hana::intersection(A::closure, B::set)));
  using up = decltype(hana::length(hana::intersection(A::set, B::closure)));
  return down::value != 0 || up::value != 0;
}

/// Whether a call of X and a call of Y conflict: one instantiation per ordered pair.
template <class X, class Y>
struct pair_conflicts {
  using xr = typename X::reads;
  using xw = typename X::writes;
  using xa = typename X::appends;
  using yr = typename Y::reads;
  using yw = typename Y::writes;
  using ya = typename Y::appends;
  static constexpr bool value = overlap<xw, yr>() || overlap<xw, yw>() || overlap<xw, ya>() || overlap<xr, yw>() ||
                                overlap<xa, yw>() || overlap<xr, ya>() || overlap<xa, yr>();
};

template <class X, class... Tools>
constexpr std::array<bool, sizeof...(Tools)> row() {
  return {pair_conflicts<X, Tools>::value...};
}

/// The N x N table, row-major: entry i * N + j says whether tools i and j conflict.
template <class... Tools>
constexpr std::array<bool, sizeof...(Tools) * sizeof...(Tools)> conflict_matrix() {
  constexpr std::size_t n = sizeof...(Tools);
  const std::array<std::array<bool, n>, n> rows{row<Tools, Tools...>()...};
  std::array<bool, n * n> out{};
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) out[i * n + j] = rows[i][j];
  return out;
}

template <std::size_t N>
constexpr bool none(const std::array<bool, N>& a) {
  for (bool b : a)
    if (b) return false;
  return true;
}

/// Every two calls of the list (each with itself too) are conflict-free.
template <class... Tools>
concept ParallelBatch = none(conflict_matrix<Tools...>());

}  // namespace naive

#endif  // TOOL_EFFECTS_BENCH_NAIVE_HANA_HPP
