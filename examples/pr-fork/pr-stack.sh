#!/usr/bin/env bash
# One Pulumi stack, and so one database fork, per pull request. The workflow beside it
# (.github/workflows/pr-fork.yml) calls exactly this script; so can a person.
#   ./pr-stack.sh up 1234        preview, then apply stack pr-1234; hand the job its DATABASE_URL
#   ./pr-stack.sh destroy 1234   stop the PR's fork and remove its stack
#   ./pr-stack.sh pause 1234     stop the PR's fork, keeping it and its data (paused: true)
#   ./pr-stack.sh resume 1234    start it again (`up` does too: a PR's job wants a running database)
# Needs the pulumi CLI and a state backend (PULUMI_BACKEND_URL and PULUMI_CONFIG_PASSPHRASE, or
# PULUMI_ACCESS_TOKEN); Tiger Cloud credentials in TIGER_API_KEY (or TIGER_PUBLIC_KEY and
# TIGER_SECRET_KEY) and TIGER_PROJECT_ID, read by the provider when it runs, never written to
# config or logs; SOURCE_SERVICE_ID, the service each pull request forks.
set -euo pipefail
cd "$(dirname "$0")"

usage() { echo "usage: $0 up|destroy|pause|resume <pull request number>" >&2; exit 2; }
action="${1:-}"
pr="${2:-}"
case "$pr" in '' | *[!0-9]*) usage ;; esac
stack="pr-$pr"
export PULUMI_SKIP_UPDATE_CHECK=true
# Every provider process watches its engine from its start, so a cancelled run leaves none behind.
export NODE_OPTIONS="--require=pulumi-tigercloud/watchdog${NODE_OPTIONS:+ $NODE_OPTIONS}"

case "$action" in
  up)
    : "${SOURCE_SERVICE_ID:?set SOURCE_SERVICE_ID to the service each pull request forks}"
    pulumi stack select --create "$stack" --non-interactive
    pulumi config set --stack "$stack" sourceServiceId "$SOURCE_SERVICE_ID"
    pulumi config set --stack "$stack" prNumber "$pr"
    pulumi config set --stack "$stack" paused false
    pulumi preview --stack "$stack" --non-interactive
    pulumi up --stack "$stack" --yes --skip-preview --non-interactive
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
    if ! pulumi stack select "$stack" --non-interactive 2>/dev/null; then
      echo "No stack $stack: nothing to destroy."
      exit 0
    fi
    # Destroy stops the fork (Tiger Cloud keeps it, paused); then the stack goes.
    pulumi destroy --stack "$stack" --yes --skip-preview --non-interactive
    pulumi stack rm "$stack" --yes --non-interactive
    ;;
  pause | resume)
    if ! pulumi stack select "$stack" --non-interactive 2>/dev/null; then
      echo "No stack $stack: nothing to $action."
      exit 0
    fi
    # An in-place update of the one fork: stop (or start) it; no new fork, no data lost.
    pulumi config set --stack "$stack" paused "$([ "$action" = pause ] && echo true || echo false)"
    pulumi up --stack "$stack" --yes --skip-preview --non-interactive
    ;;
  *) usage ;;
esac
