// tool_effects/conflict.hpp — pairwise conflicts between tools, at compile
// time: `conflicts_v<A, B>`, `ConflictFree<A, B>`, `ParallelBatch<Tools...>`
// and the N×N table `conflict_matrix_v<Tools...>`.
//
// The rule itself lives in access.hpp (`access_modes_conflict`,
// `access_lists_conflict`). The matrix evaluates the same rule by resource
// rather than by pair: each resource node gets one bitset of the tools that
// touch it per mode, so building the table costs O(accesses × depth × N/64)
// word operations instead of O(N² × accesses²) — linear template
// instantiations, and within clang's default constexpr step limit for a few
// hundred tools. See docs/benchmarks.md for the compile-time measurements.
#ifndef TOOL_EFFECTS_CONFLICT_HPP
#define TOOL_EFFECTS_CONFLICT_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include <boost/mp11/list.hpp>

#include <tool_effects/access.hpp>
#include <tool_effects/resource.hpp>
#include <tool_effects/side_effects.hpp>

namespace tool_effects {

/// Whether a call of `A` and a call of `B` may not run at the same time.
/// `conflicts_v<T, T>` says whether two calls of `T` conflict.
template <class A, class B>
inline constexpr bool conflicts_v = conflicts(accesses_v<A>, accesses_v<B>);

/// A call of `A` and a call of `B` may run at the same time.
template <class A, class B>
concept ConflictFree = !conflicts_v<A, B>;

namespace detail {
/// An N×N bit matrix stored as rows of 64-bit words: the shared layout of
/// `conflict_matrix` and `dependency_matrix` (plan.hpp), so planners combine
/// rows a word at a time.
template <std::size_t N>
class bit_matrix {
 public:
  static constexpr std::size_t words_per_row = (N + 63) / 64;

  /// Number of rows and columns.
  [[nodiscard]] static constexpr std::size_t size() noexcept { return N; }

  /// Bit (i, j).
  [[nodiscard]] constexpr bool operator()(std::size_t i, std::size_t j) const noexcept {
    return ((bits_[i * words_per_row + j / 64] >> (j % 64)) & 1u) != 0;
  }

  /// Row i as `words_per_row` bitset words (bit j = `(*this)(i, j)`).
  [[nodiscard]] constexpr const std::uint64_t* row(std::size_t i) const noexcept {
    return bits_.data() + i * words_per_row;
  }

  friend constexpr bool operator==(const bit_matrix&, const bit_matrix&) = default;

  // Row i for writing; used by the builders.
  constexpr std::uint64_t* mutable_row(std::size_t i) noexcept { return bits_.data() + i * words_per_row; }

 protected:
  std::array<std::uint64_t, N * words_per_row> bits_{};
};
}  // namespace detail

/// An N×N table: `m(i, j)` says whether call i and call j conflict (it is
/// symmetric); the diagonal says whether two calls of the same tool conflict.
/// Rows are bitsets (`row(i)`, `words_per_row`), so planners can combine them
/// a word at a time.
template <std::size_t N>
class conflict_matrix : public detail::bit_matrix<N> {
  using base = detail::bit_matrix<N>;
  using base::bits_;

 public:
  using base::words_per_row;

  /// The first pair (i, j), i < j, in row-major order that conflicts.
  [[nodiscard]] constexpr std::optional<std::array<std::size_t, 2>> first_conflict() const noexcept {
    for (std::size_t i = 0; i < N; ++i)
      for (std::size_t w = (i + 1) / 64; w < words_per_row; ++w) {
        std::uint64_t bits = bits_[i * words_per_row + w];
        if (w == (i + 1) / 64) bits &= ~std::uint64_t{0} << ((i + 1) % 64);
        if (bits != 0) {
          std::size_t j = w * 64;
          while ((bits & 1u) == 0) bits >>= 1, ++j;
          return std::array<std::size_t, 2>{i, j};
        }
      }
    return std::nullopt;
  }

  /// Whether no two distinct calls conflict.
  [[nodiscard]] constexpr bool conflict_free() const noexcept { return !first_conflict().has_value(); }

  friend constexpr bool operator==(const conflict_matrix&, const conflict_matrix&) = default;
};

namespace detail {

inline constexpr std::size_t npos = static_cast<std::size_t>(-1);

inline constexpr std::array<access_mode, 3> all_access_modes{access_mode::read, access_mode::write,
                                                             access_mode::append};

// The matrix, by resource, in ONE constant evaluation whose scratch memory is
// transient (constexpr new/delete, sized by the input) and addressed through
// raw pointers: std::array::operator[] is a function call per access in a
// constant evaluation, and a static constexpr scratch table would be stored.
//  1. Dense index of the accessed resources by path (open addressing on
//     their hash; types with the same path share a node, as at runtime).
//  2. exact[m][r]: the tools with a mode-m access to node r.
//  3. overlap[m][r]: exact[m] of every node in r's subtree or among r's
//     strict ancestors, i.e. every accessed node that overlaps r.
//  4. hit[m][r]: the union of overlap[m'][r] over the modes m' that conflict
//     with m (`access_modes_conflict`, the rule) — so a row costs one pass
//     over W words per access.
//  5. Row i: the exclusive tools, and hit[m][r] for each of i's accesses
//     (r, m); an exclusive tool's row is full.
// O(nodes × depth × W + accesses × W) word operations, W = ceil(N / 64).
template <std::size_t N>
constexpr conflict_matrix<N> build_conflict_matrix(const access_list* tools) noexcept {
  constexpr std::size_t W = conflict_matrix<N>::words_per_row;
  conflict_matrix<N> m;
  if constexpr (N > 0) {
    std::size_t total = 0;
    bool any_exclusive = false;
    for (const access_list* t = tools; t != tools + N; ++t) {
      total += t->count;
      any_exclusive = any_exclusive || t->exclusive;
    }
    std::size_t cap = 4;
    while (cap < 2 * total) cap *= 2;
    const resource_info** keys = new const resource_info*[cap]{};
    std::size_t* slot_node = new std::size_t[cap]{};
    const resource_info** nodes = new const resource_info*[total + 1]{};
    std::size_t* access_node = new std::size_t[total + 1]{};
    std::size_t u = 0;
    auto find = [&](const resource_info* r) {
      std::size_t h = static_cast<std::size_t>(r->hash) & (cap - 1);
      // Keyed by path (hash = fnv1a(path)): two resource types with one path are one node.
      while (keys[h] != nullptr && keys[h] != r && keys[h]->path != r->path) h = (h + 1) & (cap - 1);
      return h;
    };
    {
      std::size_t k = 0;
      for (const access_list* t = tools; t != tools + N; ++t)
        for (const access* a = t->first; a != t->first + t->count; ++a) {
          const std::size_t h = find(a->resource);
          if (keys[h] == nullptr) {
            keys[h] = a->resource;
            slot_node[h] = u;
            nodes[u++] = a->resource;
          }
          access_node[k++] = slot_node[h];
        }
    }
    const std::size_t plane = u * W;  // words per mode
    std::uint64_t* exact = new std::uint64_t[3 * plane + 1]{};
    std::uint64_t* overlap = new std::uint64_t[3 * plane + 1]{};
    {
      std::size_t k = 0;
      for (std::size_t i = 0; i < N; ++i) {
        const std::uint64_t bit = std::uint64_t{1} << (i % 64);
        for (const access* a = tools[i].first; a != tools[i].first + tools[i].count; ++a)
          exact[static_cast<std::size_t>(a->mode) * plane + access_node[k++] * W + i / 64] |= bit;
      }
    }
    for (std::size_t s = 0; s < u; ++s)
      for (const resource_info* r = nodes[s]; r != nullptr; r = r->parent) {
        const std::size_t h = find(r);
        if (keys[h] == nullptr) continue;  // an ancestor nobody accesses
        const std::size_t a = slot_node[h];
        for (std::size_t mode = 0; mode < 3; ++mode) {
          std::uint64_t* up = overlap + mode * plane + a * W;  // s is in a's subtree
          const std::uint64_t* from_s = exact + mode * plane + s * W;
          for (std::size_t w = 0; w < W; ++w) up[w] |= from_s[w];
          if (a != s) {  // a is a strict ancestor of s
            std::uint64_t* down = overlap + mode * plane + s * W;
            const std::uint64_t* from_a = exact + mode * plane + a * W;
            for (std::size_t w = 0; w < W; ++w) down[w] |= from_a[w];
          }
        }
      }
    std::uint64_t* hit = exact;  // reused: exact is no longer needed
    for (std::size_t mode = 0; mode < 3; ++mode)
      for (std::size_t s = 0; s < u; ++s) {
        std::uint64_t* dst = hit + mode * plane + s * W;
        for (std::size_t w = 0; w < W; ++w) dst[w] = 0;
        for (std::size_t other = 0; other < 3; ++other) {
          if (!access_modes_conflict(static_cast<access_mode>(mode), static_cast<access_mode>(other))) continue;
          const std::uint64_t* src = overlap + other * plane + s * W;
          for (std::size_t w = 0; w < W; ++w) dst[w] |= src[w];
        }
      }
    std::uint64_t* excl = new std::uint64_t[W]{};
    if (any_exclusive)
      for (std::size_t i = 0; i < N; ++i)
        if (tools[i].exclusive) excl[i / 64] |= std::uint64_t{1} << (i % 64);
    std::size_t k = 0;
    for (std::size_t i = 0; i < N; ++i) {
      std::uint64_t* row = m.mutable_row(i);
      if (tools[i].exclusive) {
        for (std::size_t w = 0; w < W; ++w) row[w] = ~std::uint64_t{0};
        if (N % 64 != 0) row[W - 1] = (std::uint64_t{1} << (N % 64)) - 1;
        continue;
      }
      if (any_exclusive)
        for (std::size_t w = 0; w < W; ++w) row[w] = excl[w];
      for (const access* a = tools[i].first; a != tools[i].first + tools[i].count; ++a) {
        const std::uint64_t* src = hit + static_cast<std::size_t>(a->mode) * plane + access_node[k++] * W;
        for (std::size_t w = 0; w < W; ++w) row[w] |= src[w];
      }
    }
    delete[] excl;
    delete[] overlap;
    delete[] exact;
    delete[] access_node;
    delete[] nodes;
    delete[] slot_node;
    delete[] keys;
  }
  return m;
}

template <class... Tools>
struct tool_access_table {
  static constexpr std::array<access_list, sizeof...(Tools)> value{accesses_v<Tools>...};
  static constexpr conflict_matrix<sizeof...(Tools)> matrix =
      build_conflict_matrix<sizeof...(Tools)>(value.data());
};

}  // namespace detail

/// The conflict table of a list of calls (a tool may be listed more than
/// once). Built in O(accesses × depth × N/64) constexpr word operations.
template <class... Tools>
inline constexpr const conflict_matrix<sizeof...(Tools)>& conflict_matrix_v =
    detail::tool_access_table<Tools...>::matrix;

/// Names, in a compile error, the first conflicting pair of a batch and the
/// resource they collide on (the deeper of the two overlapping resources;
/// `everything` when one of them is exclusive).
template <class First, class Second, class Resource, std::size_t FirstIndex, std::size_t SecondIndex>
struct conflicting_pair {
  static constexpr bool conflict_free = false;
};
/// The result of checking a batch that has no conflicting pair.
struct no_conflicting_pair {
  static constexpr bool conflict_free = true;
};

namespace detail {
// The I-th type of a pack, in O(1) template depth (overload resolution on
// an indexed base), without <boost/mp11/algorithm.hpp>.
template <std::size_t I, class T>
struct indexed_type {
  using type = T;
};
template <class Seq, class... T>
struct type_indexer;
template <std::size_t... I, class... T>
struct type_indexer<std::index_sequence<I...>, T...> : indexed_type<I, T>... {};
template <std::size_t I, class T>
indexed_type<I, T> select_type(const indexed_type<I, T>&);
template <class List, std::size_t I>
struct type_at_impl;
template <template <class...> class L, class... T, std::size_t I>
struct type_at_impl<L<T...>, I> {
  using type = typename decltype(select_type<I>(type_indexer<std::index_sequence_for<T...>, T...>{}))::type;
};
template <class List, std::size_t I>
using type_at = typename type_at_impl<List, I>::type;

struct pair_witness {
  std::size_t first_index = 0, second_index = 0;
  bool from_first = true;     // the named resource is the first tool's access ...
  std::size_t access = 0;     // ... at this index; npos: `everything`
};

template <std::size_t N>
constexpr pair_witness witness(const std::array<access_list, N>& tools, std::size_t i, std::size_t j) noexcept {
  pair_witness w{i, j, true, static_cast<std::size_t>(-1)};
  if (tools[i].exclusive || tools[j].exclusive) return w;
  for (std::size_t k = 0; k < tools[i].size(); ++k)
    for (std::size_t l = 0; l < tools[j].size(); ++l)
      if (accesses_conflict(tools[i][k], tools[j][l])) {
        const bool first_deeper = tools[i][k].resource->depth >= tools[j][l].resource->depth;
        w.from_first = first_deeper;
        w.access = first_deeper ? k : l;
        return w;
      }
  return w;
}

template <bool Conflict, class... Tools>
struct first_conflict_impl {
  using type = no_conflicting_pair;
};
template <class... Tools>
struct first_conflict_impl<true, Tools...> {
  using table = tool_access_table<Tools...>;
  static constexpr auto pair = *table::matrix.first_conflict();
  static constexpr pair_witness w = witness(table::value, pair[0], pair[1]);
  using list = boost::mp11::mp_list<Tools...>;
  using first = detail::type_at<list, w.first_index>;
  using second = detail::type_at<list, w.second_index>;
  template <class T>
  using resources_of = typename resources_of<side_effects_of_t<T>>::type;
  template <bool Everything, class = void>
  struct resource_type {
    using type = everything;
  };
  template <class V>
  struct resource_type<false, V> {
    using type = detail::type_at<resources_of<std::conditional_t<w.from_first, first, second>>, w.access>;
  };
  using type = conflicting_pair<first, second,
                                typename resource_type<w.access == static_cast<std::size_t>(-1)>::type,
                                w.first_index, w.second_index>;
};
}  // namespace detail

/// `no_conflicting_pair` when every two calls of the list are conflict-free;
/// otherwise `conflicting_pair<A, B, Resource, I, J>` for the first pair.
template <class... Tools>
using first_conflict_t =
    typename detail::first_conflict_impl<!conflict_matrix_v<Tools...>.conflict_free(), Tools...>::type;

namespace detail {
template <class Result>
concept NoConflictingPair = Result::conflict_free;
}

/// Every two calls of the list are conflict-free (a tool listed twice is
/// checked against itself). On failure, the diagnostic shows
/// `conflicting_pair<A, B, Resource, I, J>`.
template <class... Tools>
concept ParallelBatch = detail::NoConflictingPair<first_conflict_t<Tools...>>;

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_CONFLICT_HPP
