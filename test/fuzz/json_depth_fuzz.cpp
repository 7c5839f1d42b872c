// libFuzzer target: the bound on nesting (issue 19). Differential: the
// bounded parse (`parse_untrusted_json`, depth 1 + data[0] % 12) against
// nlohmann's unbounded parse followed by the iterative `check_json_depth`:
// they must agree on what is too deep, and a too-deep pointer has exactly
// `max_depth` tokens. Inputs starting with '!' are wrapped, after parsing,
// in 1,000 to 255,000 further arrays: `parse_tool_calls(const json&)` must
// refuse them as `too_deep` and `tool_results` must answer them as an error,
// never overflow the stack. Every message must be valid UTF-8.
#include <tool_effects/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {
void require(bool ok) {
  if (!ok) __builtin_trap();
}

void require_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
  } catch (const nlohmann::json::exception&) {
    __builtin_trap();
  }
}

std::size_t tokens(const std::string& pointer) { return static_cast<std::size_t>(std::count(pointer.begin(), pointer.end(), '/')); }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tool_effects;
  if (size < 2) return 0;
  const bool wrap = data[0] == '!';
  const std::size_t depth = 1 + data[1] % 12;
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);

  std::optional<json_error> bounded_error;
  nlohmann::json bounded;
  try {
    bounded = parse_untrusted_json(text, json_limits{depth, 1 << 20});
  } catch (const json_error& e) {
    require_utf8(e.what());
    require(e.pointer().empty() || e.pointer().front() == '/');
    if (e.reason() == json_error_reason::too_deep) require(tokens(e.pointer()) == depth);
    bounded_error = e;
  }
  nlohmann::json unbounded = nlohmann::json::parse(text, nullptr, false);
  if (unbounded.is_discarded()) {
    require(bounded_error.has_value());  // not JSON for the bounded parse either (or refused sooner)
  } else {
    const auto deep_at = detail::too_deep_at(unbounded, depth);
    if (deep_at) require(tokens(*deep_at) == depth);
    if (!bounded_error) {
      require(!deep_at);
      require(bounded == unbounded);
    } else if (bounded_error->reason() == json_error_reason::too_deep) {
      require(deep_at.has_value());
    } else {
      // Only a repeated key refuses what nlohmann's own parse accepts.
      require(bounded_error->reason() == json_error_reason::duplicate_key);
    }
  }
  if (!wrap || unbounded.is_discarded()) return 0;

  // A value the application built: wrapped far deeper than any stack allows.
  const std::size_t levels = 1000 * (1 + static_cast<std::size_t>(data[size - 1]));
  nlohmann::json deep = std::move(unbounded);
  for (std::size_t i = 0; i < levels; ++i) {
    nlohmann::json outer = nlohmann::json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  try {
    (void)parse_tool_calls(deep);
    __builtin_trap();  // deeper than 64 levels: must be refused
  } catch (const json_error& e) {
    require(e.reason() == json_error_reason::too_deep);
    require(tokens(e.pointer()) == detail::max_json_depth);
  }
  tool_call call;
  call.id = "c";
  call.name = "f";
  for (const auto dialect : {tool_call_dialect::mcp, tool_call_dialect::gemini, tool_call_dialect::plain}) {
    call.dialect = dialect;
    std::vector<outcome<nlohmann::json>> outcomes;
    outcomes.push_back(outcome<nlohmann::json>::success(std::move(deep)));
    const nlohmann::json answers = tool_results(std::vector<tool_call>{call}, outcomes);
    require(answers.dump().find("nested deeper than 64 levels") != std::string::npos);
    deep = std::move(outcomes[0].value());
  }
  return 0;
}
