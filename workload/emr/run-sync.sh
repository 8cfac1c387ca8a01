#!/bin/bash
# An EMR step, on the master node: install this release of the sync app once, then run it with
# spark-submit. The cluster itself installs nothing, so a new release changes only the steps the
# schedules submit, never the cluster. (No "dollar-brace" here: Terraform would read it as its own.)
# Usage: run-sync.sh s3://<bucket>/segment-lake-app/<hash>/segment-lake-app.zip sync --source-id ...
set -euo pipefail
app_uri="$1"
shift
root="$(printenv SEGMENT_LAKE_APP_ROOT || echo /mnt/segment-lake-app)"
release="$(basename "$(dirname "$app_uri")")"
app="$root/$release"
mkdir -p "$root" 2>/dev/null || sudo install -d -o "$(id -un)" "$root"
# Mark the release as used before anything else, so another step's clean-up below leaves it alone.
[ ! -d "$app" ] || touch "$app"
if [ ! -f "$app/step_entry.py" ]; then
  work="$(mktemp -d "$root/.install.XXXXXX")"
  aws s3 cp --only-show-errors "$app_uri" "$work/app.zip"
  unzip -q "$work/app.zip" -d "$work/app"
  # A step running at the same time may have installed this release first: keep theirs.
  mv -T "$work/app" "$app" 2>/dev/null || true
  rm -rf "$work"
fi
touch "$app"
# Releases no step has used for 7 days make room.
find "$root" -mindepth 1 -maxdepth 1 -mtime +7 ! -name "$release" -exec rm -rf {} + 2>/dev/null || true
PYTHONPATH="$app/site:$(printenv PYTHONPATH || true)"
export PYTHONPATH="$(echo "$PYTHONPATH" | sed 's/:$//')"
exec spark-submit --master yarn --deploy-mode client "$app/step_entry.py" "$@"
