// tool_effects/json/arguments.hpp — a tool's arguments as a struct described
// with Boost.Describe: its JSON Schema (what an MCP server lists as the
// tool's `inputSchema`) and strict parsing with JSON-pointer errors.
//
//   struct transfer_args { std::string from; std::string to; long amount; std::optional<std::string> memo; };
//   BOOST_DESCRIBE_STRUCT(transfer_args, (), (from, to, amount, memo))
//   nlohmann::json s = te::json_schema_of<transfer_args>();   // {"type": "object", "properties": {...}, ...}
//   transfer_args a = te::parse_arguments<transfer_args>(args); // throws json_error: "at /amount: expected an integer, got string: 5"
//
// Members: bool, integers, floating point, std::string, std::optional<T>
// (not required; null = absent), std::vector<T>, and described structs. A
// member that is not std::optional is required; an unknown member is an
// error (`additionalProperties: false`): strict on what we read.
#ifndef TOOL_EFFECTS_JSON_ARGUMENTS_HPP
#define TOOL_EFFECTS_JSON_ARGUMENTS_HPP

#include <cstdint>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/describe/class.hpp>
#include <boost/describe/members.hpp>
#include <boost/mp11/algorithm.hpp>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/error.hpp>

namespace tool_effects {

/// A struct whose public members Boost.Describe lists (BOOST_DESCRIBE_STRUCT).
template <class T>
concept DescribedArguments = std::is_class_v<T> && boost::describe::has_describe_members<T>::value;

namespace detail {
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};

template <class T>
nlohmann::json schema_of() {
  if constexpr (std::is_same_v<T, bool>) {
    return {{"type", "boolean"}};
  } else if constexpr (std::is_integral_v<T>) {
    return {{"type", "integer"}};
  } else if constexpr (std::is_floating_point_v<T>) {
    return {{"type", "number"}};
  } else if constexpr (std::is_same_v<T, std::string>) {
    return {{"type", "string"}};
  } else if constexpr (is_optional<T>::value) {
    return schema_of<typename T::value_type>();
  } else if constexpr (is_vector<T>::value) {
    return {{"type", "array"}, {"items", schema_of<typename T::value_type>()}};
  } else if constexpr (DescribedArguments<T>) {
    nlohmann::json props = nlohmann::json::object();
    nlohmann::json required = nlohmann::json::array();
    boost::mp11::mp_for_each<boost::describe::describe_members<T, boost::describe::mod_public>>([&](auto m) {
      using M = std::remove_cvref_t<decltype(std::declval<T&>().*m.pointer)>;
      props[m.name] = schema_of<M>();
      if (!is_optional<M>::value) required.push_back(m.name);
    });
    nlohmann::json s = {{"type", "object"}, {"properties", std::move(props)}, {"additionalProperties", false}};
    if (!required.empty()) s["required"] = std::move(required);
    return s;
  } else {
    static_assert(!std::is_same_v<T, T>,
                  "json_schema_of: a member type must be bool, an integer, a floating point type, std::string, "
                  "std::optional, std::vector or a described struct");
  }
}

template <class T>
void parse_value(const nlohmann::json& j, T& out, const std::string& at) {
  auto fail = [&](const char* what) { throw json_error(at, expected(what, j), preview(j)); };
  if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) fail("a boolean");
    out = j.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (j.is_number_float()) {  // JSON Schema: a number with no fractional part is an integer (5.0, 1e3)
      const double v = j.get<double>();
      if (!std::isfinite(v) || std::trunc(v) != v) fail("an integer");
      // Within T's range, compared in double (exact for the bounds of every integer type up to 64 bits).
      if (v < static_cast<double>(std::numeric_limits<T>::min()) || v >= std::ldexp(1.0, std::numeric_limits<T>::digits))
        throw json_error(at, "integer out of range", preview(j));
      out = static_cast<T>(v);
      return;
    }
    if (!j.is_number_integer()) fail("an integer");
    if constexpr (std::is_signed_v<T>) {
      if (j.is_number_unsigned() ? j.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<T>::max())
                                 : (j.get<std::int64_t>() < std::numeric_limits<T>::min() ||
                                    j.get<std::int64_t>() > std::numeric_limits<T>::max()))
        throw json_error(at, "integer out of range", preview(j));
    } else {
      if (!j.is_number_unsigned() || j.get<std::uint64_t>() > std::numeric_limits<T>::max())
        throw json_error(at, "integer out of range", preview(j));
    }
    out = j.get<T>();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!j.is_number()) fail("a number");
    out = j.get<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string()) fail("a string");
    out = j.get<std::string>();
  } else if constexpr (is_optional<T>::value) {
    if (j.is_null()) {
      out.reset();
    } else {
      typename T::value_type v{};
      parse_value(j, v, at);
      out = std::move(v);
    }
  } else if constexpr (is_vector<T>::value) {
    if (!j.is_array()) fail("an array");
    out.clear();
    out.reserve(j.size());
    for (std::size_t i = 0; i < j.size(); ++i) {
      typename T::value_type v{};
      parse_value(j[i], v, str_cat(at, "/", std::to_string(i)));
      out.push_back(std::move(v));
    }
  } else if constexpr (DescribedArguments<T>) {
    if (!j.is_object()) fail("an object");
    std::vector<std::string_view> known;
    boost::mp11::mp_for_each<boost::describe::describe_members<T, boost::describe::mod_public>>([&](auto m) {
      using M = std::remove_cvref_t<decltype(out.*m.pointer)>;
      known.emplace_back(m.name);
      const auto it = j.find(m.name);
      if (it == j.end()) {
        if constexpr (!is_optional<M>::value) throw json_error(at, "missing required key", m.name);
        return;
      }
      parse_value(*it, out.*m.pointer, str_cat(at, "/", pointer_token(m.name)));
    });
    for (auto it = j.begin(); it != j.end(); ++it) {
      bool ok = false;
      for (const auto k : known) ok = ok || k == it.key();
      if (!ok)
        throw json_error(str_cat(at, "/", pointer_token(it.key())),
                         suggestion_message("unknown key", it.key(), known), it.key());
    }
  } else {
    static_assert(!std::is_same_v<T, T>, "parse_arguments: unsupported member type (see json_schema_of)");
  }
}
}  // namespace detail

/// The JSON Schema of `Args` (draft 2020-12 vocabulary: type, properties,
/// required, items, additionalProperties: false).
template <DescribedArguments Args>
nlohmann::json json_schema_of() {
  return detail::schema_of<Args>();
}

/// The argument struct of static tool `Tool` (`using arguments = ...;`, a
/// described struct), or void.
template <class Tool>
struct tool_arguments {
  using type = void;
};
template <class Tool>
  requires DescribedArguments<typename Tool::arguments>
struct tool_arguments<Tool> {
  using type = typename Tool::arguments;
};

/// `args` read into an `Args`, strictly: a wrong type, a missing required
/// member, an unknown member or an integer out of range is a `json_error`
/// whose pointer names the member (`at /amount: expected an integer, got string: 5`).
template <DescribedArguments Args>
Args parse_arguments(const nlohmann::json& args) {
  Args out{};
  detail::parse_value(args, out, "");
  return out;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_ARGUMENTS_HPP
