// tool_effects/effect.hpp — the vocabulary: the seven side-effect tags, their
// stable string slugs, and `effect_set`, a constexpr bitmask of tags.
//
// The slugs are those of the Rust crate and the Python package
// `tool-side-effects-tag`, so tool manifests move between languages.
// This header is deliberately light (no <string>, no iostreams) because every
// tool declaration includes it; the throwing parsers, `std::string` forms,
// stream output and `std::hash` are in <tool_effects/text.hpp>.
#ifndef TOOL_EFFECTS_EFFECT_HPP
#define TOOL_EFFECTS_EFFECT_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>

namespace tool_effects {

/// One side-effect category of a tool. The enumerator order is the
/// declaration order used by iteration and by `to_string(effect_set)`.
enum class effect : std::uint8_t { read, write, idempotent, destructive, external, expensive, network };

/// Number of enumerators of `effect`.
inline constexpr std::size_t effect_count = 7;

/// Every effect, in declaration order.
inline constexpr std::array<effect, effect_count> all_effects{effect::read,        effect::write,    effect::idempotent,
                                                              effect::destructive, effect::external, effect::expensive,
                                                              effect::network};

/// The stable slug of `e`: "read", "write", "idempotent", "destructive",
/// "external", "expensive" or "network". Never changes between versions.
constexpr std::string_view to_string(effect e) noexcept {
  constexpr std::array<std::string_view, effect_count> slugs{"read",     "write",     "idempotent", "destructive",
                                                             "external", "expensive", "network"};
  const auto i = static_cast<std::size_t>(e);
  return i < effect_count ? slugs[i] : std::string_view{};
}

/// The effect whose slug is exactly `s` (case-sensitive), or `std::nullopt`.
constexpr std::optional<effect> try_parse_effect(std::string_view s) noexcept {
  for (const effect e : all_effects)
    if (to_string(e) == s) return e;
  return std::nullopt;
}

/// A set of effects, stored as a bitmask. A literal type: every operation is
/// `constexpr` and `noexcept`. Iteration visits members in declaration order.
class effect_set {
 public:
  using value_type = effect;
  using size_type = std::size_t;

  /// Forward iterator over the members, in declaration order. Models
  /// `std::forward_iterator` (it names no iterator tag, so that this header
  /// need not include <iterator>; C++20 deduces the concept).
  class iterator {
   public:
    using value_type = effect;
    using difference_type = std::ptrdiff_t;

    constexpr iterator() noexcept = default;
    constexpr effect operator*() const noexcept { return static_cast<effect>(pos_); }
    constexpr iterator& operator++() noexcept {
      pos_ = next(bits_, pos_ + 1);
      return *this;
    }
    constexpr iterator operator++(int) noexcept {
      iterator old = *this;
      ++*this;
      return old;
    }
    friend constexpr bool operator==(iterator a, iterator b) noexcept { return a.pos_ == b.pos_; }

   private:
    friend class effect_set;
    constexpr iterator(std::uint8_t bits, unsigned pos) noexcept : bits_(bits), pos_(next(bits, pos)) {}
    static constexpr unsigned next(std::uint8_t bits, unsigned pos) noexcept {
      while (pos < effect_count && !(bits & (1u << pos))) ++pos;
      return pos;
    }
    std::uint8_t bits_ = 0;
    unsigned pos_ = effect_count;
  };
  using const_iterator = iterator;

  /// The empty set.
  constexpr effect_set() noexcept = default;
  /// The set of the listed effects (duplicates collapse).
  constexpr effect_set(std::initializer_list<effect> effects) noexcept {
    for (const effect e : effects) bits_ |= bit(e);
  }

  /// The set whose bitmask is `mask` (bit i = the i-th effect); bits beyond
  /// the seven effects are dropped.
  static constexpr effect_set from_bits(std::uint8_t mask) noexcept {
    effect_set s;
    s.bits_ = static_cast<std::uint8_t>(mask & all_bits);
    return s;
  }
  /// The bitmask (bit i = the i-th effect in declaration order).
  [[nodiscard]] constexpr std::uint8_t bits() const noexcept { return bits_; }

  /// Adds `e`; returns whether the set changed.
  constexpr bool insert(effect e) noexcept {
    const bool changed = !contains(e);
    bits_ |= bit(e);
    return changed;
  }
  /// Removes `e`; returns whether the set changed.
  constexpr bool erase(effect e) noexcept {
    const bool changed = contains(e);
    bits_ &= static_cast<std::uint8_t>(~bit(e));
    return changed;
  }
  [[nodiscard]] constexpr bool contains(effect e) const noexcept { return (bits_ & bit(e)) != 0; }
  [[nodiscard]] constexpr size_type size() const noexcept {
    size_type n = 0;
    for (std::uint8_t b = bits_; b != 0; b &= static_cast<std::uint8_t>(b - 1)) ++n;
    return n;
  }
  [[nodiscard]] constexpr bool empty() const noexcept { return bits_ == 0; }
  [[nodiscard]] constexpr iterator begin() const noexcept { return iterator(bits_, 0); }
  [[nodiscard]] constexpr iterator end() const noexcept { return iterator(bits_, effect_count); }

  friend constexpr effect_set operator|(effect_set a, effect_set b) noexcept {
    return from_bits(static_cast<std::uint8_t>(a.bits_ | b.bits_));
  }
  friend constexpr effect_set operator&(effect_set a, effect_set b) noexcept {
    return from_bits(static_cast<std::uint8_t>(a.bits_ & b.bits_));
  }
  constexpr effect_set& operator|=(effect_set o) noexcept { return *this = *this | o; }
  constexpr effect_set& operator&=(effect_set o) noexcept { return *this = *this & o; }
  friend constexpr bool operator==(effect_set, effect_set) noexcept = default;

 private:
  static constexpr std::uint8_t all_bits = (1u << effect_count) - 1;
  static constexpr std::uint8_t bit(effect e) noexcept { return static_cast<std::uint8_t>(1u << static_cast<unsigned>(e)); }
  std::uint8_t bits_ = 0;
};

namespace detail {
constexpr bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
constexpr std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}
// Parses a comma-separated list; on failure stores the first bad token.
constexpr std::optional<effect_set> parse_effect_list(std::string_view s, std::string_view* bad) noexcept {
  effect_set out;
  if (trim(s).empty()) return out;
  for (;;) {
    const auto comma = s.find(',');
    const auto token = trim(s.substr(0, comma));
    const auto e = try_parse_effect(token);
    if (!e) {
      if (bad) *bad = token;
      return std::nullopt;
    }
    out.insert(*e);
    if (comma == std::string_view::npos) return out;
    s.remove_prefix(comma + 1);
  }
}
}  // namespace detail

/// Parses a comma-separated list of slugs, e.g. `"read, network"`: tokens may
/// carry surrounding whitespace, duplicates collapse, an empty (or blank)
/// string is the empty set. Returns `std::nullopt` on any unknown token.
/// Round-trips with `to_string(effect_set)` for every set.
constexpr std::optional<effect_set> try_parse_effect_set(std::string_view s) noexcept {
  return detail::parse_effect_list(s, nullptr);
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_EFFECT_HPP
