// The lexers of parse_untrusted_json on one MCP tools/call response line (issue 29), side by side in one run:
// the default one-pass lexer (json/detail/fast_parse.hpp), the optional Boost.JSON lexer
// (json/detail/boost_json_parse.hpp; this program compiles Boost.JSON's src.hpp) and nlohmann's lexer alone
// (detail::parse_untrusted_json_nlohmann, the default before), each into the same bounded builder. CPU time
// per parse; bytes_per_second is the line's size. docs/benchmarks.md, "The MCP client against the TypeScript
// SDK", records a run.
//
//   BM_<lexer>/text     {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text": <1 MiB of text, a
//                       newline every 65 bytes (an escape), as the benchmark server's blob tool sends it>}]}}
//   BM_<lexer>/objects  {"items": [objects {"k<i>": "v", "n": i, "x": 1.5}]} of about 1 MiB (many small values)
#include <boost/json/src.hpp>  // Boost.JSON's compiled part, in this one translation unit

#include <tool_effects/json.hpp>
#include <tool_effects/json/detail/boost_json_parse.hpp>

#include <benchmark/benchmark.h>

#include <string>

namespace te = tool_effects;
using nlohmann::json;

namespace {

const std::string& line(int shape) {
  static const std::string text_line = [] {
    std::string s(std::size_t{1} << 20, 'x');
    for (std::size_t i = 64; i < s.size(); i += 65) s[i] = '\n';
    return json{{"jsonrpc", "2.0"}, {"id", 1}, {"result", {{"content", json::array({{{"type", "text"}, {"text", s}}})}}}}
        .dump();
  }();
  static const std::string objects_line = [] {
    json items = json::array();
    for (std::size_t i = 0; items.size() * 32 < (std::size_t{1} << 20); ++i)
      items.push_back(json{{"k" + std::to_string(i), "v"}, {"n", i}, {"x", 1.5}});
    return json{{"items", std::move(items)}}.dump();
  }();
  return shape == 0 ? text_line : objects_line;
}

template <class Parse>
void run(benchmark::State& state, Parse parse) {
  const std::string& text = line(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    json v = parse(text);
    benchmark::DoNotOptimize(v);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(text.size()));
  state.SetLabel(state.range(0) == 0 ? "text" : "objects");
}

void BM_Fast(benchmark::State& state) {
  run(state, [](const std::string& t) { return *te::detail::parse_with_fast_lexer(t, {}); });
}
void BM_BoostJson(benchmark::State& state) {
  run(state, [](const std::string& t) { return *te::detail::parse_with_boost_json(t, {}); });
}
void BM_Nlohmann(benchmark::State& state) {
  run(state, [](const std::string& t) { return te::detail::parse_untrusted_json_nlohmann(t, {}, ""); });
}

}  // namespace

BENCHMARK(BM_Fast)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BoostJson)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Nlohmann)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
