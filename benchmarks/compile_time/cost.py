#!/usr/bin/env python3
"""What using the library costs at compile time (issue 13), in one table, one run.

Cases (each compiled with g++ and clang++, `-std=c++20 -Wall -Wextra -Wpedantic -Werror`):
  - headers, `-fsyntax-only`: an empty TU, then a TU that includes only one header: the light headers for
    declaring tools (side_effects.hpp, conflict.hpp, registry.hpp, call_description.hpp, plan.hpp), the
    dispatcher (dispatch.hpp, retry.hpp), the umbrella tool_effects.hpp, and boost/asio.hpp;
    `declare_tools`: inputs/declare_tools.cpp, a TU that declares tools and static_asserts about them.
    Reported: cpu, and cpu minus the empty TU's ("library part"; for declare_tools, minus a TU of the
    standard headers it includes itself, <string> and <type_traits>).
  - examples, `-c -o /dev/null` at -O0 and -O2: docs/examples/readme.cpp and the hand-written Asio program
    with three co_spawn/use_future coroutines, twice: inputs/asio_equivalent_asio_hpp.cpp (including
    <boost/asio.hpp>, the program issue 13 measured: its target) and inputs/asio_equivalent.cpp (only the Asio
    headers it uses); ratios readme / each.
    Also readme.cpp "[separate]": compiled with -DTOOL_EFFECTS_SEPARATE_COMPILATION (issue 29), and the one TU of
    tool_effects::compiled (<tool_effects/impl/src.hpp>), which a program compiles once.
  - with --mcp-clients (issue 27), `-c -o /dev/null` at -O0: inputs/mcp_stdio_client.cpp (launches a server,
    lists, calls) and inputs/mcp_http_client.cpp (the same over Streamable HTTP), header-only, "[separate]"
    (TOOL_EFFECTS_SEPARATE_COMPILATION: what a TU of a tool_effects::mcp_compiled user pays), "[baseline]" (the
    same source against --baseline's include/), and the one TU of tool_effects::mcp_compiled
    (<tool_effects/mcp/client/impl/src.hpp>), paid once per program; ratios against the baseline.
  - with --static-turns N,...: a generated TU that runs a static turn of N calls (run_plan over 4 tool types)
    at -O2 with each compiler, capped, one repetition.

Time is CPU time (user + sys of the compiler, from /usr/bin/time): the machine is shared and noisy, and wall
time mostly measures the other jobs. Repetitions are interleaved (repetition 1 of every case, then 2, ...)
and the table shows medians; the ratios come from medians of the same run.

  - with --baseline DIR (another checkout of the project, e.g. `git worktree add /tmp/base <commit>`): every
    header and readme.cpp case again against DIR's include/ and DIR's readme.cpp, labelled "[baseline]" and
    interleaved with the others, so a before/after table comes from one run.

Usage: cost.py [--reps 5] [--example-reps 3] [--compilers g++,clang++] [--static-turns 256,1024] [--mcp-clients]
               [--cap 300] [--baseline DIR] [--headers json.hpp,mcp.hpp] [--out benchmarks/compile_time/results]
Writes <out>/cost.csv (every run) and <out>/cost.md (the table), and prints the table.
"""
import argparse
import csv
import os
import platform
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
INCLUDE = os.path.join(ROOT, "include")
BASE = ["-std=c++20", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]
SEPARATE = "-DTOOL_EFFECTS_SEPARATE_COMPILATION"

HEADERS = ["side_effects.hpp", "conflict.hpp", "registry.hpp", "call_description.hpp", "plan.hpp",
           "retry_policy.hpp", "diagnostics.hpp", "coordination.hpp", "dispatch.hpp", "retry.hpp",
           "tool_effects.hpp", "json.hpp", "mcp.hpp", "mcp/http.hpp", "mcp/oauth.hpp", "version.hpp"]
# Headers that need nlohmann::json and, for mcp.hpp, Boost.Process's define (as the tool_effects::mcp target sets).
EXTRA_FLAGS = {"json.hpp": [], "mcp.hpp": ["-DBOOST_PROCESS_USE_STD_FS=1"], "mcp/http.hpp": ["-DBOOST_PROCESS_USE_STD_FS=1"]}


def static_turn_source(n):
    tools = [("reader", "te::effects<te::reads<users>>"), ("writer", "te::effects<te::writes<users>>"),
             ("logger", "te::effects<te::appends<audit>>"), ("fetch", "te::effects<te::network, te::idempotent>")]
    lines = ["#include <boost/asio/thread_pool.hpp>", "#include <tool_effects/dispatch.hpp>",
             "namespace te = tool_effects;", "struct users : te::resource<> {};", "struct audit : te::resource<> {};"]
    for name, fx in tools:
        lines.append(f"struct {name} {{ using side_effects = {fx}; int operator()(int x) const {{ return x + 1; }} }};")
    calls = ", ".join(f"te::call({tools[i % len(tools)][0]}{{}}, {i})" for i in range(n))
    lines += ["int main() {", "  boost::asio::thread_pool pool(2);", f"  auto r = te::run_plan(pool, {calls});",
              "  return r.get<0>().value() == 1 ? 0 : 1;", "}"]
    return "\n".join(lines) + "\n"


def measure(cxx, flags, src, cap, include=INCLUDE):
    cmd = (["/usr/bin/time", "-f", "%e %M %U %S", "timeout", "-s", "KILL", str(cap), cxx] + BASE + ["-I", include] +
           flags + [src])
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
    last = p.stderr.strip().splitlines()[-1].split() if p.stderr.strip() else []
    if p.returncode != 0 or len(last) != 4:
        err = next((l for l in p.stderr.splitlines() if "error" in l), p.stderr[-300:])
        return None, f"failed ({'timeout ' + str(cap) + ' s' if p.returncode in (124, 137) else err[:200]})"
    return (float(last[0]), int(last[1]) / 1024, float(last[2]) + float(last[3])), ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--example-reps", type=int, default=3)
    ap.add_argument("--compilers", default="g++,clang++")
    ap.add_argument("--static-turns", default="")
    ap.add_argument("--cap", type=int, default=300)
    ap.add_argument("--skip-headers", action="store_true")
    ap.add_argument("--headers", default="", help="only these of the library's headers (comma-separated)")
    ap.add_argument("--skip-examples", action="store_true")
    ap.add_argument("--mcp-clients", action="store_true", help="issue 27's stdio and HTTP client TUs")
    ap.add_argument("--baseline", default="", help="another checkout to measure side by side")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="te_cost_")

    def tu(name, text):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    syntax = ["-fsyntax-only"]
    cases = []  # (group, label, cxx, flags, src, reps[, include])
    trees = [("", INCLUDE, ROOT)]
    if a.baseline:
        trees.append((" [baseline]", os.path.join(os.path.abspath(a.baseline), "include"), os.path.abspath(a.baseline)))
    for cxx in a.compilers.split(","):
        if not a.skip_headers:
            cases.append(("headers", "empty TU", cxx, syntax, tu("empty.cpp", "int main() {}\n"), a.reps))
            for h in [h for h in HEADERS if not a.headers or h in a.headers.split(",")]:
                for tag, inc, _ in trees:
                    if os.path.exists(os.path.join(inc, "tool_effects", h)):
                        cases.append(("headers", h + tag, cxx, syntax + EXTRA_FLAGS.get(h, []),
                                      tu(h.replace("/", "_") + ".cpp", f"#include <tool_effects/{h}>\n"), a.reps, inc))
            cases.append(("headers", "boost/asio.hpp", cxx, syntax, tu("asio.cpp", "#include <boost/asio.hpp>\n"),
                          a.reps))
            cases.append(("headers", "<string> <type_traits>", cxx, syntax,
                          tu("std.cpp", "#include <string>\n#include <type_traits>\n"), a.reps))
            cases.append(("headers", "declare_tools", cxx, syntax, os.path.join(HERE, "inputs", "declare_tools.cpp"),
                          a.reps))
        if not a.skip_examples:
            for opt in ("-O0", "-O2"):
                fl = [opt, "-c", "-o", "/dev/null"]
                for tag, inc, root in trees:
                    cases.append(("examples " + opt, "readme.cpp" + tag, cxx, fl,
                                  os.path.join(root, "docs", "examples", "readme.cpp"), a.example_reps, inc))
                # Separate compilation (issue 29): the same readme.cpp with TOOL_EFFECTS_SEPARATE_COMPILATION, and
                # the one TU of tool_effects::compiled (<tool_effects/impl/src.hpp>), paid once per program.
                cases.append(("examples " + opt, "readme.cpp [separate]", cxx, fl + [SEPARATE],
                              os.path.join(ROOT, "docs", "examples", "readme.cpp"), a.example_reps))
                cases.append(("examples " + opt, "impl/src.hpp (once per program)", cxx, fl + [SEPARATE],
                              tu("src.cpp", "#include <tool_effects/impl/src.hpp>\n"), a.example_reps))
                cases.append(("examples " + opt, "asio_equivalent_asio_hpp.cpp", cxx, fl,
                              os.path.join(HERE, "inputs", "asio_equivalent_asio_hpp.cpp"), a.example_reps))
                cases.append(("examples " + opt, "asio_equivalent.cpp", cxx, fl,
                              os.path.join(HERE, "inputs", "asio_equivalent.cpp"), a.example_reps))
    if a.mcp_clients:
        mcp_flags = ["-O0", "-c", "-o", "/dev/null", "-DBOOST_PROCESS_USE_STD_FS=1"]
        for cxx in a.compilers.split(","):
            for kind in ("stdio", "http"):
                src = os.path.join(HERE, "inputs", f"mcp_{kind}_client.cpp")
                for tag, inc, _ in trees:
                    cases.append(("mcp clients -O0", f"mcp_{kind}_client.cpp{tag}", cxx, mcp_flags, src, a.reps, inc))
                cases.append(("mcp clients -O0", f"mcp_{kind}_client.cpp [separate]", cxx, mcp_flags + [SEPARATE], src,
                              a.reps))
            cases.append(("mcp clients -O0", "mcp/client/impl/src.hpp (once per program)", cxx, mcp_flags + [SEPARATE],
                          tu("mcp_src.cpp", "#include <tool_effects/mcp/client/impl/src.hpp>\n"), a.reps))
    for n in filter(None, a.static_turns.split(",")):
        for cxx in a.compilers.split(","):
            cases.append(("static turn -O2", f"{n} calls", cxx, ["-O2", "-c", "-o", "/dev/null"],
                          tu(f"turn{n}.cpp", static_turn_source(int(n))), 1))

    runs = {i: [] for i in range(len(cases))}
    notes = {}
    started = time.strftime("%Y-%m-%d %H:%M")
    load0 = os.getloadavg()[0]
    for rep in range(max(c[5] for c in cases)):
        for i, (group, label, cxx, flags, src, reps, *inc) in enumerate(cases):
            if rep >= reps or i in notes:
                continue
            r, note = measure(cxx, flags, src, a.cap, *inc)
            if r is None:
                notes[i] = note
            else:
                runs[i].append(r)
    load1 = os.getloadavg()[0]

    def med(i, k):
        return statistics.median(r[k] for r in runs[i]) if runs[i] else float("nan")

    index = {(c[0], c[1], c[2]): i for i, c in enumerate(cases)}
    def best(i):
        return min(r[2] for r in runs[i]) if runs[i] else float("nan")

    rows = ["| group | case | compiler | cpu s (median) | cpu s (best) | wall s (median) | peak MiB | runs | note |",
            "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for i, (group, label, cxx, flags, src, reps, *_) in enumerate(cases):
        note = notes.get(i, "")
        if not note and group == "headers" and label != "empty TU":
            # declare_tools includes <string> and <type_traits> itself: its library part is over that TU.
            base = "<string> <type_traits>" if label == "declare_tools" else "empty TU"
            empty = index.get(("headers", base, cxx))
            note = f"library part {med(i, 2) - med(empty, 2):.2f} s" + (" (over <string> <type_traits>)" if
                                                                          label == "declare_tools" else "")
            asio = index.get(("headers", "boost/asio.hpp", cxx))
            if label.startswith("tool_effects.hpp") and asio is not None:
                note += f"; {med(i, 2) / med(asio, 2):.2f}× boost/asio.hpp"
        if not note and group.startswith("mcp clients") and label.startswith("mcp_") and "[baseline]" not in label:
            base = index.get((group, label.split(" ")[0] + " [baseline]", cxx))
            if base is not None:
                note = (f"{med(i, 2) / med(base, 2):.2f}× the baseline (best/best {best(i) / best(base):.2f}×)")
        if not note and label.startswith("mcp/client/impl/src.hpp"):
            note = "the one TU of tool_effects::mcp_compiled, compiled once per program"
        if not note and label.startswith("impl/src.hpp"):
            note = "the one TU of tool_effects::compiled, compiled once per program"
        if not note and label.startswith("readme.cpp"):
            full = index[(group, "asio_equivalent_asio_hpp.cpp", cxx)]
            eq = index[(group, "asio_equivalent.cpp", cxx)]
            note = (f"{med(i, 2) / med(full, 2):.2f}× asio_equivalent_asio_hpp.cpp (target ≤ 1.15×; best/best "
                    f"{best(i) / best(full):.2f}×); {med(i, 2) / med(eq, 2):.2f}× asio_equivalent.cpp")
        rows.append(f"| {group} | {label} | {cxx} | {med(i, 2):.2f} | {best(i):.2f} | {med(i, 0):.2f} | {med(i, 1):.0f} | "
                    f"{len(runs[i])} | {note} |")
    head = (f"Run of {started}, {platform.node()}, load average {load0:.1f} before and {load1:.1f} after; "
            f"{subprocess.run(['g++', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}, "
            f"{subprocess.run(['clang++', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}.")
    table = head + "\n\n" + "\n".join(rows) + "\n"
    print(table)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "cost.md"), "w") as f:
        f.write(table)
    with open(os.path.join(a.out, "cost.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["group", "case", "compiler", "wall_s", "peak_mib", "cpu_s"])
        for i, c in enumerate(cases):
            for r in runs[i]:
                w.writerow([c[0], c[1], c[2], r[0], f"{r[1]:.0f}", f"{r[2]:.3f}"])


if __name__ == "__main__":
    main()
