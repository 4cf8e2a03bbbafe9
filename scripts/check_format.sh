#!/usr/bin/env bash
# Checks that C++ files follow .clang-format (clang-format --dry-run --Werror; Debian's
# clang-format 14, installed by scripts/setup.sh). Which files:
#   scripts/check_format.sh            the files the latest change touches: those changed since
#                                      the merge base with origin/main, or, when that is HEAD
#                                      itself (CI's fresh clone of main), since HEAD~1; plus
#                                      uncommitted and untracked ones. Outside a git checkout,
#                                      or in a clone with a single commit, it skips (exit 0).
#   scripts/check_format.sh --all      every tracked C++ file
#   scripts/check_format.sh FILE...    these files
# Exits 1 listing the files that differ and the command that fixes them.
set -euo pipefail
cd "$(dirname "$0")/.."

is_cpp() { [[ "$1" =~ \.(h|hpp|cpp|cc|cu|cuh)$ ]]; }

files=()
if [ $# -gt 0 ] && [ "$1" != "--all" ]; then
  files=("$@")
elif ! git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  echo "check_format: not a git checkout; skipped"
  exit 0
elif [ "${1:-}" = "--all" ]; then
  mapfile -t files < <(git ls-files)
else
  base=""
  if git rev-parse --verify -q origin/main > /dev/null; then
    base=$(git merge-base HEAD origin/main 2> /dev/null || true)
  fi
  if [ -z "$base" ] || [ "$base" = "$(git rev-parse HEAD)" ]; then
    base=$(git rev-parse --verify -q 'HEAD~1' || true)
  fi
  if [ -z "$base" ]; then
    echo "check_format: no earlier commit to compare with (a single-commit clone); skipped"
    exit 0
  fi
  # Changed since base, in commits or in the work tree (deleted files excluded), and new files.
  mapfile -t files < <({
    git diff --name-only --diff-filter=ACMR "$base"
    git ls-files --others --exclude-standard
  } | sort -u)
fi

checked=()
for f in "${files[@]}"; do
  if is_cpp "$f" && [ -f "$f" ]; then checked+=("$f"); fi
done
if [ ${#checked[@]} -eq 0 ]; then
  echo "check_format: no C++ files to check"
  exit 0
fi
if ! command -v clang-format > /dev/null; then
  echo "check_format: clang-format not found (hint: scripts/setup.sh installs it)" >&2
  exit 1
fi

bad=()
for f in "${checked[@]}"; do
  clang-format --dry-run --Werror "$f" > /dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check_format: ${#bad[@]} of ${#checked[@]} C++ files differ from .clang-format" \
    "($(clang-format --version)):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "fix with: clang-format -i ${bad[*]}" >&2
  exit 1
fi
echo "check_format: ${#checked[@]} C++ files follow .clang-format"
