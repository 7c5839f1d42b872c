# shellcheck shell=bash disable=SC2034
# Shared by scripts/check and scripts/demo: colours and the Debian dependency check.

# Colours only on a terminal, never under CI=true or NO_COLOR.
if [[ -t 1 && "${CI:-}" != "true" && -z "${NO_COLOR:-}" ]]; then
  TE_BOLD=$'\e[1m' TE_RED=$'\e[31m' TE_GREEN=$'\e[32m' TE_YELLOW=$'\e[33m' TE_RESET=$'\e[0m'
else
  TE_BOLD='' TE_RED='' TE_GREEN='' TE_YELLOW='' TE_RESET=''
fi

te_info() { printf '%s==> %s%s\n' "$TE_BOLD" "$*" "$TE_RESET" >&2; }
te_warn() { printf '%swarning: %s%s\n' "$TE_YELLOW" "$*" "$TE_RESET" >&2; }
te_error() { printf '%serror: %s%s\n' "$TE_RED" "$*" "$TE_RESET" >&2; }

# te_require_packages PKG...: makes sure the Debian packages are installed. As root it installs the missing
# ones with apt-get; otherwise it prints the command to run and exits 1. Without dpkg it only warns.
te_require_packages() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    te_warn "dpkg-query not found: cannot check for the packages $*; assuming they are installed"
    return 0
  fi
  local missing=() pkg
  for pkg in "$@"; do
    if [[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null)" != ii* ]]; then
      missing+=("$pkg")
    fi
  done
  ((${#missing[@]} == 0)) && return 0
  if [[ "$(id -u)" -eq 0 ]]; then
    te_info "installing missing packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # apt-get's progress goes to stderr: stdout belongs to the program (./scripts/demo --json | jq .).
    apt-get update >&2 || { te_error "apt-get update failed"; exit 1; }
    apt-get install -y --no-install-recommends "${missing[@]}" >&2 || { te_error "apt-get install failed"; exit 1; }
  else
    te_error "missing Debian packages: ${missing[*]}"
    echo "Install them with:" >&2
    echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
}

# The compiler cache (cmake/ToolEffectsCompilerCache.cmake compiles through ccache when it is installed), outside
# the tree so that a fresh clone reuses it: CCACHE_DIR when set, else ${XDG_CACHE_HOME:-~/.cache}/tool_effects-ccache.
# The home directory, not a directory beside the checkout: CI checks a submission out under another path, and
# only the home directory is the same there (base_dir is the source tree, so the paths inside do not matter).
# Seven presets fill about 6 GB.
if [[ -z "${CCACHE_DIR:-}" ]]; then
  CCACHE_DIR="${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/tool_effects-ccache"
  export CCACHE_DIR
fi
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-25G}"
