// libFuzzer target: model turns in (`parse_tool_calls`, every vendor shape)
// and the stream accumulator (`tool_call_stream`, one event per input line),
// then the results out (`tool_results`). Malformed input must give a
// `json_error`; any other exception, a crash or UB is a finding. On success,
// checks the calls' invariants (a name and an id each, object arguments,
// `valid()` iff no `arguments_error`; ids unique in a parsed turn; a stream
// yields each call once) and that
// every call gets exactly one answer in its dialect.
#include <tool_effects/json.hpp>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace {
void require(bool ok) {
  if (!ok) __builtin_trap();
}

void check_calls(const std::vector<tool_effects::tool_call>& calls) {
  using namespace tool_effects;
  std::size_t anthropic = 0, gemini = 0;
  std::vector<outcome<nlohmann::json>> outcomes;
  for (const auto& c : calls) {
    require(!c.name.empty() && !c.id.empty());
    require(c.arguments.is_object());
    require(c.valid() == c.arguments_error.empty());
    if (!c.valid()) require(c.arguments.empty());
    if (c.generated_id) require(c.id.rfind("call-", 0) == 0);
    anthropic += c.dialect == tool_call_dialect::anthropic;
    gemini += c.dialect == tool_call_dialect::gemini;
    outcomes.push_back(outcomes.size() % 2 == 0 ? outcome<nlohmann::json>::success(c.arguments)
                                                : outcome<nlohmann::json>::abort());
  }
  const nlohmann::json results = tool_results(calls, outcomes);
  require(results.is_array());
  require(results.size() == calls.size() - anthropic - gemini + (anthropic > 0) + (gemini > 0));
  (void)results.dump();  // valid UTF-8: messages cut quoted input at character boundaries
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tool_effects;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto calls = parse_tool_calls(text);
    check_calls(calls);
    std::set<std::string> ids;  // unique within the turn (duplicates refused and renamed, issue 19)
    for (const auto& c : calls) require(ids.insert(c.id).second);
  } catch (const json_error& e) {
    require(e.pointer().empty() || e.pointer().front() == '/');
  }

  tool_call_stream stream;
  std::vector<tool_call> streamed;
  std::size_t from = 0;
  while (from <= text.size()) {
    std::size_t to = text.find('\n', from);
    if (to == std::string_view::npos) to = text.size();
    try {
      for (auto& c : stream.feed(text.substr(from, to - from))) streamed.push_back(std::move(c));
    } catch (const json_error& e) {
      require(e.pointer().empty() || e.pointer().front() == '/');
    }
    from = to + 1;
  }
  for (auto& c : stream.finish()) streamed.push_back(std::move(c));
  require(stream.finish().empty());
  require(streamed.size() == stream.completed() && stream.completed() == stream.started());
  check_calls(streamed);
  return 0;
}
