#!/usr/bin/env bash
# One Pulumi stack, and so one database fork, per pull request. The workflows in
# .github/workflows/ (pr-fork.yml, pr-fork-nightly.yml) call exactly this script; so can a person.
#   ./pr-stack.sh up 1234        preview, then apply stack pr-1234.<owner>.<repo>; the job gets DATABASE_URL
#   ./pr-stack.sh destroy 1234   delete the PR's fork (onDestroy: "delete") and remove its stack
#   ./pr-stack.sh pause 1234     stop the PR's fork, keeping it and its data (paused: true)
#   ./pr-stack.sh resume 1234    start it again (`up` does too: a PR's job wants a running database)
#   ./pr-stack.sh pause all      the same for every PR stack of this repository (the nightly workflow)
# The stack and its fork are both named pr-<number>.<owner>.<repo>, from GITHUB_REPOSITORY
# (owner/repo; GitHub sets it, a person sets it by hand): a running fork with the same name and
# source is adopted, so two repositories forking one service under the PR number alone would take,
# and on close delete, each other's fork. Only this repository's stacks are listed or touched.
# Each action works in a fresh checkout, as every CI job gets: it sets all the config the program
# needs, or reads it from the stack's outputs, and never relies on a Pulumi.<stack>.yaml written by
# an earlier job. It waits while another run holds the stack's lock.
# Needs the pulumi CLI, jq, and a state backend (PULUMI_BACKEND_URL and PULUMI_CONFIG_PASSPHRASE,
# or PULUMI_ACCESS_TOKEN); Tiger Cloud credentials, the console's key pair TIGER_PUBLIC_KEY and
# TIGER_SECRET_KEY (long-lived; a bearer TIGER_API_KEY expires), and TIGER_PROJECT_ID, read by the
# provider when it runs, never written to config or logs; SOURCE_SERVICE_ID, the service each pull
# request forks (for `up`).
set -euo pipefail
cd "$(dirname "$0")"

usage() {
  echo "usage: $0 up|destroy|pause|resume <pull request number>, or $0 pause|resume all" >&2
  exit 2
}
action="${1:-}"
pr="${2:-}"
export PULUMI_SKIP_UPDATE_CHECK=true
# Every provider process watches its engine from its start, so a cancelled run leaves none behind.
export NODE_OPTIONS="--require=pulumi-tigercloud/watchdog${NODE_OPTIONS:+ $NODE_OPTIONS}"
# How long to wait for a stack another run holds (a PR's push and the nightly pause, say).
lock_wait="${PR_STACK_LOCK_WAIT_SECONDS:-1800}"

# The PR numbers that have a stack of this repository (pr-<number>.<owner>.<repo>; another
# repository's stacks in the same backend are not ours). Fails, with the backend's message, when
# the backend cannot say: "no stack" must never be guessed from a failure.
pr_numbers() {
  local stacks
  if ! stacks="$(pulumi stack ls --json --non-interactive)"; then
    echo "pr-stack.sh: the state backend could not list the stacks (its message is above); nothing was changed." >&2
    return 1
  fi
  jq -r --arg suffix ".$suffix" '.[].name | sub("^.*/"; "") | select(endswith($suffix)) | .[0:-($suffix | length)]
    | select(test("^pr-[0-9]+$")) | ltrimstr("pr-")' <<<"$stacks"
}

# Runs a pulumi command that takes the stack's lock; while another run holds it, waits and tries
# again. A lock no run holds any more (a run cancelled half-way leaves it) is explained.
locked() {
  local out waited=0 status
  out="$(mktemp)"
  while :; do
    status=0
    "$@" 2>&1 | tee "$out" || status=$?
    if [ "$status" -eq 0 ]; then
      rm -f "$out"
      return 0
    fi
    if ! grep -qE "currently locked|Another update is currently in progress" "$out"; then
      rm -f "$out"
      return "$status"
    fi
    if [ "$waited" -ge "$lock_wait" ]; then
      rm -f "$out"
      echo "pr-stack.sh: stack $stack is still locked after ${waited} s. If no other run is working on it (a run that was" >&2
      echo "cancelled half-way leaves its lock behind), clear the lock with: pulumi cancel --stack $stack --yes" >&2
      echo "then run this job again; refresh first (pulumi refresh --stack $stack) if that run was changing something." >&2
      return "$status"
    fi
    echo "pr-stack.sh: another run holds stack $stack; waiting (${waited} s so far, at most ${lock_wait} s)."
    sleep 5
    waited=$((waited + 5))
  done
}

# The config every `up` needs, set in this checkout. The fork's source is the one the stack was
# made with (its output), so that a pause never re-forks from a new SOURCE_SERVICE_ID.
configure() {
  local paused="$1" source
  source="$(pulumi stack output --stack "$stack" sourceServiceId 2>/dev/null || true)"
  source="${source:-${SOURCE_SERVICE_ID:-}}"
  if [ -z "$source" ]; then
    echo "pr-stack.sh: set SOURCE_SERVICE_ID to the service each pull request forks." >&2
    return 1
  fi
  pulumi config set --stack "$stack" sourceServiceId "$source" &&
    pulumi config set --stack "$stack" repository "$GITHUB_REPOSITORY" &&
    pulumi config set --stack "$stack" prNumber "$pr" &&
    pulumi config set --stack "$stack" paused "$paused"
}

# pause or resume one stack: an in-place update of the one fork, stop (or start); no new fork, no
# data lost.
# Each step says `|| return`: called as `set_paused n || ...`, bash ignores `set -e` inside.
set_paused() {
  stack="pr-$1.$suffix"
  pr="$1"
  pulumi stack select "$stack" --non-interactive || return
  configure "$([ "$action" = pause ] && echo true || echo false)" || return
  locked pulumi up --stack "$stack" --yes --skip-preview --non-interactive
}

case "$pr" in
  all) [ "$action" = pause ] || [ "$action" = resume ] || usage ;;
  '' | *[!0-9]*) usage ;;
esac
# owner/repo: an owner has no "." (so pr-12.acme.shop reads back), a repository name no "/".
if ! [[ "${GITHUB_REPOSITORY:-}" =~ ^[A-Za-z0-9_-]+/[A-Za-z0-9._-]+$ ]]; then
  if [ -n "${GITHUB_REPOSITORY:-}" ]; then got="\"$GITHUB_REPOSITORY\""; else got=unset; fi
  echo "pr-stack.sh: set GITHUB_REPOSITORY to the pull requests' repository as owner/repo (acme/shop; GitHub sets it in a workflow); it is $got." >&2
  exit 2
fi
suffix="${GITHUB_REPOSITORY/\//.}"
stack="pr-$pr.$suffix"

case "$action" in
  up)
    : "${SOURCE_SERVICE_ID:?set SOURCE_SERVICE_ID to the service each pull request forks}"
    pulumi stack select --create "$stack" --non-interactive
    # A new commit may change the source on purpose: `up` takes it from the environment.
    pulumi config set --stack "$stack" sourceServiceId "$SOURCE_SERVICE_ID"
    pulumi config set --stack "$stack" repository "$GITHUB_REPOSITORY"
    pulumi config set --stack "$stack" prNumber "$pr"
    pulumi config set --stack "$stack" paused false
    locked pulumi preview --stack "$stack" --non-interactive
    locked pulumi up --stack "$stack" --yes --skip-preview --non-interactive
    url="$(pulumi stack output --stack "$stack" --show-secrets databaseUrl)"
    if [ -n "${GITHUB_ENV:-}" ]; then
      # Masked first: from here on GitHub prints *** wherever the URL would appear.
      if [ "${GITHUB_ACTIONS:-}" = true ]; then echo "::add-mask::$url"; fi
      echo "DATABASE_URL=$url" >>"$GITHUB_ENV"
      echo "DATABASE_URL is set for the next steps of this job."
    else
      echo "The PR's database URL: pulumi stack output --stack $stack --show-secrets databaseUrl"
    fi
    ;;
  destroy)
    if ! numbers="$(pr_numbers)"; then exit 1; fi
    if ! grep -qx "$pr" <<<"$numbers"; then
      echo "No stack $stack: nothing to destroy."
      exit 0
    fi
    pulumi stack select "$stack" --non-interactive
    configure false
    # Destroy deletes the fork (the program's onDestroy: "delete"); then the stack goes.
    locked pulumi destroy --stack "$stack" --yes --skip-preview --non-interactive
    pulumi stack rm "$stack" --yes --non-interactive
    ;;
  pause | resume)
    if ! numbers="$(pr_numbers)"; then exit 1; fi
    if [ "$pr" != all ]; then
      if ! grep -qx "$pr" <<<"$numbers"; then
        echo "No stack $stack: nothing to $action."
        exit 0
      fi
      set_paused "$pr"
      exit 0
    fi
    # Every PR's stack; one that fails does not keep the others from their change, but fails the run.
    [ -n "$numbers" ] || echo "No stack pr-<number>.$suffix: nothing to $action."
    failed=""
    for n in $numbers; do
      echo "== stack pr-$n.$suffix: $action"
      set_paused "$n" || failed="$failed pr-$n.$suffix"
    done
    if [ -n "$failed" ]; then
      echo "pr-stack.sh: could not $action:$failed (see above)." >&2
      exit 1
    fi
    ;;
  *) usage ;;
esac
