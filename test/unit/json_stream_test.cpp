// The stream accumulator (json/stream.hpp) against hostile streams (issue 19): no call is yielded before its
// arguments are complete (out-of-order Chat chunks, an Anthropic block interleaved with another vendor's chunk); a
// fragment for a call already yielded is recorded and fails that call's outcome; open calls are capped; and a
// differential over random responses: streamed and whole parses (`parse_tool_calls`) give the same calls and
// arguments, or the streamed call is failed.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <tool_effects/json.hpp>

// Unity-built with the other json tests (test/CMakeLists.txt): all below is this file's own.
namespace json_stream_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {
json chat_chunk(json tool_calls, bool finish = false) {
  return json{{"choices", json::array({json{{"index", 0},
                                            {"delta", tool_calls.is_null() ? json::object() : json{{"tool_calls", tool_calls}}},
                                            {"finish_reason", finish ? json("tool_calls") : json(nullptr)}}})}};
}
json chat_start(int index, const std::string& id, const std::string& name, const std::string& args) {
  return json::array({json{{"index", index}, {"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}}});
}
json chat_fragment(int index, const std::string& args) {
  return json::array({json{{"index", index}, {"function", {{"arguments", args}}}}});
}
std::vector<te::tool_call> feed_all(te::tool_call_stream& s, const std::vector<json>& events) {
  std::vector<te::tool_call> out;
  for (const auto& e : events)
    for (auto& c : s.feed(e)) out.push_back(std::move(c));
  for (auto& c : s.finish()) out.push_back(std::move(c));
  return out;
}
}  // namespace

TEST(StreamAccumulator, OutOfOrderChatChunksAreNotYieldedEarly) {
  // Issue 19's probe: delete_file's arguments arrive after read_file started. It used to be yielded with {} (valid)
  // when read_file started, and its real arguments were dropped with an error.
  te::tool_call_stream s;
  std::vector<te::tool_call> early;
  for (const auto& e : {chat_chunk(chat_start(0, "call_del", "delete_file", "")),
                        chat_chunk(chat_start(1, "call_read", "read_file", "{}")),
                        chat_chunk(chat_fragment(0, R"({"path": "tmp/scratch.txt"})"))})
    for (auto& c : s.feed(e)) early.push_back(std::move(c));
  EXPECT_TRUE(early.empty()) << "yielded " << early.front().name << " before its arguments were complete";
  const auto rest = s.feed(chat_chunk(nullptr, true));
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].name, "delete_file");
  EXPECT_EQ(rest[0].arguments, (json{{"path", "tmp/scratch.txt"}}));
  EXPECT_EQ(rest[1].name, "read_file");
  EXPECT_TRUE(s.late().empty());
  const auto whole = te::parse_tool_calls(json{{"choices", json::array({json{{"message", {{"tool_calls", json::array({
      json{{"id", "call_del"}, {"type", "function"}, {"function", {{"name", "delete_file"}, {"arguments", R"({"path": "tmp/scratch.txt"})"}}}},
      json{{"id", "call_read"}, {"type", "function"}, {"function", {{"name", "read_file"}, {"arguments", "{}"}}}}})}}}}})}});
  ASSERT_EQ(whole.size(), 2u);
  EXPECT_EQ(whole[0].arguments, rest[0].arguments);
}

TEST(StreamAccumulator, AnAnthropicBlockInterleavedWithAChatChunkWaitsForItsStop) {
  te::tool_call_stream s;
  std::vector<te::tool_call> out;
  auto feed = [&](const json& e) {
    for (auto& c : s.feed(e)) out.push_back(std::move(c));
  };
  feed(json{{"type", "content_block_start"}, {"index", 0},
            {"content_block", {{"type", "tool_use"}, {"id", "toolu_del"}, {"name", "delete_file"}, {"input", json::object()}}}});
  feed(chat_chunk(chat_start(0, "call_read", "read_file", "{}")));
  feed(chat_chunk(chat_start(1, "call_read2", "read_file", "{}")));  // the first chat call is whole: out
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, "call_read");
  feed(json{{"type", "content_block_delta"}, {"index", 0},
            {"delta", {{"type", "input_json_delta"}, {"partial_json", R"({"path": "tmp/scratch.txt"})"}}}});
  feed(chat_chunk(nullptr, true));  // the chat finish ends chat calls only
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].id, "call_read2");
  feed(json{{"type", "content_block_stop"}, {"index", 0}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].name, "delete_file");
  EXPECT_EQ(out[2].arguments, (json{{"path", "tmp/scratch.txt"}}));
}

TEST(StreamAccumulator, AFragmentForAYieldedCallFailsItsOutcome) {
  te::tool_call_stream s;
  std::vector<te::tool_call> calls;
  auto feed = [&](const json& e) {
    for (auto& c : s.feed(e)) calls.push_back(std::move(c));
  };
  // Chat: whole arguments, yielded when the next call starts; then more for index 0.
  feed(chat_chunk(chat_start(0, "c0", "write_file", R"({"path": "a"})")));
  feed(chat_chunk(chat_start(1, "c1", "read_file", "{}")));
  ASSERT_EQ(calls.size(), 1u);
  feed(chat_chunk(chat_fragment(0, R"(, "content": "INJECTED")")));
  feed(chat_chunk(chat_fragment(0, "}")));  // a second one: the same entry, counted
  // Responses: a delta after arguments.done, and an output_item.done with other arguments.
  feed(json{{"type", "response.output_item.added"},
            {"item", {{"id", "fc_1"}, {"type", "function_call"}, {"call_id", "r1"}, {"name", "read_file"}, {"arguments", ""}}}});
  feed(json{{"type", "response.function_call_arguments.done"}, {"item_id", "fc_1"}, {"arguments", R"({"path": "b"})"}});
  feed(json{{"type", "response.output_item.done"},
            {"item", {{"id", "fc_1"}, {"type", "function_call"}, {"call_id", "r1"}, {"name", "read_file"}, {"arguments", R"({"path": "b"})"}}}});
  EXPECT_EQ(s.late().size(), 1u) << "the same arguments repeated are not late";
  feed(json{{"type", "response.function_call_arguments.delta"}, {"item_id", "fc_1"}, {"delta", "x"}});
  // Anthropic: a delta after the block stopped.
  feed(json{{"type", "content_block_start"}, {"index", 3},
             {"content_block", {{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "read_file"}, {"input", json::object()}}}});
  feed(json{{"type", "content_block_stop"}, {"index", 3}});
  feed(json{{"type", "content_block_delta"}, {"index", 3}, {"delta", {{"type", "input_json_delta"}, {"partial_json", "{}"}}}});
  for (auto& c : s.finish()) calls.push_back(std::move(c));

  ASSERT_EQ(s.late().size(), 3u);
  EXPECT_EQ(s.late()[0].id, "c0");
  EXPECT_EQ(s.late()[1].id, "r1");
  EXPECT_EQ(s.late()[2].id, "toolu_1");
  EXPECT_EQ(s.late()[0].fragments, 2u);
  EXPECT_EQ(s.late()[0].bytes, 24u);
  EXPECT_EQ(s.late()[0].message,
            "write_file (call \"c0\") received arguments after it was yielded (24 more bytes); the call is failed, not run "
            "with part of its arguments");

  std::vector<te::outcome<json>> outcomes;
  for (std::size_t k = 0; k < calls.size(); ++k) outcomes.push_back(te::outcome<json>::success("ran"));
  EXPECT_EQ(s.fail_late_calls(calls, outcomes), 3u);
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const bool late = calls[k].id == "c0" || calls[k].id == "r1" || calls[k].id == "toolu_1";
    ASSERT_EQ(outcomes[k].has_value(), !late) << calls[k].id;
    if (late) {
      try {
        std::rethrow_exception(outcomes[k].error());
      } catch (const te::call_failure& f) {
        EXPECT_EQ(f.reason(), te::failure_reason::invalid_arguments);
        EXPECT_NE(f.record().last_error_message.find("received arguments after it was yielded"), std::string::npos);
      }
    }
  }
  // Control: without the late fragments, nothing is failed.
  te::tool_call_stream clean;
  std::vector<te::tool_call> ok;
  for (auto& c : clean.feed(chat_chunk(chat_start(0, "c0", "write_file", R"({"path": "a"})")))) ok.push_back(c);
  for (auto& c : clean.finish()) ok.push_back(c);
  std::vector<te::outcome<json>> ok_outcomes(ok.size(), te::outcome<json>::success("ran"));
  EXPECT_EQ(clean.fail_late_calls(ok, ok_outcomes), 0u);
}

TEST(StreamAccumulator, OpenCallsAreCapped) {
  auto added = [](std::size_t i) {
    return json{{"type", "response.output_item.added"},
                {"item", {{"id", "fc_" + std::to_string(i)}, {"type", "function_call"}, {"call_id", "c" + std::to_string(i)},
                          {"name", "read_file"}, {"arguments", ""}}}};
  };
  te::tool_call_stream s;
  for (std::size_t i = 0; i < te::default_max_open_stream_calls; ++i) ASSERT_TRUE(s.feed(added(i)).empty());
  try {
    (void)s.feed(added(te::default_max_open_stream_calls));
    FAIL() << "no limit";
  } catch (const te::json_error& e) {
    EXPECT_EQ(e.message(), "too many open tool calls: 1024 are open at once, the limit is 1024 (stream_limits::max_open_calls)");
  }
  // Raised: 20,000 open items (23 s before, quadratic) are accumulated and each yields on its done event.
  te::tool_call_stream big(te::stream_limits{20000});
  for (std::size_t i = 0; i < 20000; ++i) ASSERT_TRUE(big.feed(added(i)).empty());
  std::size_t yielded = 0;
  for (std::size_t i = 20000; i-- > 0;)
    yielded += big.feed(json{{"type", "response.function_call_arguments.done"}, {"item_id", "fc_" + std::to_string(i)},
                             {"arguments", "{}"}})
                   .size();
  EXPECT_EQ(yielded, 20000u);
  EXPECT_EQ(big.completed(), 20000u);
}

// ------------------------------------------------------------------------------------------------ differential

namespace {
struct model_call {
  std::string id, name, args;  // args: the JSON text the model streams (may be invalid)
};

std::string random_args(std::mt19937& rng) {
  static const std::vector<std::string> pool{
      R"({"path": "tmp/scratch.txt"})", R"({})", R"({"a": [1, 2, {"b": "}]"}], "c": "\"{"})", R"({"q": "x\\y"})",
      R"({"path": "a"} trailing)", R"([1, 2])", R"({"unterminated": )", R"("just a string")", R"({"n": 1.5e3, "t": true})",
      ""};
  return pool[std::uniform_int_distribution<std::size_t>(0, pool.size() - 1)(rng)];
}

std::vector<std::string> split(const std::string& s, std::mt19937& rng) {
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (at < s.size()) {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 6)(rng);
    parts.push_back(s.substr(at, n));
    at += n;
  }
  if (parts.empty() || std::uniform_int_distribution<int>(0, 3)(rng) == 0) parts.insert(parts.begin(), "");
  return parts;
}

// Interleaves the per-call event lists at random, keeping each call's own order (out-of-order chunks across calls).
std::vector<json> interleave(std::vector<std::vector<json>> lists, std::mt19937& rng, bool shuffle) {
  std::vector<json> out;
  std::vector<std::size_t> next(lists.size(), 0);
  std::size_t left = 0;
  for (const auto& l : lists) left += l.size();
  std::size_t current = 0;
  while (left > 0) {
    if (shuffle) current = std::uniform_int_distribution<std::size_t>(0, lists.size() - 1)(rng);
    while (next[current] == lists[current].size()) current = (current + 1) % lists.size();
    out.push_back(lists[current][next[current]++]);
    --left;
  }
  return out;
}

// A response of `calls` in one vendor's shape, whole and as stream events. Chat starts each index with its id and
// name; Responses and Anthropic each end an item with its done / stop event.
struct rendered {
  json whole;
  std::vector<json> events;
};

rendered chat(const std::vector<model_call>& calls, std::mt19937& rng, bool shuffle) {
  rendered r;
  json tool_calls = json::array();
  std::vector<std::vector<json>> lists;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    tool_calls.push_back(json{{"id", calls[i].id}, {"type", "function"}, {"function", {{"name", calls[i].name}, {"arguments", calls[i].args}}}});
    std::vector<json> l;
    const auto parts = split(calls[i].args, rng);
    l.push_back(chat_chunk(chat_start(static_cast<int>(i), calls[i].id, calls[i].name, parts[0])));
    for (std::size_t p = 1; p < parts.size(); ++p) l.push_back(chat_chunk(chat_fragment(static_cast<int>(i), parts[p])));
    lists.push_back(std::move(l));
  }
  r.whole = json{{"choices", json::array({json{{"message", {{"role", "assistant"}, {"tool_calls", tool_calls}}}}})}};
  r.events = interleave(std::move(lists), rng, shuffle);
  r.events.push_back(chat_chunk(nullptr, true));
  return r;
}

rendered responses(const std::vector<model_call>& calls, std::mt19937& rng, bool shuffle) {
  rendered r;
  json output = json::array();
  std::vector<std::vector<json>> lists;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::string item = "fc_" + std::to_string(i);
    json done_item{{"id", item}, {"type", "function_call"}, {"call_id", calls[i].id}, {"name", calls[i].name}, {"arguments", calls[i].args}};
    output.push_back(done_item);
    std::vector<json> l;
    json added = done_item;
    added["arguments"] = "";
    l.push_back(json{{"type", "response.output_item.added"}, {"output_index", i}, {"item", added}});
    for (const auto& part : split(calls[i].args, rng))
      l.push_back(json{{"type", "response.function_call_arguments.delta"}, {"item_id", item}, {"delta", part}});
    l.push_back(json{{"type", "response.function_call_arguments.done"}, {"item_id", item}, {"arguments", calls[i].args}});
    l.push_back(json{{"type", "response.output_item.done"}, {"output_index", i}, {"item", done_item}});
    lists.push_back(std::move(l));
  }
  r.whole = json{{"object", "response"}, {"output", output}};
  r.events = interleave(std::move(lists), rng, shuffle);
  r.events.push_back(json{{"type", "response.completed"}});
  return r;
}

rendered anthropic(const std::vector<model_call>& calls, std::mt19937& rng, bool shuffle) {
  rendered r;
  json content = json::array();
  std::vector<std::vector<json>> lists;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    // Anthropic's whole form holds the input as an object: only calls whose text parses as one can be compared.
    const json input = json::parse(calls[i].args.empty() ? "{}" : calls[i].args, nullptr, false);
    content.push_back(json{{"type", "tool_use"}, {"id", calls[i].id}, {"name", calls[i].name}, {"input", input}});
    std::vector<json> l;
    l.push_back(json{{"type", "content_block_start"}, {"index", i},
                     {"content_block", {{"type", "tool_use"}, {"id", calls[i].id}, {"name", calls[i].name}, {"input", json::object()}}}});
    for (const auto& part : split(calls[i].args, rng))
      l.push_back(json{{"type", "content_block_delta"}, {"index", i}, {"delta", {{"type", "input_json_delta"}, {"partial_json", part}}}});
    l.push_back(json{{"type", "content_block_stop"}, {"index", i}});
    lists.push_back(std::move(l));
  }
  r.whole = json{{"type", "message"}, {"role", "assistant"}, {"content", content}};
  r.events = interleave(std::move(lists), rng, shuffle);
  r.events.push_back(json{{"type", "message_stop"}});
  return r;
}
}  // namespace

TEST(StreamAccumulator, StreamedAndWholeParsesAgree) {
  // Differential over random responses of every streamed vendor shape, with chunks in order and out of order
  // across calls: every call of the whole parse is yielded once by the stream with the same name, id, validity and
  // arguments, or the stream recorded a late fragment for it (its outcome is failed).
  std::mt19937 rng(20261125);
  std::size_t compared = 0, late = 0;
  for (int round = 0; round < 600; ++round) {
    std::vector<model_call> calls;
    const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 5)(rng);
    for (std::size_t i = 0; i < n; ++i)
      calls.push_back({"id" + std::to_string(round) + "_" + std::to_string(i), i % 2 ? "read_file" : "delete_file", random_args(rng)});
    const int vendor = round % 3;
    const bool shuffle = (round / 3) % 2 == 1;
    if (vendor == 2)  // Anthropic's whole input is an object: keep the calls whose text is one
      std::erase_if(calls, [](const model_call& c) {
        const json v = json::parse(c.args.empty() ? "{}" : c.args, nullptr, false);
        return !v.is_object();
      });
    if (calls.empty()) continue;
    const rendered r = vendor == 0 ? chat(calls, rng, shuffle) : vendor == 1 ? responses(calls, rng, shuffle) : anthropic(calls, rng, shuffle);
    const auto whole = te::parse_tool_calls(r.whole);
    te::tool_call_stream s;
    const auto streamed = feed_all(s, r.events);
    ASSERT_EQ(streamed.size(), whole.size()) << "round " << round;
    std::map<std::string, const te::tool_call*> by_id;
    for (const auto& c : streamed) ASSERT_TRUE(by_id.emplace(c.id, &c).second) << "yielded twice: " << c.id;
    for (const auto& w : whole) {
      const auto it = by_id.find(w.id);
      ASSERT_NE(it, by_id.end()) << "round " << round << ": " << w.id << " not yielded";
      const bool failed = std::any_of(s.late().begin(), s.late().end(), [&](const te::late_fragment& l) { return l.id == w.id; });
      if (failed) {
        ++late;
        continue;
      }
      const te::tool_call& c = *it->second;
      EXPECT_EQ(c.name, w.name) << "round " << round;
      EXPECT_EQ(c.valid(), w.valid()) << "round " << round << " " << w.id << ": " << r.events.size() << " events";
      EXPECT_EQ(c.arguments, w.arguments) << "round " << round << " " << w.id;
      ++compared;
    }
  }
  EXPECT_GT(compared, 1000u);
  std::cout << "[ stream ] " << compared << " calls agreed, " << late << " failed as late\n";
}

}  // namespace json_stream_test_ns
