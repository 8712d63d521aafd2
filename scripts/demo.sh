#!/usr/bin/env bash
# The main job: set up, build, and run zerotune's environment report (the demo fine-tune
# takes its place once training exists).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
"$ZT_BUILD_DIR/bin/zerotune" env
