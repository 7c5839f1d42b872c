// Call identity without JSON: the identity policy over a user-defined
// argument type, identity keys, idempotency keys, per-target call
// descriptions and the repeat detector.
#include <tool_effects/identity.hpp>

#include <chrono>
#include <map>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

namespace identity_test_ns {

namespace {

// A flat argument type: name -> text. Its canonical form is "k=v;" in key order.
struct flat_args {
  std::map<std::string, std::string> values;
};

}  // namespace

}  // namespace identity_test_ns

template <>
struct tool_effects::identity_arguments<identity_test_ns::flat_args> {
  static std::optional<std::string> string_arg(const identity_test_ns::flat_args& a, std::string_view name) {
    const auto it = a.values.find(std::string(name));
    if (it == a.values.end()) return std::nullopt;
    return it->second;
  }
  static std::string canonical(const identity_test_ns::flat_args& a) {
    std::string out;
    for (const auto& [k, v] : a.values) out += k + "=" + v + ";";
    return out;
  }
};

namespace identity_test_ns {

namespace {

using namespace tool_effects;
using policy = basic_identity_policy<flat_args>;
using namespace std::chrono_literals;

static_assert(IdentityArguments<flat_args>);
static_assert(!IdentityArguments<int>);

TEST(StableHash, MatchesPublishedFnv1a64Vectors) {
  EXPECT_EQ(stable_hash(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(stable_hash("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(stable_hash("foobar"), 0x85944171f73967e8ull);
  static_assert(stable_hash("a") == 0xaf63dc4c8601ec8cull, "usable at compile time");
}

TEST(StableHash, HexIsSixteenLowercaseDigits) {
  EXPECT_EQ(to_hex(0), "0000000000000000");
  EXPECT_EQ(to_hex(0xaf63dc4c8601ec8cull), "af63dc4c8601ec8c");
  EXPECT_EQ(to_hex(~0ull), "ffffffffffffffff");
}

TEST(Operation, DefaultWithoutOperationArg) {
  const flat_args args{{{"action", "pdf_fields"}}};
  EXPECT_EQ(operation_of(policy{}, args), "default");
}

TEST(Operation, ValueOfTheDeclaredArgument) {
  policy p;
  p.operation_arg = "action";
  EXPECT_EQ(operation_of(p, flat_args{{{"action", "pdf_fields"}}}), "pdf_fields");
  EXPECT_EQ(operation_of(p, flat_args{{{"path", "x"}}}), "default") << "declared but absent";
}

TEST(Target, FromArgumentOrFunction) {
  policy p;
  EXPECT_EQ(target_of(p, flat_args{{{"path", "/a"}}}), std::nullopt) << "nothing declared";
  p.target_arg = "path";
  EXPECT_EQ(target_of(p, flat_args{{{"path", "/a"}}}), "/a");
  EXPECT_EQ(target_of(p, flat_args{{{"url", "u"}}}), std::nullopt);
  p.target_fn = [](const flat_args& a) -> std::optional<std::string> {
    const auto it = a.values.find("command");
    if (it == a.values.end()) return std::nullopt;
    return it->second.substr(0, it->second.find(' '));  // command prefix
  };
  EXPECT_TRUE(p.declares_target());
  EXPECT_EQ(target_of(p, flat_args{{{"command", "git status -s"}, {"path", "/a"}}}), "git")
      << "target_fn replaces target_arg";
}

TEST(Identify, TargetKeyIgnoresOtherArguments) {
  policy p;
  p.target_arg = "path";
  const auto id = identify("read_file", p, flat_args{{{"path", "/etc/hosts"}, {"offset", "3"}}});
  EXPECT_EQ(id.tool, "read_file");
  EXPECT_EQ(id.operation, "default");
  EXPECT_EQ(id.target, "/etc/hosts");
  EXPECT_EQ(id.key, "529d314d-8a71-5985-8842-ec502091f72d");
  // Other arguments do not matter once a target is known.
  EXPECT_EQ(identify("read_file", p, flat_args{{{"path", "/etc/hosts"}, {"offset", "9"}}}).key, id.key);
  EXPECT_NE(identify("read_file", p, flat_args{{{"path", "/etc/passwd"}}}).key, id.key);
  EXPECT_NE(identify("write_file", p, flat_args{{{"path", "/etc/hosts"}}}).key, id.key);
}

TEST(Identify, OperationSeparatesActionsOfOneTool) {
  // The seed's bug: every office.pdf_fields repeat collapsed to (office, default).
  policy p;
  p.operation_arg = "action";
  p.target_arg = "file";
  const auto a = identify("office", p, flat_args{{{"action", "pdf_fields"}, {"file", "x.pdf"}}});
  const auto b = identify("office", p, flat_args{{{"action", "docx_text"}, {"file", "x.pdf"}}});
  EXPECT_EQ(a.operation, "pdf_fields");
  EXPECT_EQ(a.key, "4dd1c553-1432-5847-bceb-7a49baf58fc3") << "uuid5(identity ns, target|office|1|pdf_fields|x.pdf)";
  EXPECT_NE(a.key, b.key);
}

TEST(Identify, WithoutTargetKeyHashesCanonicalArguments) {
  const flat_args args{{{"q", "weather"}, {"n", "3"}}};
  const auto id = identify("search", policy{}, args);
  EXPECT_EQ(id.target, std::nullopt);
  EXPECT_EQ(id.key, "dd741e73-16aa-59a1-a191-571766fcf190");
  EXPECT_EQ(identify("search", policy{}, flat_args{{{"n", "3"}, {"q", "weather"}}}).key, id.key);
  EXPECT_NE(identify("search", policy{}, flat_args{{{"n", "4"}, {"q", "weather"}}}).key, id.key);

  policy p;
  p.operation_arg = "action";
  p.target_arg = "path";  // declared, but this call has none: falls back to the arguments
  const flat_args op_args{{{"action", "list"}}};
  EXPECT_EQ(identify("office", p, op_args).key, "211555f9-ac4e-5e37-947f-8ea6f137a355");
}

TEST(Identify, KeyFunctionOverridesAndMayDecline) {
  policy p;
  p.target_arg = "path";
  p.key_fn = [](std::string_view tool, const flat_args& a) -> std::optional<std::string> {
    if (!a.values.count("session")) return std::nullopt;
    return std::string(tool) + "@" + a.values.at("session");
  };
  EXPECT_EQ(identify("shell", p, flat_args{{{"session", "s1"}, {"path", "/x"}}}).key, "shell@s1");
  EXPECT_EQ(identify("shell", p, flat_args{{{"path", "/x"}}}).key, "4d3e1d6f-06d2-535c-83d7-0578876f6959") << "declined: default key";
}

TEST(IdempotencyKey, StablePerIdentityAndScope) {
  policy p;
  p.target_arg = "to";
  const auto id = identify("send_email", p, flat_args{{{"to", "a@example.org"}}});
  const auto k = idempotency_key(id, "turn-3/call-1");
  EXPECT_EQ(id.key, "1a5c3995-8b6c-5210-b12e-52d8deaa8fce");
  EXPECT_EQ(k, "b49f0fe6-3bc2-5595-be38-153b516dbf34") << "computed independently with Python's uuid.uuid5";
  EXPECT_EQ(k, idempotency_key(id, "turn-3/call-1")) << "every attempt of the call gets the same key";
  EXPECT_NE(k, idempotency_key(id, "turn-3/call-2")) << "another call";
  const auto other = identify("send_email", p, flat_args{{{"to", "b@example.org"}}});
  EXPECT_NE(k, idempotency_key(other, "turn-3/call-1")) << "another identity";
  EXPECT_EQ(k.size(), 36u);
  EXPECT_EQ(k[14], '5') << "RFC 9562 version 5";
}

TEST(DescribeCall, TargetGoesOnScopedAccessesOnly) {
  const auto tmpl =
      describe_runtime("write_file", effect_set{effect::read}, {{"fs/files", access_mode::write, std::nullopt}});
  ASSERT_EQ(tmpl.accesses.size(), 2u);  // scoped write + root read (unexplained `read` flag)
  const auto call = describe_call(tmpl, std::string("/tmp/a"));
  ASSERT_EQ(call.accesses.size(), 2u);
  for (const auto& a : call.accesses) {
    if (a.resource.empty())
      EXPECT_EQ(a.target, std::nullopt) << "the root stays whole";
    else
      EXPECT_EQ(a.target, "/tmp/a");
  }
  EXPECT_EQ(describe_call(tmpl, std::nullopt).accesses, tmpl.accesses);
}

TEST(DescribeCall, PerTargetConflicts) {
  const auto tmpl = describe_runtime("write_file", {}, {{"fs/files", access_mode::write, std::nullopt}});
  const auto a = describe_call(tmpl, std::string("/tmp/a"));
  const auto a2 = describe_call(tmpl, std::string("/tmp/a"));
  const auto b = describe_call(tmpl, std::string("/tmp/b"));
  const auto whole = describe_call(tmpl, std::nullopt);
  EXPECT_FALSE(conflicts(a, b)) << "different targets of one resource";
  EXPECT_TRUE(conflicts(a, a2)) << "same target: serialised";
  EXPECT_TRUE(conflicts(a, whole)) << "no target holds the whole resource";
  EXPECT_TRUE(conflicts(tmpl, b));
}

TEST(RepeatDetector, FlagsThirdOccurrenceWithinLastCalls) {
  repeat_detector d({.threshold = 3, .last_calls = 4, .within = std::nullopt});
  EXPECT_EQ(d.observe("k").count, 1u);
  EXPECT_FALSE(d.observe("x").repeated);
  const auto second = d.observe("k");
  EXPECT_EQ(second.count, 2u);
  EXPECT_FALSE(second.repeated);
  const auto third = d.observe("k");
  EXPECT_EQ(third.count, 3u);
  EXPECT_TRUE(third.repeated);
}

TEST(RepeatDetector, OldCallsSlideOutOfTheWindow) {
  repeat_detector d({.threshold = 2, .last_calls = 3, .within = std::nullopt});
  EXPECT_FALSE(d.observe("k").repeated);
  d.observe("a");
  d.observe("b");
  const auto v = d.observe("k");  // window: a, b, k — the first k slid out
  EXPECT_EQ(v.count, 1u);
  EXPECT_FALSE(v.repeated);
  EXPECT_TRUE(d.observe("k").repeated);
}

TEST(RepeatDetector, TimeWindowUsesCallerTime) {
  using tp = repeat_detector::clock::time_point;
  repeat_detector d({.threshold = 2, .last_calls = 100, .within = 10s});
  const tp t0{};
  EXPECT_FALSE(d.observe("k", t0).repeated);
  EXPECT_FALSE(d.observe("k", t0 + 11s).repeated) << "first call is older than 10 s";
  EXPECT_TRUE(d.observe("k", t0 + 20s).repeated) << "second call is 9 s old";
}

TEST(RepeatDetector, ObservesIdentitiesAndResets) {
  policy p;
  p.target_arg = "path";
  repeat_detector d({.threshold = 2, .last_calls = 5, .within = std::nullopt});
  EXPECT_FALSE(d.observe(identify("read_file", p, flat_args{{{"path", "/a"}, {"n", "1"}}})).repeated);
  EXPECT_TRUE(d.observe(identify("read_file", p, flat_args{{{"path", "/a"}, {"n", "2"}}})).repeated)
      << "same target: same identity";
  d.reset();
  EXPECT_FALSE(d.observe(identify("read_file", p, flat_args{{{"path", "/a"}}})).repeated);
}

TEST(RepeatDetector, RejectsBadPolicyNamingTheField) {
  auto message = [](repeat_policy p) -> std::string {
    try {
      repeat_detector d(p);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message({.threshold = 0, .last_calls = 5, .within = std::nullopt}).find("threshold"), std::string::npos);
  EXPECT_NE(message({.threshold = 4, .last_calls = 3, .within = std::nullopt}).find("last_calls (3)"),
            std::string::npos);
  EXPECT_NE(message({.threshold = 2, .last_calls = 3, .within = 0s}).find("within"), std::string::npos);
  EXPECT_EQ(message({}), "no error");
}

}  // namespace

}  // namespace identity_test_ns
