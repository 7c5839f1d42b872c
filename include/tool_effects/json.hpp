// tool_effects/json.hpp — the optional JSON bridge (needs nlohmann::json; the
// rest of the library never includes it):
//  - ADL hooks: `json j = set;`, `j.get<effect_set>()`, also for `effect`,
//    `side_effect_class`, `access_mode`; output for `runtime_access`,
//    `call_description`, `call_identity`; wire forms match the Rust crate;
//  - `canonical_json` (RFC 8785, JCS), and call identity over JSON arguments
//    (`identity_policy`, `dynamic_tool`, `identify`, `describe_call`);
//  - MCP `ToolAnnotations` <-> effects (`export_mcp_hints`, `import_mcp_hints`,
//    `mcp_annotations_of<Tool>`, `import_mcp_tool`, `server_trust`);
//  - tool manifests (`parse_manifest`, `manifest_from_json`, `manifest_error`);
//  - model turns: `parse_tool_calls` (every vendor's response, message and
//    call shapes: OpenAI Chat and Responses, Anthropic, Gemini, MCP; json/calls.hpp),
//    `tool_call_stream` (calls from streamed events as soon as each is complete;
//    json/stream.hpp), `json_tool_host` (resolve, identify, plan and run calls on
//    a registry; a bad call fails alone; json/turn.hpp) and `tool_results`
//    (the outcomes as each vendor's tool-result messages; json/results.hpp).
// Every error is a `json_error` (a `parse_error`) carrying a JSON pointer.
// See docs/mcp.md and docs/runtime.md.
#ifndef TOOL_EFFECTS_JSON_HPP
#define TOOL_EFFECTS_JSON_HPP

#include <tool_effects/json/calls.hpp>
#include <tool_effects/json/canonical.hpp>
#include <tool_effects/json/effects.hpp>
#include <tool_effects/json/bounded_parse.hpp>
#include <tool_effects/json/error.hpp>
#include <tool_effects/json/identity.hpp>
#include <tool_effects/json/manifest.hpp>
#include <tool_effects/json/mcp.hpp>
#include <tool_effects/json/plan_text.hpp>
#include <tool_effects/json/results.hpp>
#include <tool_effects/json/stream.hpp>
#include <tool_effects/json/turn.hpp>

#endif  // TOOL_EFFECTS_JSON_HPP
