#!/usr/bin/env python3
"""Generates translation units for the compile-time benchmark of the conflict analysis.

One TU declares a resource hierarchy and N tools with random scoped accesses, then checks the whole list:
  lib      tool_effects: conflict_matrix_v<Tools...> and ParallelBatch<Tools...> (first_conflict_t)
  naive    the Hana-set baseline of naive_hana.hpp: the same N x N table, pair by pair, by hana::set algebra
  headers  only the includes of `lib` (fixed cost; add --variant naive-headers for the baseline's)
  static   the committed suite test/static/many_tools.cpp (300 tools, mixed declarations, default flags)

Both benchmark variants declare the same tools (same seed) and end with static_asserts that compare a sample
of matrix entries, and the batch verdict, with an independent model of the rule computed here in Python; so
a variant that computed something else would not compile.

Benchmark shape (issue 3): 20 resources (4 roots, 8 children, 8 grandchildren); each tool
`effects<reads<a, b>, writes<c>>` over three distinct random resources.

Usage: gen.py --variant lib|naive|headers|naive-headers|static -n N [--seed S] [-o FILE]
"""
import argparse
import random
import sys

# ----------------------------------------------------------------------------------------------- model

def make_resources():
    """20 resources: r0..r3 roots, r4..r11 children (two per root), r12..r19 grandchildren (one per child)."""
    parent = {}
    for i in range(4):
        parent[i] = None
    for i in range(4, 12):
        parent[i] = (i - 4) // 2
    for i in range(12, 20):
        parent[i] = i - 8
    return parent


ROOT = "everything"  # the implicit root in the model


def chain(parent, r):
    """r and its ancestors, up to and including the implicit root."""
    out = []
    while r is not None and r != ROOT:
        out.append(r)
        r = parent[r]
    return out + [ROOT]


def depth(parent, r):
    return len(chain(parent, r)) - 1


def overlap(parent, a, b):
    return a in chain(parent, b) or b in chain(parent, a)


def modes_conflict(x, y):
    return not (x == y and x != "write")


class Tool:
    """A declaration: a list of tags (kind, resources). kinds: reads writes appends flag."""

    def __init__(self, name, tags, declared=True):
        self.name, self.tags, self.declared = name, tags, declared

    def flags(self):
        out = set()
        for kind, arg in self.tags:
            if kind == "flag":
                out.add(arg)
            else:
                out.add("read" if kind == "reads" else "write")
        return out

    def exclusive(self):
        return not self.declared or not self.flags()

    def accesses(self):
        """(resource, mode) in declaration order, as the library orders them."""
        if self.exclusive():
            return []
        acc = []
        for kind, arg in self.tags:
            if kind == "reads":
                acc += [(r, "read") for r in arg]
            elif kind == "writes":
                acc += [(r, "write") for r in arg]
            elif kind == "appends":
                acc += [(r, "append") for r in arg]
            elif arg == "read":
                acc.append((ROOT, "read"))
            elif arg == "write":
                acc.append((ROOT, "write"))
        if "destructive" in self.flags() and not any(m == "write" for _, m in acc):
            acc.append((ROOT, "write"))
        return acc


def conflict(parent, a, b):
    if a.exclusive() or b.exclusive():
        return True
    return any(modes_conflict(x[1], y[1]) and overlap(parent, x[0], y[0])
               for x in a.accesses() for y in b.accesses())


def witness_resource(parent, a, b):
    """The resource a failed ParallelBatch names: the deeper resource of the first conflicting access pair
    (the first tool's on a tie), `everything` when either tool is exclusive."""
    if a.exclusive() or b.exclusive():
        return ROOT
    for x in a.accesses():
        for y in b.accesses():
            if modes_conflict(x[1], y[1]) and overlap(parent, x[0], y[0]):
                return x[0] if depth(parent, x[0]) >= depth(parent, y[0]) else y[0]
    raise AssertionError("no conflict")


def first_conflict(parent, tools):
    for i in range(len(tools)):
        for j in range(i + 1, len(tools)):
            if conflict(parent, tools[i], tools[j]):
                return i, j
    return None


def bench_tools(n, rng):
    tools = []
    for i in range(n):
        a, b, c = rng.sample(range(20), 3)
        tools.append(Tool(f"t{i}", [("reads", [a, b]), ("writes", [c])]))
    return tools


def mixed_tools(n, rng):
    """Every kind of declaration: scoped reads/writes/appends, unscoped read/write, destructive, flags only,
    and one undeclared tool (t7, exclusive)."""
    tools = []
    for i in range(n):
        if i == 7:
            tools.append(Tool(f"t{i}", [], declared=False))
            continue
        kind = rng.random()
        tags = []
        if kind < 0.35:
            tags.append(("reads", rng.sample(range(20), rng.randint(1, 3))))
        elif kind < 0.55:
            tags.append(("reads", rng.sample(range(20), 1)))
            tags.append(("writes", rng.sample(range(20), rng.randint(1, 2))))
        elif kind < 0.75:
            tags.append(("appends", rng.sample(range(20), rng.randint(1, 2))))
        elif kind < 0.83:
            tags.append(("flag", "read"))
        elif kind < 0.88:
            tags.append(("flag", "write"))
        elif kind < 0.93:
            tags.append(("flag", "destructive"))
        else:
            tags.append(("flag", rng.choice(["network", "external", "expensive"])))
        for f in ("idempotent", "network"):
            if rng.random() < 0.2:
                tags.append(("flag", f))
        tools.append(Tool(f"t{i}", tags))
    return tools


# ----------------------------------------------------------------------------------------------- output

def rname(r):
    return "te::everything" if r == ROOT else f"r{r}"


def lib_resources(parent):
    lines = []
    for r in sorted(parent):
        p = parent[r]
        lines.append(f"struct r{r} {{}};" if p is None else f"struct r{r} : te::resource<r{p}> {{}};")
    return lines


def lib_decl(tool):
    if not tool.declared:
        return f"struct {tool.name} {{}};  // undeclared: exclusive"
    parts = []
    for kind, arg in tool.tags:
        parts.append(f"te::{arg}" if kind == "flag" else f"te::{kind}<{', '.join(rname(r) for r in arg)}>")
    return f"struct {tool.name} {{ using side_effects = te::effects<{', '.join(parts)}>; }};"


def sample_pairs(n, rng, count):
    pairs = {(0, 0), (n - 1, n - 1), (0, n - 1)} if n else set()
    while len(pairs) < min(count, n * n):
        pairs.add((rng.randrange(n), rng.randrange(n)))
    return sorted(pairs)


def wrap(names, per_line=16, indent="    "):
    rows = [", ".join(names[i:i + per_line]) for i in range(0, len(names), per_line)]
    return (",\n" + indent).join(rows)


def gen_lib(n, seed, tools, parent, headers_only=False):
    out = [f"// Generated by benchmarks/compile_time/gen.py --variant {'headers' if headers_only else 'lib'} "
           f"-n {n} --seed {seed}. Do not edit.",
           "#include <type_traits>", "", "#include <tool_effects/conflict.hpp>", ""]
    if headers_only:
        return "\n".join(out + ["int main() { return 0; }", ""])
    out += ["namespace te = tool_effects;", ""] + lib_resources(parent) + [""]
    out += [lib_decl(t) for t in tools] + [""]
    names = [t.name for t in tools]
    out += [f"using matrix_t = te::conflict_matrix<{n}>;",
            f"constexpr const matrix_t& matrix = te::conflict_matrix_v<\n    {wrap(names)}>;",
            f"constexpr bool batch = te::ParallelBatch<\n    {wrap(names)}>;", ""]
    rng = random.Random(seed + 1)
    out.append("// A sample of the table and the verdict, against the model in gen.py.")
    for i, j in sample_pairs(n, rng, 24):
        out.append(f"static_assert({'' if conflict(parent, tools[i], tools[j]) else '!'}matrix({i}, {j}));")
    fc = first_conflict(parent, tools)
    out.append(f"static_assert({'!' if fc else ''}batch);")
    out += ["", "int main() { return matrix.size() == 0; }", ""]
    return "\n".join(out)


def gen_naive(n, seed, tools, parent, headers_only=False):
    out = [f"// Generated by benchmarks/compile_time/gen.py --variant {'naive-headers' if headers_only else 'naive'} "
           f"-n {n} --seed {seed}. Do not edit.",
           '#include "naive_hana.hpp"', ""]
    if headers_only:
        return "\n".join(out + ["int main() { return 0; }", ""])
    for r in sorted(parent):
        p = parent[r]
        out.append(f"struct r{r} : naive::resource<{'naive::root' if p is None else f'r{p}'}> {{}};")
    out.append("")
    for t in tools:
        groups = {"reads": [], "writes": [], "appends": []}
        for kind, arg in t.tags:
            groups[kind] += arg
        sets = ", ".join(f"naive::set<{', '.join(f'r{r}' for r in groups[k])}>" for k in ("reads", "writes", "appends"))
        out.append(f"struct {t.name} : naive::tool<{sets}> {{}};")
    names = [t.name for t in tools]
    out += ["", f"constexpr auto matrix = naive::conflict_matrix<\n    {wrap(names)}>();",
            f"constexpr bool batch = naive::ParallelBatch<\n    {wrap(names)}>;", ""]
    rng = random.Random(seed + 1)
    out.append("// A sample of the table and the verdict, against the model in gen.py.")
    for i, j in sample_pairs(n, rng, 24):
        out.append(f"static_assert({'' if conflict(parent, tools[i], tools[j]) else '!'}matrix[{i} * {n} + {j}]);")
    fc = first_conflict(parent, tools)
    out.append(f"static_assert({'!' if fc else ''}batch);")
    out += ["", "int main() { return matrix.size() == 0; }", ""]
    return "\n".join(out)


def gen_static(n, seed, tools, parent):
    """The committed suite: every tool in one matrix and one batch, plus a conflict-free batch of n calls."""
    names = [t.name for t in tools]
    # A conflict-free subset (greedy, each also free with itself), repeated to n calls.
    free = []
    for t in tools:
        if not conflict(parent, t, t) and all(not conflict(parent, t, u) for u in free):
            free.append(t)
    calls = [free[k % len(free)] for k in range(n)]
    fc = first_conflict(parent, tools)
    rng = random.Random(seed + 1)
    out = [
        f"// GENERATED by benchmarks/compile_time/gen.py --variant static -n {n} --seed {seed}; do not edit.",
        "// Regenerate: python3 benchmarks/compile_time/gen.py --variant static -n 300 -o test/static/many_tools.cpp",
        "//",
        f"// Proves that {n} tools compile with the compilers' DEFAULT limits (clang -fbracket-depth=256 and",
        "// -fconstexpr-steps=1048576; g++ template depth 900, -fconstexpr-ops-limit=2^25): conflict_matrix_v and",
        f"// ParallelBatch over all {n} tools (mixed declarations: scoped reads/writes/appends, unscoped read/write,",
        "// destructive, flags only, one undeclared tool), and over a conflict-free batch of the same length.",
        "// Expected values come from an independent model of the rule in gen.py; a sample of the table is also",
        "// cross-checked against conflicts_v, which evaluates the rule pair by pair.",
        "#include <cstddef>",
        "#include <type_traits>",
        "",
        "#include <tool_effects/conflict.hpp>",
        "",
        "namespace many_tools_test {",
        "namespace te = tool_effects;",
        "",
    ] + lib_resources(parent) + [""] + [lib_decl(t) for t in tools] + [""]
    out += [
        f"// All {n} tools: the table, and the first conflicting pair a failed ParallelBatch names.",
        f"constexpr const te::conflict_matrix<{n}>& all = te::conflict_matrix_v<\n    {wrap(names)}>;",
        f"using all_first_conflict = te::first_conflict_t<\n    {wrap(names)}>;",
        f"constexpr bool all_batch = te::ParallelBatch<\n    {wrap(names)}>;",
        "",
    ]
    if fc:
        i, j = fc
        res = rname(witness_resource(parent, tools[i], tools[j]))
        out += ["static_assert(!all_batch && !all.conflict_free());",
                f"static_assert(std::is_same_v<all_first_conflict, te::conflicting_pair<t{i}, t{j}, {res}, {i}, {j}>>);",
                f"static_assert(all.first_conflict().has_value() && (*all.first_conflict())[0] == {i} && "
                f"(*all.first_conflict())[1] == {j});"]
    else:
        out += ["static_assert(all_batch && all.conflict_free());",
                "static_assert(std::is_same_v<all_first_conflict, te::no_conflicting_pair>);"]
    out.append("")
    out.append("// A sample of entries: the model, and conflicts_v (the rule evaluated for one pair).")
    for i, j in sample_pairs(n, rng, 40):
        want = conflict(parent, tools[i], tools[j])
        sym = f" && all({i}, {j}) == all({j}, {i})" if i != j else ""
        out.append(f"static_assert({'' if want else '!'}all({i}, {j}){sym} && all({i}, {j}) == te::conflicts_v<t{i}, t{j}>);")
    out.append("// The undeclared tool t7 conflicts with every call, itself included.")
    out.append(f"static_assert(all(7, 0) && all(7, 7) && all({n - 1}, 7));")
    out += [
        "",
        f"// {n} calls of {len(free)} mutually conflict-free tools (repeated calls included): a valid batch.",
        f"constexpr bool free_batch = te::ParallelBatch<\n    {wrap([t.name for t in calls])}>;",
        f"constexpr const te::conflict_matrix<{n}>& free_matrix = te::conflict_matrix_v<\n    "
        f"{wrap([t.name for t in calls])}>;",
        "static_assert(free_batch && free_matrix.conflict_free() && !free_matrix(0, 0) && "
        f"!free_matrix({n - 1}, {n - 1}));",
        "",
        "}  // namespace many_tools_test",
        "",
    ]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", required=True, choices=["lib", "naive", "headers", "naive-headers", "static"])
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("-o", "--output", default="-")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    parent = make_resources()
    if args.variant == "static":
        text = gen_static(args.n, args.seed, mixed_tools(args.n, rng), parent)
    else:
        tools = bench_tools(args.n, rng)
        if args.variant in ("lib", "headers"):
            text = gen_lib(args.n, args.seed, tools, parent, args.variant == "headers")
        else:
            text = gen_naive(args.n, args.seed, tools, parent, args.variant == "naive-headers")
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
