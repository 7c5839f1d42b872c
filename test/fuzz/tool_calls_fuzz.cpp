// libFuzzer target: model turns in (`parse_tool_calls`, every vendor shape)
// and the stream accumulator (`tool_call_stream`, one event per input line),
// then the results out (`tool_results`). Malformed input must give a
// `json_error`; any other exception, a crash or UB is a finding. On success,
// checks the calls' invariants (a name and an id each, object arguments,
// `valid()` iff no `arguments_error`; ids unique in a parsed turn; a stream
// yields each call once) and that every call gets exactly one answer in its
// dialect. Stream differential: the valid calls of the whole parse, streamed
// again as Chat, Responses or Anthropic events (fragments and the interleaving
// of calls drawn from the input), come out of `tool_call_stream` with the same
// names, ids and arguments, each exactly once, with no late fragment.
#include <tool_effects/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
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
// A small deterministic generator seeded by the input (fragment sizes, interleaving).
struct draw {
  std::uint64_t state;
  std::size_t operator()(std::size_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return n == 0 ? 0 : static_cast<std::size_t>((state >> 33) % n);
  }
};

std::vector<std::string> fragments(const std::string& s, draw& d) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at < s.size();) {
    const std::size_t n = 1 + d(8);
    out.push_back(s.substr(at, n));
    at += n;
  }
  return out;
}

void stream_differential(const std::vector<tool_effects::tool_call>& whole, std::uint64_t seed) {
  using nlohmann::json;
  std::vector<const tool_effects::tool_call*> calls;
  for (const auto& c : whole)
    if (c.valid() && calls.size() < 16) calls.push_back(&c);
  if (calls.empty()) return;
  draw d{seed};
  const std::size_t vendor = d(3);
  std::vector<std::vector<json>> lists;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto& c = *calls[i];
    const std::string text = c.arguments.dump();
    std::vector<json> l;
    const auto parts = fragments(text, d);
    if (vendor == 0) {
      l.push_back(json{{"choices", json::array({json{{"delta", {{"tool_calls", json::array({json{
          {"index", i}, {"id", c.id}, {"function", {{"name", c.name}, {"arguments", ""}}}}})}}}}})}});
      for (const auto& p : parts)
        l.push_back(json{{"choices", json::array({json{{"delta", {{"tool_calls", json::array({json{
            {"index", i}, {"function", {{"arguments", p}}}}})}}}}})}});
    } else if (vendor == 1) {
      const std::string item = "fc_" + std::to_string(i);
      l.push_back(json{{"type", "response.output_item.added"},
                       {"item", {{"id", item}, {"type", "function_call"}, {"call_id", c.id}, {"name", c.name}, {"arguments", ""}}}});
      for (const auto& p : parts) l.push_back(json{{"type", "response.function_call_arguments.delta"}, {"item_id", item}, {"delta", p}});
      l.push_back(json{{"type", "response.function_call_arguments.done"}, {"item_id", item}, {"arguments", text}});
    } else {
      l.push_back(json{{"type", "content_block_start"}, {"index", i},
                       {"content_block", {{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", json::object()}}}});
      for (const auto& p : parts)
        l.push_back(json{{"type", "content_block_delta"}, {"index", i}, {"delta", {{"type", "input_json_delta"}, {"partial_json", p}}}});
      l.push_back(json{{"type", "content_block_stop"}, {"index", i}});
    }
    lists.push_back(std::move(l));
  }
  tool_effects::tool_call_stream stream;
  std::map<std::string, tool_effects::tool_call> out;
  auto take = [&](std::vector<tool_effects::tool_call> got) {
    for (auto& c : got) require(out.emplace(c.id, std::move(c)).second);  // each call once
  };
  std::vector<std::size_t> next(lists.size(), 0);
  for (std::size_t left = [&] { std::size_t n = 0; for (const auto& l : lists) n += l.size(); return n; }(); left > 0; --left) {
    std::size_t k = d(lists.size());
    while (next[k] == lists[k].size()) k = (k + 1) % lists.size();
    take(stream.feed(lists[k][next[k]++]));
  }
  take(stream.finish());
  require(stream.late().empty());
  require(out.size() == calls.size());
  for (const auto* c : calls) {
    const auto it = out.find(c->id);
    require(it != out.end() && it->second.name == c->name && it->second.valid() && it->second.arguments == c->arguments);
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tool_effects;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto whole = parse_tool_calls(text);
    check_calls(whole);
    std::uint64_t seed = 1469598103934665603ull;
    for (const char ch : text) seed = (seed ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
    std::set<std::string> ids;  // unique within the turn (duplicates refused and renamed, issue 19)
    for (const auto& c : whole) require(ids.insert(c.id).second);
    stream_differential(whole, seed);
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
