// Identity and idempotency keys as a property (issue 12): 10^6 random
// identities drawn from a small, separator-heavy alphabet (so that fields
// that only differ by where a "." ":" "," or digit falls are common), checked
// exactly: two keys are equal only when the identities are equal. And the
// keys are the same in another process and in another language (Python's
// uuid.uuid5 computed the pinned values). TOOL_EFFECTS_IDENTITY_SAMPLES
// overrides the sample count (e.g. lower under slow sanitizers).
#include <tool_effects/identity.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "soak_support.hpp"

namespace identity_keys_test_ns {

namespace {

// Arguments with an optional operation, an optional target and an opaque payload.
struct sample_args {
  std::optional<std::string> op;
  std::optional<std::string> target;
  std::string payload;
};

}  // namespace

}  // namespace identity_keys_test_ns

template <>
struct tool_effects::identity_arguments<identity_keys_test_ns::sample_args> {
  static std::optional<std::string> string_arg(const identity_keys_test_ns::sample_args& a, std::string_view name) {
    if (name == "op") return a.op;
    if (name == "target") return a.target;
    return std::nullopt;
  }
  static std::string canonical(const identity_keys_test_ns::sample_args& a) { return a.payload; }
};

namespace identity_keys_test_ns {

namespace {

namespace te = tool_effects;

// Every string of length 0..3 over the alphabet: 1 + 5 + 25 + 125 = 156 values.
const std::vector<std::string>& field_values() {
  static const std::vector<std::string> values = [] {
    const std::string alphabet = "a.:,1";
    std::vector<std::string> v{""};
    for (std::size_t len = 1; len <= 3; ++len) {
      const std::size_t from = v.size();
      for (std::size_t i = 0; i < from; ++i)
        if (v[i].size() == len - 1)
          for (const char c : alphabet) v.push_back(v[i] + c);
    }
    return v;
  }();
  return values;
}

std::size_t samples() {
  if (const char* s = std::getenv("TOOL_EFFECTS_IDENTITY_SAMPLES")) return std::strtoull(s, nullptr, 10);
  return soak::under_sanitizer ? 200'000 : 1'000'000;  // the sanitizer presets run the property at a fifth
}

// The first 64 and last 64 bits of a UUID's text form.
std::pair<std::uint64_t, std::uint64_t> uuid_bits(const std::string& key) {
  std::string hex;
  for (const char c : key)
    if (c != '-') hex += c;
  EXPECT_EQ(hex.size(), 32u) << key;
  return {std::stoull(hex.substr(0, 16), nullptr, 16), std::stoull(hex.substr(16), nullptr, 16)};
}

TEST(KeyProperty, DistinctIdentitiesAndScopesNeverShareAKey) {
  const auto& v = field_values();
  const std::uint64_t n = v.size();
  te::basic_identity_policy<sample_args> with_op, plain;
  with_op.operation_arg = "op";
  with_op.target_arg = "target";
  plain.target_arg = "target";
  std::mt19937_64 rng(12);
  std::uniform_int_distribution<std::size_t> pick(0, v.size() - 1);
  struct row {
    std::pair<std::uint64_t, std::uint64_t> identity_key, idempotency_key;
    std::uint64_t identity, call;  // exact codes of the identity and of (identity, scope)
  };
  std::vector<row> rows;
  const std::size_t count = samples();
  rows.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t tool = pick(rng), op = pick(rng), payload = pick(rng), scope = pick(rng);
    const bool declared = rng() & 1, has_target = rng() & 1;
    const sample_args args{declared ? std::optional(v[op]) : std::nullopt,
                           has_target ? std::optional(v[payload]) : std::nullopt, v[payload]};
    const auto id = te::identify(v[tool], declared ? with_op : plain, args);
    // The identity as documented: (kind, tool, declared, operation if declared, target or payload).
    const std::uint64_t code =
        (((has_target * 2 + declared) * n + tool) * n + (declared ? op : 0)) * n + payload;
    rows.push_back({uuid_bits(id.key), uuid_bits(te::idempotency_key(id, v[scope])), code, code * n + scope});
  }
  auto check = [&](auto key_of, auto code_of, const char* what) {
    std::sort(rows.begin(), rows.end(), [&](const row& a, const row& b) {
      return std::pair(key_of(a), code_of(a)) < std::pair(key_of(b), code_of(b));
    });
    std::size_t distinct = 0, collisions = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (i == 0 || key_of(rows[i]) != key_of(rows[i - 1])) ++distinct;
      else if (code_of(rows[i]) != code_of(rows[i - 1])) ++collisions;
    }
    EXPECT_EQ(collisions, 0u) << what;
    return distinct;
  };
  const std::size_t ids = check([](const row& r) { return r.identity_key; }, [](const row& r) { return r.identity; },
                                "identity keys");
  const std::size_t calls = check([](const row& r) { return r.idempotency_key; }, [](const row& r) { return r.call; },
                                  "idempotency keys");
  // Equal keys only for equal identities, and the sample had many of both.
  std::vector<std::uint64_t> codes;
  codes.reserve(rows.size());
  for (const auto& r : rows) codes.push_back(r.identity);
  std::sort(codes.begin(), codes.end());
  EXPECT_EQ(ids, static_cast<std::size_t>(std::unique(codes.begin(), codes.end()) - codes.begin()));
  codes.clear();
  for (const auto& r : rows) codes.push_back(r.call);
  std::sort(codes.begin(), codes.end());
  EXPECT_EQ(calls, static_cast<std::size_t>(std::unique(codes.begin(), codes.end()) - codes.begin()));
  RecordProperty("distinct_identities", static_cast<int>(ids));
  std::printf("%zu samples: %zu distinct identities, %zu distinct (identity, scope) pairs, 0 shared keys\n",
              rows.size(), ids, calls);
}

TEST(KeyProperty, TheHeadIsUnambiguous) {
  // "a.b" + "c" and "a" + "b.c" (the old `.`-joined head), and field shifts.
  te::basic_identity_policy<sample_args> p;
  p.operation_arg = "op";
  EXPECT_NE(te::identify("a.b", p, sample_args{"c", {}, "x"}).key, te::identify("a", p, sample_args{"b.c", {}, "x"}).key);
  EXPECT_NE(te::identify("a", p, sample_args{"b", {}, "1:x,"}).key, te::identify("a", p, sample_args{"b1:x", {}, ","}).key);
  te::call_identity x{"t", "default", std::nullopt, "k"};
  te::call_identity y{"t", "default", std::nullopt, "k1:s"};
  EXPECT_NE(te::idempotency_key(x, "1:s,"), te::idempotency_key(y, ","));
}

// Pinned keys: computed independently with Python's uuid.uuid5 (see
// docs/recovery.md, "Key format"), so equal in every run, process and language.
struct pinned {
  const char* tool;
  bool declared;
  const char* op;
  const char* target;  // nullptr: none
  const char* payload;
  const char* identity_key;
  const char* scope;
  const char* idempotency_key;
};
constexpr std::array<pinned, 3> pinned_keys{{
    {"send_email", false, "", "a@example.org", "", "1a5c3995-8b6c-5210-b12e-52d8deaa8fce", "turn-3/call-1",
     "b49f0fe6-3bc2-5595-be38-153b516dbf34"},
    {"search", false, "", nullptr, R"({"n":3,"q":"weather"})", "fa299354-0aaa-5a07-aef3-147a9bfa4c4e", "s/1",
     nullptr},
    {"office", true, "pdf_fields", "x.pdf", "", "4dd1c553-1432-5847-bceb-7a49baf58fc3", "", nullptr},
}};

std::string keys_line() {
  std::string out;
  for (const auto& k : pinned_keys) {
    te::basic_identity_policy<sample_args> p;
    p.target_arg = "target";
    if (k.declared) p.operation_arg = "op";
    const sample_args args{std::string(k.op), k.target ? std::optional<std::string>(k.target) : std::nullopt,
                           k.payload};
    const auto id = te::identify(k.tool, p, args);
    out += id.key;
    out += ' ';
    out += te::idempotency_key(id, k.scope);
    out += ' ';
  }
  return out;
}

TEST(KeyStability, PinnedValuesFromAnIndependentImplementation) {
  for (const auto& k : pinned_keys) {
    te::basic_identity_policy<sample_args> p;
    p.target_arg = "target";
    if (k.declared) p.operation_arg = "op";
    const auto id = te::identify(
        k.tool, p, sample_args{std::string(k.op), k.target ? std::optional<std::string>(k.target) : std::nullopt, k.payload});
    EXPECT_EQ(id.key, k.identity_key) << k.tool;
    if (k.idempotency_key) {
      EXPECT_EQ(te::idempotency_key(id, k.scope), k.idempotency_key) << k.tool;
    }
  }
  EXPECT_EQ(te::uuid_v5(te::identity_key_namespace(), ""), "d02d925a-35a8-5bbd-a062-65a34478edd8");
}

// Run in a child process (TOOL_EFFECTS_PRINT_KEYS=1): prints this process's keys.
TEST(KeyStability, PrintForAnotherProcess) {
  if (std::getenv("TOOL_EFFECTS_PRINT_KEYS") == nullptr) GTEST_SKIP() << "only in the child process";
  std::printf("KEYS %s\n", keys_line().c_str());
}

TEST(KeyStability, AnotherProcessComputesTheSameKeys) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd =
      "TOOL_EFFECTS_PRINT_KEYS=1 '" + self + "' --gtest_filter=KeyStability.PrintForAnotherProcess 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe.get()) != nullptr) output += buf;
  const auto at = output.find("KEYS ");
  ASSERT_NE(at, std::string::npos) << output;
  const std::string theirs = output.substr(at + 5, output.find('\n', at) - at - 5);
  EXPECT_EQ(theirs, keys_line()) << "a second process derived other keys";
  EXPECT_EQ(theirs.size(), 6u * 37u);
}

}  // namespace

}  // namespace identity_keys_test_ns
