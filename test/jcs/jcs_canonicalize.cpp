// jcs_canonicalize: reads one JSON document per line on stdin and prints its
// RFC 8785 canonical form (tool_effects::canonical_json) on one line each;
// a line that does not parse or has no canonical form prints "ERROR <what>".
// Driven by check_jcs.py, which compares it with an independent
// implementation (Python's json module and the RFC's number rule).
#include <tool_effects/json.hpp>

#include <exception>
#include <iostream>
#include <string>

int main() {
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    try {
      std::cout << tool_effects::canonical_json(nlohmann::json::parse(line)) << '\n';
    } catch (const std::exception& e) {
      std::cout << "ERROR " << e.what() << '\n';
    }
  }
  return 0;
}
