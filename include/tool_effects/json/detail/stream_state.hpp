// tool_effects/json/detail/stream_state.hpp — internal to <tool_effects/json/stream.hpp> (included there
// after `stream_limits` and `late_fragment`): the state machine of `tool_call_stream`. It keeps the open
// calls by position, the calls already yielded, and the late fragments, and reads the events of OpenAI Chat
// Completions, OpenAI Responses, Anthropic Messages and Gemini.
#ifndef TOOL_EFFECTS_JSON_DETAIL_STREAM_STATE_HPP
#define TOOL_EFFECTS_JSON_DETAIL_STREAM_STATE_HPP

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
#include <tool_effects/json/canonical.hpp>
#include <tool_effects/json/error.hpp>

namespace tool_effects::detail {

// The accumulator behind `tool_call_stream` (json/stream.hpp): the open calls, the yielded ones (to
// recognise late fragments), and one reader per vendor's events.
class stream_state {
 public:
  stream_state() = default;
  explicit stream_state(stream_limits limits) : limits_(limits) {}

  // Feeds one event object; appends the calls it completed to `done`, in order.
  void feed(const nlohmann::json& event, std::vector<tool_call>& done) {
    if (!event.is_object()) throw json_error("", detail::expected("a stream event object", event), detail::preview(event));
    if (const nlohmann::json* choices = detail::member(event, "choices")) {
      chat_chunk(*choices, done);
      return;
    }
    if (event.contains("candidates")) {
      gemini_chunk(event, done);
      return;
    }
    const std::optional<std::string> type = detail::string_field(event, "type", "", false);
    if (!type) return;
    const std::string& t = *type;
    if (t == "response.output_item.added" || t == "response.output_item.done") responses_item(event, t, done);
    else if (t == "response.function_call_arguments.delta" || t == "response.custom_tool_call_input.delta")
      responses_delta(event, false, done);
    else if (t == "response.function_call_arguments.done" || t == "response.custom_tool_call_input.done")
      responses_delta(event, true, done);
    else if (t == "response.completed" || t == "response.incomplete")
      close_dialect(tool_call_dialect::openai_responses, done);
    else if (t == "message_stop")
      close_dialect(tool_call_dialect::anthropic, done);
    else if (t == "content_block_start") anthropic_start(event, done);
    else if (t == "content_block_delta") anthropic_delta(event);
    else if (t == "content_block_stop") anthropic_stop(event, done);
  }

  [[nodiscard]] std::size_t started() const noexcept { return next_position_; }
  [[nodiscard]] std::size_t completed() const noexcept { return completed_; }
  [[nodiscard]] const std::vector<late_fragment>& late() const noexcept { return late_; }

  // Yields every open call (the stream ended).
  void close_all(std::vector<tool_call>& done) {
    for (auto& [position, p] : open_) done.push_back(complete(p));
    open_.clear();
  }

  static std::string_view trim(std::string_view s) {
    while (!s.empty() && detail::blank(s.substr(0, 1))) s.remove_prefix(1);
    while (!s.empty() && detail::blank(s.substr(s.size() - 1))) s.remove_suffix(1);
    return s;
  }

 private:
  // Whether a JSON text is whole, from its fragments in O(their length): an
  // object or array whose brackets closed, with nothing but blanks after.
  // (Its validity is for the parse of the yielded call to say.)
  struct text_scan {
    std::size_t depth = 0;
    bool in_string = false, escape = false, closed = false, trailing = false, other = false;
    void feed(std::string_view s) noexcept {
      for (const char ch : s) {
        if (closed || other) {
          if (!(ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r')) trailing = true;
          continue;
        }
        if (in_string) {
          if (escape) escape = false;
          else if (ch == '\\') escape = true;
          else if (ch == '"') in_string = false;
          continue;
        }
        switch (ch) {
          case '"': in_string = true; break;
          case '{': case '[': ++depth; break;
          case '}': case ']':
            if (depth == 0) other = true;
            else if (--depth == 0) closed = true;
            break;
          case ' ': case '\t': case '\n': case '\r': break;
          default:
            if (depth == 0) other = true;  // a scalar at the top: never whole before the end
            break;
        }
      }
    }
    [[nodiscard]] bool whole() const noexcept { return closed && !trailing && !other; }
  };

  struct pending {
    std::size_t position = 0;  // order of start within the turn
    tool_call_dialect dialect = tool_call_dialect::plain;
    std::optional<std::string> id;
    std::string name;
    std::string arguments;
    text_scan scan;                  // Chat: whether `arguments` is whole yet
    bool ended = false;              // Chat: its index was taken by a new call, so nothing more can arrive
    bool custom = false;
    bool object_arguments = false;  // Anthropic: fragments of an object (empty = the start block's input)
    nlohmann::json start_input;      // Anthropic: the block's `input` at start
  };

  // A yielded call, to recognise its late fragments.
  struct yielded_call {
    std::string id, name;
    std::size_t late = static_cast<std::size_t>(-1);  // its entry in late_, once it has one
    std::string arguments;  // Responses: the text, to tell a repeat from a late change
    bool custom = false;
  };

  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  // Opens a call; returns its position. Throws json_error past the open limit.
  std::size_t start(pending p, const nlohmann::json& event) {
    if (open_.size() >= limits_.max_open_calls)
      throw json_error("", detail::str_cat("too many open tool calls: ", std::to_string(open_.size()),
                                           " are open at once, the limit is ", std::to_string(limits_.max_open_calls),
                                           " (stream_limits::max_open_calls)"),
                       detail::preview(event));
    p.position = next_position_++;
    const std::size_t position = p.position;
    open_.emplace(position, std::move(p));
    return position;
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
    if (yielded_.size() <= p.position) yielded_.resize(p.position + 1);
    yielded_[p.position] = {c.id, c.name, npos,
                            p.dialect == tool_call_dialect::openai_responses ? std::move(p.arguments) : std::string(),
                            p.custom};
    return c;
  }

  // Yields the open call at `position` alone.
  void yield(std::size_t position, std::vector<tool_call>& done) {
    const auto it = open_.find(position);
    if (it == open_.end()) return;
    done.push_back(complete(it->second));
    open_.erase(it);
  }
  // Yields every open call of `dialect`, in order of start.
  void close_dialect(tool_call_dialect dialect, std::vector<tool_call>& done) {
    for (auto it = open_.begin(); it != open_.end();) {
      if (it->second.dialect != dialect) {
        ++it;
        continue;
      }
      done.push_back(complete(it->second));
      it = open_.erase(it);
    }
  }

  // Where `key` of `map` stands: the position of its open call, or npos with
  // `*late_position` set to the position of its yielded call (npos: unknown).
  template <class Key>
  std::size_t find(const std::map<Key, std::size_t>& map, const Key& key, std::size_t* late_position = nullptr) const {
    if (late_position) *late_position = npos;
    const auto it = map.find(key);
    if (it == map.end()) return npos;
    if (open_.count(it->second) != 0) return it->second;
    if (late_position) *late_position = it->second;
    return npos;
  }

  // Records a fragment for the yielded call at `position`.
  void late(std::size_t position, std::string_view fragment) {
    yielded_call& y = yielded_.at(position);
    if (y.late == npos) {
      y.late = late_.size();
      late_fragment l;
      l.position = position;
      l.id = y.id;
      l.name = y.name;
      late_.push_back(std::move(l));
    }
    late_fragment& l = late_[y.late];
    ++l.fragments;
    l.bytes += fragment.size();
    l.message = detail::str_cat(y.name, " (call ", detail::quote_input(y.id), ") received arguments after it was yielded (",
                                std::to_string(l.bytes), " more bytes); the call is failed, not run with part of "
                                "its arguments");
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
      close_dialect(tool_call_dialect::openai_chat, done);
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

    std::size_t yielded = npos;
    std::size_t k = find(chat_index_, index, &yielded);
    // A fragment alone (no name, no new id) for the call this index had, already yielded: late.
    if (k == npos && yielded != npos && !name && (!id || *id == yielded_[yielded].id)) {
      if (fragment) late(yielded, *fragment);
      return;
    }
    // A new call: an index not seen (or whose call was yielded), or a new id at an index in use.
    if (k == npos || (id && open_.at(k).id && *open_.at(k).id != *id)) {
      if (!name) throw json_error(detail::child(fat, "name"), "missing tool name at the start of a streamed call", detail::preview(d));
      if (k != npos) open_.at(k).ended = true;  // its index moves on: nothing more can arrive for it
      pending p;
      p.dialect = tool_call_dialect::openai_chat;
      p.id = std::move(id);
      p.name = std::move(*name);
      p.custom = custom;
      k = start(std::move(p), d);
      chat_index_[index] = k;
      // Calls stream one after another: the earlier ones are out once whole (or ended), in order.
      for (auto it = open_.begin(); it != open_.end() && it->first != k;) {
        if (it->second.dialect != tool_call_dialect::openai_chat) {
          ++it;
          continue;
        }
        if (!it->second.ended && !it->second.scan.whole()) break;
        done.push_back(complete(it->second));
        it = open_.erase(it);
      }
    } else {
      pending& p = open_.at(k);
      if (id && !p.id) p.id = std::move(id);
      if (name && p.name != *name) p.name += *name;  // names are not split in practice
    }
    if (fragment) {
      pending& p = open_.at(k);
      p.arguments += *fragment;
      p.scan.feed(*fragment);
    }
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
    std::size_t yielded = npos;
    std::size_t k = find(item_key_, key, &yielded);
    const bool finished = type == "response.output_item.done";
    if (k == npos) {
      if (finished && yielded != npos) {  // already yielded at arguments.done: the same arguments, or late ones
        if (const auto args = detail::string_field(item, custom ? "input" : "arguments", "/item", false);
            args && *args != yielded_[yielded].arguments)
          late(yielded, *args);
        return;
      }
      pending p;
      p.dialect = tool_call_dialect::openai_responses;
      p.id = detail::string_field(item, "call_id", "/item");
      p.name = detail::name_field(item, "/item");
      p.custom = custom;
      if (const auto args = detail::string_field(item, custom ? "input" : "arguments", "/item", false)) p.arguments = *args;
      k = start(std::move(p), event);
      item_key_[key] = k;
    }
    if (finished) {
      pending& p = open_.at(k);
      if (const auto args = detail::string_field(item, custom ? "input" : "arguments", "/item", false)) p.arguments = *args;
      if (const auto call_id = detail::string_field(item, "call_id", "/item")) p.id = *call_id;
      yield(k, done);
    }
  }

  void responses_delta(const nlohmann::json& event, bool finished, std::vector<tool_call>& done) {
    const std::string key = item_key_of(event, nullptr);
    std::size_t yielded = npos;
    const std::size_t k = find(item_key_, key, &yielded);
    if (k == npos) {
      if (yielded == npos) return;  // not a call we know
      const bool custom = yielded_[yielded].custom;
      if (finished) {
        if (const auto all = detail::string_field(event, custom ? "input" : "arguments", "", false);
            all && *all != yielded_[yielded].arguments)
          late(yielded, *all);
      } else if (const auto fragment = detail::string_field(event, "delta", "", false)) {
        late(yielded, *fragment);
      }
      return;
    }
    pending& p = open_.at(k);
    if (finished) {
      if (const auto all = detail::string_field(event, p.custom ? "input" : "arguments", "", false)) p.arguments = *all;
      yield(k, done);
    } else if (const auto fragment = detail::string_field(event, "delta", "", false)) {
      p.arguments += *fragment;
    }
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
    block_index_[index] = start(std::move(p), event);
  }

  void anthropic_delta(const nlohmann::json& event) {
    const nlohmann::json* delta = detail::member(event, "delta");
    if (delta == nullptr || !delta->is_object()) return;
    const std::optional<std::string> type = detail::string_field(*delta, "type", "/delta", false);
    if (!type || *type != "input_json_delta") return;
    std::size_t yielded = npos;
    const std::size_t k = find(block_index_, block_index(event), &yielded);
    const auto fragment = detail::string_field(*delta, "partial_json", "/delta", false);
    if (!fragment) return;
    if (k != npos) open_.at(k).arguments += *fragment;
    else if (yielded != npos) late(yielded, *fragment);
  }

  void anthropic_stop(const nlohmann::json& event, std::vector<tool_call>& done) {
    const std::size_t k = find(block_index_, block_index(event));
    if (k == npos) return;
    yield(k, done);  // the index stays known: a fragment after the stop is late
  }

  stream_limits limits_{};
  std::map<std::size_t, pending> open_;              // position -> open call, in order of start
  std::vector<yielded_call> yielded_;                // position -> the call as yielded (Chat, Responses, Anthropic)
  std::vector<late_fragment> late_;
  std::map<long long, std::size_t> chat_index_;      // chunk index -> position of its latest call
  std::map<std::string, std::size_t> item_key_;      // Responses item id -> position
  std::map<long long, std::size_t> block_index_;     // Anthropic block index -> position
  std::size_t next_position_ = 0;
  std::size_t completed_ = 0;
};

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_JSON_DETAIL_STREAM_STATE_HPP
