# CPack settings: a Debian package of the installed tree (headers, CMake package files, pkg-config files, and
# the program tool-effects-gateway when it is built).
#
#   cmake -S . -B build/deb -DTOOL_EFFECTS_BUILD_TESTS=OFF -DTOOL_EFFECTS_BUILD_EXAMPLES=OFF \
#         -DTOOL_EFFECTS_BUILD_BENCHMARKS=OFF
#   cmake --build build/deb                # tool_effects::compiled (cpack does not build)
#   cd build/deb && cpack -G DEB           # -> tool-effects-dev_0.1.0_amd64.deb
#
# The headers are architecture-independent; the package is not, because it carries tool_effects::compiled
# (libtool_effects_compiled.a, separate compilation; -DTOOL_EFFECTS_BUILD_COMPILED=OFF gives the header-only
# tool-effects-dev_<version>_all.deb). It depends on the Debian packages a consumer needs:
# Boost 1.81 headers (Hana, Asio, MP11, Process v2, UUID) and, for the json and mcp components,
# nlohmann-json3-dev. Whether tool_effects::json / ::mcp are in it depends on what this build found: they are
# when nlohmann-json3-dev was installed at configure time.
include_guard(GLOBAL)

set(CPACK_PACKAGE_NAME "tool-effects-dev")
set(CPACK_PACKAGE_VENDOR "tool_effects")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Declared side effects of LLM agent tools (header-only C++20)")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "tool_effects maintainers <tool-effects@localhost>")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE_1_0.txt")
set(CPACK_GENERATOR "DEB" CACHE STRING "CPack generators (cpack -G overrides)")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
if(NOT TOOL_EFFECTS_HAS_COMPILED AND NOT TOOL_EFFECTS_HAS_GATEWAY)
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE "all")
endif()  # else the build's architecture (dpkg --print-architecture): the package carries tool_effects::compiled
set(CPACK_DEBIAN_PACKAGE_SECTION "libdevel")
set(_te_deb_depends "libboost1.81-dev (>= 1.81)")
if(TOOL_EFFECTS_HAS_JSON)
  string(APPEND _te_deb_depends ", nlohmann-json3-dev (>= 3)")
endif()
if(TOOL_EFFECTS_HAS_GATEWAY)  # /usr/bin/tool-effects-gateway links SQLite (and OpenSSL 3 when it was found)
  string(APPEND _te_deb_depends ", libsqlite3-0 (>= 3)")
  if(TARGET tool_effects_mcp_auth)
    string(APPEND _te_deb_depends ", libssl3 (>= 3)")
  endif()
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${_te_deb_depends}")
# tool_effects::mcp_auth (the MCP server's token verifiers) needs OpenSSL 3's headers and libraries; only that
# component does, so the package recommends them rather than depending on them.
if(TOOL_EFFECTS_HAS_MCP_AUTH)
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libssl-dev (>= 3)")
endif()
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "pkgconf, cmake (>= 3.25)")
set(CPACK_PACKAGE_DESCRIPTION
    "An LLM agent's tools declare their side effects once; concepts, static_asserts, a Boost.Asio dispatcher and \
runtime paths (JSON calls, MCP servers, manifests) derive from that declaration. With the CMake package \
(find_package(tool_effects)) and pkg-config files (tool_effects, tool_effects-json, tool_effects-mcp, \
tool_effects-mcp-auth when built with OpenSSL).")
include(CPack)
