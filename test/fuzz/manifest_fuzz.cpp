// libFuzzer target: the tool-manifest parser. Any input must either load or
// throw `manifest_error`; any other exception, a crash or UB is a finding.
// On success, checks invariants of the loaded tools.
#include <tool_effects/json.hpp>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace {
void require(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tool_effects;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<dynamic_tool> tools;
  try {
    tools = parse_manifest(text);
  } catch (const manifest_error& e) {
    require(std::string_view(e.what()).substr(0, 9) == "manifest:");
    require(e.pointer().empty() || e.pointer().front() == '/');
    return 0;
  }
  std::set<std::string> names;
  const nlohmann::json args = {{"path", "/a"}, {"action", "x"}, {"file", "f"}};
  for (const auto& t : tools) {
    require(!t.name.empty() && names.insert(t.name).second);
    require(t.description.name == t.name);
    require(t.description.exclusive == t.description.effects.empty());
    for (const auto& a : t.description.accesses) require(is_valid_resource_path(a.resource) && !a.target);
    const call_description d = describe_call(t, args);
    if (is_parallel_safe(d.effects)) require(!conflicts(d, d));
    if (d.exclusive) require(conflicts(d, d));
    require(!identify(t, args).key.empty());
  }
  for (std::size_t i = 0; i < tools.size() && i < 16; ++i)
    for (std::size_t j = 0; j < tools.size() && j < 16; ++j)
      require(conflicts(tools[i].description, tools[j].description) ==
              conflicts(tools[j].description, tools[i].description));
  return 0;
}
