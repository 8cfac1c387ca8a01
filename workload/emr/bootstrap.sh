#!/bin/bash
# EMR bootstrap action: install the Segment lake sync on this node from its bundle.
# Usage: bootstrap.sh s3://bucket/segment-lake-app/<hash>/bundle.zip
# Everything it installs comes from the bundle: no internet access is needed.
set -euo pipefail
bundle_uri="$1"
install_dir=/opt/segment-lake
python=python3.11

work=$(mktemp -d)
aws s3 cp --only-show-errors "$bundle_uri" "$work/bundle.zip"
sudo mkdir -p "$install_dir"
sudo unzip -o -q "$work/bundle.zip" -d "$install_dir"
if ! "$python" -m pip --version >/dev/null 2>&1; then
  sudo "$python" -m ensurepip --default-pip
fi
sudo "$python" -m pip install --no-index --find-links "$install_dir/wheels" segment-lake
rm -rf "$work"
