#!/usr/bin/env bash
# Stack `production` of this project, as the workflows in .github/workflows/ run it; so can a person.
#   ./production.sh preview   pulumi preview --refresh --diff: what `up` would do, drift included.
#                             On a pull request (PR_NUMBER and GITHUB_TOKEN set) the plan is posted
#                             as one comment, which later pushes edit rather than add to.
#   ./production.sh up        pulumi up --refresh: what the program declares, whatever changed elsewhere
#   ./production.sh drift     a refresh preview: fails, naming each resource and property that
#                             differs from what the last `up` left (a change made in the console)
# Works in a fresh checkout: the stack's config comes from PRODUCTION_SERVICE_ID and
# PRODUCTION_VPC_ID. Needs the pulumi CLI, curl and jq, a state backend (PULUMI_BACKEND_URL and
# PULUMI_CONFIG_PASSPHRASE, or PULUMI_ACCESS_TOKEN), and Tiger Cloud credentials (the console's
# key pair TIGER_PUBLIC_KEY and TIGER_SECRET_KEY, long-lived where a bearer TIGER_API_KEY expires;
# TIGER_PROJECT_ID), read by the provider when it runs, never written to config or logs.
set -euo pipefail
cd "$(dirname "$0")"

action="${1:-}"
stack=production
export PULUMI_SKIP_UPDATE_CHECK=true
# Every provider process watches its engine from its start, so a cancelled run leaves none behind.
export NODE_OPTIONS="--require=pulumi-tigercloud/watchdog${NODE_OPTIONS:+ $NODE_OPTIONS}"
# The comment this script owns on a pull request: found by this first line, then edited.
marker="<!-- pulumi-tigercloud: plan of stack $stack -->"

select_stack() {
  : "${PRODUCTION_SERVICE_ID:?set PRODUCTION_SERVICE_ID to the production service}"
  : "${PRODUCTION_VPC_ID:?set PRODUCTION_VPC_ID to the VPC to name}"
  pulumi stack select --create "$stack" --non-interactive
  pulumi config set --stack "$stack" serviceId "$PRODUCTION_SERVICE_ID"
  pulumi config set --stack "$stack" vpcId "$PRODUCTION_VPC_ID"
}

# The plan as the pull request's one comment: edited when it exists, made when it does not.
post_comment() {
  local plan_file="$1" outcome="$2" api existing payload
  api="${GITHUB_API_URL:-https://api.github.com}/repos/$GITHUB_REPOSITORY/issues"
  local auth=(-H "Authorization: Bearer $GITHUB_TOKEN" -H "Accept: application/vnd.github+json" -H "X-GitHub-Api-Version: 2022-11-28")
  existing="$(curl -fsS "${auth[@]}" "$api/$PR_NUMBER/comments?per_page=100" |
    jq -r --arg m "$marker" '[.[] | select(.body | startswith($m))][0].id // empty')"
  # A comment holds at most 65536 characters: a longer plan is cut, and says where to read it whole.
  payload="$(jq -n --rawfile plan "$plan_file" --arg m "$marker" --arg outcome "$outcome" --arg sha "${GITHUB_SHA:-}" '
    ($plan | if length > 60000 then .[0:60000] + "\n… (cut: the whole plan is in the job log)" else . end) as $p
    | {body: ($m + "\n### `pulumi preview` of stack production: " + $outcome + "\n\nAt commit " + $sha + ".\n\n```\n" + $p + "\n```\n")}')"
  if [ -n "$existing" ]; then
    curl -fsS -X PATCH "${auth[@]}" "$api/comments/$existing" -d "$payload" >/dev/null
    echo "The plan is on pull request #$PR_NUMBER (comment $existing, updated)."
  else
    curl -fsS -X POST "${auth[@]}" "$api/$PR_NUMBER/comments" -d "$payload" >/dev/null
    echo "The plan is on pull request #$PR_NUMBER (a new comment)."
  fi
}

case "$action" in
  preview)
    select_stack
    plan="$(mktemp)"
    status=0
    pulumi preview --stack "$stack" --refresh --diff --non-interactive --color never 2>&1 | tee "$plan" || status=$?
    if [ -n "${PR_NUMBER:-}" ] && [ -n "${GITHUB_TOKEN:-}" ]; then
      post_comment "$plan" "$([ "$status" -eq 0 ] && echo "planned" || echo "FAILED")"
    fi
    exit "$status"
    ;;
  up)
    select_stack
    pulumi up --stack "$stack" --refresh --yes --non-interactive --color never
    ;;
  drift)
    select_stack
    out="$(mktemp)"
    if pulumi refresh --stack "$stack" --preview-only --diff --expect-no-changes --non-interactive --color never 2>&1 | tee "$out"; then
      echo "No drift: Tiger Cloud is as the last \`up\` left it."
      exit 0
    fi
    # Each resource the refresh would change, and its properties that differ, as one error line.
    report="$(awk '
      /^ *[~-] [^ ]+: \((update|delete)\)/ { flush(); type = $2; sub(/:$/, "", type); sub(/.*:/, "", type); what = ($3 == "(delete)") ? "gone" : ""; next }
      type && /\[urn=/ { name = $0; sub(/.*::/, "", name); sub(/\].*/, "", name); next }
      type && /^ *~ [A-Za-z]+ *:/ { line = $0; sub(/^ *~ /, "", line); gsub(/ +:/, ":", line); props = props (props ? "; " : "") line; next }
      function flush() { if (type) print name " (" type "): " (what ? what : props); type = ""; props = ""; what = "" }
      END { flush() }
    ' "$out")"
    if [ -z "$report" ]; then
      echo "production.sh: the refresh preview failed (its output is above)." >&2
      exit 1
    fi
    while IFS= read -r line; do
      echo "::error title=Drift in stack $stack::$line"
    done <<<"$report"
    echo "Drift: Tiger Cloud differs from what the last \`up\` left. Run \`./production.sh up\` (or re-run the main branch's workflow) to put it back, or change the program to match." >&2
    exit 1
    ;;
  *)
    echo "usage: $0 preview|up|drift" >&2
    exit 2
    ;;
esac
