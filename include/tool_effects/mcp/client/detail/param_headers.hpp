// tool_effects/mcp/client/detail/param_headers.hpp — internal to <tool_effects/mcp/http.hpp> (stdio builds do not
// parse it): the `x-mcp-header` annotations of a tool's inputSchema (2026-07-28, Streamable HTTP
// "Custom Headers from Tool Parameters"): their constraints, and the values a call mirrors into
// `Mcp-Param-{name}` headers, and the client's bookkeeping of them (`mcp_tool_param_headers`). See docs/mcp-client.md ("The 2026-07-28 binding").
#ifndef TOOL_EFFECTS_MCP_CLIENT_DETAIL_PARAM_HEADERS_HPP
#define TOOL_EFFECTS_MCP_CLIENT_DETAIL_PARAM_HEADERS_HPP

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/mcp/client.hpp>
#include <tool_effects/mcp/protocol/detail/wire.hpp>

namespace tool_effects::detail {

// One `x-mcp-header` annotation of a tool's inputSchema (2026-07-28,
// Streamable HTTP "Custom Headers from Tool Parameters").
struct mcp_param_header {
  std::string name;               // the header is "Mcp-Param-" + name
  std::vector<std::string> path;  // the chain of `properties` keys to the value
};

namespace mcp_param {
// RFC 9110 tchar.
inline bool tchar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}
inline std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}
inline std::string where(const std::vector<std::string>& path) {
  std::string w;
  for (const auto& p : path) {
    w += "/properties/";
    w += p.substr(0, 60);
  }
  return w.empty() ? std::string("the schema root") : w;
}
// Collects the annotations under `node`; `reachable`: reached from the root
// through `properties` keys alone. Returns the first violation, or "".
inline std::string walk(const nlohmann::json& node, bool reachable, std::vector<std::string>& path,
                        std::vector<mcp_param_header>& out) {
  if (!node.is_object()) return {};
  if (const auto h = node.find("x-mcp-header"); h != node.end()) {
    const std::string at = "x-mcp-header at " + where(path);
    if (!reachable || path.empty()) return at + " is not reached from the root through properties alone";
    if (!h->is_string() || h->get_ref<const std::string&>().empty() ||
        !std::all_of(h->get_ref<const std::string&>().begin(), h->get_ref<const std::string&>().end(), tchar))
      return at + " is not a header field name (1*tchar): " + h->dump().substr(0, 80);
    const auto t = node.find("type");
    const bool primitive = t != node.end() && t->is_string() &&
                           (*t == "string" || *t == "integer" || *t == "boolean");
    if (!primitive) return at + " marks a property whose type is not integer, string or boolean";
    const std::string name = h->get<std::string>();
    for (const auto& o : out)
      if (lower(o.name) == lower(name)) return at + ": \"" + name.substr(0, 80) + "\" is not unique";
    out.push_back({name, path});
  }
  for (const auto& [k, v] : node.items()) {
    if (k == "properties" && v.is_object()) {
      for (const auto& [name, sub] : v.items()) {
        path.push_back(name);
        std::string why = walk(sub, reachable, path, out);
        path.pop_back();
        if (!why.empty()) return why;
      }
    } else if (k == "enum" || k == "const" || k == "default" || k == "examples" || k == "x-mcp-header") {
      continue;  // values, not schemas
    } else if (v.is_object()) {
      if (std::string why = walk(v, false, path, out); !why.empty()) return why;
    } else if (v.is_array()) {
      for (const auto& e : v)
        if (std::string why = walk(e, false, path, out); !why.empty()) return why;
    }
  }
  return {};
}
}  // namespace mcp_param

// The `x-mcp-header` annotations of an inputSchema into `out`; "" when they
// are valid, else the first violation of the specification's constraints.
inline std::string mcp_param_headers(const nlohmann::json& schema, std::vector<mcp_param_header>& out) {
  std::vector<std::string> path;
  return mcp_param::walk(schema, true, path, out);
}

// The header value of an annotated argument (string as is, integer in
// decimal, boolean "true"/"false"); none for any other value.
inline std::optional<std::string> mcp_param_value(const nlohmann::json& arguments, const std::vector<std::string>& path) {
  const nlohmann::json* v = &arguments;
  for (const auto& key : path) {
    if (!v->is_object()) return std::nullopt;
    const auto it = v->find(key);
    if (it == v->end()) return std::nullopt;
    v = &*it;
  }
  if (v->is_string()) return v->get<std::string>();
  if (v->is_number_integer()) return v->dump();
  if (v->is_boolean()) return v->get<bool>() ? "true" : "false";
  return std::nullopt;
}

// The x-mcp-header annotations of the tools the last listing gave (its
// pages), by tool name: what mcp_client::connect installs as the client's
// mcp_tool_param_screen (on the client's strand only).
class mcp_tool_param_headers final : public mcp_tool_param_screen {
 public:
  void screen(nlohmann::json& r, bool first, const mcp_client_options& o) override {
    if (first) by_tool_.clear();
    const auto tools = r.is_object() ? r.find("tools") : r.end();
    if (tools == r.end() || !tools->is_array()) return;
    nlohmann::json kept = nlohmann::json::array();
    for (auto& t : *tools) {
      const auto n = t.is_object() ? t.find("name") : t.end();
      const auto schema = t.is_object() ? t.find("inputSchema") : t.end();
      if (n == t.end() || !n->is_string() || schema == t.end()) {
        kept.push_back(std::move(t));
        continue;
      }
      std::vector<mcp_param_header> headers;
      const std::string why = mcp_param_headers(*schema, headers);
      const std::string name = n->get<std::string>();
      if (why.empty()) {
        if (headers.empty())
          by_tool_.erase(name);
        else
          by_tool_[name] = std::move(headers);
        kept.push_back(std::move(t));
        continue;
      }
      by_tool_.erase(name);
      if (o.on_log) {
        try {
          o.on_log({{"level", "warning"},
                    {"logger", "tool_effects/mcp"},
                    {"data", str_cat("tools/list: tool \"", quote_text(name, 100), "\" left out: its inputSchema's ",
                                     quote_text(why, 400))}});
        } catch (...) {  // a handler's failure is not the connection's
        }
      }
    }
    *tools = std::move(kept);
  }

  [[nodiscard]] std::vector<std::pair<std::string, std::string>> values(const std::string& tool,
                                                                      const nlohmann::json& arguments) const override {
    std::vector<std::pair<std::string, std::string>> out;
    const auto h = by_tool_.find(tool);
    if (h == by_tool_.end()) return out;
    for (const auto& ph : h->second)
      if (auto v = mcp_param_value(arguments, ph.path)) out.emplace_back(ph.name, std::move(*v));
    return out;
  }

 private:
  std::unordered_map<std::string, std::vector<mcp_param_header>> by_tool_;
};

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_MCP_CLIENT_DETAIL_PARAM_HEADERS_HPP
