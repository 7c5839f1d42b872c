// The filesystem tools of docs/examples/mcp_fs_server.cpp (and of `./scripts/demo --mcp`'s second half):
// read_text_file, get_file_info, list_directory, directory_tree, write_file, edit_file, create_directory and
// move_file over one root directory, named and shaped as @modelcontextprotocol/server-filesystem's, each with
// its side effects declared. Served by `mcp_server`, their tools/list carries the hints derived from these
// declarations and the scoped accesses under _meta, so a client that trusts the server needs no overlay: the
// declarations below say what tool_effects' mcp_filesystem_overlay says for the npm server by hand.
//
// Paths are untrusted (the model writes them): `mcp_fs::confine` accepts a path relative to the root or an
// absolute one under it, refuses a `..` component, and resolves symbolic links one component at a time as
// the kernel does, refusing a path that ends outside the root. Every refusal is an `mcp_fs::fs_error` whose
// `reason()` is one of the stable strings below; `what()` reads "<reason>: <detail>". The check and the use
// are two steps: a process that swaps a directory for a symlink in between can still escape (openat2's
// RESOLVE_BENEATH would close that race; a demo server whose root only its own tools change does not need it).
#ifndef TOOL_EFFECTS_EXAMPLES_MCP_FS_TOOLS_HPP
#define TOOL_EFFECTS_EXAMPLES_MCP_FS_TOOLS_HPP

#include <algorithm>
#include <cstddef>
#include <deque>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include <tool_effects/json.hpp>

namespace mcp_fs {

namespace te = tool_effects;
namespace stdfs = std::filesystem;
using nlohmann::json;

// Stable failure reasons.
inline constexpr std::string_view path_invalid = "path_invalid";            ///< empty, a NUL byte, too long, too many links
inline constexpr std::string_view path_has_dotdot = "path_has_dotdot";      ///< a `..` component
inline constexpr std::string_view path_outside_root = "path_outside_root";  ///< outside the root, also through a symlink
inline constexpr std::string_view not_found = "not_found";                  ///< no such file or directory
inline constexpr std::string_view wrong_type = "wrong_type";                ///< a directory where a file is expected, or the reverse
inline constexpr std::string_view too_large = "too_large";                  ///< a file or content above max_file_bytes
inline constexpr std::string_view edit_not_found = "edit_not_found";        ///< an edit's oldText is not in the file
inline constexpr std::string_view destination_exists = "destination_exists";///< move_file does not overwrite
inline constexpr std::string_view io_failed = "io_failed";                  ///< the operating system refused

// Bounds.
inline constexpr std::size_t max_path_bytes = 4096;
inline constexpr std::size_t max_file_bytes = std::size_t{1} << 20;  // read and written, per call
inline constexpr std::size_t max_entries = 1000;                    // listed per call (then "[... more]")
inline constexpr int max_tree_depth = 8;
inline constexpr int max_symlink_hops = 40;  // as Linux's MAXSYMLINKS

/// A refused or failed filesystem call: `reason()` is one of the strings above.
class fs_error : public std::runtime_error {
 public:
  fs_error(std::string_view reason, const std::string& detail)
      : std::runtime_error(te::detail::str_cat(reason, ": ", detail)), reason_(reason) {}
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }

 private:
  std::string reason_;
};

namespace detail {
inline bool within(const stdfs::path& p, const stdfs::path& root) {
  auto r = root.begin();
  auto i = p.begin();
  for (; r != root.end(); ++r, ++i)
    if (r->empty()) break;  // a trailing separator of the root
    else if (i == p.end() || *i != *r) return false;
  return true;
}
inline std::string shown(std::string_view path) { return te::detail::quote_input(path); }
}  // namespace detail

/// The real path inside `root` (absolute, canonical) that `path` names. `path` is relative to the root or
/// absolute under it; symbolic links are followed component by component (a link's `..` steps back from
/// where the link is), and the result must be the root or below it. Components that do not exist yet are
/// taken as they are (a file to create). Throws `fs_error` (path_invalid, path_has_dotdot, path_outside_root).
inline stdfs::path confine(const stdfs::path& root, std::string_view path) {
  if (path.empty() || path.size() > max_path_bytes || path.find('\0') != std::string_view::npos)
    throw fs_error(path_invalid, te::detail::str_cat("expected a path of 1 to ", std::to_string(max_path_bytes),
                                                     " bytes without NUL, got ", std::to_string(path.size()), " bytes"));
  const stdfs::path p(path);
  for (const auto& c : p)
    if (c == "..") throw fs_error(path_has_dotdot, detail::shown(path));
  std::deque<stdfs::path> todo;
  if (p.is_absolute()) {
    if (!detail::within(p.lexically_normal(), root)) throw fs_error(path_outside_root, detail::shown(path));
    for (const auto& c : p.lexically_normal().lexically_relative(root)) todo.push_back(c);
  } else {
    for (const auto& c : p) todo.push_back(c);
  }
  stdfs::path cur = root;
  int hops = 0;
  while (!todo.empty()) {
    const stdfs::path c = todo.front();
    todo.pop_front();
    if (c.empty() || c == ".") continue;
    if (c == "..") {  // from a link's target only
      cur = cur.parent_path();
      continue;
    }
    const stdfs::path next = cur / c;
    std::error_code ec;
    if (!stdfs::is_symlink(stdfs::symlink_status(next, ec))) {
      cur = next;
      continue;
    }
    if (++hops > max_symlink_hops) throw fs_error(path_invalid, te::detail::str_cat("too many symbolic links: ", detail::shown(path)));
    const stdfs::path target = stdfs::read_symlink(next, ec);
    if (ec) throw fs_error(io_failed, te::detail::str_cat(detail::shown(path), ": ", ec.message()));
    std::vector<stdfs::path> parts(target.begin(), target.end());
    if (target.is_absolute()) {
      cur = target.root_path();
      parts.erase(parts.begin());  // the root directory
    }
    todo.insert(todo.begin(), parts.begin(), parts.end());
  }
  if (!detail::within(cur, root))
    throw fs_error(path_outside_root, te::detail::str_cat(detail::shown(path), " (through a symbolic link)"));
  return cur;
}

/// The tools' one shared state: the canonical root.
struct root_dir {
  stdfs::path path;
  explicit root_dir(const stdfs::path& p) : path(stdfs::canonical(p)) {}
  [[nodiscard]] stdfs::path at(std::string_view p) const { return confine(path, p); }
};

/// The resource every tool touches. A tool on one file names it by `target_arg = "path"`, so calls on
/// different files do not conflict; a tool on directories holds the whole of `fs`.
struct fs {
  static constexpr std::string_view resource_name = "fs";
};

namespace detail {
inline std::string read_file(const stdfs::path& p, std::string_view shown_path) {
  std::error_code ec;
  const auto st = stdfs::status(p, ec);
  if (!stdfs::exists(st)) throw fs_error(not_found, shown(shown_path));
  if (!stdfs::is_regular_file(st)) throw fs_error(wrong_type, te::detail::str_cat(shown(shown_path), " is not a file"));
  if (stdfs::file_size(p, ec) > max_file_bytes)
    throw fs_error(too_large, te::detail::str_cat(shown(shown_path), " has more than ", std::to_string(max_file_bytes), " bytes"));
  std::ifstream in(p, std::ios::binary);
  std::string s;
  s.resize(max_file_bytes + 1);
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<std::size_t>(in.gcount()));
  if (s.size() > max_file_bytes) throw fs_error(too_large, shown(shown_path));
  return s;
}
inline void write_file(const stdfs::path& p, std::string_view content, std::string_view shown_path) {
  if (content.size() > max_file_bytes)
    throw fs_error(too_large, te::detail::str_cat("content for ", shown(shown_path), " has more than ", std::to_string(max_file_bytes), " bytes"));
  std::error_code ec;
  if (stdfs::is_directory(p, ec)) throw fs_error(wrong_type, te::detail::str_cat(shown(shown_path), " is a directory"));
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) throw fs_error(io_failed, te::detail::str_cat("cannot write ", shown(shown_path)));
}
inline std::vector<stdfs::directory_entry> entries(const stdfs::path& dir, std::string_view shown_path) {
  std::error_code ec;
  if (!stdfs::exists(dir, ec)) throw fs_error(not_found, shown(shown_path));
  if (!stdfs::is_directory(dir, ec)) throw fs_error(wrong_type, te::detail::str_cat(shown(shown_path), " is not a directory"));
  std::vector<stdfs::directory_entry> out;
  for (stdfs::directory_iterator it(dir, ec), end; !ec && it != end && out.size() <= max_entries; it.increment(ec))
    out.push_back(*it);
  if (ec) throw fs_error(io_failed, te::detail::str_cat(shown(shown_path), ": ", ec.message()));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
  return out;  // at most max_entries + 1: the caller says "more"
}
inline json tree(const stdfs::path& dir, int depth, std::size_t& budget, std::string_view shown_path) {
  json out = json::array();
  for (const auto& e : entries(dir, shown_path)) {
    if (budget == 0) {
      out.push_back({{"name", "[... more]"}, {"type", "more"}});
      break;
    }
    --budget;
    std::error_code ec;
    const bool is_dir = e.is_directory(ec) && !e.is_symlink(ec);  // a link is listed, not followed
    json node = {{"name", e.path().filename().string()}, {"type", is_dir ? "directory" : "file"}};
    if (is_dir) node["children"] = depth + 1 < max_tree_depth ? tree(e.path(), depth + 1, budget, shown_path) : json::array();
    out.push_back(std::move(node));
  }
  return out;
}
}  // namespace detail

struct path_args {
  std::string path;
};
BOOST_DESCRIBE_STRUCT(path_args, (), (path))

struct write_args {
  std::string path;
  std::string content;
};
BOOST_DESCRIBE_STRUCT(write_args, (), (path, content))

struct edit {  // member names are the npm server's wire names
  std::string oldText;
  std::string newText;
};
BOOST_DESCRIBE_STRUCT(edit, (), (oldText, newText))
struct edit_args {
  std::string path;
  std::vector<edit> edits;
};
BOOST_DESCRIBE_STRUCT(edit_args, (), (path, edits))

struct move_args {
  std::string source;
  std::string destination;
};
BOOST_DESCRIBE_STRUCT(move_args, (), (source, destination))

struct read_text_file {
  static constexpr std::string_view name = "read_text_file";
  static constexpr std::string_view description = "The text of one file under the root (at most 1 MiB).";
  static constexpr std::string_view target_arg = "path";
  using arguments = path_args;
  using side_effects = te::effects<te::reads<fs>>;
  const root_dir* root = nullptr;
  json operator()(const json& args) const {
    const auto a = te::parse_arguments<path_args>(args);
    return detail::read_file(root->at(a.path), a.path);
  }
};

struct get_file_info {
  static constexpr std::string_view name = "get_file_info";
  static constexpr std::string_view description = "The type and size of one file or directory under the root.";
  static constexpr std::string_view target_arg = "path";
  using arguments = path_args;
  using side_effects = te::effects<te::reads<fs>>;
  const root_dir* root = nullptr;
  json operator()(const json& args) const {
    const auto a = te::parse_arguments<path_args>(args);
    const auto p = root->at(a.path);
    std::error_code ec;
    const auto st = stdfs::status(p, ec);
    if (!stdfs::exists(st)) throw fs_error(not_found, detail::shown(a.path));
    const bool dir = stdfs::is_directory(st);
    return te::detail::str_cat("type: ", dir ? "directory" : "file", "\nsize: ", std::to_string(dir ? 0 : stdfs::file_size(p, ec)));
  }
};

struct list_directory {
  static constexpr std::string_view name = "list_directory";
  static constexpr std::string_view description = "The entries of one directory under the root, [DIR] or [FILE] each.";
  using arguments = path_args;
  using side_effects = te::effects<te::reads<fs>>;
  const root_dir* root = nullptr;
  json operator()(const json& args) const {
    const auto a = te::parse_arguments<path_args>(args);
    std::string out;
    const auto es = detail::entries(root->at(a.path), a.path);
    for (std::size_t i = 0; i < es.size(); ++i) {
      if (i == max_entries) {
        out += "[... more]\n";
        break;
      }
      std::error_code ec;
      out += es[i].is_directory(ec) ? "[DIR] " : "[FILE] ";
      out += es[i].path().filename().string();
      out += '\n';
    }
    return out;
  }
};

struct directory_tree {
  static constexpr std::string_view name = "directory_tree";
  static constexpr std::string_view description = "The tree under one directory as JSON (depth 8, 1000 entries at most).";
  using arguments = path_args;
  using side_effects = te::effects<te::reads<fs>>;
  const root_dir* root = nullptr;
  json operator()(const json& args) const {
    const auto a = te::parse_arguments<path_args>(args);
    std::size_t budget = max_entries;
    return detail::tree(root->at(a.path), 0, budget, a.path).dump(2);
  }
};

struct write_file {
  static constexpr std::string_view name = "write_file";
  static constexpr std::string_view description = "Creates or overwrites one file under the root.";
  static constexpr std::string_view target_arg = "path";
  using arguments = write_args;
  using side_effects = te::effects<te::writes<fs>, te::destructive, te::idempotent>;
  const root_dir* root = nullptr;
  json operator()(const json& args) const {
    const auto a = te::parse_arguments<write_args>(args);
    detail::write_file(root->at(a.path), a.content, a.path);
    return te::detail::str_cat("wrote ", std::to_string(a.content.size()), " bytes to ", a.path);
  }
};

struct edit_file {
  static constexpr std::string_view name = "edit_file";
  static constexpr std::string_view description = "Replaces the first occurrence of each edit's oldText by its newText, in order.";
  static constexpr std::string_view target_arg = "path";
  using arguments = edit_args;
  using side_effects = te::effects<te::writes<fs>, te::destructive>;
  const root_dir* root = nullptr;
  json operator()(const json& args) const {
    const auto a = te::parse_arguments<edit_args>(args);
    const auto p = root->at(a.path);
    std::string text = detail::read_file(p, a.path);
    for (std::size_t i = 0; i < a.edits.size(); ++i) {
      const auto& e = a.edits[i];
      const auto at = e.oldText.empty() ? std::string::npos : text.find(e.oldText);
      if (at == std::string::npos)
        throw fs_error(edit_not_found, te::detail::str_cat("edit ", std::to_string(i), ": oldText is not in ", detail::shown(a.path)));
      text.replace(at, e.oldText.size(), e.newText);
    }
    detail::write_file(p, text, a.path);
    return te::detail::str_cat("applied ", std::to_string(a.edits.size()), " edits to ", a.path);
  }
};

struct create_directory {
  static constexpr std::string_view name = "create_directory";
  static constexpr std::string_view description = "Creates a directory (and its parents) under the root; one that exists is kept.";
  using arguments = path_args;
  using side_effects = te::effects<te::writes<fs>, te::idempotent>;
  const root_dir* root = nullptr;
  json operator()(const json& args) const {
    const auto a = te::parse_arguments<path_args>(args);
    std::error_code ec;
    stdfs::create_directories(root->at(a.path), ec);
    if (ec) throw fs_error(io_failed, te::detail::str_cat(detail::shown(a.path), ": ", ec.message()));
    return te::detail::str_cat("created ", a.path);
  }
};

struct move_file {
  static constexpr std::string_view name = "move_file";
  static constexpr std::string_view description = "Moves or renames a file or directory under the root; never overwrites.";
  using arguments = move_args;
  using side_effects = te::effects<te::writes<fs>, te::destructive>;
  const root_dir* root = nullptr;
  json operator()(const json& args) const {
    const auto a = te::parse_arguments<move_args>(args);
    const auto from = root->at(a.source);
    const auto to = root->at(a.destination);
    std::error_code ec;
    if (!stdfs::exists(stdfs::symlink_status(from, ec))) throw fs_error(not_found, detail::shown(a.source));
    if (stdfs::exists(stdfs::symlink_status(to, ec))) throw fs_error(destination_exists, detail::shown(a.destination));
    stdfs::rename(from, to, ec);
    if (ec) throw fs_error(io_failed, te::detail::str_cat(detail::shown(a.source), " -> ", detail::shown(a.destination), ": ", ec.message()));
    return te::detail::str_cat("moved ", a.source, " to ", a.destination);
  }
};

using registry = te::tool_registry<read_text_file, get_file_info, list_directory, directory_tree, write_file, edit_file,
                                   create_directory, move_file>;

/// The tools over `root` (which must outlive the registry).
inline registry make_registry(const root_dir& root) {
  return registry(read_text_file{&root}, get_file_info{&root}, list_directory{&root}, directory_tree{&root},
                  write_file{&root}, edit_file{&root}, create_directory{&root}, move_file{&root});
}

}  // namespace mcp_fs

#endif  // TOOL_EFFECTS_EXAMPLES_MCP_FS_TOOLS_HPP
