// Loads a small tool manifest from a string, prints each dynamic tool's
// effects and class, which calls of a model turn conflict (per target), the
// calls' identities and idempotency keys, and what a typo in a manifest says.
#include <tool_effects/identity.hpp>
#include <tool_effects/json.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace te = tool_effects;
using nlohmann::json;

constexpr const char* manifest = R"({
  "version": 1,
  "tools": [
    {"name": "read_file",  "effects": ["idempotent"], "reads":  ["fs/files"], "identity": {"target_arg": "path"}},
    {"name": "write_file", "effects": ["idempotent"], "writes": ["fs/files"], "identity": {"target_arg": "path"}},
    {"name": "search_web", "effects": ["read", "network"]},
    {"name": "send_email", "effects": ["external", "network"], "appends": ["mail/outbox"],
     "identity": {"target_arg": "to"}},
    {"name": "legacy_plugin"}
  ]
})";

int main() {
  const std::vector<te::dynamic_tool> tools = te::parse_manifest(manifest);
  auto tool = [&](const std::string& name) -> const te::dynamic_tool& {
    for (const auto& t : tools)
      if (t.name == name) return t;
    throw std::out_of_range(name);
  };

  std::cout << "tools:\n";
  for (const auto& t : tools) {
    const auto& d = t.description;
    std::cout << "  " << t.name << ": effects [" << d.effects << "], class " << te::classify(d.effects);
    if (d.exclusive) std::cout << ", unknown: conflicts with every call";
    for (const auto& a : d.accesses)
      std::cout << ", " << a.mode << " " << (a.resource.empty() ? "<everything>" : a.resource);
    std::cout << "\n";
  }

  // One model turn: name + JSON arguments.
  struct call {
    std::string tool;
    json args;
  };
  const std::vector<call> turn = {
      {"write_file", {{"path", "notes/a.md"}, {"content", "A"}}},
      {"write_file", {{"path", "notes/b.md"}, {"content", "B"}}},
      {"read_file", {{"path", "notes/a.md"}}},
      {"search_web", {{"q", "asio strands"}}},
      {"send_email", {{"to", "ops@example.org"}, {"body", "done"}}},
      {"legacy_plugin", json::object()},
  };
  std::vector<te::call_description> described;
  std::cout << "\ncalls:\n";
  for (std::size_t i = 0; i < turn.size(); ++i) {
    const auto& t = tool(turn[i].tool);
    const te::call_identity id = te::identify(t, turn[i].args);
    described.push_back(te::describe_call(t, turn[i].args));
    std::cout << "  #" << i << " " << id.key << "  idempotency "
              << te::idempotency_key(id, "turn-1/" + std::to_string(i)) << "\n";
  }

  std::cout << "\nconflicts:\n";
  std::size_t conflicting = 0;
  for (std::size_t i = 0; i < described.size(); ++i)
    for (std::size_t j = i + 1; j < described.size(); ++j)
      if (te::conflicts(described[i], described[j])) {
        ++conflicting;
        std::cout << "  #" << i << " " << turn[i].tool << " <-> #" << j << " " << turn[j].tool << "\n";
      }
  // write a.md / write b.md do not conflict (different targets); read a.md waits for write a.md;
  // the unknown legacy_plugin conflicts with everything.
  if (te::conflicts(described[0], described[1]) || !te::conflicts(described[0], described[2])) return 1;

  std::cout << "\na typo:\n";
  try {
    (void)te::parse_manifest(R"({"tools":[{"name":"fetch","efects":["read"]}]})");
    return 1;
  } catch (const te::manifest_error& e) {
    std::cout << "  " << e.what() << "\n";
  }
  return conflicting > 0 ? 0 : 1;
}
