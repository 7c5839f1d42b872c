// libFuzzer target: the MCP annotations importer (ToolAnnotations objects, MCP
// Tool objects, tools/list results) and the effect_set reader. Malformed input
// must give a `json_error`; any other exception, a crash or UB is a finding.
// On success, checks the mapping's invariants (untrusted => unknown; trusted
// import then export is the normalised input; JSON round trip).
#include <tool_effects/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {
void require(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tool_effects;
  using nlohmann::json;
  json j;
  try {
    j = detail::parse_json(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz:");
  } catch (const json_error&) {
    return 0;
  }
  try {
    const auto a = j.get<tool_annotations>();
    require(import_mcp_annotations(a, server_trust::untrusted).empty());
    mcp_hints normalised = a.hints();
    if (normalised.read_only) normalised.destructive = false, normalised.idempotent = true;
    require(export_mcp_hints(import_mcp_annotations(a, server_trust::trusted)) == normalised);
    require(json(a).get<tool_annotations>() == a);
  } catch (const json_error&) {
  }
  for (const auto trust : {server_trust::untrusted, server_trust::trusted}) {
    try {
      const auto t = import_mcp_tool(j, trust);
      require(!t.name.empty());
      require(trust == server_trust::trusted || t.description.exclusive);
    } catch (const json_error&) {
    }
    try {
      (void)import_mcp_tools(j, trust);
    } catch (const json_error&) {
    }
  }
  try {
    const auto s = j.get<effect_set>();
    require(json(s).get<effect_set>() == s);
  } catch (const json_error&) {
  }
  return 0;
}
