// libFuzzer target: unique call identity within a turn (issue 19). Each
// input byte is one call of a turn of write_file calls on ONE path (so their
// identities are equal and only the id tells them apart): its id is absent
// (generated), one of a few model-chosen ids ("x", "y", "x~2", ...), or the
// id generated for another call of the turn (a spoof). Checks: ids are
// unique; a model-chosen id keeps its first call and every later call with it
// is refused ("duplicate call id"); generated ids never equal a model-chosen
// one; `tool_results` answers distinct ids; no two calls that can run share an
// idempotency key; the host refuses nothing else.
#include <tool_effects/json.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {
void require(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tool_effects;
  using nlohmann::json;
  const std::size_t n = std::min<std::size_t>(size, 40);
  if (n == 0) return 0;
  auto call_json = [&](std::size_t k) {
    return json{{"name", "write_file"}, {"arguments", {{"path", "report.txt"}, {"contents", data[k] & 3}}}};
  };
  // The ids each call would get without an id of its own.
  json anonymous = json::array();
  for (std::size_t k = 0; k < n; ++k) anonymous.push_back(call_json(k));
  const auto anonymous_calls = parse_tool_calls(anonymous);
  static const char* const chosen[] = {"x", "y", "x~2", "x~3", "call-1", "x~2~2"};
  json turn = json::array();
  std::vector<std::optional<std::string>> sent(n);
  for (std::size_t k = 0; k < n; ++k) {
    json c = call_json(k);
    const unsigned choice = data[k] >> 2;  // 0..63
    if (choice < 16) {
      // no id: generated
    } else if (choice < 40) {
      sent[k] = chosen[choice % 6];
    } else {
      sent[k] = anonymous_calls[choice % n].id;  // another call's generated id
    }
    if (sent[k]) c["id"] = *sent[k];
    turn.push_back(std::move(c));
  }
  const auto calls = parse_tool_calls(turn);
  require(calls.size() == n);
  std::set<std::string> ids;
  std::map<std::string, std::size_t> first;
  std::set<std::string> chosen_ids;
  for (std::size_t k = 0; k < n; ++k)
    if (sent[k]) chosen_ids.insert(*sent[k]);
  for (std::size_t k = 0; k < n; ++k) {
    const tool_call& c = calls[k];
    require(ids.insert(c.id).second);
    require(c.generated_id == !sent[k]);
    if (!sent[k]) {
      require(c.valid());
      require(chosen_ids.count(c.id) == 0);
      require(c.id.rfind(anonymous_calls[k].id, 0) == 0);  // the stable id, with a suffix only on a clash
      continue;
    }
    const auto [it, fresh] = first.emplace(*sent[k], k);
    if (fresh) {
      require(c.valid() && c.id == *sent[k]);
    } else {
      require(!c.valid() && c.arguments.empty());
      require(c.arguments_error.rfind("duplicate call id ", 0) == 0);
      require(c.id != *sent[k]);
    }
  }

  // The host's plan and the keys its run gives each attempt (`idempotency_key(identity,
  // scope + "/" + id)`). (The run itself is exercised by the unit tests: clang 14 cannot
  // compile the dispatcher's coroutines with -fsanitize=fuzzer -O2 -g, "Cannot represent a
  // difference across sections".)
  tool_registry<> reg;
  json_tool_host<> host(reg);
  identity_policy p;
  p.target_arg = "path";
  host.add(dynamic_tool{"write_file",
                        describe_runtime("write_file", {effect::write, effect::idempotent},
                                         {{"files", access_mode::write, {}}}),
                        p},
           [](const attempt_context&, const json&) -> json { return "ok"; });
  const turn_plan plan = host.plan(calls);
  std::set<std::string> keys;
  std::vector<outcome<json>> out;
  for (std::size_t k = 0; k < n; ++k) {
    require(plan.failures[k].has_value() == !calls[k].valid());
    if (plan.failures[k]) {
      out.push_back(outcome<json>::failure(std::make_exception_ptr(call_failure(*plan.failures[k]))));
      continue;
    }
    require(keys.insert(idempotency_key(plan.identities[k], "turn/" + calls[k].id)).second);
    out.push_back(outcome<json>::success(json("ok")));
  }
  const json answers = tool_results(calls, out);
  std::set<std::string> answered;
  for (const auto& a : answers) require(answered.insert(a.at("id").get<std::string>()).second);
  require(answered.size() == n);
  return 0;
}
