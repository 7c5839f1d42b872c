// tool_effects/json/stream.hpp — internal to <tool_effects/json.hpp>: tool
// calls assembled from a streamed model response (`tool_call_stream`), so a
// caller can plan and start the first calls of a turn while the model is
// still generating the rest.
//
//   tool_effects::tool_call_stream stream;
//   for (const auto& event : sse_data_payloads)           // one JSON text per event
//     for (auto& call : stream.feed(event)) start(call);  // complete calls, as soon as they are
//   for (auto& call : stream.finish()) start(call);        // the rest (e.g. no final event seen)
#ifndef TOOL_EFFECTS_JSON_STREAM_HPP
#define TOOL_EFFECTS_JSON_STREAM_HPP

#include <concepts>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/json/calls.hpp>
#include <tool_effects/json/error.hpp>

namespace tool_effects {

/// Accumulates the events of one streamed model response and yields each
/// tool call once it is complete, with the same name, id (generated ids
/// included) and arguments as `parse_tool_calls` gives for the whole
/// response. Understands, with no flag to pass:
///  - OpenAI Chat Completions chunks (`choices[0].delta.tool_calls[]` keyed by
///    `index`, arguments as string fragments). A call is complete when a later
///    call starts, when the choice has a `finish_reason`, at `[DONE]`, or at
///    `finish()`. A new `id` at an index already in use starts a new call
///    (servers that reuse index 0 for every call of a parallel batch);
///  - OpenAI Responses events (`response.output_item.added`,
///    `response.function_call_arguments.delta` / `.done`,
///    `response.output_item.done`, `response.completed`);
///  - Anthropic Messages events (`content_block_start` with a `tool_use`
///    block, `input_json_delta` fragments, `content_block_stop`, `message_stop`);
///  - Gemini `streamGenerateContent` chunks (GenerateContentResponse objects),
///    whose `functionCall` parts arrive whole: each is complete in its chunk.
/// Other events and fields are ignored. Each call is yielded exactly once.
/// Malformed fields the accumulator reads throw `json_error` (pointer within
/// the event); bad arguments do not (see `tool_call::arguments_error`).
/// Not thread-safe: feed one stream from one thread.
class tool_call_stream {
 public:
  /// Feeds one event (a parsed chunk or event object); returns the calls it
  /// completed, in order.
  std::vector<tool_call> feed(const nlohmann::json& event) {
    std::vector<tool_call> done;
    if (!event.is_object()) throw json_error("", detail::expected("a stream event object", event), detail::preview(event));
    if (const nlohmann::json* choices = detail::member(event, "choices")) {
      chat_chunk(*choices, done);
      return done;
    }
    if (event.contains("candidates")) {
      gemini_chunk(event, done);
      return done;
    }
    const std::optional<std::string> type = detail::string_field(event, "type", "", false);
    if (!type) return done;
    const std::string& t = *type;
    if (t == "response.output_item.added" || t == "response.output_item.done") responses_item(event, t, done);
    else if (t == "response.function_call_arguments.delta" || t == "response.custom_tool_call_input.delta")
      responses_delta(event, false, done);
    else if (t == "response.function_call_arguments.done" || t == "response.custom_tool_call_input.done")
      responses_delta(event, true, done);
    else if (t == "response.completed" || t == "response.incomplete" || t == "message_stop")
      close_all(done);
    else if (t == "content_block_start") anthropic_start(event, done);
    else if (t == "content_block_delta") anthropic_delta(event);
    else if (t == "content_block_stop") anthropic_stop(event, done);
    return done;
  }

  /// Feeds one event given as JSON text (an SSE `data:` payload); `[DONE]`
  /// (the end marker of OpenAI streams) completes every open call; blank
  /// text is ignored.
  /// (A `std::string`, `std::string_view` or string literal.)
  template <class Text>
    requires std::convertible_to<const Text&, std::string_view> && (!std::same_as<Text, nlohmann::json>)
  std::vector<tool_call> feed(const Text& text) {
    const std::string_view trimmed = trim(std::string_view(text));
    if (trimmed.empty()) return {};
    if (trimmed == "[DONE]") return finish();
    return feed(detail::parse_json(trimmed, "in stream event"));
  }

  /// Completes every call still open (the stream ended) and returns them.
  std::vector<tool_call> finish() {
    std::vector<tool_call> done;
    close_all(done);
    return done;
  }

  /// Number of calls started so far (complete or not).
  [[nodiscard]] std::size_t started() const noexcept { return next_position_; }
  /// Number of calls yielded so far.
  [[nodiscard]] std::size_t completed() const noexcept { return completed_; }

 private:
  struct pending {
    std::size_t position = 0;  // order of start within the turn
    tool_call_dialect dialect = tool_call_dialect::plain;
    std::optional<std::string> id;
    std::string name;
    std::string arguments;
    bool custom = false;
    bool object_arguments = false;  // Anthropic: fragments of an object (empty = the start block's input)
    nlohmann::json start_input;      // Anthropic: the block's `input` at start
  };

  static std::string_view trim(std::string_view s) {
    while (!s.empty() && detail::blank(s.substr(0, 1))) s.remove_prefix(1);
    while (!s.empty() && detail::blank(s.substr(s.size() - 1))) s.remove_suffix(1);
    return s;
  }

  std::size_t start(pending p) {
    p.position = next_position_++;
    open_.emplace_back(std::move(p));
    return open_.size() - 1;
  }

  tool_call complete(pending& p) {
    ++completed_;
    nlohmann::json args;
    const nlohmann::json* value = nullptr;
    if (p.object_arguments && p.arguments.empty()) {
      value = &p.start_input;
    } else {
      args = p.arguments;
      value = &args;
    }
    tool_call c = detail::make_call(p.name, p.id, p.dialect, value, p.position, p.custom);
    return c;
  }

  // Moves open call k (and, to keep the turn's order, every call started before it) to `done`.
  void close_through(std::size_t k, std::vector<tool_call>& done) {
    for (std::size_t i = 0; i <= k && !open_.empty(); ++i) {
      done.push_back(complete(open_.front()));
      open_.erase(open_.begin());
    }
  }
  void close_all(std::vector<tool_call>& done) {
    if (!open_.empty()) close_through(open_.size() - 1, done);
    chat_index_.clear();
    item_key_.clear();
    block_index_.clear();
  }

  // The open call registered under `key` in `map`; npos when none (or already yielded).
  template <class Key>
  std::size_t find(std::map<Key, std::size_t>& map, const Key& key) {
    const auto it = map.find(key);
    if (it == map.end()) return static_cast<std::size_t>(-1);
    for (std::size_t i = 0; i < open_.size(); ++i)
      if (open_[i].position == it->second) return i;
    return static_cast<std::size_t>(-1);
  }

  // ----------------------------------------------------------- OpenAI Chat Completions
  void chat_chunk(const nlohmann::json& choices, std::vector<tool_call>& done) {
    if (!choices.is_array()) throw json_error("/choices", detail::expected("an array", choices), detail::preview(choices));
    if (choices.empty()) return;  // e.g. the usage chunk
    const nlohmann::json& choice = choices[0];
    if (!choice.is_object()) throw json_error("/choices/0", detail::expected("an object", choice), detail::preview(choice));
    if (const nlohmann::json* delta = detail::member(choice, "delta"); delta != nullptr && delta->is_object())
      if (const nlohmann::json* calls = detail::member(*delta, "tool_calls"); calls != nullptr && !calls->is_null()) {
        if (!calls->is_array())
          throw json_error("/choices/0/delta/tool_calls", detail::expected("an array", *calls), detail::preview(*calls));
        for (std::size_t i = 0; i < calls->size(); ++i)
          chat_call_delta((*calls)[i], detail::child("/choices/0/delta/tool_calls", i), done);
      }
    if (const nlohmann::json* finish = detail::member(choice, "finish_reason"); finish != nullptr && !finish->is_null())
      close_all(done);
  }

  void chat_call_delta(const nlohmann::json& d, const std::string& at, std::vector<tool_call>& done) {
    if (!d.is_object()) throw json_error(at, detail::expected("an object", d), detail::preview(d));
    long long index = 0;
    if (const nlohmann::json* idx = detail::member(d, "index"); idx != nullptr && !idx->is_null()) {
      if (!idx->is_number_integer() || idx->get<long long>() < 0)
        throw json_error(detail::child(at, "index"), detail::expected("a non-negative integer", *idx), detail::preview(*idx));
      index = idx->get<long long>();
    }
    std::optional<std::string> id = detail::string_field(d, "id", at);
    const nlohmann::json* f = detail::member(d, "function");
    const bool custom = f == nullptr && d.contains("custom");
    if (custom) f = detail::member(d, "custom");
    const std::string fat = detail::child(at, custom ? "custom" : "function");
    if (f != nullptr && !f->is_null() && !f->is_object())
      throw json_error(fat, detail::expected("an object", *f), detail::preview(*f));
    const bool has_f = f != nullptr && f->is_object();
    std::optional<std::string> name = has_f ? detail::string_field(*f, "name", fat) : std::nullopt;
    std::optional<std::string> fragment =
        has_f ? detail::string_field(*f, custom ? "input" : "arguments", fat, false) : std::nullopt;

    std::size_t k = find(chat_index_, index);
    // A new call: an index not seen, or a new id at an index in use.
    if (k == static_cast<std::size_t>(-1) || (id && open_[k].id && *open_[k].id != *id)) {
      if (!name) throw json_error(detail::child(fat, "name"), "missing tool name at the start of a streamed call", detail::preview(d));
      if (!open_.empty()) close_through(open_.size() - 1, done);  // calls stream one after another
      pending p;
      p.dialect = tool_call_dialect::openai_chat;
      p.id = std::move(id);
      p.name = std::move(*name);
      p.custom = custom;
      k = start(std::move(p));
      chat_index_[index] = open_[k].position;
    } else {
      if (id && !open_[k].id) open_[k].id = std::move(id);
      if (name && open_[k].name != *name) open_[k].name += *name;  // names are not split in practice
    }
    if (fragment) open_[k].arguments += *fragment;
  }

  // ----------------------------------------------------------- Gemini
  void gemini_chunk(const nlohmann::json& event, std::vector<tool_call>& done) {
    std::vector<tool_call> calls;
    detail::parse_call_envelope(event, "", calls);
    for (auto& c : calls) {
      // Positions count across chunks: regenerate a missing id with the turn position.
      if (c.generated_id) {
        const std::string material = c.valid() ? tool_effects::canonical_json(c.arguments) : c.id;
        c.id = detail::generated_call_id(next_position_, c.name, material);
      }
      ++next_position_;
      ++completed_;
      done.push_back(std::move(c));
    }
  }

  // ----------------------------------------------------------- OpenAI Responses
  static std::string item_key_of(const nlohmann::json& event, const nlohmann::json* item) {
    if (item != nullptr)
      if (const nlohmann::json* id = detail::member(*item, "id"); id != nullptr && id->is_string()) return id->get<std::string>();
    if (const nlohmann::json* id = detail::member(event, "item_id"); id != nullptr && id->is_string()) return id->get<std::string>();
    if (const nlohmann::json* idx = detail::member(event, "output_index"); idx != nullptr && idx->is_number_integer())
      return detail::str_cat("#", idx->dump());
    return {};
  }

  void responses_item(const nlohmann::json& event, const std::string& type, std::vector<tool_call>& done) {
    const nlohmann::json& item = detail::object_field(event, "item", "");
    const std::optional<std::string> item_type = detail::string_field(item, "type", "/item", false);
    if (!item_type || (*item_type != "function_call" && *item_type != "custom_tool_call")) return;
    const bool custom = *item_type == "custom_tool_call";
    std::string key = item_key_of(event, &item);
    std::size_t k = find(item_key_, key);
    const bool finished = type == "response.output_item.done";
    if (k == static_cast<std::size_t>(-1)) {
      if (finished && item_key_.count(key)) return;  // already yielded at arguments.done
      pending p;
      p.dialect = tool_call_dialect::openai_responses;
      p.id = detail::string_field(item, "call_id", "/item");
      p.name = detail::name_field(item, "/item");
      p.custom = custom;
      if (const auto args = detail::string_field(item, custom ? "input" : "arguments", "/item", false)) p.arguments = *args;
      k = start(std::move(p));
      item_key_[key] = open_[k].position;
    }
    if (finished) {
      if (const auto args = detail::string_field(item, custom ? "input" : "arguments", "/item", false))
        open_[k].arguments = *args;
      if (const auto call_id = detail::string_field(item, "call_id", "/item")) open_[k].id = *call_id;
      yield(k, done);
    }
  }

  void responses_delta(const nlohmann::json& event, bool finished, std::vector<tool_call>& done) {
    const std::string key = item_key_of(event, nullptr);
    const std::size_t k = find(item_key_, key);
    if (k == static_cast<std::size_t>(-1)) return;  // not a call we know (or already yielded)
    if (finished) {
      const bool custom = open_[k].custom;
      if (const auto all = detail::string_field(event, custom ? "input" : "arguments", "", false)) open_[k].arguments = *all;
      yield(k, done);
    } else if (const auto fragment = detail::string_field(event, "delta", "", false)) {
      open_[k].arguments += *fragment;
    }
  }

  // Yields open call k alone (Responses and Anthropic say exactly which call ended).
  void yield(std::size_t k, std::vector<tool_call>& done) {
    done.push_back(complete(open_[k]));
    open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(k));
  }

  // ----------------------------------------------------------- Anthropic
  static long long block_index(const nlohmann::json& event) {
    const nlohmann::json* idx = detail::member(event, "index");
    if (idx == nullptr || !idx->is_number_integer())
      throw json_error("/index", "expected an integer content block index",
                       idx == nullptr ? std::string("(missing)") : detail::preview(*idx));
    return idx->get<long long>();
  }

  void anthropic_start(const nlohmann::json& event, std::vector<tool_call>&) {
    const nlohmann::json& block = detail::object_field(event, "content_block", "");
    const std::optional<std::string> type = detail::string_field(block, "type", "/content_block", false);
    if (!type || *type != "tool_use") return;
    const long long index = block_index(event);
    pending p;
    p.dialect = tool_call_dialect::anthropic;
    p.id = detail::string_field(block, "id", "/content_block");
    p.name = detail::name_field(block, "/content_block");
    p.object_arguments = true;
    if (const nlohmann::json* input = detail::member(block, "input")) p.start_input = *input;
    const std::size_t k = start(std::move(p));
    block_index_[index] = open_[k].position;
  }

  void anthropic_delta(const nlohmann::json& event) {
    const nlohmann::json* delta = detail::member(event, "delta");
    if (delta == nullptr || !delta->is_object()) return;
    const std::optional<std::string> type = detail::string_field(*delta, "type", "/delta", false);
    if (!type || *type != "input_json_delta") return;
    const std::size_t k = find(block_index_, block_index(event));
    if (k == static_cast<std::size_t>(-1)) return;
    if (const auto fragment = detail::string_field(*delta, "partial_json", "/delta", false)) open_[k].arguments += *fragment;
  }

  void anthropic_stop(const nlohmann::json& event, std::vector<tool_call>& done) {
    const long long index = block_index(event);
    const std::size_t k = find(block_index_, index);
    if (k == static_cast<std::size_t>(-1)) return;
    block_index_.erase(index);
    yield(k, done);
  }

  std::vector<pending> open_;
  std::map<long long, std::size_t> chat_index_;      // chunk index -> position of its current call
  std::map<std::string, std::size_t> item_key_;      // Responses item id -> position
  std::map<long long, std::size_t> block_index_;     // Anthropic block index -> position
  std::size_t next_position_ = 0;
  std::size_t completed_ = 0;
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_JSON_STREAM_HPP
