# Sourced by the scripts: `stage NAME COMMAND...` runs COMMAND, prints its wall time as
# "[time] NAME: SECONDS s" and, when MOLD_STAGE_LOG names a file, appends
# "NAME<TAB>MILLISECONDS<TAB>EXIT STATUS" to it (.ci/run prints them all at the end).
# Returns COMMAND's exit status.
stage() {
  local name=$1 start end ms rc=0
  shift
  start=$(date +%s%N)
  "$@" || rc=$?
  end=$(date +%s%N)
  ms=$(((end - start) / 1000000))
  printf '[time] %s: %d.%d s%s\n' "$name" $((ms / 1000)) $((ms % 1000 / 100)) \
    "$([ "$rc" -eq 0 ] || echo " (exit $rc)")" >&2
  if [ -n "${MOLD_STAGE_LOG:-}" ]; then
    printf '%s\t%d\t%d\n' "$name" "$ms" "$rc" >>"$MOLD_STAGE_LOG"
  fi
  return "$rc"
}
