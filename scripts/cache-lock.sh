# Sourced by the scripts that build into the tools' cache (ensure-pulumi, ensure-timescaledb): one
# of them at a time per cache holds "$CACHE_ROOT/.<name>.lock" for as long as it runs, so that two
# first runs started together (the demo beside the tests on a fresh machine) do not build into the
# same folder at once; the second waits, then finds the first's build. Where flock is missing
# (macOS), nothing is locked.
cache_lock() {
  mkdir -p "$CACHE_ROOT"
  command -v flock >/dev/null 2>&1 || return 0
  exec 9>"$CACHE_ROOT/.$1.lock"
  if ! flock -n 9; then
    printf '%s: waiting for another run that builds into %s\n' "$1" "$CACHE_ROOT" >&2
    flock 9
  fi
}
