// tool_effects/registry.hpp — a registry of tools: compile-time tables for
// the static tools (name → index, effect sets, classes, conflict matrix),
// runtime lookup by name, and dynamic tools registered at runtime with an
// `effect_set` and resource paths. Static and dynamic tools are described by
// the same `call_description`, so planning mixes them under the same rule.
//
// JSON-free: dispatching model-chosen calls given as JSON lives in
// <tool_effects/json.hpp>, on top of this header.
#ifndef TOOL_EFFECTS_REGISTRY_HPP
#define TOOL_EFFECTS_REGISTRY_HPP

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <tool_effects/call_description.hpp>
#include <tool_effects/conflict.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/rules.hpp>
#include <tool_effects/side_effects.hpp>

namespace tool_effects {

/// A tool type with a name: `static constexpr std::string_view name = "...";`.
template <class T>
concept NamedTool = requires {
  { T::name } -> std::convertible_to<std::string_view>;
};

/// Names, in a compile error, two tool types registered under one name.
template <class First, class Second, std::size_t FirstIndex, std::size_t SecondIndex>
struct duplicate_tool_name {
  static constexpr bool unique = false;
};
/// The result of checking registry names that are all distinct.
struct unique_tool_names {
  static constexpr bool unique = true;
};

namespace detail {
// Instantiated once per registered tool: its diagnostics name the tool.
template <class Tool>
struct registry_entry_check {
  static_assert(DeclaresSideEffects<Tool>,
                "tool_effects::tool_registry: this tool declares no side effects (see registry_entry_check<Tool>)");
  static_assert(NamedTool<Tool>,
                "tool_effects::tool_registry: this tool has no `static constexpr std::string_view name`");
  static constexpr bool value = true;
};

template <class Tool>
constexpr std::string_view tool_name_of() noexcept {
  if constexpr (NamedTool<Tool>) return std::string_view(Tool::name);
  else return type_name_v<Tool>;
}

// The first pair (i, j), i < j, with equal names; {npos, npos} if none.
template <std::size_t N>
constexpr std::array<std::size_t, 2> first_duplicate(const std::array<std::string_view, N>& names) noexcept {
  std::array<std::size_t, N> order{};
  for (std::size_t i = 0; i < N; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return names[a] < names[b] || (names[a] == names[b] && a < b);
  });
  std::array<std::size_t, 2> best{npos, npos};  // npos: detail::npos (conflict.hpp)
  for (std::size_t k = 1; k < N; ++k)
    if (names[order[k]] == names[order[k - 1]]) {
      const std::size_t i = order[k - 1], j = order[k];
      if (best[0] == npos || j < best[1] || (j == best[1] && i < best[0])) best = {i, j};
    }
  return best;
}

template <bool Duplicate, class... Tools>
struct first_duplicate_impl {
  using type = unique_tool_names;
};
template <class... Tools>
struct first_duplicate_impl<true, Tools...> {
  static constexpr std::array<std::string_view, sizeof...(Tools)> names{tool_name_of<Tools>()...};
  static constexpr auto pair = first_duplicate(names);
  using list = boost::mp11::mp_list<Tools...>;
  using type = duplicate_tool_name<type_at<list, pair[0]>, type_at<list, pair[1]>, pair[0], pair[1]>;
};

template <class Result>
struct unique_names_check {
  static_assert(Result::unique,
                "tool_effects::tool_registry: two tools share a name (see duplicate_tool_name<First, Second, I, J>)");
  static constexpr bool value = true;
};
}  // namespace detail

/// `unique_tool_names`, or `duplicate_tool_name<A, B, I, J>` for the first
/// two tools of the list that share a name.
template <class... Tools>
using first_duplicate_name_t = typename detail::first_duplicate_impl<
    detail::first_duplicate(std::array<std::string_view, sizeof...(Tools)>{detail::tool_name_of<Tools>()...})[0] !=
        detail::npos,
    Tools...>::type;

/// Thrown by name lookups that find nothing; `what()` quotes the name.
class unknown_tool_error : public std::out_of_range {
 public:
  explicit unknown_tool_error(std::string_view name)
      : std::out_of_range(detail::str_cat("unknown tool: \"", name, "\"")), name_(name) {}
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

 private:
  std::string name_;
};

/// A registry of statically declared tools `Tools...` (each with a `name`
/// and a declaration; otherwise a compile error names the tool), plus
/// dynamic tools added at runtime. Indices 0..N-1 are the static tools in
/// order; dynamic tools follow in registration order.
template <class... Tools>
class tool_registry {
  static constexpr bool checked_ = [] {
    constexpr bool each[] = {true, detail::registry_entry_check<Tools>::value...};
    for (const bool b : each)
      if (!b) return false;
    return detail::unique_names_check<first_duplicate_name_t<Tools...>>::value;
  }();
  static_assert(checked_);

 public:
  /// Number of static tools.
  static constexpr std::size_t static_size = sizeof...(Tools);

  /// The static tools' names, effect sets and classes, by index.
  static constexpr std::array<std::string_view, static_size> names{detail::tool_name_of<Tools>()...};
  static constexpr std::array<effect_set, static_size> effect_sets{side_effects_v<Tools>...};
  static constexpr std::array<side_effect_class, static_size> classes{side_effect_class_v<Tools>...};

  /// Whether static tool i and static tool j conflict (constexpr table).
  static constexpr const conflict_matrix<static_size>& conflicts = conflict_matrix_v<Tools...>;

  /// The index of the static tool called `name`, at compile time or runtime.
  static constexpr std::optional<std::size_t> static_index_of(std::string_view name) noexcept {
    // Binary search over the names sorted once at compile time.
    std::size_t lo = 0, hi = static_size;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (names[sorted_[mid]] < name) lo = mid + 1;
      else hi = mid;
    }
    if (lo < static_size && names[sorted_[lo]] == name) return sorted_[lo];
    return std::nullopt;
  }

  /// The static tool type at index `I`.
  template <std::size_t I>
  using tool_type = detail::type_at<boost::mp11::mp_list<Tools...>, I>;

  /// Default-constructs every static tool (`tool_registry<>`, with no static
  /// tools, holds only dynamic ones: an agent whose tools all come from MCP
  /// servers or manifests).
  tool_registry() = default;
  /// Stores the given static tool objects (in order).
  explicit tool_registry(Tools... tools)
    requires(sizeof...(Tools) > 0)
      : tools_(std::move(tools)...) {}

  /// Adds a dynamic tool (known only at runtime: from a manifest or an MCP
  /// server) described by `description` (built by `describe_runtime`);
  /// returns its index. Throws `std::invalid_argument` naming `name` if it is
  /// empty or already taken by a static or dynamic tool (nothing is added
  /// then). Amortised O(1): registering n tools takes O(n) time.
  std::size_t add(std::string name, call_description description) {
    if (name.empty()) throw std::invalid_argument("tool_registry: a dynamic tool needs a non-empty name");
    if (index_of(name)) throw std::invalid_argument(detail::str_cat("tool_registry: duplicate tool name \"", name, "\""));
    const std::size_t index = static_size + dynamic_.size();
    description.name = name;
    // Strong guarantee: the reserve and the emplace may throw before anything
    // changed; the push_back then neither reallocates nor throws (moves).
    if (dynamic_.size() == dynamic_.capacity()) dynamic_.reserve(std::max<std::size_t>(8, 2 * dynamic_.capacity()));
    dynamic_index_.emplace(name, index);
    dynamic_.push_back({std::move(name), std::move(description)});
    return index;
  }

  /// Number of tools, static and dynamic.
  [[nodiscard]] std::size_t size() const noexcept { return static_size + dynamic_.size(); }

  /// The index of the tool called `name`, static or dynamic.
  [[nodiscard]] std::optional<std::size_t> index_of(std::string_view name) const noexcept {
    if (const auto i = static_index_of(name)) return i;
    if (const auto it = dynamic_index_.find(name); it != dynamic_index_.end()) return it->second;
    return std::nullopt;
  }

  /// As `index_of`, but throws `unknown_tool_error` naming `name`.
  [[nodiscard]] std::size_t at(std::string_view name) const {
    if (const auto i = index_of(name)) return *i;
    throw unknown_tool_error(name);
  }

  /// Whether index `i` is a static tool.
  [[nodiscard]] static constexpr bool is_static(std::size_t i) noexcept { return i < static_size; }

  /// The name of tool `i`.
  [[nodiscard]] std::string_view name(std::size_t i) const { return i < static_size ? names[i] : dynamic_.at(i - static_size).name; }

  /// The description of tool `i`'s calls (without targets), for planning.
  [[nodiscard]] const call_description& description(std::size_t i) const {
    return i < static_size ? static_descriptions_[i] : dynamic_.at(i - static_size).description;
  }

  /// Whether two calls of tools `i` and `j` (without targets) conflict; reads
  /// the constexpr matrix when both are static.
  [[nodiscard]] bool tools_conflict(std::size_t i, std::size_t j) const {
    if (i < static_size && j < static_size) return conflicts(i, j);
    return tool_effects::conflicts(description(i), description(j));
  }

  /// The stored static tool objects.
  [[nodiscard]] std::tuple<Tools...>& tools() noexcept { return tools_; }
  [[nodiscard]] const std::tuple<Tools...>& tools() const noexcept { return tools_; }

  /// Calls `f(tool)` with the static tool object at runtime index `i`
  /// (i < static_size); returns what `f` returns (the same type for every tool).
  template <class F>
    requires(static_size > 0)
  decltype(auto) visit_static(std::size_t i, F&& f) {
    return visit_impl(i, std::forward<F>(f), std::index_sequence_for<Tools...>{});
  }

 private:
  static constexpr std::array<std::size_t, static_size> sorted_ = [] {
    std::array<std::size_t, static_size> order{};
    for (std::size_t i = 0; i < static_size; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [](std::size_t a, std::size_t b) { return names[a] < names[b]; });
    return order;
  }();

  template <class F, std::size_t... I>
  decltype(auto) visit_impl(std::size_t i, F&& f, std::index_sequence<I...>) {
    using result = std::invoke_result_t<F, detail::type_at<boost::mp11::mp_list<Tools...>, 0>&>;
    using fn = result (*)(tool_registry&, F&);
    static constexpr fn table[] = {[](tool_registry& r, F& g) -> result { return g(std::get<I>(r.tools_)); }...};
    if (i >= static_size) throw std::out_of_range("tool_registry::visit_static: not a static tool index");
    return table[i](*this, f);
  }

  static inline const std::vector<call_description> static_descriptions_ = [] {
    return std::vector<call_description>{describe<Tools>(std::string(detail::tool_name_of<Tools>()))...};
  }();

  struct dynamic_entry {
    std::string name;
    call_description description;
  };
  // Name -> index of the dynamic tools (heterogeneous lookup: no allocation per query).
  struct name_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::tuple<Tools...> tools_{};
  std::vector<dynamic_entry> dynamic_;
  std::unordered_map<std::string, std::size_t, name_hash, std::equal_to<>> dynamic_index_;
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_REGISTRY_HPP
