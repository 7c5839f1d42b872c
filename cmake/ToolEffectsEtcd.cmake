# etcd for the tests (issue 18): the ctest fixture `etcd_cluster` (three etcd members on 127.0.0.1 on free
# ports, started by test/etcd/cluster.py, stopped by pid; data under <build>/etcd-cluster) and the model check
# of the lock protocol (scripts/model-check, label model).
# Included from the top-level CMakeLists.txt when tests or examples are built (the example etcd_fleet needs
# the fixture too, also in the release preset, which builds no tests).
#
# Provides:
#   TOOL_EFFECTS_ETCD_STATE_DIR        where the fixture writes cluster.json (pids, endpoints)
#   tool_effects_etcd_target(<target>) compile definitions naming it and the cluster script
#   ctest etcd.cluster.start / etcd.cluster.stop   FIXTURES_SETUP / FIXTURES_CLEANUP etcd_cluster
#   ctest model.etcd_lock              spin on model/etcd_lock.pml (skipped when spin is missing; option
#                                      TOOL_EFFECTS_MODEL_CHECK, on by default for g++ Debug builds)
include_guard(GLOBAL)

set(TOOL_EFFECTS_ETCD_STATE_DIR "${PROJECT_BINARY_DIR}/etcd-cluster")
set(TOOL_EFFECTS_ETCD_CLUSTER_SCRIPT "${PROJECT_SOURCE_DIR}/test/etcd/cluster.py")
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME etcd.cluster.start
           COMMAND "${Python3_EXECUTABLE}" "${TOOL_EFFECTS_ETCD_CLUSTER_SCRIPT}" start "${TOOL_EFFECTS_ETCD_STATE_DIR}")
  add_test(NAME etcd.cluster.stop
           COMMAND "${Python3_EXECUTABLE}" "${TOOL_EFFECTS_ETCD_CLUSTER_SCRIPT}" stop "${TOOL_EFFECTS_ETCD_STATE_DIR}")
  # exit 77: no etcd binary; the tests that need the cluster then skip
  set_tests_properties(etcd.cluster.start PROPERTIES FIXTURES_SETUP etcd_cluster TIMEOUT 120 LABELS etcd
                                                     SKIP_RETURN_CODE 77)
  set_tests_properties(etcd.cluster.stop PROPERTIES FIXTURES_CLEANUP etcd_cluster TIMEOUT 60 LABELS etcd)
endif()

# The model check does not depend on the C++ compiler: by default one build of the check runs it (g++
# without sanitizers, i.e. the gcc preset), not every preset.
set(_te_model_default OFF)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT TOOL_EFFECTS_SANITIZER AND NOT CMAKE_BUILD_TYPE STREQUAL "Release")
  set(_te_model_default ON)
endif()
option(TOOL_EFFECTS_MODEL_CHECK "Run scripts/model-check --quick (spin) as the ctest model.etcd_lock"
       ${_te_model_default})
if(TOOL_EFFECTS_MODEL_CHECK)
  add_test(NAME model.etcd_lock COMMAND "${PROJECT_SOURCE_DIR}/scripts/model-check" --quick)
  set_tests_properties(model.etcd_lock PROPERTIES TIMEOUT 600 LABELS model SKIP_RETURN_CODE 77)
endif()

# TLS endpoints need OpenSSL (TOOL_EFFECTS_ETCD_TLS=1); without it the tests of https endpoints skip.
find_package(OpenSSL QUIET)

function(tool_effects_etcd_target target)
  target_compile_definitions(${target} PRIVATE "TOOL_EFFECTS_ETCD_STATE_DIR=\"${TOOL_EFFECTS_ETCD_STATE_DIR}\""
                                               "TOOL_EFFECTS_ETCD_CLUSTER_SCRIPT=\"${TOOL_EFFECTS_ETCD_CLUSTER_SCRIPT}\""
                                               "TOOL_EFFECTS_ETCD_MAKE_CERTS=\"${PROJECT_SOURCE_DIR}/test/etcd/make_certs.sh\"")
  if(OpenSSL_FOUND)
    target_compile_definitions(${target} PRIVATE TOOL_EFFECTS_ETCD_TLS=1)
    target_link_libraries(${target} PRIVATE OpenSSL::SSL OpenSSL::Crypto)
  endif()
endfunction()
